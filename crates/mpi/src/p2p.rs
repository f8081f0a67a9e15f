//! Point-to-point: sends and receives in every mode, probes, persistent requests.
//!
//! Contiguous data goes to the engine in place (zero copy); other datatypes are packed into a
//! temporary for sends, or received into one and unpacked when the request completes. Buffered
//! sends pack into the attached buffer instead ([`crate::bsend`]).

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::ptr::NonNull;
use std::sync::Arc;

use braid_engine::{SendMode, Source, TagSelector};

use crate::comm::{CommShared, TAG_UB};
use crate::consts::*;
use crate::datatype::{self, packed_bytes, DatatypeRef};
use crate::error::{error, finish, raise, MpiResult};
use crate::request::abi::completion_error;
use crate::request::{write_status, Completion, Operation, Pending, Persistent, Staging, Unpack, COMPLETED_SEND};
use crate::runtime::{self, engine_error, Runtime};

mod large;
mod sendrecv;

/// The count argument (an int, or a large count of the `_c` functions): non-negative.
pub fn check_count(comm: MPI_Comm, count: impl Into<MPI_Count>) -> MpiResult<usize> {
    let count: MPI_Count = count.into();
    usize::try_from(count).map_err(|_| error(comm, MPI_ERR_COUNT, format!("count {count} is negative")))
}

/// A send tag is 0..=MPI_TAG_UB; a receive may also use MPI_ANY_TAG.
pub fn check_tag(comm: MPI_Comm, tag: c_int, receiving: bool) -> MpiResult<TagSelector> {
    if receiving && tag == MPI_ANY_TAG {
        return Ok(TagSelector::Any);
    }
    if (0..=TAG_UB).contains(&tag) {
        Ok(TagSelector::Tag(tag))
    } else {
        Err(error(comm, MPI_ERR_TAG, format!("tag {tag} is outside 0..={TAG_UB}")))
    }
}

/// A peer is a rank of the communicator or MPI_PROC_NULL (None); a receive may use MPI_ANY_SOURCE.
pub fn check_peer(comm: MPI_Comm, peer: c_int, size: usize, receiving: bool) -> MpiResult<Option<Source>> {
    match peer {
        MPI_PROC_NULL => Ok(None),
        MPI_ANY_SOURCE if receiving => Ok(Some(Source::Any)),
        rank if rank >= 0 && (rank as usize) < size => Ok(Some(Source::Rank(rank as u32))),
        rank => Err(error(comm, MPI_ERR_RANK, format!("rank {rank} is not in a communicator of size {size}"))),
    }
}

/// A user buffer may be NULL only when there is no data or the datatype carries absolute addresses.
pub(crate) fn check_buffer(comm: MPI_Comm, buffer: *const u8, count: usize, datatype: MPI_Datatype) -> MpiResult<()> {
    if buffer.is_null() && count > 0 && (1..=BRAID_PREDEFINED_DATATYPE_LAST).contains(&datatype) {
        return Err(error(comm, MPI_ERR_BUFFER, "the buffer is NULL"));
    }
    Ok(())
}

/// The description of a committed datatype, held by the operation that uses it.
pub(crate) fn describe_datatype(comm: MPI_Comm, datatype: MPI_Datatype) -> MpiResult<DatatypeRef> {
    datatype::lookup_committed(datatype).map_err(|class| error(comm, class, format!("datatype {datatype} is not a valid committed datatype")))
}

/// The argument checks of a send or receive after its count and datatype; returns the engine
/// peer (None: MPI_PROC_NULL) and the tag selector.
fn check_envelope(shared: &CommShared, op: &Operation, count: usize) -> MpiResult<(Option<Source>, TagSelector)> {
    let receiving = op.send_mode.is_none();
    let tag = check_tag(op.comm, op.tag, receiving)?;
    let peer = check_peer(op.comm, op.peer, shared.peer_count(), receiving)?;
    check_buffer(op.comm, op.buffer, count, op.datatype)?;
    Ok((peer, tag))
}

/// The bytes at `buffer + offset`, lent to the engine.
///
/// # Safety
/// `buffer + offset` must be valid for `length` bytes until the request using the slice completes.
unsafe fn user_bytes(comm: MPI_Comm, buffer: *mut u8, offset: isize, length: usize) -> MpiResult<&'static mut [u8]> {
    if length == 0 {
        return Ok(&mut []);
    }
    let Some(start) = NonNull::new(buffer.wrapping_offset(offset)) else {
        return Err(error(comm, MPI_ERR_BUFFER, "the data starts at address 0"));
    };
    // SAFETY: per the caller, `start` is valid for `length` bytes for as long as the request needs it.
    Ok(unsafe { std::slice::from_raw_parts_mut(start.as_ptr(), length) })
}

/// Lends a staging vector's heap memory to the engine. Moving the Vec later does not move it.
///
/// # Safety
/// The Vec must be kept alive, unresized, until the request using the slice completes.
unsafe fn staging_bytes(staging: &mut [u8]) -> &'static mut [u8] {
    // SAFETY: per the caller, the heap block outlives the request.
    unsafe { std::slice::from_raw_parts_mut(staging.as_mut_ptr(), staging.len()) }
}

/// Starts `op` in the engine.
pub(crate) fn start(rt: &mut Runtime, op: &Operation) -> MpiResult<Pending> {
    rt.comms.get(op.comm)?;
    check_count(op.comm, op.count)?;
    let datatype = describe_datatype(op.comm, op.datatype)?;
    start_described(rt, op, &datatype)
}

/// Starts `op` with the description of its datatype at hand: a persistent request holds it,
/// since MPI lets the handle be freed while the request lives.
pub(crate) fn start_described(rt: &mut Runtime, op: &Operation, datatype: &DatatypeRef) -> MpiResult<Pending> {
    let comm = rt.comms.get(op.comm)?;
    let count = check_count(op.comm, op.count)?;
    let (peer, tag) = check_envelope(&comm.shared, op, count)?;
    let Some(peer) = peer else {
        return Ok(Pending::completed(op.comm, Completion::PROC_NULL));
    };
    let shared = &comm.shared;
    let context = shared.p2p_context;
    match op.send_mode {
        Some(mode) => {
            let Source::Rank(dest) = peer else { unreachable!("sends have a destination") };
            let job = shared.job_rank(dest);
            let tag = match tag {
                TagSelector::Tag(t) => t,
                TagSelector::Any => 0,
            };
            if mode == SendMode::Buffered {
                let session = comm.session;
                rt.bsend.send(&mut rt.engine, op, session, datatype, count, (job, tag, context))?;
                return Ok(Pending::completed(op.comm, Completion::SENT));
            }
            let (data, staging): (&'static [u8], Staging) = match datatype.contiguous_run(count) {
                // SAFETY: MPI requires the send buffer to stay valid and unmodified until completion.
                Some((offset, length)) => (unsafe { user_bytes(op.comm, op.buffer, offset, length)? }, Staging::None),
                None => {
                    let mut packed = vec![0u8; packed_bytes(op.comm, datatype, count)?];
                    // SAFETY: the user buffer holds `count` elements of the datatype.
                    unsafe { datatype.pack(count, op.buffer, &mut packed) };
                    // SAFETY: the Vec moves into the request's staging and lives until completion.
                    (unsafe { staging_bytes(&mut packed) }, Staging::Send(packed))
                }
            };
            let id = rt.engine.isend(data, job, tag, context, mode).map_err(|e| engine_error(op.comm, e))?;
            Ok(Pending { comm: op.comm, shared: None, engine: Some(id), staging, done: None, persistent: None, generalized: None, coming: None })
        }
        None => {
            let source = match peer {
                Source::Rank(rank) => Source::Rank(shared.job_rank(rank)),
                Source::Any => Source::Any,
            };
            // SAFETY: MPI requires the receive buffer to stay valid and untouched until completion.
            let (buffer, staging) = unsafe { receive_target(op, datatype, count)? };
            let id = rt.engine.irecv(buffer, source, tag, context).map_err(|e| engine_error(op.comm, e))?;
            Ok(Pending { comm: op.comm, shared: source_translation(shared), engine: Some(id), staging, done: None, persistent: None, generalized: None, coming: None })
        }
    }
}

/// Where a receive of `count` elements of `datatype` into `op.buffer` lands: the user's buffer
/// itself when the elements form one contiguous run, else a temporary unpacked on completion.
///
/// # Safety
/// `op.buffer` must have room for `count` elements of `datatype` until the receive completes.
pub(crate) unsafe fn receive_target(op: &Operation, datatype: &DatatypeRef, count: usize) -> MpiResult<(&'static mut [u8], Staging)> {
    if let Some((offset, length)) = datatype.contiguous_run(count) {
        // SAFETY: per the caller.
        return Ok((unsafe { user_bytes(op.comm, op.buffer, offset, length)? }, Staging::None));
    }
    let mut packed = vec![0u8; packed_bytes(op.comm, datatype, count)?];
    // SAFETY: the Vec moves into the request's staging and lives until completion.
    let lent = unsafe { staging_bytes(&mut packed) };
    let unpack = Unpack { staging: packed, datatype: datatype.clone(), count, destination: op.buffer };
    Ok((lent, Staging::Recv(Box::new(unpack))))
}

/// What a receive keeps to turn the job rank of its message's source into a communicator rank:
/// nothing when the two are the same (MPI_COMM_WORLD and its duplicates), which also saves two
/// atomic reference-count updates per receive.
#[inline]
pub(crate) fn source_translation(shared: &Arc<CommShared>) -> Option<Arc<CommShared>> {
    (!shared.ranks_are_job_ranks()).then(|| Arc::clone(shared))
}

/// The blocking calls' fast path covers the common, valid case: a gap-free predefined datatype, a
/// tag in range and a non-NULL buffer. Returns the user's bytes, or `None` to take the general
/// path (which also reports every error).
///
/// # Safety
/// `op.buffer` must hold `op.count` elements of `op.datatype` for as long as the operation runs.
#[inline]
unsafe fn dense_bytes(op: &Operation) -> Option<&'static mut [u8]> {
    let element = datatype::dense_predefined_size(op.datatype)?;
    let count = usize::try_from(op.count).ok()?;
    let tag_ok = (0..=TAG_UB).contains(&op.tag) || (op.send_mode.is_none() && op.tag == MPI_ANY_TAG);
    if !tag_ok || op.buffer.is_null() {
        return None;
    }
    // SAFETY: per the caller; element sizes are at most 32 bytes, so the product fits.
    Some(unsafe { std::slice::from_raw_parts_mut(op.buffer, element * count) })
}

/// The job rank of fast-path peer `peer`: a rank of the communicator, or `None`.
#[inline]
fn dense_job_rank(shared: &CommShared, peer: c_int) -> Option<u32> {
    let rank = u32::try_from(peer).ok().filter(|&rank| (rank as usize) < shared.peer_count())?;
    Some(shared.job_rank(rank))
}

/// The engine source and tag of a fast-path receive: `None` when the source is neither a rank of
/// the communicator nor MPI_ANY_SOURCE (MPI_PROC_NULL, or an error the general path reports).
#[inline]
fn dense_receive(shared: &CommShared, op: &Operation) -> Option<(Source, TagSelector)> {
    let source = match op.peer {
        MPI_ANY_SOURCE => Source::Any,
        peer => Source::Rank(dense_job_rank(shared, peer)?),
    };
    let tag = if op.tag == MPI_ANY_TAG { TagSelector::Any } else { TagSelector::Tag(op.tag) };
    Some((source, tag))
}

/// The send fast path of MPI_Send and MPI_Isend: an eager message sent at once, with no engine
/// request. False: nothing was sent and the general path runs.
///
/// # Safety
/// `op.buffer` must hold `op.count` elements of `op.datatype`.
#[inline]
unsafe fn send_eagerly_now(op: &Operation) -> bool {
    // SAFETY: per the caller.
    let Some(data) = (unsafe { dense_bytes(op) }) else { return false };
    runtime::with(|rt| {
        let Ok(comm) = rt.comms.get(op.comm) else { return Ok(false) };
        let Some(job) = dense_job_rank(&comm.shared, op.peer) else { return Ok(false) };
        Ok(rt.engine.try_send_now(data, job, op.tag, comm.shared.p2p_context).unwrap_or(false))
    })
    .unwrap_or(false)
}

/// MPI_Send's fast path (see [`send_eagerly_now`]).
///
/// # Safety
/// `buf` must hold `count` elements of `datatype`.
#[inline]
unsafe fn send_now(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> bool {
    let op = send_operation(buf, count, datatype, dest, tag, comm, SendMode::Standard);
    // SAFETY: per the caller.
    unsafe { send_eagerly_now(&op) }
}

/// MPI_Isend's fast path: the message sent at once is handed back as an already completed
/// request.
///
/// # Safety
/// `buf` must hold `count` elements of `datatype`; `request` must be NULL or writable.
#[inline]
unsafe fn isend_now(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> bool {
    if request.is_null() {
        return false;
    }
    let op = send_operation(buf, count, datatype, dest, tag, comm, SendMode::Standard);
    // SAFETY: per the caller.
    if !unsafe { send_eagerly_now(&op) } {
        return false;
    }
    // SAFETY: checked non-null; the caller's handle.
    unsafe { *request = COMPLETED_SEND };
    true
}

/// MPI_Irecv's fast path: the checks of [`dense_bytes`], and no datatype lookup. `Ok(false)`:
/// nothing was posted and the general path runs (and reports any argument error).
///
/// # Safety
/// `op.buffer` must have room for `op.count` elements of `op.datatype` until the receive
/// completes; `request` must be NULL or writable.
#[inline]
unsafe fn irecv_now(op: &Operation, request: *mut MPI_Request) -> MpiResult<bool> {
    if request.is_null() {
        return Ok(false);
    }
    // SAFETY: per the caller.
    let Some(buffer) = (unsafe { dense_bytes(op) }) else { return Ok(false) };
    runtime::with(|rt| {
        let Runtime { comms, engine, requests, .. } = rt;
        let Ok(comm) = comms.get(op.comm) else { return Ok(false) };
        let shared = &comm.shared;
        let Some((source, tag)) = dense_receive(shared, op) else { return Ok(false) };
        let id = engine.irecv(buffer, source, tag, shared.p2p_context).map_err(|e| engine_error(op.comm, e))?;
        let pending = Pending { comm: op.comm, shared: source_translation(shared), engine: Some(id), staging: Staging::None, done: None, persistent: None, generalized: None, coming: None };
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *request = requests.insert(pending) };
        Ok(true)
    })
}

/// MPI_Recv's fast path: posts straight to the engine and waits, with no MPI request.
fn receive_dense(op: &Operation, buffer: &'static mut [u8]) -> MpiResult<Completion> {
    runtime::with(|rt| {
        let Runtime { comms, engine, .. } = &mut *rt;
        // One lookup of the communicator, before the wait: after the message lands only the rank
        // translation is left. The context id is copied rather than the communicator's Arc
        // cloned: two atomic read-modify-writes are a noticeable part of a 0.15 us ping-pong.
        let shared = comms.get(op.comm).ok().map(|comm| &comm.shared);
        let Some((shared, (source, tag))) = shared.and_then(|shared| Some((shared, dense_receive(shared, op)?))) else {
            let mut pending = start(rt, op)?;
            return pending.wait(&mut rt.engine).map_err(|e| engine_error(op.comm, e));
        };
        let engine_error_here = |e| engine_error(op.comm, e);
        let id = engine.irecv(buffer, source, tag, shared.p2p_context).map_err(engine_error_here)?;
        let status = engine.wait(id).map_err(engine_error_here)?;
        let source = shared.rank_of_job(status.source);
        Ok(Completion {
            source: source.map_or(MPI_UNDEFINED, |rank| rank as c_int),
            tag: status.tag,
            count: status.count,
            cancelled: false,
            error: if status.truncated { MPI_ERR_TRUNCATE } else { MPI_SUCCESS },
        })
    })
}

/// Starts `op` and waits for it (the blocking calls).
fn run_blocking(op: &Operation) -> MpiResult<Completion> {
    runtime::with(|rt| {
        let mut pending = start(rt, op)?;
        pending.wait(&mut rt.engine).map_err(|e| engine_error(op.comm, e))
    })
}

fn send_operation(buf: *const c_void, count: impl Into<MPI_Count>, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, mode: SendMode) -> Operation {
    Operation { send_mode: Some(mode), buffer: buf.cast_mut().cast(), count: count.into(), datatype, peer: dest, tag, comm }
}

fn recv_operation(buf: *mut c_void, count: impl Into<MPI_Count>, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm) -> Operation {
    Operation { send_mode: None, buffer: buf.cast(), count: count.into(), datatype, peer: source, tag, comm }
}

fn blocking_send(function: &str, op: Operation) -> c_int {
    match run_blocking(&op) {
        Ok(completion) => completion_error(function, &completion, op.comm),
        Err(e) => raise(e.comm, function, e.class, &e.detail),
    }
}

/// Starts `op` and stores its request handle.
unsafe fn nonblocking(function: &str, op: Operation, request: *mut MPI_Request) -> c_int {
    let result = runtime::with(|rt| {
        if request.is_null() {
            return Err(error(op.comm, MPI_ERR_ARG, "request must not be NULL"));
        }
        let pending = start(rt, &op)?;
        let handle = rt.requests.insert(pending);
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *request = handle };
        Ok(())
    });
    finish(function, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Send(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
    // The fast path never waits, so it needs no threaded form.
    // SAFETY: MPI's rule for MPI_Send: `buf` holds `count` elements of `datatype`.
    if unsafe { send_now(buf, count, datatype, dest, tag, comm) } {
        return MPI_SUCCESS;
    }
    if crate::threaded::active() {
        // SAFETY: MPI_Send's arguments, passed on.
        return unsafe { crate::threaded::send(MPI_Isend, buf, count, datatype, dest, tag, comm) };
    }
    blocking_send("MPI_Send", send_operation(buf, count, datatype, dest, tag, comm, SendMode::Standard))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ssend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Ssend's arguments, passed on.
        return unsafe { crate::threaded::send(MPI_Issend, buf, count, datatype, dest, tag, comm) };
    }
    blocking_send("MPI_Ssend", send_operation(buf, count, datatype, dest, tag, comm, SendMode::Synchronous))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Rsend's arguments, passed on.
        return unsafe { crate::threaded::send(MPI_Irsend, buf, count, datatype, dest, tag, comm) };
    }
    blocking_send("MPI_Rsend", send_operation(buf, count, datatype, dest, tag, comm, SendMode::Ready))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Recv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Recv's arguments, passed on.
        return unsafe { crate::threaded::recv(buf, count, datatype, source, tag, comm, status) };
    }
    let op = recv_operation(buf, count, datatype, source, tag, comm);
    // SAFETY: MPI's rule for MPI_Recv: `buf` has room for `count` elements of `datatype`.
    let received = match unsafe { dense_bytes(&op) } {
        Some(bytes) => receive_dense(&op, bytes),
        None => run_blocking(&op),
    };
    match received {
        Ok(completion) => {
            // SAFETY: the caller's status (or MPI_STATUS_IGNORE).
            unsafe { write_status(status, &completion) };
            completion_error("MPI_Recv", &completion, comm)
        }
        Err(e) => raise(e.comm, "MPI_Recv", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Isend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: MPI's rules for MPI_Isend: `buf` holds `count` elements of `datatype`; `request` is
    // the caller's handle pointer.
    if unsafe { isend_now(buf, count, datatype, dest, tag, comm, request) } {
        return MPI_SUCCESS;
    }
    // SAFETY: `request` is the caller's handle pointer.
    unsafe { nonblocking("MPI_Isend", send_operation(buf, count, datatype, dest, tag, comm, SendMode::Standard), request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Issend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is the caller's handle pointer.
    unsafe { nonblocking("MPI_Issend", send_operation(buf, count, datatype, dest, tag, comm, SendMode::Synchronous), request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Irsend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is the caller's handle pointer.
    unsafe { nonblocking("MPI_Irsend", send_operation(buf, count, datatype, dest, tag, comm, SendMode::Ready), request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Bsend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Bsend's arguments, passed on.
        return unsafe { crate::threaded::send(MPI_Ibsend, buf, count, datatype, dest, tag, comm) };
    }
    blocking_send("MPI_Bsend", send_operation(buf, count, datatype, dest, tag, comm, SendMode::Buffered))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ibsend(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is the caller's handle pointer.
    unsafe { nonblocking("MPI_Ibsend", send_operation(buf, count, datatype, dest, tag, comm, SendMode::Buffered), request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Bsend_init(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is the caller's handle pointer.
    unsafe { persistent("MPI_Bsend_init", send_operation(buf, count, datatype, dest, tag, comm, SendMode::Buffered), request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    let op = recv_operation(buf, count, datatype, source, tag, comm);
    // SAFETY: MPI's rules for MPI_Irecv: `buf` has room for `count` elements of `datatype` until
    // the receive completes; `request` is the caller's handle pointer.
    match unsafe { irecv_now(&op, request) } {
        Ok(true) => MPI_SUCCESS,
        // SAFETY: `request` is the caller's handle pointer.
        Ok(false) => unsafe { nonblocking("MPI_Irecv", op, request) },
        Err(e) => finish("MPI_Irecv", Err(e)),
    }
}

/// Checks a probe's arguments; None for MPI_PROC_NULL.
pub(crate) fn probe_target(rt: &Runtime, source: c_int, tag: c_int, comm: MPI_Comm) -> MpiResult<Option<(Source, TagSelector, u32)>> {
    let shared = &rt.comms.get(comm)?.shared;
    let tag = check_tag(comm, tag, true)?;
    let Some(source) = check_peer(comm, source, shared.peer_count(), true)? else { return Ok(None) };
    let source = match source {
        Source::Rank(rank) => Source::Rank(shared.job_rank(rank)),
        Source::Any => Source::Any,
    };
    Ok(Some((source, tag, shared.p2p_context)))
}

pub(crate) fn probe_completion(rt: &Runtime, comm: MPI_Comm, status: braid_engine::Status) -> Completion {
    let source = rt.comms.get(comm).ok().and_then(|c| c.shared.rank_of_job(status.source)).map_or(MPI_UNDEFINED, |r| r as c_int);
    Completion { source, tag: status.tag, count: status.count, cancelled: false, error: MPI_SUCCESS }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iprobe(source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let outcome = runtime::with(|rt| {
        if flag.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "flag must not be NULL"));
        }
        let Some((source, tag, context)) = probe_target(rt, source, tag, comm)? else { return Ok(Some(Completion::PROC_NULL)) };
        let found = rt.engine.iprobe(source, tag, context).map_err(|e| engine_error(comm, e))?;
        Ok(found.map(|s| probe_completion(rt, comm, s)))
    });
    match outcome {
        Ok(found) => {
            // SAFETY: `flag` checked non-null; the caller's status.
            unsafe {
                *flag = c_int::from(found.is_some());
                if let Some(completion) = found {
                    write_status(status, &completion);
                }
            }
            MPI_SUCCESS
        }
        Err(e) => raise(e.comm, "MPI_Iprobe", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Probe(source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Probe's arguments, passed on.
        return unsafe { crate::threaded::probe(source, tag, comm, status) };
    }
    let outcome = runtime::with(|rt| {
        let Some((source, tag, context)) = probe_target(rt, source, tag, comm)? else { return Ok(Completion::PROC_NULL) };
        let status = rt.engine.wait_for(|engine| engine.iprobe(source, tag, context)).map_err(|e| engine_error(comm, e))?;
        Ok(probe_completion(rt, comm, status))
    });
    match outcome {
        Ok(completion) => {
            // SAFETY: the caller's status (or MPI_STATUS_IGNORE).
            unsafe { write_status(status, &completion) };
            MPI_SUCCESS
        }
        Err(e) => raise(e.comm, "MPI_Probe", e.class, &e.detail),
    }
}

/// Creates an inactive persistent request after checking its arguments; it keeps its
/// datatype's description.
unsafe fn persistent(function: &str, op: Operation, request: *mut MPI_Request) -> c_int {
    let result = runtime::with(|rt| {
        if request.is_null() {
            return Err(error(op.comm, MPI_ERR_ARG, "request must not be NULL"));
        }
        let shared = &rt.comms.get(op.comm)?.shared;
        let count = check_count(op.comm, op.count)?;
        let datatype = describe_datatype(op.comm, op.datatype)?;
        check_envelope(shared, &op, count)?;
        let pending = Pending { persistent: Some(Box::new(Persistent::Transfer { op, datatype })), ..Pending::inactive(op.comm) };
        let handle = rt.requests.insert(pending);
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *request = handle };
        Ok(())
    });
    finish(function, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Send_init(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is the caller's handle pointer.
    unsafe { persistent("MPI_Send_init", send_operation(buf, count, datatype, dest, tag, comm, SendMode::Standard), request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ssend_init(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is the caller's handle pointer.
    unsafe { persistent("MPI_Ssend_init", send_operation(buf, count, datatype, dest, tag, comm, SendMode::Synchronous), request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend_init(buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is the caller's handle pointer.
    unsafe { persistent("MPI_Rsend_init", send_operation(buf, count, datatype, dest, tag, comm, SendMode::Ready), request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_init(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is the caller's handle pointer.
    unsafe { persistent("MPI_Recv_init", recv_operation(buf, count, datatype, source, tag, comm), request) }
}

/// Activates one persistent request.
fn start_persistent(rt: &mut Runtime, request: MPI_Request) -> MpiResult<()> {
    let pending = rt.requests.get_mut(request)?;
    if pending.persistent.is_none() {
        return Err(error(pending.comm, MPI_ERR_REQUEST, format!("request {request} is not persistent")));
    }
    if pending.is_active() {
        return Err(error(pending.comm, MPI_ERR_REQUEST, format!("request {request} is already active")));
    }
    let comm = pending.comm;
    let persistent = pending.persistent.take().expect("checked above");
    let started = match &*persistent {
        Persistent::Transfer { op, datatype } => start_described(rt, op, datatype),
        Persistent::Collective(start) | Persistent::Partitioned { start, .. } => start(rt as &mut dyn std::any::Any).map(|outcome| Pending::collective(comm, outcome)),
    };
    let pending = rt.requests.get_mut(request)?;
    match started {
        Ok(started) => *pending = Pending { persistent: Some(persistent), ..started },
        Err(failure) => {
            pending.persistent = Some(persistent);
            return Err(failure);
        }
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Start(request: *mut MPI_Request) -> c_int {
    let result = runtime::with(|rt| {
        if request.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "request must not be NULL"));
        }
        // SAFETY: checked non-null; the caller's handle.
        start_persistent(rt, unsafe { *request })
    });
    finish("MPI_Start", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Startall(count: c_int, array_of_requests: *mut MPI_Request) -> c_int {
    let result = runtime::with(|rt| {
        let count = check_count(MPI_COMM_WORLD, count)?;
        if count > 0 && array_of_requests.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "array_of_requests must not be NULL"));
        }
        for index in 0..count {
            // SAFETY: MPI requires `count` handles.
            start_persistent(rt, unsafe { *array_of_requests.add(index) })?;
        }
        Ok(())
    });
    finish("MPI_Startall", result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_checked_with_the_right_class() {
        assert_eq!(check_tag(MPI_COMM_WORLD, 0, false).unwrap(), TagSelector::Tag(0));
        assert_eq!(check_tag(MPI_COMM_WORLD, TAG_UB, false).unwrap(), TagSelector::Tag(TAG_UB));
        assert_eq!(check_tag(MPI_COMM_WORLD, MPI_ANY_TAG, false).unwrap_err().class, MPI_ERR_TAG);
        assert_eq!(check_tag(MPI_COMM_WORLD, MPI_ANY_TAG, true).unwrap(), TagSelector::Any);
        assert_eq!(check_tag(MPI_COMM_WORLD, -5, true).unwrap_err().class, MPI_ERR_TAG);
    }

    #[test]
    fn peers_are_checked_with_the_right_class() {
        assert_eq!(check_peer(MPI_COMM_WORLD, 3, 4, false).unwrap(), Some(Source::Rank(3)));
        assert_eq!(check_peer(MPI_COMM_WORLD, MPI_PROC_NULL, 4, false).unwrap(), None);
        assert_eq!(check_peer(MPI_COMM_WORLD, 4, 4, false).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(check_peer(MPI_COMM_WORLD, MPI_ANY_SOURCE, 4, false).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(check_peer(MPI_COMM_WORLD, MPI_ANY_SOURCE, 4, true).unwrap(), Some(Source::Any));
        assert_eq!(check_peer(MPI_COMM_WORLD, -7, 4, true).unwrap_err().class, MPI_ERR_RANK);
    }

    #[test]
    fn counts_and_buffers_are_checked() {
        assert_eq!(check_count(MPI_COMM_WORLD, 5).unwrap(), 5);
        assert_eq!(check_count(MPI_COMM_WORLD, -1).unwrap_err().class, MPI_ERR_COUNT);
        assert_eq!(check_buffer(MPI_COMM_WORLD, std::ptr::null(), 1, MPI_INT).unwrap_err().class, MPI_ERR_BUFFER);
        assert!(check_buffer(MPI_COMM_WORLD, std::ptr::null(), 0, MPI_INT).is_ok());
        assert!(check_buffer(MPI_COMM_WORLD, std::ptr::null(), 1, BRAID_FIRST_DERIVED_DATATYPE).is_ok());
    }
}
