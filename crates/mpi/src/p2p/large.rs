//! Point-to-point's large-count forms (MPI 4.0): the `_c` sends and receives, whose counts are
//! MPI_Count. They make the same operations as the int forms; the blocking ones wait as the
//! non-blocking form's request would under MPI_THREAD_MULTIPLE.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use braid_engine::SendMode;

use super::{nonblocking, persistent, recv_operation, run_blocking, send_operation};
use crate::consts::*;
use crate::error::raise;
use crate::request::abi::completion_error;
use crate::request::{write_status, Operation};

/// A blocking send or receive: waited for in place, or through its request when several threads
/// may call MPI.
///
/// # Safety
/// `op` describes the caller's buffer as MPI requires; `status` is the caller's (or ignored).
unsafe fn blocking(function: &str, op: Operation, status: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: per the caller.
        return unsafe { crate::threaded::start_and_wait(|request| nonblocking(function, op, request), status) };
    }
    match run_blocking(&op) {
        Ok(completion) => {
            // SAFETY: the caller's status (or MPI_STATUS_IGNORE).
            unsafe { write_status(status, &completion) };
            completion_error(function, &completion, op.comm)
        }
        Err(e) => raise(e.comm, function, e.class, &e.detail),
    }
}

/// Defines the blocking, non-blocking and persistent `_c` sends of one mode.
macro_rules! sends {
    ($mode:expr, $blocking:ident, $nonblocking:ident, $persistent:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $blocking(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
            // SAFETY: MPI's rule: `buf` holds `count` elements of `datatype`.
            unsafe { blocking(stringify!($blocking), send_operation(buf, count, datatype, dest, tag, comm, $mode), MPI_STATUS_IGNORE) }
        }

        #[no_mangle]
        pub unsafe extern "C" fn $nonblocking(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: as above, until the request completes; `request` is the caller's handle.
            unsafe { nonblocking(stringify!($nonblocking), send_operation(buf, count, datatype, dest, tag, comm, $mode), request) }
        }

        #[no_mangle]
        pub unsafe extern "C" fn $persistent(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
            // SAFETY: `request` is the caller's handle pointer.
            unsafe { persistent(stringify!($persistent), send_operation(buf, count, datatype, dest, tag, comm, $mode), request) }
        }
    };
}

sends!(SendMode::Standard, MPI_Send_c, MPI_Isend_c, MPI_Send_init_c);
sends!(SendMode::Synchronous, MPI_Ssend_c, MPI_Issend_c, MPI_Ssend_init_c);
sends!(SendMode::Ready, MPI_Rsend_c, MPI_Irsend_c, MPI_Rsend_init_c);
sends!(SendMode::Buffered, MPI_Bsend_c, MPI_Ibsend_c, MPI_Bsend_init_c);

#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
    // SAFETY: MPI's rule: `buf` has room for `count` elements of `datatype`; the caller's status.
    unsafe { blocking("MPI_Recv_c", recv_operation(buf, count, datatype, source, tag, comm), status) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: as above, until the request completes; `request` is the caller's handle.
    unsafe { nonblocking("MPI_Irecv_c", recv_operation(buf, count, datatype, source, tag, comm), request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_init_c(buf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is the caller's handle pointer.
    unsafe { persistent("MPI_Recv_init_c", recv_operation(buf, count, datatype, source, tag, comm), request) }
}
