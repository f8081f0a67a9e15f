//! Dynamic process management: ports and connections between jobs (`abi.rs`, `ports.rs`, where
//! they are reached from in `reachable.rs`, how two roots meet in `rendezvous.rs`, the collective part in `connection.rs`), the parent of a
//! spawned job, and MPI_Comm_disconnect.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

pub mod abi;
mod connection;
mod names;
mod ports;
mod reachable;
mod rendezvous;
mod roots;
mod spawn;

use std::ffi::c_int;

use crate::consts::*;
use crate::error::{error, finish};
use crate::runtime;

pub(crate) use spawn::{connect_to_parents, forget_parent};

/// MPI_Comm_disconnect: collective over the communicator's group(s); every member has entered it
/// once the barrier ends, and the communicator is then freed as MPI_Comm_free frees it. Braid
/// completes a communicator's communication as its requests complete, so nothing else waits.
/// Processes of other jobs that no communicator reaches any more are then disconnected.
/// The predefined communicators and MPI_COMM_NULL are refused with MPI_ERR_COMM.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_disconnect(comm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        if comm.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "comm must not be NULL"));
        }
        // SAFETY: checked non-null; the caller's handle.
        let handle = unsafe { *comm };
        if matches!(handle, MPI_COMM_NULL | MPI_COMM_WORLD | MPI_COMM_SELF) {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_COMM, format!("communicator {handle} cannot be disconnected (MPI_COMM_NULL or predefined)")));
        }
        runtime::with(|rt| rt.comms.check_freeable(handle))?;
        // SAFETY: a valid communicator, checked above.
        let code = unsafe { crate::coll::abi::MPI_Barrier(handle) };
        if code != MPI_SUCCESS {
            return Err(error(handle, code, "the members could not meet to disconnect"));
        }
        crate::comm::abi::free(handle)?;
        // SAFETY: as above.
        unsafe { *comm = MPI_COMM_NULL };
        // Processes of other jobs that no communicator reaches any more are disconnected: their
        // transports close and give back their shared memory (a task pool spawning again and
        // again would otherwise keep every generation's).
        runtime::with(|rt| {
            let reached = rt.comms.reached();
            rt.engine.release_joined(|peer| reached.contains(&peer));
            Ok(())
        })
    })();
    finish("MPI_Comm_disconnect", result)
}
