//! Dynamic process management where it applies to processes started by the launcher: they have
//! no parent. Spawning, ports and connecting are not supported (unsupported/dynamic.rs).

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use crate::consts::*;
use crate::error::raise;

/// MPI_COMM_NULL: no process of a Braid job was spawned by MPI_Comm_spawn.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_parent(parent: *mut MPI_Comm) -> c_int {
    if parent.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Comm_get_parent", MPI_ERR_ARG, "parent must not be NULL");
    }
    // SAFETY: checked non-null; the caller's output variable.
    unsafe { *parent = MPI_COMM_NULL };
    MPI_SUCCESS
}
