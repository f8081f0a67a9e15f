//! Data access (MPI 3.1 §13.4): reads and writes by explicit offset, individual file pointer and
//! shared file pointer; blocking, non-blocking (run on the helper thread, see `worker.rs`),
//! collective (`_all`, `_ordered`) and split collective (`_begin`/`_end`).
//!
//! Every access turns the program's buffer into the stream of visible bytes (packing a
//! non-contiguous datatype) and hands it to `data.rs` at the position its file pointer gives.
//! The collective forms need no exchange for their meaning (each process accesses its own part
//! of its own view), so they run as the independent forms do, with data sieving for strided reads;
//! the ordered ones agree on where each process's part goes.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::rc::Rc;
use std::sync::Arc;

use super::abi::{broadcast, check_collective, hint};
use super::collective;
use super::data::{self, Tuning};
use super::representation::Representation;
use super::worker::{self, TicketWatch};
use super::{file_error, finish_file, modes, system_error, with_file, OpenFile};
use crate::coll::drive::Outcome;
use crate::consts::*;
use crate::datatype::{self, DatatypeRef};
use crate::error::MpiResult;
use crate::request::{write_status, Completion, Pending};
use crate::runtime;

/// Where an access starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Position {
    /// At this many etypes into the view (the `_at` calls).
    Explicit(MPI_Offset),
    /// At the individual file pointer, which moves past the data.
    Individual,
    /// At the shared file pointer, which moves past the data.
    Shared,
    /// At the shared file pointer, the processes' parts in rank order (collective).
    Ordered,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

/// The kind of a split collective begun, to match its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SplitKind {
    ReadAt,
    WriteAt,
    ReadAll,
    WriteAll,
    ReadOrdered,
    WriteOrdered,
}

/// One access as the program asked for it.
#[derive(Clone, Copy)]
struct Request {
    position: Position,
    direction: Direction,
    buffer: *mut u8,
    count: MPI_Count,
    datatype: MPI_Datatype,
    /// A blocking `_all` call: every process of the file makes it, so it may aggregate.
    collective: bool,
}

/// What an access needs of its file, taken out of the table.
struct Prepared {
    file: Arc<std::fs::File>,
    path: std::path::PathBuf,
    view: Arc<super::view::View>,
    tuning: Tuning,
    /// Visible byte where the access starts.
    start: u64,
    /// File bytes it moves (as the program's buffer holds them packed, in a native view).
    bytes: u64,
    datatype: DatatypeRef,
    comm: MPI_Comm,
    /// The view's data representation, which converts the stream on its way unless native.
    representation: Representation,
    /// Bytes of one element of the datatype in the file.
    file_size: usize,
    /// How collective accesses aggregate.
    aggregation: Aggregation,
}

/// The aggregators of the file's collective accesses and when they aggregate.
#[derive(Clone)]
struct Aggregation {
    rank: c_int,
    size: c_int,
    aggregators: Vec<c_int>,
    /// Bytes of each aggregator's domain per round (`cb_buffer_size`).
    buffer: u64,
    read: Buffering,
    write: Buffering,
}

/// `romio_cb_read` and `romio_cb_write`: `automatic` aggregates when the accesses interleave.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Buffering {
    Enable,
    Disable,
    Automatic,
}

fn buffering(value: Option<&str>) -> Buffering {
    match value {
        Some("enable") => Buffering::Enable,
        Some("disable") => Buffering::Disable,
        _ => Buffering::Automatic,
    }
}

fn aggregation_of(file: &OpenFile) -> Aggregation {
    Aggregation {
        rank: file.rank,
        size: file.size,
        aggregators: file.aggregators.clone(),
        buffer: hint(&file.hints, "cb_buffer_size").and_then(|value| value.parse().ok()).unwrap_or(16 << 20),
        read: buffering(hint(&file.hints, "romio_cb_read")),
        write: buffering(hint(&file.hints, "romio_cb_write")),
    }
}

fn tuning_of(file: &OpenFile) -> Tuning {
    let sieving = hint(&file.hints, "romio_ds_read").is_none_or(|value| value != "disable");
    let sieve_bytes = if sieving { hint(&file.hints, "ind_rd_buffer_size").and_then(|v| v.parse().ok()).unwrap_or(4 << 20) } else { 0 };
    let sieve_write_bytes = if hint(&file.hints, "romio_ds_write") == Some("enable") { hint(&file.hints, "ind_wr_buffer_size").and_then(|v| v.parse().ok()).unwrap_or(512 << 10) } else { 0 };
    Tuning { atomic: file.atomic, sieve_bytes, sieve_write_bytes }
}

/// Checks an access against the file's mode and view and takes its position: the individual
/// pointer moves past the data now (a non-blocking access's too, as MPI says), the shared one
/// under its lock.
fn prepare(fh: MPI_File, request: &Request) -> MpiResult<Prepared> {
    if request.count < 0 {
        return Err(file_error(MPI_ERR_COUNT, format!("count {} is negative", request.count)));
    }
    let datatype = datatype::lookup_committed(request.datatype).map_err(|class| file_error(class, format!("datatype {} is not a committed datatype", request.datatype)))?;
    let representation = with_file(fh, |file| Ok(file.representation.clone()))?;
    let file_size = if representation.is_native() { datatype.size } else { representation.file_type(&datatype)?.size };
    let bytes = (request.count as u64).checked_mul(file_size as u64).ok_or_else(|| file_error(MPI_ERR_COUNT, "the data is larger than a file can hold"))?;
    let (prepared, shared) = with_file(fh, |file| {
        match request.direction {
            Direction::Read if !modes::can_read(file.amode) => return Err(file_error(MPI_ERR_ACCESS, "the file is open write-only")),
            Direction::Write if !modes::can_write(file.amode) => return Err(file_error(MPI_ERR_READ_ONLY, "the file is open read-only")),
            _ => {}
        }
        let sequential = file.amode & MPI_MODE_SEQUENTIAL != 0;
        if sequential && matches!(request.position, Position::Explicit(_) | Position::Individual) {
            return Err(file_error(MPI_ERR_UNSUPPORTED_OPERATION, "a file opened with MPI_MODE_SEQUENTIAL is accessed through the shared file pointer only"));
        }
        let etype_size = file.view.etype_size;
        if !bytes.is_multiple_of(etype_size) {
            return Err(file_error(MPI_ERR_TYPE, format!("{bytes} bytes are not a whole number of etypes of {etype_size} bytes")));
        }
        let etypes = bytes / etype_size;
        let start = match request.position {
            Position::Explicit(offset) => u64::try_from(offset).map_err(|_| file_error(MPI_ERR_ARG, format!("offset {offset} is negative")))? * etype_size,
            Position::Individual => {
                let at = file.pointer;
                file.pointer += etypes;
                at * etype_size
            }
            // Taken below, outside the table.
            Position::Shared | Position::Ordered => 0,
        };
        let prepared = Prepared {
            aggregation: aggregation_of(file),
            representation: representation.clone(),
            file_size,
            file: file.file.clone(),
            path: file.path.clone(),
            view: file.view.clone(),
            tuning: tuning_of(file),
            start,
            bytes,
            datatype: datatype.clone(),
            comm: file.comm,
        };
        Ok((prepared, (file.shared.clone(), etypes, etype_size)))
    })?;
    let (pointer, etypes, etype_size) = shared;
    let start = match request.position {
        Position::Shared => pointer.fetch_add(etypes).map_err(|failure| system_error("cannot move the shared file pointer of", &prepared.path, &failure))? * etype_size,
        Position::Ordered => ordered_start(&prepared, &pointer, etypes)? * etype_size,
        _ => prepared.start,
    };
    Ok(Prepared { start, ..prepared })
}

/// The ordered collectives: where this process's part starts, the parts in rank order from the
/// shared file pointer, which moves past all of them.
fn ordered_start(prepared: &Prepared, pointer: &super::shared_pointer::SharedPointer, etypes: u64) -> MpiResult<u64> {
    let comm = prepared.comm;
    let (mut before, mut total) = (0u64, 0u64);
    // SAFETY: one unsigned 64-bit integer each way on the file's private communicator.
    let (scanned, summed) = unsafe {
        (
            crate::coll::abi::MPI_Exscan((&etypes as *const u64).cast(), (&mut before as *mut u64).cast(), 1, MPI_UINT64_T, MPI_SUM, comm),
            crate::coll::abi::MPI_Allreduce((&etypes as *const u64).cast(), (&mut total as *mut u64).cast(), 1, MPI_UINT64_T, MPI_SUM, comm),
        )
    };
    check_collective(scanned, "order their parts")?;
    check_collective(summed, "order their parts")?;
    // Rank 0's exclusive scan is undefined; it moves the pointer past every part.
    let mut base = 0u64;
    if prepared.aggregation.rank == 0 {
        before = 0;
        base = pointer.fetch_add(total).map_err(|failure| system_error("cannot move the shared file pointer of", &prepared.path, &failure))?;
    }
    broadcast(comm, &mut base)?;
    Ok(base + before)
}

/// The program's data as the stream of visible bytes: its own memory when contiguous in a
/// native view, else a packed (and, outside native, converted) copy.
///
/// # Safety
/// `buffer` must hold `count` elements of the datatype.
unsafe fn outgoing<'a>(buffer: *const u8, count: usize, datatype: &DatatypeRef, handle: MPI_Datatype, bytes: u64, representation: &Representation) -> MpiResult<std::borrow::Cow<'a, [u8]>> {
    if let (true, Some((offset, len))) = (representation.is_native(), datatype.contiguous_run(count)) {
        // SAFETY: the caller's buffer holds the run.
        return Ok(std::borrow::Cow::Borrowed(unsafe { std::slice::from_raw_parts(buffer.wrapping_offset(offset), len) }));
    }
    // SAFETY: per the caller.
    Ok(std::borrow::Cow::Owned(unsafe { representation.encode(buffer, count, handle, datatype, bytes as usize) }?))
}

/// Puts the `got` bytes read into the program's buffer; returns the bytes that reached it in
/// memory, which the status counts.
///
/// # Safety
/// `buffer` must hold `count` elements of the datatype, writable.
unsafe fn deliver(buffer: *mut u8, datatype: &DatatypeRef, handle: MPI_Datatype, packed: &[u8], got: usize, representation: &Representation, file_size: usize) -> MpiResult<usize> {
    // SAFETY: per the caller.
    unsafe { representation.decode(buffer, handle, datatype, file_size, &packed[..got.min(packed.len())]) }
}

/// The bytes a status counts for `file_bytes` written in the file: as many in a native view,
/// else what the whole elements take in memory.
fn counted(prepared: &Prepared, file_bytes: u64) -> usize {
    if prepared.representation.is_native() {
        file_bytes as usize
    } else {
        (file_bytes as usize).checked_div(prepared.file_size).unwrap_or(0) * prepared.datatype.size
    }
}

/// A blocking access: its completion.
///
/// # Safety
/// `request.buffer` must hold `count` elements of the datatype (writable for reads).
unsafe fn blocking(fh: MPI_File, request: Request) -> MpiResult<Completion> {
    let prepared = prepare(fh, &request)?;
    let count = request.count as usize;
    if request.collective && !prepared.tuning.atomic {
        // SAFETY: per the caller.
        if let Some(completion) = unsafe { aggregated(&prepared, &request) }? {
            return Ok(completion);
        }
    }
    let (moved, count_bytes) = match request.direction {
        Direction::Write => {
            // SAFETY: per the caller.
            let stream = unsafe { outgoing(request.buffer, count, &prepared.datatype, request.datatype, prepared.bytes, &prepared.representation) }?;
            data::write(&prepared.file, &prepared.view, prepared.start, &stream, prepared.tuning).map_err(|failure| system_error("cannot write", &prepared.path, &failure))?;
            (prepared.bytes, counted(&prepared, prepared.bytes))
        }
        Direction::Read => match prepared.datatype.contiguous_run(count).filter(|_| prepared.representation.is_native()) {
            Some((offset, len)) => {
                // SAFETY: per the caller; the run is inside the buffer.
                let target = unsafe { std::slice::from_raw_parts_mut(request.buffer.wrapping_offset(offset), len) };
                let got = data::read(&prepared.file, &prepared.view, prepared.start, target, prepared.tuning).map_err(|failure| system_error("cannot read", &prepared.path, &failure))?;
                (got, got as usize)
            }
            None => {
                let mut packed = vec![0u8; prepared.bytes as usize];
                let got = data::read(&prepared.file, &prepared.view, prepared.start, &mut packed, prepared.tuning).map_err(|failure| system_error("cannot read", &prepared.path, &failure))?;
                // SAFETY: per the caller.
                let in_memory = unsafe { deliver(request.buffer, &prepared.datatype, request.datatype, &packed, got as usize, &prepared.representation, prepared.file_size) }?;
                (got, in_memory)
            }
        },
    };
    if request.direction == Direction::Read && request.position == Position::Individual && moved < prepared.bytes {
        // The individual pointer moves past what was read, not past what was asked for.
        let unread = (prepared.bytes - moved) / prepared.view.etype_size;
        with_file(fh, |file| {
            file.pointer -= unread;
            Ok(())
        })?;
    }
    Ok(Completion { count: count_bytes, ..Completion::EMPTY })
}

/// A blocking collective access through the aggregators, when the hints and the accesses' layout
/// call for it (the same answer on every process); `None`: each process accesses its own part.
///
/// # Safety
/// As [`blocking`].
unsafe fn aggregated(prepared: &Prepared, request: &Request) -> MpiResult<Option<Completion>> {
    let aggregation = &prepared.aggregation;
    let buffering = match request.direction {
        Direction::Read => aggregation.read,
        Direction::Write => aggregation.write,
    };
    if buffering == Buffering::Disable || aggregation.size < 2 {
        return Ok(None);
    }
    let segments = prepared.view.segment_list(prepared.start, prepared.bytes);
    let extents = collective::gather_extents(prepared.comm, aggregation.size as usize, &segments)?;
    if buffering == Buffering::Automatic && !collective::interleaved(&extents) {
        return Ok(None);
    }
    let plan = collective::Plan { comm: prepared.comm, rank: aggregation.rank, size: aggregation.size as usize, aggregators: &aggregation.aggregators, buffer: aggregation.buffer, extents: &extents };
    let count = request.count as usize;
    let moved = match request.direction {
        Direction::Write => {
            // SAFETY: per the caller.
            let stream = unsafe { outgoing(request.buffer, count, &prepared.datatype, request.datatype, prepared.bytes, &prepared.representation) }?;
            let class = plan.write(&prepared.file, &segments, &stream)?;
            if class != 0 {
                return Err(file_error(class, format!("cannot write {} (an aggregator failed)", prepared.path.display())));
            }
            counted(prepared, prepared.bytes)
        }
        Direction::Read => {
            let mut packed = vec![0u8; prepared.bytes as usize];
            let class = plan.read(&prepared.file, &segments, &mut packed)?;
            if class != 0 {
                return Err(file_error(class, format!("cannot read {} (an aggregator failed)", prepared.path.display())));
            }
            // What the file held: up to its end, as an independent read would have found.
            let size = prepared.file.metadata().map_err(|failure| system_error("cannot read the size of", &prepared.path, &failure))?.len();
            let got = prepared.view.visible_before(size).saturating_sub(prepared.start).min(prepared.bytes);
            // SAFETY: per the caller.
            unsafe { deliver(request.buffer, &prepared.datatype, request.datatype, &packed, got as usize, &prepared.representation, prepared.file_size) }?
        }
    };
    Ok(Some(Completion { count: moved, ..Completion::EMPTY }))
}

/// Runs a blocking access and writes its status.
///
/// # Safety
/// As [`blocking`]; `status` NULL, MPI_STATUS_IGNORE or writable.
unsafe fn run(name: &str, fh: MPI_File, request: Request, status: *mut MPI_Status) -> c_int {
    // SAFETY: per the caller.
    let result = unsafe { blocking(fh, request) }.map(|completion| {
        // SAFETY: per the caller.
        unsafe { write_status(status, &completion) };
    });
    finish_file(fh, name, result)
}

/// A non-blocking access: the system calls go to the helper thread; returns the request.
///
/// # Safety
/// As [`blocking`], the buffer untouched until the request completes.
unsafe fn start(fh: MPI_File, request: Request, handle: *mut MPI_Request) -> MpiResult<()> {
    if handle.is_null() {
        return Err(file_error(MPI_ERR_ARG, "request must not be NULL"));
    }
    let prepared = prepare(fh, &request)?;
    let count = request.count as usize;
    let reported = counted(&prepared, prepared.bytes) as u64;
    let Prepared { file, path, view, tuning, start, bytes, datatype, representation, file_size, .. } = prepared;
    let handle_type = request.datatype;
    let outcome = Rc::new(Outcome::default());
    let waker = runtime::with(|rt| Ok(rt.engine.waker()))?;
    let watch = match request.direction {
        Direction::Write => {
            // SAFETY: per the caller; the helper gets its own copy.
            let stream = unsafe { outgoing(request.buffer, count, &datatype, handle_type, bytes, &representation) }?.into_owned();
            let ticket = worker::submit(
                move || {
                    data::write(&file, &view, start, &stream, tuning)
                        .map(|()| (reported, Vec::new()))
                        .map_err(|failure| (modes::class_of(&failure), format!("cannot write {}: {failure}", path.display())))
                },
                waker,
            );
            TicketWatch { ticket, outcome: outcome.clone(), deliver: None }
        }
        Direction::Read => {
            let ticket = worker::submit(
                move || {
                    let mut packed = vec![0u8; bytes as usize];
                    data::read(&file, &view, start, &mut packed, tuning)
                        .map(|got| {
                            packed.truncate(got as usize);
                            (got, packed)
                        })
                        .map_err(|failure| (modes::class_of(&failure), format!("cannot read {}: {failure}", path.display())))
                },
                waker,
            );
            let buffer = request.buffer;
            // SAFETY: the program keeps the buffer until the request completes, which is when
            // this runs (on the thread that completes it).
            let deliver = Box::new(move |packed: &[u8]| unsafe { deliver(buffer, &datatype, handle_type, packed, packed.len(), &representation, file_size) }.map_err(|failure| failure.class));
            TicketWatch { ticket, outcome: outcome.clone(), deliver: Some(deliver) }
        }
    };
    let comm = with_file(fh, |file| Ok(file.comm))?;
    let made = runtime::with(|rt| {
        rt.engine.attach_agent(Box::new(watch));
        Ok(rt.requests.insert(Pending::collective(comm, outcome)))
    })?;
    // SAFETY: checked non-null.
    unsafe { *handle = made };
    Ok(())
}

/// Begins a split collective: the access runs now; its end hands over the status.
///
/// # Safety
/// As [`blocking`].
unsafe fn begin(name: &str, fh: MPI_File, kind: SplitKind, request: Request) -> c_int {
    let result = (|| {
        if with_file(fh, |file| Ok(file.split.is_some()))? {
            return Err(file_error(MPI_ERR_OTHER, "a split collective is already active on this file (end it first)"));
        }
        // SAFETY: per the caller.
        let outcome = unsafe { blocking(fh, request) };
        with_file(fh, |file| {
            file.split = Some((kind, outcome));
            Ok(())
        })
    })();
    finish_file(fh, name, result)
}

/// Ends a split collective begun with `kind`.
///
/// # Safety
/// `status` NULL, MPI_STATUS_IGNORE or writable.
unsafe fn end(name: &str, fh: MPI_File, kind: SplitKind, status: *mut MPI_Status) -> c_int {
    let result = with_file(fh, |file| match file.split.take() {
        Some((begun, outcome)) if begun == kind => outcome,
        Some((begun, outcome)) => {
            file.split = Some((begun, outcome));
            Err(file_error(MPI_ERR_OTHER, format!("the split collective active on this file is {begun:?}, not {kind:?}")))
        }
        None => Err(file_error(MPI_ERR_OTHER, "no split collective is active on this file")),
    })
    .map(|completion| {
        // SAFETY: per the caller.
        unsafe { write_status(status, &completion) };
    });
    finish_file(fh, name, result)
}

fn request(position: Position, direction: Direction, buffer: *const c_void, count: MPI_Count, datatype: MPI_Datatype) -> Request {
    Request { position, direction, buffer: buffer.cast_mut().cast(), count, datatype, collective: false }
}

/// A blocking `_all` access: it may go through the aggregators.
fn collective_request(position: Position, direction: Direction, buffer: *const c_void, count: MPI_Count, datatype: MPI_Datatype) -> Request {
    Request { collective: true, ..request(position, direction, buffer, count, datatype) }
}

/// Defines a blocking data access entry point: its name, `at offset` for an explicit offset, the
/// buffer's type and the count's (`c_int`, or `MPI_Count` for the `_c` forms); the request's
/// constructor with its position and direction.
macro_rules! blocking_access {
    ($name:ident(at $offset:ident, $buf:ty, $count:ty) => $make:ident($position:expr, $direction:expr)) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fh: MPI_File, $offset: MPI_Offset, buf: $buf, count: $count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
            // SAFETY: the caller's buffer and status, per MPI.
            unsafe { run(stringify!($name), fh, $make($position, $direction, buf as *const c_void, count.into(), datatype), status) }
        }
    };
    ($name:ident($buf:ty, $count:ty) => $make:ident($position:expr, $direction:expr)) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fh: MPI_File, buf: $buf, count: $count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
            // SAFETY: the caller's buffer and status, per MPI.
            unsafe { run(stringify!($name), fh, $make($position, $direction, buf as *const c_void, count.into(), datatype), status) }
        }
    };
}

/// Defines a non-blocking data access entry point (arguments as [`blocking_access`]).
macro_rules! nonblocking_access {
    ($name:ident(at $offset:ident, $buf:ty, $count:ty) => $position:expr, $direction:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fh: MPI_File, $offset: MPI_Offset, buf: $buf, count: $count, datatype: MPI_Datatype, handle: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's buffer and request, per MPI.
            let result = unsafe { start(fh, request($position, $direction, buf as *const c_void, count.into(), datatype), handle) };
            finish_file(fh, stringify!($name), result)
        }
    };
    ($name:ident($buf:ty, $count:ty) => $position:expr, $direction:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fh: MPI_File, buf: $buf, count: $count, datatype: MPI_Datatype, handle: *mut MPI_Request) -> c_int {
            // SAFETY: the caller's buffer and request, per MPI.
            let result = unsafe { start(fh, request($position, $direction, buf as *const c_void, count.into(), datatype), handle) };
            finish_file(fh, stringify!($name), result)
        }
    };
}

/// Defines a split collective's begin (arguments as [`blocking_access`], then its kind).
macro_rules! split_begin {
    ($begin:ident(at $offset:ident, $buf:ty, $count:ty) => $kind:expr, $position:expr, $direction:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $begin(fh: MPI_File, $offset: MPI_Offset, buf: $buf, count: $count, datatype: MPI_Datatype) -> c_int {
            // SAFETY: the caller's buffer, per MPI.
            unsafe { begin(stringify!($begin), fh, $kind, request($position, $direction, buf as *const c_void, count.into(), datatype)) }
        }
    };
    ($begin:ident($buf:ty, $count:ty) => $kind:expr, $position:expr, $direction:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $begin(fh: MPI_File, buf: $buf, count: $count, datatype: MPI_Datatype) -> c_int {
            // SAFETY: the caller's buffer, per MPI.
            unsafe { begin(stringify!($begin), fh, $kind, request($position, $direction, buf as *const c_void, count.into(), datatype)) }
        }
    };
}

/// Defines a split collective's end, which hands over the status of the begin of `$kind`.
macro_rules! split_end {
    ($end:ident($buf:ty) => $kind:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $end(fh: MPI_File, _buf: $buf, status: *mut MPI_Status) -> c_int {
            // SAFETY: the caller's status, per MPI.
            unsafe { end(stringify!($end), fh, $kind, status) }
        }
    };
}

blocking_access!(MPI_File_read_at(at offset, *mut c_void, c_int) => request(Position::Explicit(offset), Direction::Read));
blocking_access!(MPI_File_read_at_c(at offset, *mut c_void, MPI_Count) => request(Position::Explicit(offset), Direction::Read));
blocking_access!(MPI_File_read_at_all(at offset, *mut c_void, c_int) => collective_request(Position::Explicit(offset), Direction::Read));
blocking_access!(MPI_File_read_at_all_c(at offset, *mut c_void, MPI_Count) => collective_request(Position::Explicit(offset), Direction::Read));
blocking_access!(MPI_File_write_at(at offset, *const c_void, c_int) => request(Position::Explicit(offset), Direction::Write));
blocking_access!(MPI_File_write_at_c(at offset, *const c_void, MPI_Count) => request(Position::Explicit(offset), Direction::Write));
blocking_access!(MPI_File_write_at_all(at offset, *const c_void, c_int) => collective_request(Position::Explicit(offset), Direction::Write));
blocking_access!(MPI_File_write_at_all_c(at offset, *const c_void, MPI_Count) => collective_request(Position::Explicit(offset), Direction::Write));
blocking_access!(MPI_File_read(*mut c_void, c_int) => request(Position::Individual, Direction::Read));
blocking_access!(MPI_File_read_c(*mut c_void, MPI_Count) => request(Position::Individual, Direction::Read));
blocking_access!(MPI_File_read_all(*mut c_void, c_int) => collective_request(Position::Individual, Direction::Read));
blocking_access!(MPI_File_read_all_c(*mut c_void, MPI_Count) => collective_request(Position::Individual, Direction::Read));
blocking_access!(MPI_File_write(*const c_void, c_int) => request(Position::Individual, Direction::Write));
blocking_access!(MPI_File_write_c(*const c_void, MPI_Count) => request(Position::Individual, Direction::Write));
blocking_access!(MPI_File_write_all(*const c_void, c_int) => collective_request(Position::Individual, Direction::Write));
blocking_access!(MPI_File_write_all_c(*const c_void, MPI_Count) => collective_request(Position::Individual, Direction::Write));
blocking_access!(MPI_File_read_shared(*mut c_void, c_int) => request(Position::Shared, Direction::Read));
blocking_access!(MPI_File_read_shared_c(*mut c_void, MPI_Count) => request(Position::Shared, Direction::Read));
blocking_access!(MPI_File_write_shared(*const c_void, c_int) => request(Position::Shared, Direction::Write));
blocking_access!(MPI_File_write_shared_c(*const c_void, MPI_Count) => request(Position::Shared, Direction::Write));
blocking_access!(MPI_File_read_ordered(*mut c_void, c_int) => request(Position::Ordered, Direction::Read));
blocking_access!(MPI_File_read_ordered_c(*mut c_void, MPI_Count) => request(Position::Ordered, Direction::Read));
blocking_access!(MPI_File_write_ordered(*const c_void, c_int) => request(Position::Ordered, Direction::Write));
blocking_access!(MPI_File_write_ordered_c(*const c_void, MPI_Count) => request(Position::Ordered, Direction::Write));

nonblocking_access!(MPI_File_iread_at(at offset, *mut c_void, c_int) => Position::Explicit(offset), Direction::Read);
nonblocking_access!(MPI_File_iread_at_c(at offset, *mut c_void, MPI_Count) => Position::Explicit(offset), Direction::Read);
nonblocking_access!(MPI_File_iread_at_all(at offset, *mut c_void, c_int) => Position::Explicit(offset), Direction::Read);
nonblocking_access!(MPI_File_iread_at_all_c(at offset, *mut c_void, MPI_Count) => Position::Explicit(offset), Direction::Read);
nonblocking_access!(MPI_File_iwrite_at(at offset, *const c_void, c_int) => Position::Explicit(offset), Direction::Write);
nonblocking_access!(MPI_File_iwrite_at_c(at offset, *const c_void, MPI_Count) => Position::Explicit(offset), Direction::Write);
nonblocking_access!(MPI_File_iwrite_at_all(at offset, *const c_void, c_int) => Position::Explicit(offset), Direction::Write);
nonblocking_access!(MPI_File_iwrite_at_all_c(at offset, *const c_void, MPI_Count) => Position::Explicit(offset), Direction::Write);
nonblocking_access!(MPI_File_iread(*mut c_void, c_int) => Position::Individual, Direction::Read);
nonblocking_access!(MPI_File_iread_c(*mut c_void, MPI_Count) => Position::Individual, Direction::Read);
nonblocking_access!(MPI_File_iread_all(*mut c_void, c_int) => Position::Individual, Direction::Read);
nonblocking_access!(MPI_File_iread_all_c(*mut c_void, MPI_Count) => Position::Individual, Direction::Read);
nonblocking_access!(MPI_File_iwrite(*const c_void, c_int) => Position::Individual, Direction::Write);
nonblocking_access!(MPI_File_iwrite_c(*const c_void, MPI_Count) => Position::Individual, Direction::Write);
nonblocking_access!(MPI_File_iwrite_all(*const c_void, c_int) => Position::Individual, Direction::Write);
nonblocking_access!(MPI_File_iwrite_all_c(*const c_void, MPI_Count) => Position::Individual, Direction::Write);
nonblocking_access!(MPI_File_iread_shared(*mut c_void, c_int) => Position::Shared, Direction::Read);
nonblocking_access!(MPI_File_iread_shared_c(*mut c_void, MPI_Count) => Position::Shared, Direction::Read);
nonblocking_access!(MPI_File_iwrite_shared(*const c_void, c_int) => Position::Shared, Direction::Write);
nonblocking_access!(MPI_File_iwrite_shared_c(*const c_void, MPI_Count) => Position::Shared, Direction::Write);

split_begin!(MPI_File_read_at_all_begin(at offset, *mut c_void, c_int) => SplitKind::ReadAt, Position::Explicit(offset), Direction::Read);
split_begin!(MPI_File_read_at_all_begin_c(at offset, *mut c_void, MPI_Count) => SplitKind::ReadAt, Position::Explicit(offset), Direction::Read);
split_end!(MPI_File_read_at_all_end(*mut c_void) => SplitKind::ReadAt);
split_begin!(MPI_File_write_at_all_begin(at offset, *const c_void, c_int) => SplitKind::WriteAt, Position::Explicit(offset), Direction::Write);
split_begin!(MPI_File_write_at_all_begin_c(at offset, *const c_void, MPI_Count) => SplitKind::WriteAt, Position::Explicit(offset), Direction::Write);
split_end!(MPI_File_write_at_all_end(*const c_void) => SplitKind::WriteAt);
split_begin!(MPI_File_read_all_begin(*mut c_void, c_int) => SplitKind::ReadAll, Position::Individual, Direction::Read);
split_begin!(MPI_File_read_all_begin_c(*mut c_void, MPI_Count) => SplitKind::ReadAll, Position::Individual, Direction::Read);
split_end!(MPI_File_read_all_end(*mut c_void) => SplitKind::ReadAll);
split_begin!(MPI_File_write_all_begin(*const c_void, c_int) => SplitKind::WriteAll, Position::Individual, Direction::Write);
split_begin!(MPI_File_write_all_begin_c(*const c_void, MPI_Count) => SplitKind::WriteAll, Position::Individual, Direction::Write);
split_end!(MPI_File_write_all_end(*const c_void) => SplitKind::WriteAll);
split_begin!(MPI_File_read_ordered_begin(*mut c_void, c_int) => SplitKind::ReadOrdered, Position::Ordered, Direction::Read);
split_begin!(MPI_File_read_ordered_begin_c(*mut c_void, MPI_Count) => SplitKind::ReadOrdered, Position::Ordered, Direction::Read);
split_end!(MPI_File_read_ordered_end(*mut c_void) => SplitKind::ReadOrdered);
split_begin!(MPI_File_write_ordered_begin(*const c_void, c_int) => SplitKind::WriteOrdered, Position::Ordered, Direction::Write);
split_begin!(MPI_File_write_ordered_begin_c(*const c_void, MPI_Count) => SplitKind::WriteOrdered, Position::Ordered, Direction::Write);
split_end!(MPI_File_write_ordered_end(*const c_void) => SplitKind::WriteOrdered);
