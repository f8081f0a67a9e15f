//! What the topology calls share (the topology of a communicator, array arguments) and
//! MPI_Topo_test.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use super::{Neighbors, Topology};
use crate::consts::*;
use crate::error::{error, finish, MpiResult};
use crate::group::store;
use crate::runtime::{self, Runtime};

/// The neighbour lists of this process in `comm` (for the neighbourhood collectives);
/// MPI_ERR_TOPOLOGY when `comm` has no topology.
pub fn neighbors(rt: &Runtime, comm: MPI_Comm) -> MpiResult<Neighbors> {
    let entry = rt.comms.get(comm)?;
    let topology = entry.topology.as_ref().ok_or_else(|| no_topology(comm, "a topology"))?;
    Ok(topology.neighbors(entry.shared.rank as usize))
}

#[cold]
pub(super) fn no_topology(comm: MPI_Comm, wanted: &str) -> crate::error::MpiError {
    error(comm, MPI_ERR_TOPOLOGY, format!("the communicator does not have {wanted}"))
}

/// Runs `f` on the topology of `comm` and this process's rank in it.
pub(super) fn with_topology<R>(comm: MPI_Comm, f: impl FnOnce(&Topology, usize) -> MpiResult<R>) -> MpiResult<R> {
    runtime::with(|rt| {
        let entry = rt.comms.get(comm)?;
        let topology = entry.topology.as_ref().ok_or_else(|| no_topology(comm, "a topology"))?;
        f(topology, entry.shared.rank as usize)
    })
}

/// A C array of `n` ints (empty when `n` is 0).
///
/// # Safety
/// `values` must point to `n` ints when `n > 0`.
pub(super) unsafe fn int_array<'a>(comm: MPI_Comm, values: *const c_int, n: usize, what: &str) -> MpiResult<&'a [c_int]> {
    if n == 0 {
        return Ok(&[]);
    }
    if values.is_null() {
        return Err(error(comm, MPI_ERR_ARG, format!("{what} must not be NULL")));
    }
    // SAFETY: non-null; the caller guarantees `n` ints.
    Ok(unsafe { std::slice::from_raw_parts(values, n) })
}

/// Copies `values` into a C array of at least `values.len()` ints.
///
/// # Safety
/// `out` must be valid for `values.len()` ints when non-empty.
pub(super) unsafe fn write_ints(comm: MPI_Comm, out: *mut c_int, values: &[c_int], what: &str) -> MpiResult<()> {
    if values.is_empty() {
        return Ok(());
    }
    if out.is_null() {
        return Err(error(comm, MPI_ERR_ARG, format!("{what} must not be NULL")));
    }
    // SAFETY: non-null; the caller guarantees room for `values.len()` ints.
    unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), out, values.len()) };
    Ok(())
}

/// A count argument (ndims, nnodes, a degree...) as a length; MPI_ERR_ARG when negative.
pub(super) fn length(comm: MPI_Comm, value: c_int, what: &str) -> MpiResult<usize> {
    usize::try_from(value).map_err(|_| error(comm, MPI_ERR_ARG, format!("{what} {value} is negative")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Topo_test(comm: MPI_Comm, status: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        let kind = rt.comms.get(comm)?.topology.as_ref().map_or(MPI_UNDEFINED, Topology::kind);
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(status, kind, "status") }
    });
    finish("MPI_Topo_test", result)
}
