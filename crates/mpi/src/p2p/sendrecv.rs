//! Send-receive: MPI_Sendrecv and MPI_Sendrecv_replace, and their non-blocking forms, whose one
//! request completes when both halves have.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use braid_engine::SendMode;

use super::{check_buffer, check_count, describe_datatype, recv_operation, send_operation, start};
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

/// MPI_Sendrecv(_c): the exchange, waited for in place, or through its request when several
/// threads may call MPI.
///
/// # Safety
/// The operations describe the caller's buffers as MPI requires; `status` is the caller's.
unsafe fn sendrecv(function: &str, send: Operation, receive: Operation, outgoing: Option<Vec<u8>>, status: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: per the caller.
        return unsafe { crate::threaded::start_and_wait(|request| nonblocking_exchange(function, send, receive, outgoing, request), status) };
    }
    // The packed copy (MPI_Sendrecv_replace) lives until the exchange has ended.
    let _outgoing = outgoing;
    finish_exchange(function, send.comm, exchange(&send, &receive), status)
}

/// The send of a packed copy of `count` elements at `buf` and the receive into `buf`: what
/// MPI_Sendrecv_replace and its kin exchange, with the copy.
#[allow(clippy::too_many_arguments)]
fn replace_operations(
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
) -> MpiResult<(Operation, Operation, Vec<u8>)> {
    let outgoing = packed_copy(buf, count, datatype, comm)?;
    let send = send_operation(outgoing.as_ptr().cast(), outgoing.len() as MPI_Count, MPI_BYTE, dest, sendtag, comm, SendMode::Standard);
    let receive = recv_operation(buf, count, datatype, source, recvtag, comm);
    Ok((send, receive, outgoing))
}

/// Defines MPI_Sendrecv or MPI_Sendrecv_c, and the non-blocking form, for counts of type `$count`.
macro_rules! send_receive {
    ($count:ty, $blocking:ident, $nonblocking:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $blocking(
            sendbuf: *const c_void,
            sendcount: $count,
            sendtype: MPI_Datatype,
            dest: c_int,
            sendtag: c_int,
            recvbuf: *mut c_void,
            recvcount: $count,
            recvtype: MPI_Datatype,
            source: c_int,
            recvtag: c_int,
            comm: MPI_Comm,
            status: *mut MPI_Status,
        ) -> c_int {
            let send = send_operation(sendbuf, sendcount, sendtype, dest, sendtag, comm, SendMode::Standard);
            let receive = recv_operation(recvbuf, recvcount, recvtype, source, recvtag, comm);
            // SAFETY: MPI's rules for the buffers; the caller's status.
            unsafe { sendrecv(stringify!($blocking), send, receive, None, status) }
        }

        #[no_mangle]
        pub unsafe extern "C" fn $nonblocking(
            sendbuf: *const c_void,
            sendcount: $count,
            sendtype: MPI_Datatype,
            dest: c_int,
            sendtag: c_int,
            recvbuf: *mut c_void,
            recvcount: $count,
            recvtype: MPI_Datatype,
            source: c_int,
            recvtag: c_int,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            let send = send_operation(sendbuf, sendcount, sendtype, dest, sendtag, comm, SendMode::Standard);
            let receive = recv_operation(recvbuf, recvcount, recvtype, source, recvtag, comm);
            // SAFETY: the buffers stay valid until completion; `request` is the caller's.
            unsafe { nonblocking_exchange(stringify!($nonblocking), send, receive, None, request) }
        }
    };
}

send_receive!(c_int, MPI_Sendrecv, MPI_Isendrecv);
send_receive!(MPI_Count, MPI_Sendrecv_c, MPI_Isendrecv_c);

/// Defines MPI_Sendrecv_replace or MPI_Sendrecv_replace_c, and the non-blocking form.
macro_rules! send_receive_replace {
    ($count:ty, $blocking:ident, $nonblocking:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $blocking(
            buf: *mut c_void,
            count: $count,
            datatype: MPI_Datatype,
            dest: c_int,
            sendtag: c_int,
            source: c_int,
            recvtag: c_int,
            comm: MPI_Comm,
            status: *mut MPI_Status,
        ) -> c_int {
            match replace_operations(buf, count.into(), datatype, dest, sendtag, source, recvtag, comm) {
                // SAFETY: the packed copy is sent while `buf` receives; the caller's status.
                Ok((send, receive, outgoing)) => unsafe { sendrecv(stringify!($blocking), send, receive, Some(outgoing), status) },
                Err(e) => raise(e.comm, stringify!($blocking), e.class, &e.detail),
            }
        }

        #[no_mangle]
        pub unsafe extern "C" fn $nonblocking(
            buf: *mut c_void,
            count: $count,
            datatype: MPI_Datatype,
            dest: c_int,
            sendtag: c_int,
            source: c_int,
            recvtag: c_int,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            match replace_operations(buf, count.into(), datatype, dest, sendtag, source, recvtag, comm) {
                // SAFETY: the packed copy moves into the request (its heap bytes stay put) and
                // `buf` stays valid until completion; `request` is the caller's.
                Ok((send, receive, outgoing)) => unsafe { nonblocking_exchange(stringify!($nonblocking), send, receive, Some(outgoing), request) },
                Err(e) => raise(e.comm, stringify!($nonblocking), e.class, &e.detail),
            }
        }
    };
}

send_receive_replace!(c_int, MPI_Sendrecv_replace, MPI_Isendrecv_replace);
send_receive_replace!(MPI_Count, MPI_Sendrecv_replace_c, MPI_Isendrecv_replace_c);

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

/// A packed copy of `count` elements of `datatype` at `buf`: what a send-receive in place sends.
fn packed_copy(buf: *const c_void, count: impl Into<MPI_Count>, datatype: MPI_Datatype, comm: MPI_Comm) -> MpiResult<Vec<u8>> {
    let elements = check_count(comm, count)?;
    let described = describe_datatype(comm, datatype)?;
    check_buffer(comm, buf.cast(), elements, datatype)?;
    let mut outgoing = vec![0u8; packed_bytes(comm, &described, elements)?];
    // SAFETY: the user buffer holds `count` elements of the datatype.
    unsafe { described.pack(elements, buf.cast(), &mut outgoing) };
    Ok(outgoing)
}
