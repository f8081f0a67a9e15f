//! The matched probe calls: MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use super::{invalid_message, Matched};
use crate::consts::*;
use crate::error::{error, raise, MpiResult};
use crate::p2p::{check_buffer, check_count, describe_datatype, probe_completion, probe_target, receive_target, source_translation};
use crate::request::abi::completion_error;
use crate::request::{write_status, Completion, Operation, Pending};
use crate::runtime::{self, engine_error, Runtime};

/// One matched probe: the message's handle and status, if one matches (MPI_MESSAGE_NO_PROC for
/// MPI_PROC_NULL).
fn improbe(rt: &mut Runtime, source: c_int, tag: c_int, comm: MPI_Comm) -> MpiResult<Option<(MPI_Message, Completion)>> {
    let Some((source, tag, context)) = probe_target(rt, source, tag, comm)? else {
        return Ok(Some((MPI_MESSAGE_NO_PROC, Completion::PROC_NULL)));
    };
    let Some((engine, status)) = rt.engine.improbe(source, tag, context).map_err(|e| engine_error(comm, e))? else { return Ok(None) };
    let completion = probe_completion(rt, comm, status);
    let shared = source_translation(&rt.comms.get(comm)?.shared);
    Ok(Some((rt.messages.insert(Matched { engine, comm, shared }), completion)))
}

/// Writes a found message's handle and status.
///
/// # Safety
/// `message` must be valid for writes; `status` NULL, MPI_STATUS_IGNORE or writable.
unsafe fn report_found(found: (MPI_Message, Completion), message: *mut MPI_Message, status: *mut MPI_Status) {
    // SAFETY: per the caller.
    unsafe {
        *message = found.0;
        write_status(status, &found.1);
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Improbe(source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
    let outcome = runtime::with(|rt| {
        if flag.is_null() || message.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "flag and message must not be NULL"));
        }
        improbe(rt, source, tag, comm)
    });
    match outcome {
        Ok(found) => {
            // SAFETY: `flag` and `message` checked non-null; the caller's status.
            unsafe {
                *flag = c_int::from(found.is_some());
                if let Some(found) = found {
                    report_found(found, message, status);
                }
            }
            MPI_SUCCESS
        }
        Err(e) => raise(e.comm, "MPI_Improbe", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Mprobe(source: c_int, tag: c_int, comm: MPI_Comm, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Mprobe's arguments, passed on.
        return unsafe { crate::threaded::mprobe(source, tag, comm, message, status) };
    }
    let outcome = runtime::with(|rt| {
        if message.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "message must not be NULL"));
        }
        if let Some(found) = improbe(rt, source, tag, comm)? {
            return Ok(found);
        }
        let (source, tag, context) = probe_target(rt, source, tag, comm)?.expect("MPI_PROC_NULL is found at once");
        let (engine, status) = rt.engine.wait_for(|engine| engine.improbe(source, tag, context)).map_err(|e| engine_error(comm, e))?;
        let completion = probe_completion(rt, comm, status);
        let shared = source_translation(&rt.comms.get(comm)?.shared);
        Ok((rt.messages.insert(Matched { engine, comm, shared }), completion))
    });
    match outcome {
        Ok(found) => {
            // SAFETY: `message` checked non-null; the caller's status.
            unsafe { report_found(found, message, status) };
            MPI_SUCCESS
        }
        Err(e) => raise(e.comm, "MPI_Mprobe", e.class, &e.detail),
    }
}

/// Starts the receive of `*message` into `buf`; the handle becomes MPI_MESSAGE_NULL. Arguments
/// are checked before the message is taken, so a failed call leaves it receivable.
///
/// # Safety
/// `message` must be NULL or point to a handle; `buf` must have room for `count` elements of
/// `datatype` until the receive completes.
unsafe fn start_matched(rt: &mut Runtime, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, message: *mut MPI_Message) -> MpiResult<Pending> {
    if message.is_null() {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "message must not be NULL"));
    }
    // SAFETY: checked non-null; the caller's handle.
    let handle = unsafe { *message };
    if handle == MPI_MESSAGE_NO_PROC {
        // SAFETY: as above.
        unsafe { *message = MPI_MESSAGE_NULL };
        return Ok(Pending::completed(MPI_COMM_WORLD, Completion::PROC_NULL));
    }
    let comm = rt.messages.get(handle).ok_or_else(|| invalid_message(handle))?.comm;
    let elements = check_count(comm, count)?;
    let described = describe_datatype(comm, datatype)?;
    let op = Operation { send_mode: None, buffer: buf.cast(), count, datatype, peer: MPI_ANY_SOURCE, tag: MPI_ANY_TAG, comm };
    check_buffer(comm, op.buffer, elements, datatype)?;
    // SAFETY: MPI requires the receive buffer to stay valid and untouched until completion.
    let (buffer, staging) = unsafe { receive_target(&op, &described, elements)? };
    let matched = rt.messages.take(handle).expect("looked up above");
    let id = rt.engine.imrecv(matched.engine, buffer).map_err(|e| engine_error(comm, e))?;
    // SAFETY: checked non-null above.
    unsafe { *message = MPI_MESSAGE_NULL };
    Ok(Pending { comm, shared: matched.shared, engine: Some(id), staging, done: None, persistent: None, generalized: None, coming: None })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Mrecv's arguments, passed on.
        return unsafe { crate::threaded::mrecv(buf, count, datatype, message, status) };
    }
    // SAFETY: MPI_Mrecv's arguments, passed on.
    unsafe { matched_receive("MPI_Mrecv", buf, count.into(), datatype, message, status) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Mrecv_c's arguments, passed on.
        return unsafe { crate::threaded::start_and_wait(|request| MPI_Imrecv_c(buf, count, datatype, message, request), status) };
    }
    // SAFETY: MPI_Mrecv_c's arguments, passed on.
    unsafe { matched_receive("MPI_Mrecv_c", buf, count, datatype, message, status) }
}

/// MPI_Mrecv(_c) below MPI_THREAD_MULTIPLE: the receive, waited for at once.
///
/// # Safety
/// MPI_Mrecv's arguments.
unsafe fn matched_receive(function: &str, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: the caller's arguments, passed on.
        let mut pending = unsafe { start_matched(rt, buf, count, datatype, message)? };
        let comm = pending.comm;
        let completion = pending.wait(&mut rt.engine).map_err(|e| engine_error(comm, e))?;
        Ok((completion, comm))
    });
    match outcome {
        Ok((completion, comm)) => {
            // SAFETY: the caller's status (or MPI_STATUS_IGNORE).
            unsafe { write_status(status, &completion) };
            completion_error(function, &completion, comm)
        }
        Err(e) => raise(e.comm, function, e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, message: *mut MPI_Message, request: *mut MPI_Request) -> c_int {
    // SAFETY: MPI_Imrecv's arguments, passed on.
    unsafe { matched_nonblocking("MPI_Imrecv", buf, count.into(), datatype, message, request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, message: *mut MPI_Message, request: *mut MPI_Request) -> c_int {
    // SAFETY: MPI_Imrecv_c's arguments, passed on.
    unsafe { matched_nonblocking("MPI_Imrecv_c", buf, count, datatype, message, request) }
}

/// MPI_Imrecv(_c).
///
/// # Safety
/// MPI_Imrecv's arguments.
unsafe fn matched_nonblocking(function: &str, buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, message: *mut MPI_Message, request: *mut MPI_Request) -> c_int {
    let outcome = runtime::with(|rt| {
        if request.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "request must not be NULL"));
        }
        // SAFETY: the caller's arguments, passed on.
        let pending = unsafe { start_matched(rt, buf, count, datatype, message)? };
        let handle = rt.requests.insert(pending);
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *request = handle };
        Ok(())
    });
    crate::error::finish(function, outcome)
}
