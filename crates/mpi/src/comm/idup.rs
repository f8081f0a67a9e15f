//! MPI_Comm_idup: the members agree on the new communicator's context id in a schedule that the
//! engine's progress advances (the agreement of [`super::ids`], the same as MPI_Comm_dup's), and
//! the communicator is put in place when the request completes.
//!
//! The handle is given out at once and names nothing until then. The attributes are copied at
//! the call: their copy callbacks are the program's code, which cannot run inside the progress
//! that completes the request.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::cell::Cell;
use std::ffi::c_int;
use std::rc::Rc;

use super::abi::hints_of;
use super::coming::ComingComm;
use super::construct::parent_of;
use super::{ids, Comm};
use crate::attr::{self, Object};
use crate::coll::drive::{self, Route};
use crate::coll::port::Port;
use crate::consts::*;
use crate::error::{error, finish, MpiResult};
use crate::request::Pending;
use crate::runtime::{self, engine_error};

/// Starts the duplication of `comm`; returns the new handle and the request.
fn start(comm: MPI_Comm, info: Option<MPI_Info>) -> MpiResult<(MPI_Comm, MPI_Request)> {
    let parent = parent_of(comm)?;
    let (handle, prototype) = runtime::with(|rt| {
        let hints = match info {
            Some(info) => hints_of(comm, info)?,
            None => rt.comms.get(comm)?.hints.clone(),
        };
        let original = rt.comms.get(comm)?;
        let prototype = Comm { shared: original.shared.clone(), errhandler: original.errhandler, name: String::new(), hints, topology: original.topology.clone(), session: original.session };
        Ok((rt.comms.reserve_handle(prototype.errhandler), prototype))
    })?;
    let copied = attr::access::copy_all(Object::Comm(comm), Object::Comm(handle));
    // The agreement starts even if a copy callback failed: the other members count on this one.
    let agreed = Rc::new(Cell::new(None));
    let launched = runtime::with(|rt| {
        let shared = parent.shared.clone();
        // An intercommunicator's port names both groups, and its agreement spans both.
        let remote_size = if shared.is_inter() { shared.peer_count() } else { 0 };
        let port = Rc::new(Port::between_groups(shared.rank as usize, shared.size(), remote_size, rt.tuning));
        let span = shared.context_ids();
        let route = Route::next_collective(shared);
        let key = ids::key(route.shared.coll_context, route.tag);
        let (ids, proposal, schedule_port, result) = (parent.ids.clone(), parent.next, port.clone(), agreed.clone());
        let schedule = async move {
            result.set(Some(ids::agree(&schedule_port, &ids, proposal, span, key).await?));
            Ok(())
        };
        let outcome = match drive::launch(&mut rt.engine, port, route, schedule) {
            Ok(outcome) => outcome,
            Err(failure) => {
                rt.comms.fill(handle, None);
                return Err(engine_error(comm, failure));
            }
        };
        if copied.is_err() {
            rt.comms.fill(handle, None);
            return Ok(None);
        }
        let coming = ComingComm { handle, agreed, prototype };
        Ok(Some(rt.requests.insert(Pending::collective(comm, outcome).with_coming(coming))))
    });
    let request = launched?;
    copied?;
    Ok((handle, request.expect("the request is made whenever the copies succeeded")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_idup(comm: MPI_Comm, newcomm: *mut MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: the caller's handle pointers, passed on.
    finish("MPI_Comm_idup", unsafe { duplicate_later(comm, None, newcomm, request) })
}

/// MPI_Comm_idup with the new communicator's hints taken from `info` (MPI 4.0), as
/// MPI_Comm_dup_with_info takes them.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_idup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: the caller's handle pointers, passed on.
    finish("MPI_Comm_idup_with_info", unsafe { duplicate_later(comm, Some(info), newcomm, request) })
}

/// # Safety
/// `newcomm` and `request` must be NULL (an error) or point to the caller's handles.
unsafe fn duplicate_later(comm: MPI_Comm, info: Option<MPI_Info>, newcomm: *mut MPI_Comm, request: *mut MPI_Request) -> MpiResult<()> {
    if newcomm.is_null() || request.is_null() {
        return Err(error(comm, MPI_ERR_ARG, "newcomm and request must not be NULL"));
    }
    let (handle, started) = start(comm, info)?;
    // SAFETY: both checked non-null; they point to the caller's handles.
    unsafe {
        *newcomm = handle;
        *request = started;
    }
    Ok(())
}
