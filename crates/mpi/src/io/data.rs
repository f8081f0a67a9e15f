//! Moving a process's visible bytes to and from the file: positioned system calls on the file
//! segments its view maps them to, data sieving for reads that touch many small segments (one
//! read of their span, then copies: Thakur, Gropp and Lusk 1999), and byte-range locks in atomic mode.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::view::View;

/// How the data of one access moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tuning {
    /// Atomic mode: the access locks the span it touches.
    pub atomic: bool,
    /// Largest span read at once to serve several segments (0: no sieving).
    pub sieve_bytes: u64,
    /// Largest span a strided write reads, patches and writes back at once, under an exclusive
    /// lock (0: one write per segment).
    pub sieve_write_bytes: u64,
}

/// The bytes from the first segment's start to the last one's end: `(start, length)`.
pub(crate) fn span(segments: &[(u64, u64)]) -> Option<(u64, u64)> {
    let first = segments.first()?.0;
    let end = segments.iter().map(|(offset, len)| offset + len).max()?;
    Some((first, end - first))
}

/// Writes `data`, the visible bytes from `start`.
pub(crate) fn write(file: &File, view: &View, start: u64, data: &[u8], tuning: Tuning) -> io::Result<()> {
    let segments = view.segment_list(start, data.len() as u64);
    let _lock = match (tuning.atomic, span(&segments)) {
        (true, Some((at, len))) => Some(braid_sys::file::lock_range(file, at, len, true)?),
        _ => None,
    };
    if segments.len() > 1 && !tuning.atomic {
        if let Some((span_at, span_len)) = span(&segments).filter(|(_, len)| *len <= tuning.sieve_write_bytes) {
            return sieved_write(file, &segments, span_at, span_len, data);
        }
    }
    let mut taken = 0usize;
    for (offset, len) in segments {
        let len = len as usize;
        file.write_all_at(&data[taken..taken + len], offset)?;
        taken += len;
    }
    Ok(())
}

/// One read of the segments' span, the segments patched in, one write back, all under an
/// exclusive lock so that another sieving writer's holes are not overwritten with stale bytes.
/// (A writer that does not lock, writing into a hole meanwhile, could still be undone: that is
/// why write sieving is off unless `romio_ds_write` enables it.)
fn sieved_write(file: &File, segments: &[(u64, u64)], span_at: u64, span_len: u64, data: &[u8]) -> io::Result<()> {
    let _lock = braid_sys::file::lock_range(file, span_at, span_len, true)?;
    let mut block = vec![0u8; span_len as usize];
    read_fully(file, &mut block, span_at)?;
    let mut taken = 0usize;
    for &(offset, len) in segments {
        let (from, len) = ((offset - span_at) as usize, len as usize);
        block[from..from + len].copy_from_slice(&data[taken..taken + len]);
        taken += len;
    }
    file.write_all_at(&block, span_at)
}

/// Reads into `out` the visible bytes from `start`; returns how many it got before the end of
/// the file.
pub(crate) fn read(file: &File, view: &View, start: u64, out: &mut [u8], tuning: Tuning) -> io::Result<u64> {
    let segments = view.segment_list(start, out.len() as u64);
    let Some((span_at, span_len)) = span(&segments) else { return Ok(0) };
    let _lock = if tuning.atomic { Some(braid_sys::file::lock_range(file, span_at, span_len, false)?) } else { None };
    if segments.len() > 1 && span_len <= tuning.sieve_bytes {
        return sieved_read(file, &segments, span_at, span_len, out);
    }
    let mut filled = 0usize;
    for (offset, len) in segments {
        let got = read_fully(file, &mut out[filled..filled + len as usize], offset)?;
        filled += got;
        if got < len as usize {
            break;
        }
    }
    Ok(filled as u64)
}

/// One read of the segments' whole span, then the segments copied out of it.
fn sieved_read(file: &File, segments: &[(u64, u64)], span_at: u64, span_len: u64, out: &mut [u8]) -> io::Result<u64> {
    let mut block = vec![0u8; span_len as usize];
    let got = read_fully(file, &mut block, span_at)? as u64;
    let mut filled = 0usize;
    for &(offset, len) in segments {
        let from = offset - span_at;
        let available = got.saturating_sub(from).min(len) as usize;
        out[filled..filled + available].copy_from_slice(&block[from as usize..from as usize + available]);
        filled += available;
        if available < len as usize {
            break;
        }
    }
    Ok(filled as u64)
}

/// Reads until `out` is full or the file ends; returns the bytes read.
pub(crate) fn read_fully(file: &File, out: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut filled = 0;
    while filled < out.len() {
        match file.read_at(&mut out[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(got) => filled += got,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> (std::path::PathBuf, File) {
        let path = std::env::temp_dir().join(format!("braid-io-data-{name}-{}", std::process::id()));
        let file = File::options().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        (path, file)
    }

    #[test]
    fn two_interleaved_views_fill_the_file_and_read_back_with_and_without_sieving() {
        let (path, file) = scratch("interleaved");
        // Two processes, blocks of 3 bytes, alternating, from byte 10.
        let views = [View::new(10, 1, &[(0, 3)], 6).unwrap(), View::new(10, 1, &[(3, 3)], 6).unwrap()];
        let plain = Tuning { atomic: false, sieve_bytes: 0, sieve_write_bytes: 0 };
        write(&file, &views[0], 0, b"aaabbbccc", plain).unwrap();
        write(&file, &views[1], 0, b"AAABBBCCC", Tuning { atomic: true, ..plain }).unwrap();
        let mut whole = vec![0u8; 28];
        assert_eq!(read(&file, &View::bytes(), 0, &mut whole, plain).unwrap(), 28);
        assert_eq!(&whole[10..], b"aaaAAAbbbBBBcccCCC");
        for sieve_bytes in [0, 1 << 20] {
            let tuning = Tuning { atomic: false, sieve_bytes, sieve_write_bytes: 0 };
            let mut mine = vec![0u8; 9];
            assert_eq!(read(&file, &views[1], 0, &mut mine, tuning).unwrap(), 9);
            assert_eq!(&mine, b"AAABBBCCC");
            // Past the end of the file: what there is, then a short count.
            let mut beyond = vec![0u8; 12];
            assert_eq!(read(&file, &views[0], 0, &mut beyond, tuning).unwrap(), 9, "sieve {sieve_bytes}");
            assert_eq!(&beyond[..9], b"aaabbbccc");
        }
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_sieved_write_keeps_the_bytes_in_its_holes() {
        let (path, file) = scratch("sieved-write");
        file.write_all_at(b"0123456789", 0).unwrap();
        let view = View::new(0, 1, &[(0, 2)], 4).unwrap();
        let sieving = Tuning { atomic: false, sieve_bytes: 0, sieve_write_bytes: 1 << 20 };
        write(&file, &view, 0, b"abcdef", sieving).unwrap();
        let mut back = [0u8; 10];
        file.read_exact_at(&mut back, 0).unwrap();
        assert_eq!(&back, b"ab23cd67ef");
        std::fs::remove_file(path).unwrap();
    }
}
