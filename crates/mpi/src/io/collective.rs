//! Collective buffering for the blocking collective accesses (ROMIO's two-phase I/O, Thakur, Gropp
//! and Lusk 1999): when the
//! processes' accesses interleave in the file, a few aggregator processes (one per node by
//! default, `cb_nodes`) each take a domain of the file, the processes send them their pieces over
//! the communicator (shared memory within a node), and each aggregator writes its domain as few
//! large runs (or reads it in one go and sends the pieces back). The file range is covered in
//! rounds of `cb_buffer_size` bytes per aggregator, so memory stays bounded.
//!
//! The plan of each round ([`plan_round`]) is pure arithmetic, unit-tested here; the exchange
//! uses the C interface's all-to-all on the file's private communicator.

use std::ffi::{c_int, c_void};
use std::fs::File;
use std::os::unix::fs::FileExt;

use super::abi::{agree, check_collective};
use super::data::{read_fully, span};
use crate::consts::*;
use crate::error::MpiResult;

/// How the processes' accesses lie in the file: each one's first byte and end.
pub(crate) type Extents = Vec<(u64, u64)>;

/// Whether collective buffering pays: `automatic` when some two processes' accesses interleave
/// (one starts before another's end and ends after its start), as ROMIO decides.
pub(crate) fn interleaved(extents: &Extents) -> bool {
    let mut touched: Vec<(u64, u64)> = extents.iter().copied().filter(|(lo, hi)| hi > lo).collect();
    touched.sort_unstable();
    touched.windows(2).any(|pair| pair[1].0 < pair[0].1)
}

/// The pieces of one process's access that fall in a window, by aggregator: for each, the file
/// pieces `(offset, length)` and where their bytes are in the process's stream.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct RoundPlan {
    /// Per aggregator: the pieces it gets, in file order.
    pub pieces: Vec<Vec<(u64, u64)>>,
    /// Per aggregator: the stream offset of each piece's first byte.
    pub stream_at: Vec<Vec<u64>>,
}

/// Splits `segments` (file offset, length, in stream order with nondecreasing offsets) over the
/// `aggregators` domains of `domain` bytes each from `window_lo` (the last one ends at
/// `window_hi`). Only what lies inside the window is planned.
pub(crate) fn plan_round(segments: &[(u64, u64)], window_lo: u64, window_hi: u64, domain: u64, aggregators: usize) -> RoundPlan {
    let mut plan = RoundPlan { pieces: vec![Vec::new(); aggregators], stream_at: vec![Vec::new(); aggregators] };
    let mut stream = 0u64;
    for &(offset, len) in segments {
        let (start, end) = (offset.max(window_lo), (offset + len).min(window_hi));
        let mut at = start;
        while at < end {
            let index = (((at - window_lo) / domain) as usize).min(aggregators - 1);
            let domain_end = if index == aggregators - 1 { window_hi } else { window_lo + (index as u64 + 1) * domain };
            let piece_end = end.min(domain_end);
            plan.pieces[index].push((at, piece_end - at));
            plan.stream_at[index].push(stream + (at - offset));
            at = piece_end;
        }
        stream += len;
    }
    plan
}

/// Every process's extent of its access: where its first byte is and where its last ends
/// (`(u64::MAX, 0)` for none). Collective over `comm`, of `size` processes.
pub(crate) fn gather_extents(comm: MPI_Comm, size: usize, segments: &[(u64, u64)]) -> MpiResult<Extents> {
    let mine = span(segments).map_or([u64::MAX, 0], |(lo, len)| [lo, lo + len]);
    let mut all = vec![0u64; 2 * size];
    // SAFETY: two u64 from each process into a buffer of 2 per process.
    let code = unsafe { crate::coll::abi::MPI_Allgather(mine.as_ptr().cast(), 2, MPI_UINT64_T, all.as_mut_ptr().cast(), 2, MPI_UINT64_T, comm) };
    check_collective(code, "share where their accesses lie")?;
    Ok(all.chunks_exact(2).map(|pair| (pair[0], pair[1])).collect())
}

/// An all-to-all of variable byte counts: `send[i]` to process i; returns what each sent here.
fn exchange(comm: MPI_Comm, send: &[Vec<u8>]) -> MpiResult<Vec<Vec<u8>>> {
    let counts: Vec<MPI_Count> = send.iter().map(|bytes| bytes.len() as MPI_Count).collect();
    let mut incoming = vec![0 as MPI_Count; send.len()];
    // SAFETY: one count to and from each process.
    let code = unsafe { crate::coll::abi::MPI_Alltoall(counts.as_ptr().cast(), 1, MPI_COUNT, incoming.as_mut_ptr().cast(), 1, MPI_COUNT, comm) };
    check_collective(code, "exchange sizes")?;
    let displacements = |counts: &[MPI_Count]| -> Vec<MPI_Aint> {
        counts
            .iter()
            .scan(0 as MPI_Aint, |at, &count| {
                let here = *at;
                *at += count as MPI_Aint;
                Some(here)
            })
            .collect()
    };
    let outgoing: Vec<u8> = send.concat();
    let total: MPI_Count = incoming.iter().sum();
    let mut received = vec![0u8; total as usize];
    let (send_displacements, receive_displacements) = (displacements(&counts), displacements(&incoming));
    // SAFETY: the counts and displacements describe `outgoing` and `received` exactly.
    let code = unsafe {
        crate::coll::abi::MPI_Alltoallv_c(
            outgoing.as_ptr().cast::<c_void>(),
            counts.as_ptr(),
            send_displacements.as_ptr(),
            MPI_BYTE,
            received.as_mut_ptr().cast::<c_void>(),
            incoming.as_ptr(),
            receive_displacements.as_ptr(),
            MPI_BYTE,
            comm,
        )
    };
    check_collective(code, "exchange their data")?;
    Ok(incoming.iter().zip(&receive_displacements).map(|(&count, &at)| received[at as usize..at as usize + count as usize].to_vec()).collect())
}

fn encode(pieces: &[(u64, u64)]) -> Vec<u8> {
    pieces.iter().flat_map(|(offset, len)| offset.to_le_bytes().into_iter().chain(len.to_le_bytes())).collect()
}

fn decode(bytes: &[u8]) -> Vec<(u64, u64)> {
    bytes.chunks_exact(16).map(|piece| (u64::from_le_bytes(piece[..8].try_into().expect("8 bytes")), u64::from_le_bytes(piece[8..].try_into().expect("8 bytes")))).collect()
}

/// The processes and rounds of one collective access.
pub(crate) struct Plan<'a> {
    pub comm: MPI_Comm,
    pub rank: c_int,
    pub size: usize,
    /// Ranks of the aggregators, in domain order.
    pub aggregators: &'a [c_int],
    /// Bytes of each aggregator's domain per round.
    pub buffer: u64,
    pub extents: &'a Extents,
}

impl Plan<'_> {
    /// The windows of the rounds: `(lo, hi, domain)`.
    fn windows(&self) -> Vec<(u64, u64, u64)> {
        let lo = self.extents.iter().filter(|(lo, hi)| hi > lo).map(|(lo, _)| *lo).min().unwrap_or(0);
        let hi = self.extents.iter().map(|(_, hi)| *hi).max().unwrap_or(0);
        let width = self.buffer.max(1) * self.aggregators.len() as u64;
        let mut windows = Vec::new();
        let mut at = lo;
        while at < hi {
            let end = (at + width).min(hi);
            windows.push((at, end, (end - at).div_ceil(self.aggregators.len() as u64).max(1)));
            at = end;
        }
        windows
    }

    fn aggregator_index(&self) -> Option<usize> {
        self.aggregators.iter().position(|&aggregator| aggregator == self.rank)
    }

    /// Writes `data` (this process's stream over `segments`): returns the error class an
    /// aggregator met (0: none), once every process knows it.
    pub fn write(&self, file: &File, segments: &[(u64, u64)], data: &[u8]) -> MpiResult<c_int> {
        let mut failed = 0;
        for (lo, hi, domain) in self.windows() {
            let plan = plan_round(segments, lo, hi, domain, self.aggregators.len());
            let mut descriptors = vec![Vec::new(); self.size];
            let mut payloads = vec![Vec::new(); self.size];
            for (index, &aggregator) in self.aggregators.iter().enumerate() {
                descriptors[aggregator as usize] = encode(&plan.pieces[index]);
                let mut bytes = Vec::with_capacity(plan.pieces[index].iter().map(|(_, len)| *len as usize).sum());
                for (&(_, len), &at) in plan.pieces[index].iter().zip(&plan.stream_at[index]) {
                    bytes.extend_from_slice(&data[at as usize..(at + len) as usize]);
                }
                payloads[aggregator as usize] = bytes;
            }
            let pieces = exchange(self.comm, &descriptors)?;
            let bytes = exchange(self.comm, &payloads)?;
            if self.aggregator_index().is_some() && failed == 0 {
                failed = write_domain(file, &pieces, &bytes);
            }
        }
        agree(self.comm, failed)
    }

    /// Reads into `out` (this process's stream over `segments`).
    pub fn read(&self, file: &File, segments: &[(u64, u64)], out: &mut [u8]) -> MpiResult<c_int> {
        let mut failed = 0;
        for (lo, hi, domain) in self.windows() {
            let plan = plan_round(segments, lo, hi, domain, self.aggregators.len());
            let mut descriptors = vec![Vec::new(); self.size];
            for (index, &aggregator) in self.aggregators.iter().enumerate() {
                descriptors[aggregator as usize] = encode(&plan.pieces[index]);
            }
            let wanted = exchange(self.comm, &descriptors)?;
            let mut answers = vec![Vec::new(); self.size];
            if self.aggregator_index().is_some() {
                match read_domain(file, &wanted) {
                    Ok(found) => answers = found,
                    Err(class) => failed = failed.max(class),
                }
            }
            let answered = exchange(self.comm, &answers)?;
            for (index, &aggregator) in self.aggregators.iter().enumerate() {
                let bytes = &answered[aggregator as usize];
                let mut taken = 0usize;
                for (&(_, len), &at) in plan.pieces[index].iter().zip(&plan.stream_at[index]) {
                    let len = len as usize;
                    if taken + len <= bytes.len() {
                        out[at as usize..at as usize + len].copy_from_slice(&bytes[taken..taken + len]);
                    }
                    taken += len;
                }
            }
        }
        agree(self.comm, failed)
    }
}

/// An aggregator writes the pieces it got (`pieces[p]` with `bytes[p]` from process p) as runs:
/// adjacent pieces from any process are one write. Returns the error class (0: none).
fn write_domain(file: &File, pieces: &[Vec<u8>], bytes: &[Vec<u8>]) -> c_int {
    let mut all: Vec<(u64, &[u8])> = Vec::new();
    for (descriptors, data) in pieces.iter().zip(bytes) {
        let mut taken = 0usize;
        for (offset, len) in decode(descriptors) {
            all.push((offset, &data[taken..taken + len as usize]));
            taken += len as usize;
        }
    }
    all.sort_by_key(|(offset, _)| *offset);
    let mut index = 0;
    while index < all.len() {
        let (start, first) = all[index];
        let mut run = first.to_vec();
        index += 1;
        while index < all.len() && all[index].0 <= start + run.len() as u64 {
            let (offset, data) = all[index];
            let at = (offset - start) as usize;
            // A piece overlapping the run (conflicting writes: MPI leaves the result open)
            // overwrites it; one that continues it extends it.
            let overlap = (run.len() - at).min(data.len());
            run[at..at + overlap].copy_from_slice(&data[..overlap]);
            run.extend_from_slice(&data[overlap..]);
            index += 1;
        }
        if let Err(failure) = file.write_all_at(&run, start) {
            return super::modes::class_of(&failure);
        }
    }
    0
}

/// An aggregator reads the span of the pieces asked for (`wanted[p]` from process p) at once and
/// cuts out each process's answer; past the end of the file it answers zeros (the process's
/// count says how much was there).
fn read_domain(file: &File, wanted: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, c_int> {
    let asked: Vec<Vec<(u64, u64)>> = wanted.iter().map(|descriptors| decode(descriptors)).collect();
    let Some(lo) = asked.iter().flatten().map(|(offset, _)| *offset).min() else { return Ok(vec![Vec::new(); wanted.len()]) };
    let hi = asked.iter().flatten().map(|(offset, len)| offset + len).max().unwrap_or(lo);
    let mut block = vec![0u8; (hi - lo) as usize];
    read_fully(file, &mut block, lo).map_err(|failure| super::modes::class_of(&failure))?;
    Ok(asked.iter().map(|pieces| pieces.iter().flat_map(|&(offset, len)| block[(offset - lo) as usize..(offset - lo + len) as usize].iter().copied()).collect()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_interleave_when_one_starts_inside_another() {
        assert!(!interleaved(&vec![(0, 10), (10, 20), (u64::MAX, 0)]));
        assert!(interleaved(&vec![(0, 10), (5, 20)]));
        assert!(interleaved(&vec![(20, 30), (0, 25)]));
    }

    #[test]
    fn a_round_splits_segments_at_domain_boundaries_and_keeps_stream_positions() {
        // Segments of 4 bytes every 8 bytes from 0; a window [2, 22) in two domains of 10.
        let segments = [(0, 4), (8, 4), (16, 4), (24, 4)];
        let plan = plan_round(&segments, 2, 22, 10, 2);
        assert_eq!(plan.pieces[0], vec![(2, 2), (8, 4)]);
        assert_eq!(plan.stream_at[0], vec![2, 4]);
        assert_eq!(plan.pieces[1], vec![(16, 4)]);
        assert_eq!(plan.stream_at[1], vec![8]);
    }

    #[test]
    fn an_aggregator_writes_adjacent_pieces_of_several_processes_as_one_run() {
        let path = std::env::temp_dir().join(format!("braid-io-collective-{}", std::process::id()));
        let file = File::options().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        let pieces = [encode(&[(0, 2), (4, 2)]), encode(&[(2, 2), (6, 2)])];
        let bytes = [b"aacc".to_vec(), b"bbdd".to_vec()];
        assert_eq!(write_domain(&file, &pieces, &bytes), 0);
        let mut back = [0u8; 8];
        file.read_exact_at(&mut back, 0).unwrap();
        assert_eq!(&back, b"aabbccdd");
        let answers = read_domain(&file, &[encode(&[(6, 2)]), encode(&[(0, 1), (7, 3)])]).unwrap();
        assert_eq!(answers, vec![b"dd".to_vec(), b"ad\0\0".to_vec()]);
        std::fs::remove_file(path).unwrap();
    }
}
