//! The MPI_* collective entry points.
//!
//! Each call checks its arguments, views the user buffers as packed bytes (the memory itself when
//! the data is one contiguous run, otherwise a staging buffer packed before and unpacked after),
//! and runs an algorithm of [`super::algorithms`] on the communicator's collective channel.
//! Arguments that MPI declares significant only at the root are only checked there.
//!
//! Safety of every entry point: the buffers, counts and arrays must be those the MPI standard
//! describes for the call, and no other thread may use the buffers during it.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::borrow::Cow;
use std::ffi::{c_int, c_void};
use std::ops::Range;

use super::{algorithms, CollChannel};
use crate::comm::{coll_channel, CommChannel};
use crate::consts::*;
use crate::datatype;
use crate::error::{error, finish, MpiError, MpiResult};
use crate::op::{reduction, Reduction};

/// Defines the entry point `$name`: it runs the body (or the expression after `=>`) and
/// reports the result through the error handler under the call's name.
macro_rules! collective {
    ($(#[$attr:meta])* $name:ident($($arg:ident: $ty:ty),* $(,)?) => $run:expr) => {
        #[no_mangle]
        $(#[$attr])*
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            // SAFETY: the module's contract: the caller passes the buffers, counts and arrays
            // that MPI describes for this call.
            finish(stringify!($name), unsafe { $run })
        }
    };
    ($(#[$attr:meta])* $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        collective!($(#[$attr])* $name($($arg: $ty),*) => {
            $(#[$attr])*
            unsafe fn run($($arg: $ty),*) -> MpiResult<()> $body
            run($($arg),*)
        });
    };
}

fn channel(comm: MPI_Comm) -> MpiResult<CommChannel> {
    coll_channel(comm)
}

fn failed(comm: MPI_Comm) -> impl Fn(i32) -> MpiError {
    move |class| error(comm, class, "the collective's communication failed")
}

fn count_of(comm: MPI_Comm, count: c_int) -> MpiResult<usize> {
    usize::try_from(count).map_err(|_| error(comm, MPI_ERR_COUNT, format!("count {count} is negative")))
}

fn root_of(comm: MPI_Comm, root: c_int, size: usize) -> MpiResult<usize> {
    usize::try_from(root).ok().filter(|&root| root < size).ok_or_else(|| error(comm, MPI_ERR_ROOT, format!("root {root} is not a rank of a communicator of size {size}")))
}

fn times(comm: MPI_Comm, count: usize, size: usize) -> MpiResult<usize> {
    count.checked_mul(size).ok_or_else(|| error(comm, MPI_ERR_COUNT, "count times communicator size overflows"))
}

fn reduction_of(comm: MPI_Comm, op: MPI_Op, dt: MPI_Datatype) -> MpiResult<Reduction> {
    reduction(op, dt).map_err(|class| error(comm, class, format!("operation {op} cannot reduce datatype {dt}")))
}

fn is_in_place(buffer: *const c_void) -> bool {
    buffer == MPI_IN_PLACE
}

fn same_signature(comm: MPI_Comm, sent: usize, received: usize) -> MpiResult<()> {
    if sent == received {
        Ok(())
    } else {
        Err(error(comm, MPI_ERR_TRUNCATE, format!("this rank sends {sent} bytes to itself but expects {received}")))
    }
}

/// Reads `len` bytes at `start`.
///
/// # Safety
/// When `len > 0`, the bytes must be readable and not written for the returned lifetime.
unsafe fn bytes<'a>(start: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: forwarded from this function's contract; len > 0 so `start` is a real address.
    unsafe { std::slice::from_raw_parts(start, len) }
}

/// Writes `len` bytes at `start`.
///
/// # Safety
/// When `len > 0`, the bytes must be writable and used by nothing else for the returned lifetime.
unsafe fn bytes_mut<'a>(start: *mut u8, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: forwarded from this function's contract; len > 0 so `start` is a real address.
    unsafe { std::slice::from_raw_parts_mut(start, len) }
}

/// Where an algorithm writes packed bytes: the user's memory, or a staging buffer to unpack.
enum Landing<'a> {
    Direct(&'a mut [u8]),
    Staged(Vec<u8>),
}

impl Landing<'_> {
    fn bytes(&mut self) -> &mut [u8] {
        match self {
            Landing::Direct(memory) => memory,
            Landing::Staged(staging) => staging,
        }
    }
}

/// `count` elements of a committed `datatype` at `buffer`.
#[derive(Clone, Copy)]
struct Typed {
    buffer: *mut u8,
    count: usize,
    datatype: MPI_Datatype,
    packed_len: usize,
    /// The elements' bytes as one run of memory: (offset from `buffer`, length).
    run: Option<(isize, usize)>,
}

fn typed(comm: MPI_Comm, buffer: *const c_void, count: c_int, datatype: MPI_Datatype) -> MpiResult<Typed> {
    typed_elements(comm, buffer, count_of(comm, count)?, datatype)
}

fn typed_elements(comm: MPI_Comm, buffer: *const c_void, count: usize, datatype: MPI_Datatype) -> MpiResult<Typed> {
    let type_error = |class| error(comm, class, format!("datatype {datatype} is not valid or not committed"));
    // One lookup serves every question below (a derived type's costs a lock).
    let info = datatype::lookup_committed(datatype).map_err(type_error)?;
    if is_in_place(buffer) {
        return Err(error(comm, MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed for this buffer"));
    }
    let packed_len = info.size.checked_mul(count).ok_or_else(|| error(comm, MPI_ERR_COUNT, "message too large"))?;
    if buffer.is_null() && packed_len > 0 && (1..=BRAID_PREDEFINED_DATATYPE_LAST).contains(&datatype) {
        return Err(error(comm, MPI_ERR_BUFFER, "the buffer is NULL"));
    }
    let run = info.contiguous_run(count);
    Ok(Typed { buffer: buffer as *mut u8, count, datatype, packed_len, run })
}

impl Typed {
    fn start(&self, offset: isize) -> *mut u8 {
        self.buffer.wrapping_offset(offset)
    }

    /// The data as packed bytes, borrowed from user memory when it is one run.
    ///
    /// # Safety
    /// The elements must be readable and not written while the result lives.
    unsafe fn read<'a>(&self) -> Cow<'a, [u8]> {
        match self.run {
            // SAFETY: the run lies within the caller's elements.
            Some((offset, len)) => Cow::Borrowed(unsafe { bytes(self.start(offset), len) }),
            // SAFETY: as above.
            None => Cow::Owned(unsafe { self.packed() }),
        }
    }

    /// A packed copy of the data.
    ///
    /// # Safety
    /// As for [`Typed::read`].
    unsafe fn packed(&self) -> Vec<u8> {
        let mut packed = vec![0u8; self.packed_len];
        if self.packed_len > 0 {
            // SAFETY: the datatype was validated and the caller's elements are readable.
            unsafe { datatype::pack(self.datatype, self.count, self.buffer, &mut packed) };
        }
        packed
    }

    /// Where to write the packed data; `preload` keeps the current contents (for in-place
    /// calls).
    ///
    /// # Safety
    /// The elements must be writable and used by nothing else while the result lives.
    unsafe fn landing<'a>(&self, preload: bool) -> Landing<'a> {
        match self.run {
            // SAFETY: the run lies within the caller's elements.
            Some((offset, len)) => Landing::Direct(unsafe { bytes_mut(self.start(offset), len) }),
            // SAFETY: as above.
            None if preload => Landing::Staged(unsafe { self.packed() }),
            None => Landing::Staged(vec![0u8; self.packed_len]),
        }
    }

    /// Unpacks a staged landing into the user's elements.
    ///
    /// # Safety
    /// As for [`Typed::landing`].
    unsafe fn store(&self, landing: &Landing) {
        if let Landing::Staged(staging) = landing {
            if self.packed_len > 0 {
                // SAFETY: the datatype was validated; the elements are writable and distinct from
                // the staging buffer.
                unsafe { datatype::unpack(self.datatype, self.count, staging, self.buffer) };
            }
        }
    }
}

/// A v-variant buffer: block i holds `counts[i]` elements at `buffer + displs[i]` extents.
struct Spread {
    blocks: Vec<Typed>,
    /// When every block is one run of memory: the lowest address of any block, and the length
    /// that covers them all.
    direct: Option<(*mut u8, usize)>,
    /// Each block's bytes, relative to the direct base or in the packed staging buffer.
    ranges: Vec<Range<usize>>,
}

/// # Safety
/// `counts` and `displs` must point to `size` integers each (or be NULL, which is an error).
unsafe fn spread(comm: MPI_Comm, buffer: *const c_void, counts: *const c_int, displs: *const c_int, datatype: MPI_Datatype, size: usize) -> MpiResult<Spread> {
    if is_in_place(buffer) {
        return Err(error(comm, MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed for this buffer"));
    }
    if counts.is_null() || displs.is_null() {
        return Err(error(comm, MPI_ERR_ARG, "the counts or displacements array is NULL"));
    }
    // SAFETY: the caller passes arrays of one integer per rank, as MPI requires.
    let (counts, displs) = unsafe { (std::slice::from_raw_parts(counts, size), std::slice::from_raw_parts(displs, size)) };
    let extent = datatype::type_extent(datatype).map_err(|class| error(comm, class, format!("datatype {datatype} is not valid")))?;
    let mut blocks = Vec::with_capacity(size);
    for (&count, &displacement) in counts.iter().zip(displs) {
        let offset = (displacement as isize).checked_mul(extent).ok_or_else(|| error(comm, MPI_ERR_ARG, "displacement overflows"))?;
        let start = (buffer as *const u8).wrapping_offset(offset);
        blocks.push(typed(comm, start.cast(), count, datatype)?);
    }
    let runs: Option<Vec<(*mut u8, usize)>> = blocks
        .iter()
        .map(|block| match block.run {
            _ if block.packed_len == 0 => Some((std::ptr::null_mut(), 0)),
            Some((offset, len)) => Some((block.start(offset), len)),
            None => None,
        })
        .collect();
    if let Some(runs) = runs {
        let filled = || runs.iter().filter(|run| run.1 > 0);
        let base = filled().map(|run| run.0).min_by_key(|&start| start as usize).unwrap_or(std::ptr::null_mut());
        let end = filled().map(|run| run.0 as usize + run.1).max().unwrap_or(base as usize);
        let ranges = runs.iter().map(|&(start, len)| if len == 0 { 0..0 } else { start as usize - base as usize..start as usize - base as usize + len }).collect();
        return Ok(Spread { blocks, direct: Some((base, end - base as usize)), ranges });
    }
    let mut ranges = Vec::with_capacity(size);
    let mut offset = 0;
    for block in &blocks {
        ranges.push(offset..offset + block.packed_len);
        offset += block.packed_len;
    }
    Ok(Spread { blocks, direct: None, ranges })
}

impl Spread {
    fn staging_len(&self) -> usize {
        self.ranges.last().map_or(0, |range| range.end)
    }

    /// Every block's data as bytes laid out as `ranges` says.
    ///
    /// # Safety
    /// The blocks must be readable and not written while the result lives.
    unsafe fn read<'a>(&self) -> Cow<'a, [u8]> {
        match self.direct {
            // SAFETY: the span from the lowest to the highest block is the caller's buffer.
            Some((base, len)) => Cow::Borrowed(unsafe { bytes(base, len) }),
            None => {
                let mut staging = vec![0u8; self.staging_len()];
                for (block, range) in self.blocks.iter().zip(&self.ranges) {
                    if !range.is_empty() {
                        // SAFETY: the datatype was validated and the block is readable.
                        unsafe { datatype::pack(block.datatype, block.count, block.buffer, &mut staging[range.clone()]) };
                    }
                }
                Cow::Owned(staging)
            }
        }
    }

    /// Where to write every block; block `preload` keeps its current contents (in place).
    ///
    /// # Safety
    /// The blocks must be writable and used by nothing else while the result lives.
    unsafe fn landing<'a>(&self, preload: Option<usize>) -> Landing<'a> {
        match self.direct {
            // SAFETY: the span from the lowest to the highest block is the caller's buffer.
            Some((base, len)) => Landing::Direct(unsafe { bytes_mut(base, len) }),
            None => {
                let mut staging = vec![0u8; self.staging_len()];
                if let Some(index) = preload {
                    let block = &self.blocks[index];
                    if block.packed_len > 0 {
                        // SAFETY: the datatype was validated and the block is readable.
                        unsafe { datatype::pack(block.datatype, block.count, block.buffer, &mut staging[self.ranges[index].clone()]) };
                    }
                }
                Landing::Staged(staging)
            }
        }
    }

    /// Unpacks a staged landing into every block but `skip`.
    ///
    /// # Safety
    /// As for [`Spread::landing`].
    unsafe fn store(&self, landing: &Landing, skip: Option<usize>) {
        if let Landing::Staged(staging) = landing {
            for (index, (block, range)) in self.blocks.iter().zip(&self.ranges).enumerate() {
                if Some(index) != skip && !range.is_empty() {
                    // SAFETY: the datatype was validated; the block is writable and distinct from
                    // the staging buffer.
                    unsafe { datatype::unpack(block.datatype, block.count, &staging[range.clone()], block.buffer) };
                }
            }
        }
    }
}

/// This rank's own block for a gather: `None` in place (it is already in recvbuf), otherwise
/// its send data, packed, which must be the `expected` number of bytes.
unsafe fn own_block<'a>(comm: MPI_Comm, sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, expected: usize) -> MpiResult<Option<Cow<'a, [u8]>>> {
    if is_in_place(sendbuf) {
        return Ok(None);
    }
    let send = typed(comm, sendbuf, sendcount, sendtype)?;
    same_signature(comm, send.packed_len, expected)?;
    // SAFETY: the caller's send buffer holds the elements.
    Ok(Some(unsafe { send.read() }))
}

/// Copies the packed input of a reduction into `work`, which the algorithm then overwrites.
///
/// # Safety
/// `send` must describe the caller's readable send buffer, distinct from `work`.
unsafe fn reduction_input(send: &Typed, work: &mut [u8]) {
    // SAFETY: forwarded from this function's contract.
    let input = unsafe { send.read() };
    work.copy_from_slice(&input);
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier(comm: MPI_Comm) -> c_int {
    finish("MPI_Barrier", channel(comm).and_then(|mut ch| algorithms::barrier(&mut ch).map_err(failed(comm))))
}

collective! {
    MPI_Bcast(buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) {
        let mut ch = channel(comm)?;
        let root = root_of(comm, root, ch.size())?;
        let data = typed(comm, buffer, count, datatype)?;
        let at_root = ch.rank() == root;
        // SAFETY: the caller's buffer holds the elements; only this call uses it.
        let mut landing = unsafe { data.landing(at_root) };
        algorithms::bcast(&mut ch, landing.bytes(), root).map_err(failed(comm))?;
        if !at_root {
            // SAFETY: as above.
            unsafe { data.store(&landing) };
        }
        Ok(())
    }
}

collective! {
    MPI_Reduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        op: MPI_Op,
        root: c_int,
        comm: MPI_Comm,
    ) {
        let mut ch = channel(comm)?;
        let root = root_of(comm, root, ch.size())?;
        let reduction = reduction_of(comm, op, datatype)?;
        let combine = |input: &[u8], inout: &mut [u8]| reduction.apply(input, inout);
        let element_size = reduction.element_size().max(1);
        if ch.rank() != root {
            let send = typed(comm, sendbuf, count, datatype)?;
            // SAFETY: the caller's send buffer holds the elements.
            let mut work = unsafe { send.packed() };
            return algorithms::reduce(&mut ch, &mut work, element_size, &combine, reduction.commutative(), root).map_err(failed(comm));
        }
        let recv = typed(comm, recvbuf, count, datatype)?;
        let in_place = is_in_place(sendbuf);
        // SAFETY: the caller's receive buffer holds the elements; only this call uses it.
        let mut landing = unsafe { recv.landing(in_place) };
        if !in_place {
            let send = typed(comm, sendbuf, count, datatype)?;
            // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
            unsafe { reduction_input(&send, landing.bytes()) };
        }
        algorithms::reduce(&mut ch, landing.bytes(), element_size, &combine, reduction.commutative(), root).map_err(failed(comm))?;
        // SAFETY: as above.
        unsafe { recv.store(&landing) };
        Ok(())
    }
}

collective!(MPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) => in_place_reduction(sendbuf, recvbuf, count, datatype, op, comm, ReduceKind::Allreduce));

collective!(MPI_Scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) => in_place_reduction(sendbuf, recvbuf, count, datatype, op, comm, ReduceKind::Scan));

collective!(MPI_Exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) => in_place_reduction(sendbuf, recvbuf, count, datatype, op, comm, ReduceKind::Exscan));

/// Which reduction [`in_place_reduction`] runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReduceKind {
    Allreduce,
    Scan,
    Exscan,
}

unsafe fn in_place_reduction(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, kind: ReduceKind) -> MpiResult<()> {
    let mut ch = channel(comm)?;
    let reduction = reduction_of(comm, op, datatype)?;
    let combine = |input: &[u8], inout: &mut [u8]| reduction.apply(input, inout);
    let element_size = reduction.element_size().max(1);
    let recv = typed(comm, recvbuf, count, datatype)?;
    let in_place = is_in_place(sendbuf);
    // SAFETY: the caller's receive buffer holds the elements; only this call uses it.
    let mut landing = unsafe { recv.landing(in_place) };
    if !in_place {
        let send = typed(comm, sendbuf, count, datatype)?;
        // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
        unsafe { reduction_input(&send, landing.bytes()) };
    }
    let data = landing.bytes();
    match kind {
        ReduceKind::Allreduce => algorithms::allreduce(&mut ch, data, element_size, &combine, reduction.commutative()),
        ReduceKind::Scan => algorithms::scan(&mut ch, data, element_size, &combine),
        ReduceKind::Exscan => algorithms::exscan(&mut ch, data, element_size, &combine),
    }
    .map_err(failed(comm))?;
    // SAFETY: as above.
    unsafe { recv.store(&landing) };
    Ok(())
}

collective!(
    MPI_Reduce_scatter_block(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcount: c_int,
        datatype: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) => reduce_scatter(sendbuf, recvbuf, Counts::Same(recvcount), datatype, op, comm)
);

collective!(
    MPI_Reduce_scatter(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        datatype: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) => reduce_scatter(sendbuf, recvbuf, Counts::PerRank(recvcounts), datatype, op, comm)
);

enum Counts {
    Same(c_int),
    PerRank(*const c_int),
}

unsafe fn reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, counts: Counts, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> MpiResult<()> {
    let mut ch = channel(comm)?;
    let (rank, size) = (ch.rank(), ch.size());
    let counts: Vec<usize> = match counts {
        Counts::Same(count) => vec![count_of(comm, count)?; size],
        Counts::PerRank(counts) if counts.is_null() => return Err(error(comm, MPI_ERR_ARG, "recvcounts is NULL")),
        Counts::PerRank(counts) => {
            // SAFETY: the caller passes one count per rank.
            let counts = unsafe { std::slice::from_raw_parts(counts, size) };
            counts.iter().map(|&count| count_of(comm, count)).collect::<MpiResult<_>>()?
        }
    };
    let total = counts.iter().try_fold(0usize, |sum, &count| sum.checked_add(count)).ok_or_else(|| error(comm, MPI_ERR_COUNT, "the counts' sum overflows"))?;
    let reduction = reduction_of(comm, op, datatype)?;
    let combine = |input: &[u8], inout: &mut [u8]| reduction.apply(input, inout);
    let input_buffer = if is_in_place(sendbuf) { recvbuf.cast_const() } else { sendbuf };
    let input = typed_elements(comm, input_buffer, total, datatype)?;
    // SAFETY: the input holds the sum of the counts in elements; the copy is taken before the
    // receive buffer (which it may be, in place) is written.
    let mut work = unsafe { input.packed() };
    let recv = typed_elements(comm, recvbuf, counts[rank], datatype)?;
    // SAFETY: the caller's receive buffer holds its count of elements; only this call uses it.
    let mut landing = unsafe { recv.landing(false) };
    let element_size = reduction.element_size().max(1);
    algorithms::reduce_scatter(&mut ch, &mut work, &counts, element_size, &combine, reduction.commutative(), landing.bytes()).map_err(failed(comm))?;
    // SAFETY: as above.
    unsafe { recv.store(&landing) };
    Ok(())
}

collective! {
    #[allow(clippy::too_many_arguments)]
    MPI_Gather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: MPI_Datatype,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: MPI_Datatype,
        root: c_int,
        comm: MPI_Comm,
    ) {
        let mut ch = channel(comm)?;
        let (rank, size) = (ch.rank(), ch.size());
        let root = root_of(comm, root, size)?;
        if rank != root {
            let send = typed(comm, sendbuf, sendcount, sendtype)?;
            // SAFETY: the caller's send buffer holds the elements.
            let mine = unsafe { send.read() };
            return algorithms::gather(&mut ch, Some(mine.as_ref()), &mut [], root).map_err(failed(comm));
        }
        let recv = typed_elements(comm, recvbuf, times(comm, count_of(comm, recvcount)?, size)?, recvtype)?;
        let in_place = is_in_place(sendbuf);
        // SAFETY: the caller's send buffer, unless in place, holds the elements and does not
        // overlap recvbuf.
        let mine = unsafe { own_block(comm, sendbuf, sendcount, sendtype, recv.packed_len / size)? };
        // SAFETY: as above.
        let mut landing = unsafe { recv.landing(in_place) };
        algorithms::gather(&mut ch, mine.as_deref(), landing.bytes(), root).map_err(failed(comm))?;
        // SAFETY: as above.
        unsafe { recv.store(&landing) };
        Ok(())
    }
}

collective! {
    #[allow(clippy::too_many_arguments)]
    MPI_Gatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: MPI_Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: MPI_Datatype,
        root: c_int,
        comm: MPI_Comm,
    ) {
        let mut ch = channel(comm)?;
        let (rank, size) = (ch.rank(), ch.size());
        let root = root_of(comm, root, size)?;
        if rank != root {
            let send = typed(comm, sendbuf, sendcount, sendtype)?;
            // SAFETY: the caller's send buffer holds the elements.
            let mine = unsafe { send.read() };
            return algorithms::gatherv(&mut ch, Some(mine.as_ref()), &mut [], &[], root).map_err(failed(comm));
        }
        // SAFETY: the caller passes one count and one displacement per rank.
        let recv = unsafe { spread(comm, recvbuf, recvcounts, displs, recvtype, size)? };
        let in_place = is_in_place(sendbuf);
        // SAFETY: the caller's send buffer, unless in place, holds the elements and does not
        // overlap recvbuf.
        let mine = unsafe { own_block(comm, sendbuf, sendcount, sendtype, recv.blocks[root].packed_len)? };
        // SAFETY: as above.
        let mut landing = unsafe { recv.landing(in_place.then_some(root)) };
        algorithms::gatherv(&mut ch, mine.as_deref(), landing.bytes(), &recv.ranges, root).map_err(failed(comm))?;
        // SAFETY: as above.
        unsafe { recv.store(&landing, in_place.then_some(root)) };
        Ok(())
    }
}

/// The receive side of MPI_Scatter(v) at one rank: where its block lands, or nothing at a root
/// that keeps its block in place (MPI_IN_PLACE).
struct ScatterTarget<'a> {
    recv: Option<Typed>,
    landing: Option<Landing<'a>>,
}

impl ScatterTarget<'_> {
    /// # Safety
    /// `recvbuf` must hold `recvcount` elements of `recvtype`, used by nothing else during the call.
    unsafe fn new(comm: MPI_Comm, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, in_place: bool) -> MpiResult<Self> {
        let recv = if in_place { None } else { Some(typed(comm, recvbuf, recvcount, recvtype)?) };
        // SAFETY: per the caller.
        let landing = recv.as_ref().map(|recv| unsafe { recv.landing(false) });
        Ok(ScatterTarget { recv, landing })
    }

    /// Packed bytes this rank expects, unless the block stays in place.
    fn packed_len(&self) -> Option<usize> {
        self.recv.as_ref().map(|recv| recv.packed_len)
    }

    fn bytes(&mut self) -> Option<&mut [u8]> {
        self.landing.as_mut().map(Landing::bytes)
    }

    /// Moves a staged block into the caller's elements.
    ///
    /// # Safety
    /// As for [`ScatterTarget::new`].
    unsafe fn finish(&self) {
        if let (Some(recv), Some(landing)) = (&self.recv, &self.landing) {
            // SAFETY: per the caller.
            unsafe { recv.store(landing) };
        }
    }
}

collective! {
    #[allow(clippy::too_many_arguments)]
    MPI_Scatter(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: MPI_Datatype,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: MPI_Datatype,
        root: c_int,
        comm: MPI_Comm,
    ) {
        let mut ch = channel(comm)?;
        let (rank, size) = (ch.rank(), ch.size());
        let root = root_of(comm, root, size)?;
        // SAFETY: the caller's receive buffer holds the elements; only this call uses it.
        let mut target = unsafe { ScatterTarget::new(comm, recvbuf, recvcount, recvtype, rank == root && is_in_place(recvbuf))? };
        if rank == root {
            let send = typed_elements(comm, sendbuf, times(comm, count_of(comm, sendcount)?, size)?, sendtype)?;
            if let Some(expected) = target.packed_len() {
                same_signature(comm, send.packed_len / size, expected)?;
            }
            // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
            let all = unsafe { send.read() };
            algorithms::scatter(&mut ch, &all, target.bytes(), root).map_err(failed(comm))?;
        } else {
            algorithms::scatter(&mut ch, &[], target.bytes(), root).map_err(failed(comm))?;
        }
        // SAFETY: as above.
        unsafe { target.finish() };
        Ok(())
    }
}

collective! {
    #[allow(clippy::too_many_arguments)]
    MPI_Scatterv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        displs: *const c_int,
        sendtype: MPI_Datatype,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: MPI_Datatype,
        root: c_int,
        comm: MPI_Comm,
    ) {
        let mut ch = channel(comm)?;
        let (rank, size) = (ch.rank(), ch.size());
        let root = root_of(comm, root, size)?;
        // SAFETY: the caller's receive buffer holds the elements; only this call uses it.
        let mut target = unsafe { ScatterTarget::new(comm, recvbuf, recvcount, recvtype, rank == root && is_in_place(recvbuf))? };
        if rank == root {
            // SAFETY: the caller passes one count and one displacement per rank.
            let send = unsafe { spread(comm, sendbuf, sendcounts, displs, sendtype, size)? };
            if let Some(expected) = target.packed_len() {
                same_signature(comm, send.blocks[root].packed_len, expected)?;
            }
            // SAFETY: the caller's send buffer holds the blocks and does not overlap recvbuf.
            let all = unsafe { send.read() };
            algorithms::scatterv(&mut ch, &all, &send.ranges, target.bytes(), root).map_err(failed(comm))?;
        } else {
            algorithms::scatterv(&mut ch, &[], &[], target.bytes(), root).map_err(failed(comm))?;
        }
        // SAFETY: as above.
        unsafe { target.finish() };
        Ok(())
    }
}

collective! {
    MPI_Allgather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: MPI_Datatype,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: MPI_Datatype,
        comm: MPI_Comm,
    ) {
        let mut ch = channel(comm)?;
        let size = ch.size();
        let recv = typed_elements(comm, recvbuf, times(comm, count_of(comm, recvcount)?, size)?, recvtype)?;
        let block = recv.packed_len / size;
        let in_place = is_in_place(sendbuf);
        // SAFETY: the caller's receive buffer holds the elements; only this call uses it.
        let mut landing = unsafe { recv.landing(in_place) };
        if in_place {
            let blocks: Vec<Range<usize>> = (0..size).map(|index| index * block..(index + 1) * block).collect();
            algorithms::allgatherv(&mut ch, None, landing.bytes(), &blocks).map_err(failed(comm))?;
        } else {
            let send = typed(comm, sendbuf, sendcount, sendtype)?;
            same_signature(comm, send.packed_len, block)?;
            // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
            let mine = unsafe { send.read() };
            algorithms::allgather(&mut ch, &mine, landing.bytes()).map_err(failed(comm))?;
        }
        // SAFETY: as above.
        unsafe { recv.store(&landing) };
        Ok(())
    }
}

collective! {
    #[allow(clippy::too_many_arguments)]
    MPI_Allgatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: MPI_Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: MPI_Datatype,
        comm: MPI_Comm,
    ) {
        let mut ch = channel(comm)?;
        let (rank, size) = (ch.rank(), ch.size());
        // SAFETY: the caller passes one count and one displacement per rank.
        let recv = unsafe { spread(comm, recvbuf, recvcounts, displs, recvtype, size)? };
        let in_place = is_in_place(sendbuf);
        // SAFETY: the caller's send buffer, unless in place, holds the elements and does not
        // overlap recvbuf.
        let mine = unsafe { own_block(comm, sendbuf, sendcount, sendtype, recv.blocks[rank].packed_len)? };
        // SAFETY: as above.
        let mut landing = unsafe { recv.landing(in_place.then_some(rank)) };
        algorithms::allgatherv(&mut ch, mine.as_deref(), landing.bytes(), &recv.ranges).map_err(failed(comm))?;
        // SAFETY: as above.
        unsafe { recv.store(&landing, in_place.then_some(rank)) };
        Ok(())
    }
}

collective! {
    MPI_Alltoall(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: MPI_Datatype,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: MPI_Datatype,
        comm: MPI_Comm,
    ) {
        let mut ch = channel(comm)?;
        let size = ch.size();
        let recv = typed_elements(comm, recvbuf, times(comm, count_of(comm, recvcount)?, size)?, recvtype)?;
        // In place, the data to send is copied out before the receive buffer is overwritten.
        let outgoing: Cow<[u8]> = if is_in_place(sendbuf) {
            // SAFETY: the caller's receive buffer holds the elements.
            Cow::Owned(unsafe { recv.read() }.into_owned())
        } else {
            let send = typed_elements(comm, sendbuf, times(comm, count_of(comm, sendcount)?, size)?, sendtype)?;
            same_signature(comm, send.packed_len, recv.packed_len)?;
            // SAFETY: the caller's send buffer holds the elements and does not overlap recvbuf.
            unsafe { send.read() }
        };
        // SAFETY: the caller's receive buffer holds the elements; only this call uses it.
        let mut landing = unsafe { recv.landing(false) };
        algorithms::alltoall(&mut ch, &outgoing, landing.bytes()).map_err(failed(comm))?;
        // SAFETY: as above.
        unsafe { recv.store(&landing) };
        Ok(())
    }
}

collective! {
    #[allow(clippy::too_many_arguments)]
    MPI_Alltoallv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        sdispls: *const c_int,
        sendtype: MPI_Datatype,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const c_int,
        recvtype: MPI_Datatype,
        comm: MPI_Comm,
    ) {
        let mut ch = channel(comm)?;
        let (rank, size) = (ch.rank(), ch.size());
        // SAFETY: the caller passes one count and one displacement per rank.
        let recv = unsafe { spread(comm, recvbuf, recvcounts, rdispls, recvtype, size)? };
        // In place, the data to send is copied out before the receive buffer is overwritten.
        let (outgoing, send_ranges): (Cow<[u8]>, Vec<Range<usize>>) = if is_in_place(sendbuf) {
            // SAFETY: the caller's receive buffer holds the blocks.
            (Cow::Owned(unsafe { recv.read() }.into_owned()), recv.ranges.clone())
        } else {
            // SAFETY: the caller passes one count and one displacement per rank.
            let send = unsafe { spread(comm, sendbuf, sendcounts, sdispls, sendtype, size)? };
            same_signature(comm, send.blocks[rank].packed_len, recv.blocks[rank].packed_len)?;
            // SAFETY: the caller's send buffer holds the blocks and does not overlap recvbuf.
            (unsafe { send.read() }, send.ranges)
        };
        // SAFETY: the caller's receive buffer holds the blocks; only this call uses it.
        let mut landing = unsafe { recv.landing(None) };
        algorithms::alltoallv(&mut ch, &outgoing, &send_ranges, landing.bytes(), &recv.ranges).map_err(failed(comm))?;
        // SAFETY: as above.
        unsafe { recv.store(&landing, None) };
        Ok(())
    }
}
