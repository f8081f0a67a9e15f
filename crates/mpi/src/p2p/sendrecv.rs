//! Send-receive: MPI_Sendrecv and MPI_Sendrecv_replace, and their non-blocking forms, whose one
//! request completes when both halves have.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use braid_engine::SendMode;

use super::{check_buffer, check_count, describe_datatype, recv_operation, send_operation, start, MPI_Isend};
use crate::consts::*;
use crate::datatype::packed_bytes;
use crate::error::{error, finish, raise, MpiResult};
use crate::request::abi::completion_error;
use crate::request::{write_status, Completion, Operation, Pending, Staging};
use crate::runtime::{self, engine_error};

/// Receives `receive` while sending `send`; the receive is posted first so that a pairwise
/// exchange never deadlocks.
fn exchange(send: &Operation, receive: &Operation) -> MpiResult<(Completion, Completion)> {
    runtime::with(|rt| {
        let mut incoming = start(rt, receive)?;
        let mut outgoing = match start(rt, send) {
            Ok(pending) => pending,
            Err(e) => {
                if let Some(id) = incoming.engine {
                    rt.engine.cancel(id);
                }
                let _ = incoming.wait(&mut rt.engine);
                return Err(e);
            }
        };
        let received = incoming.wait(&mut rt.engine).map_err(|e| engine_error(receive.comm, e))?;
        let sent = outgoing.wait(&mut rt.engine).map_err(|e| engine_error(send.comm, e))?;
        Ok((received, sent))
    })
}

fn finish_exchange(function: &str, comm: MPI_Comm, outcome: MpiResult<(Completion, Completion)>, status: *mut MPI_Status) -> c_int {
    match outcome {
        Ok((received, sent)) => {
            // SAFETY: the caller's status (or MPI_STATUS_IGNORE).
            unsafe { write_status(status, &received) };
            match completion_error(function, &sent, comm) {
                MPI_SUCCESS => completion_error(function, &received, comm),
                failed => failed,
            }
        }
        Err(e) => raise(e.comm, function, e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Sendrecv's arguments, passed on.
        return unsafe { crate::threaded::sendrecv(MPI_Isend, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, status) };
    }
    let send = send_operation(sendbuf, sendcount, sendtype, dest, sendtag, comm, SendMode::Standard);
    let receive = recv_operation(recvbuf, recvcount, recvtype, source, recvtag, comm);
    finish_exchange("MPI_Sendrecv", comm, exchange(&send, &receive), status)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let outgoing = match packed_copy(buf, count, datatype, comm) {
        Ok(outgoing) => outgoing,
        Err(e) => return raise(e.comm, "MPI_Sendrecv_replace", e.class, &e.detail),
    };
    let byte_count = outgoing.len() as c_int;
    if crate::threaded::active() {
        // SAFETY: the packed copy is sent while `buf` receives, as MPI_Sendrecv_replace does.
        return unsafe { crate::threaded::sendrecv(MPI_Isend, outgoing.as_ptr().cast(), byte_count, MPI_BYTE, dest, sendtag, buf, count, datatype, source, recvtag, comm, status) };
    }
    let send = send_operation(outgoing.as_ptr().cast(), byte_count, MPI_BYTE, dest, sendtag, comm, SendMode::Standard);
    let receive = recv_operation(buf, count, datatype, source, recvtag, comm);
    finish_exchange("MPI_Sendrecv_replace", comm, exchange(&send, &receive), status)
}

/// Starts `receive` and then `send` as one request (MPI_Isendrecv); `outgoing` is the packed copy
/// an MPI_Isendrecv_replace sends, kept until the send completes.
unsafe fn nonblocking_exchange(function: &str, send: Operation, receive: Operation, outgoing: Option<Vec<u8>>, request: *mut MPI_Request) -> c_int {
    let result = runtime::with(|rt| {
        if request.is_null() {
            return Err(error(send.comm, MPI_ERR_ARG, "request must not be NULL"));
        }
        let incoming = start(rt, &receive)?;
        let mut outgoing_half = match start(rt, &send) {
            Ok(pending) => pending,
            Err(e) => {
                let mut incoming = incoming;
                incoming.cancel(&mut rt.engine);
                let _ = incoming.wait(&mut rt.engine);
                return Err(e);
            }
        };
        if let Some(copy) = outgoing {
            if outgoing_half.engine.is_some() {
                outgoing_half.staging = Staging::Send(copy);
            }
        }
        let handle = rt.requests.insert(Pending::exchange(send.comm, incoming, outgoing_half));
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *request = handle };
        Ok(())
    });
    finish(function, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let send = send_operation(sendbuf, sendcount, sendtype, dest, sendtag, comm, SendMode::Standard);
    let receive = recv_operation(recvbuf, recvcount, recvtype, source, recvtag, comm);
    // SAFETY: MPI_Isendrecv's buffers stay valid until completion; `request` is the caller's.
    unsafe { nonblocking_exchange("MPI_Isendrecv", send, receive, None, request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let outgoing = match packed_copy(buf, count, datatype, comm) {
        Ok(outgoing) => outgoing,
        Err(e) => return raise(e.comm, "MPI_Isendrecv_replace", e.class, &e.detail),
    };
    let send = send_operation(outgoing.as_ptr().cast(), outgoing.len() as c_int, MPI_BYTE, dest, sendtag, comm, SendMode::Standard);
    let receive = recv_operation(buf, count, datatype, source, recvtag, comm);
    // SAFETY: the packed copy moves into the request (its heap bytes stay put) and `buf` stays
    // valid until completion; `request` is the caller's.
    unsafe { nonblocking_exchange("MPI_Isendrecv_replace", send, receive, Some(outgoing), request) }
}

/// A packed copy of `count` elements of `datatype` at `buf`: what a send-receive in place sends.
/// At most 2 GiB, the most one send's count can name.
fn packed_copy(buf: *const c_void, count: c_int, datatype: MPI_Datatype, comm: MPI_Comm) -> MpiResult<Vec<u8>> {
    let elements = check_count(comm, count)?;
    let described = describe_datatype(comm, datatype)?;
    check_buffer(comm, buf.cast(), elements, datatype)?;
    let mut outgoing = vec![0u8; packed_bytes(comm, &described, elements)?];
    if c_int::try_from(outgoing.len()).is_err() {
        return Err(error(comm, MPI_ERR_COUNT, "the message is larger than 2 GiB"));
    }
    // SAFETY: the user buffer holds `count` elements of the datatype.
    unsafe { described.pack(elements, buf.cast(), &mut outgoing) };
    Ok(outgoing)
}
