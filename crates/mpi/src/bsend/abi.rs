//! The attached buffers' entry points: MPI_Buffer_attach and MPI_Buffer_detach (the process's
//! buffer), MPI 4.1's MPI_Comm_attach_buffer and MPI_Session_attach_buffer with their detach
//! calls, and the flushes (MPI_Buffer_flush, MPI_Comm_flush_buffer, MPI_Session_flush_buffer and
//! their non-blocking forms), over the process's [`super::BsendBuffers`].

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::rc::Rc;

use super::Scope;
use crate::coll::drive::Outcome;
use crate::consts::*;
use crate::error::{engine_error, error, finish, MpiResult};
use crate::request::Pending;
use crate::runtime::{self, Runtime};
use crate::session::abi::finish_on_session;

/// Checks that `scope`'s communicator or session exists; the communicator errors go to.
fn check_scope(rt: &Runtime, scope: Scope) -> MpiResult<MPI_Comm> {
    match scope {
        Scope::Process => Ok(MPI_COMM_WORLD),
        Scope::Comm(comm) => rt.comms.get(comm).map(|_| comm),
        Scope::Session(session) => rt.sessions.get(session).map(|_| MPI_COMM_SELF),
    }
}

/// Reports on the session's handler for a session's buffer, as every session call does.
fn finish_scope(function: &str, scope: Scope, result: MpiResult<()>) -> c_int {
    match scope {
        Scope::Session(session) => finish_on_session(function, session, result),
        _ => finish(function, result),
    }
}

fn attach(function: &str, scope: Scope, buffer: *mut c_void, size: impl Into<MPI_Count>) -> c_int {
    let result = runtime::with(|rt| {
        let comm = check_scope(rt, scope)?;
        rt.bsend.attach(scope, comm, buffer.cast(), size)
    });
    finish_scope(function, scope, result)
}

/// The detach calls: wait for the buffer's messages, then hand back its address and size, which
/// `store_size` writes.
///
/// # Safety
/// `buffer_addr` must be NULL or the address of the caller's `void *`.
unsafe fn detach(function: &str, scope: Scope, buffer_addr: *mut c_void, size_missing: bool, store_size: impl FnOnce(usize) -> MpiResult<()>) -> c_int {
    let result = runtime::with(|rt| {
        let comm = check_scope(rt, scope)?;
        if buffer_addr.is_null() || size_missing {
            return Err(error(comm, MPI_ERR_ARG, "buffer_addr and size must not be NULL"));
        }
        let (base, bytes) = rt.bsend.detach(scope, comm, &mut rt.engine)?;
        // SAFETY: checked non-null; MPI passes the address of the caller's `void *`.
        unsafe { *buffer_addr.cast::<*mut c_void>() = base.cast() };
        store_size(bytes)
    });
    finish_scope(function, scope, result)
}

/// Writes a detached buffer's size into an int.
///
/// # Safety
/// `size` must be valid for a write.
unsafe fn store_int(size: *mut c_int, bytes: usize, comm: MPI_Comm) -> MpiResult<()> {
    // A buffer attached with a _c call may be larger than an int holds.
    let value = c_int::try_from(bytes).map_err(|_| error(comm, MPI_ERR_VALUE_TOO_LARGE, format!("the buffer's {bytes} bytes do not fit in an int: use the _c form")))?;
    // SAFETY: per the caller.
    unsafe { *size = value };
    Ok(())
}

/// Writes a detached buffer's size into an MPI_Count.
///
/// # Safety
/// `size` must be valid for a write.
unsafe fn store_count(size: *mut MPI_Count, bytes: usize) -> MpiResult<()> {
    // SAFETY: per the caller.
    unsafe { *size = bytes as MPI_Count };
    Ok(())
}

fn flush(function: &str, scope: Scope) -> c_int {
    let result = runtime::with(|rt| {
        let comm = check_scope(rt, scope)?;
        rt.bsend.flush(scope, &mut rt.engine).map_err(|e| engine_error(comm, e))
    });
    finish_scope(function, scope, result)
}

/// The non-blocking flushes: a request that completes once the messages in the buffer now have
/// left (at once when there are none).
///
/// # Safety
/// `request` must be NULL or writable.
unsafe fn iflush(function: &str, scope: Scope, request: *mut MPI_Request) -> c_int {
    let result = runtime::with(|rt| {
        let comm = check_scope(rt, scope)?;
        if request.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "request must not be NULL"));
        }
        let outcome = Rc::new(Outcome::default());
        if let Some(watch) = rt.bsend.watch_flush(scope, Rc::clone(&outcome)) {
            rt.engine.attach_agent(watch);
        }
        let handle = rt.requests.insert(Pending::collective(comm, outcome));
        // SAFETY: checked non-null; the caller's request variable.
        unsafe { *request = handle };
        Ok(())
    });
    finish_scope(function, scope, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach(buffer: *mut c_void, size: c_int) -> c_int {
    attach("MPI_Buffer_attach", Scope::Process, buffer, size)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach_c(buffer: *mut c_void, size: MPI_Count) -> c_int {
    attach("MPI_Buffer_attach_c", Scope::Process, buffer, size)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_attach_buffer(comm: MPI_Comm, buffer: *mut c_void, size: c_int) -> c_int {
    attach("MPI_Comm_attach_buffer", Scope::Comm(comm), buffer, size)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_attach_buffer_c(comm: MPI_Comm, buffer: *mut c_void, size: MPI_Count) -> c_int {
    attach("MPI_Comm_attach_buffer_c", Scope::Comm(comm), buffer, size)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_attach_buffer(session: MPI_Session, buffer: *mut c_void, size: c_int) -> c_int {
    attach("MPI_Session_attach_buffer", Scope::Session(session), buffer, size)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_attach_buffer_c(session: MPI_Session, buffer: *mut c_void, size: MPI_Count) -> c_int {
    attach("MPI_Session_attach_buffer_c", Scope::Session(session), buffer, size)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    // SAFETY: the call's arguments; `size` is written only when non-null.
    unsafe { detach("MPI_Buffer_detach", Scope::Process, buffer_addr, size.is_null(), |bytes| store_int(size, bytes, MPI_COMM_WORLD)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut MPI_Count) -> c_int {
    // SAFETY: the call's arguments; `size` is written only when non-null.
    unsafe { detach("MPI_Buffer_detach_c", Scope::Process, buffer_addr, size.is_null(), |bytes| store_count(size, bytes)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_detach_buffer(comm: MPI_Comm, buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    // SAFETY: the call's arguments; `size` is written only when non-null.
    unsafe { detach("MPI_Comm_detach_buffer", Scope::Comm(comm), buffer_addr, size.is_null(), |bytes| store_int(size, bytes, comm)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_detach_buffer_c(comm: MPI_Comm, buffer_addr: *mut c_void, size: *mut MPI_Count) -> c_int {
    // SAFETY: the call's arguments; `size` is written only when non-null.
    unsafe { detach("MPI_Comm_detach_buffer_c", Scope::Comm(comm), buffer_addr, size.is_null(), |bytes| store_count(size, bytes)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_detach_buffer(session: MPI_Session, buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    // SAFETY: the call's arguments; `size` is written only when non-null.
    unsafe { detach("MPI_Session_detach_buffer", Scope::Session(session), buffer_addr, size.is_null(), |bytes| store_int(size, bytes, MPI_COMM_SELF)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_detach_buffer_c(session: MPI_Session, buffer_addr: *mut c_void, size: *mut MPI_Count) -> c_int {
    // SAFETY: the call's arguments; `size` is written only when non-null.
    unsafe { detach("MPI_Session_detach_buffer_c", Scope::Session(session), buffer_addr, size.is_null(), |bytes| store_count(size, bytes)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_flush() -> c_int {
    flush("MPI_Buffer_flush", Scope::Process)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_flush_buffer(comm: MPI_Comm) -> c_int {
    flush("MPI_Comm_flush_buffer", Scope::Comm(comm))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_flush_buffer(session: MPI_Session) -> c_int {
    flush("MPI_Session_flush_buffer", Scope::Session(session))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_iflush(request: *mut MPI_Request) -> c_int {
    // SAFETY: the caller's request variable.
    unsafe { iflush("MPI_Buffer_iflush", Scope::Process, request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_iflush_buffer(comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: the caller's request variable.
    unsafe { iflush("MPI_Comm_iflush_buffer", Scope::Comm(comm), request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_iflush_buffer(session: MPI_Session, request: *mut MPI_Request) -> c_int {
    // SAFETY: the caller's request variable.
    unsafe { iflush("MPI_Session_iflush_buffer", Scope::Session(session), request) }
}
