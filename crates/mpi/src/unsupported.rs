//! Declared in mpi.h but not implemented yet: one-sided windows and graph topologies. Each call
//! raises MPI_ERR_UNSUPPORTED_OPERATION through the error handler.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::error::raise;

const WINDOWS: &str = "one-sided windows are not supported yet";
const GRAPHS: &str = "graph topologies are not supported yet (Cartesian topologies are)";

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create(base: *mut c_void, size: MPI_Aint, disp_unit: c_int, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
    let _ = (base, size, disp_unit, info, win);
    raise(comm, "MPI_Win_create", MPI_ERR_UNSUPPORTED_OPERATION, WINDOWS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate(size: MPI_Aint, disp_unit: c_int, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
    let _ = (size, disp_unit, info, baseptr, win);
    raise(comm, "MPI_Win_allocate", MPI_ERR_UNSUPPORTED_OPERATION, WINDOWS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free(win: *mut MPI_Win) -> c_int {
    let _ = win;
    raise(MPI_COMM_WORLD, "MPI_Win_free", MPI_ERR_UNSUPPORTED_OPERATION, WINDOWS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_fence(assert: c_int, win: MPI_Win) -> c_int {
    let _ = (assert, win);
    raise(MPI_COMM_WORLD, "MPI_Win_fence", MPI_ERR_UNSUPPORTED_OPERATION, WINDOWS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Put(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> c_int {
    let _ = (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win);
    raise(MPI_COMM_WORLD, "MPI_Put", MPI_ERR_UNSUPPORTED_OPERATION, WINDOWS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get(
    origin_addr: *mut c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> c_int {
    let _ = (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win);
    raise(MPI_COMM_WORLD, "MPI_Get", MPI_ERR_UNSUPPORTED_OPERATION, WINDOWS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Accumulate(
    origin_addr: *const c_void,
    origin_count: c_int,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: c_int,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    let _ = (origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op, win);
    raise(MPI_COMM_WORLD, "MPI_Accumulate", MPI_ERR_UNSUPPORTED_OPERATION, WINDOWS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win) -> c_int {
    let _ = (lock_type, rank, assert, win);
    raise(MPI_COMM_WORLD, "MPI_Win_lock", MPI_ERR_UNSUPPORTED_OPERATION, WINDOWS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock(rank: c_int, win: MPI_Win) -> c_int {
    let _ = (rank, win);
    raise(MPI_COMM_WORLD, "MPI_Win_unlock", MPI_ERR_UNSUPPORTED_OPERATION, WINDOWS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock_all(assert: c_int, win: MPI_Win) -> c_int {
    let _ = (assert, win);
    raise(MPI_COMM_WORLD, "MPI_Win_lock_all", MPI_ERR_UNSUPPORTED_OPERATION, WINDOWS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock_all(win: MPI_Win) -> c_int {
    let _ = win;
    raise(MPI_COMM_WORLD, "MPI_Win_unlock_all", MPI_ERR_UNSUPPORTED_OPERATION, WINDOWS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush(rank: c_int, win: MPI_Win) -> c_int {
    let _ = (rank, win);
    raise(MPI_COMM_WORLD, "MPI_Win_flush", MPI_ERR_UNSUPPORTED_OPERATION, WINDOWS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_create(comm_old: MPI_Comm, nnodes: c_int, index: *const c_int, edges: *const c_int, reorder: c_int, comm_graph: *mut MPI_Comm) -> c_int {
    let _ = (nnodes, index, edges, reorder, comm_graph);
    raise(comm_old, "MPI_Graph_create", MPI_ERR_UNSUPPORTED_OPERATION, GRAPHS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_get(comm: MPI_Comm, maxindex: c_int, maxedges: c_int, index: *mut c_int, edges: *mut c_int) -> c_int {
    let _ = (maxindex, maxedges, index, edges);
    raise(comm, "MPI_Graph_get", MPI_ERR_UNSUPPORTED_OPERATION, GRAPHS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graphdims_get(comm: MPI_Comm, nnodes: *mut c_int, nedges: *mut c_int) -> c_int {
    let _ = (nnodes, nedges);
    raise(comm, "MPI_Graphdims_get", MPI_ERR_UNSUPPORTED_OPERATION, GRAPHS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create(
    comm_old: MPI_Comm,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights: *const c_int,
    info: MPI_Info,
    reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    let _ = (n, sources, degrees, destinations, weights, info, reorder, comm_dist_graph);
    raise(comm_old, "MPI_Dist_graph_create", MPI_ERR_UNSUPPORTED_OPERATION, GRAPHS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create_adjacent(
    comm_old: MPI_Comm,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    info: MPI_Info,
    reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    let _ = (indegree, sources, sourceweights, outdegree, destinations, destweights, info, reorder, comm_dist_graph);
    raise(comm_old, "MPI_Dist_graph_create_adjacent", MPI_ERR_UNSUPPORTED_OPERATION, GRAPHS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors(
    comm: MPI_Comm,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    let _ = (maxindegree, sources, sourceweights, maxoutdegree, destinations, destweights);
    raise(comm, "MPI_Dist_graph_neighbors", MPI_ERR_UNSUPPORTED_OPERATION, GRAPHS)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors_count(comm: MPI_Comm, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int) -> c_int {
    let _ = (indegree, outdegree, weighted);
    raise(comm, "MPI_Dist_graph_neighbors_count", MPI_ERR_UNSUPPORTED_OPERATION, GRAPHS)
}
