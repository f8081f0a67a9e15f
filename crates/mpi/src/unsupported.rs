//! Declared in mpi.h but not implemented yet: one-sided windows and graph topologies. Each call
//! raises MPI_ERR_UNSUPPORTED_OPERATION through the error handler.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::error::raise;

const WINDOWS: &str = "one-sided windows are not supported yet";
const GRAPHS: &str = "graph topologies are not supported yet (Cartesian topologies are)";

/// Defines an entry point that ignores its arguments and raises MPI_ERR_UNSUPPORTED_OPERATION,
/// naming itself, on `$comm` (its communicator argument, or MPI_COMM_WORLD when it has none).
macro_rules! unsupported {
    ($name:ident($($arg:ident: $ty:ty),* $(,)?) on $comm:expr, $detail:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            let _ = ($($arg,)*);
            raise($comm, stringify!($name), MPI_ERR_UNSUPPORTED_OPERATION, $detail)
        }
    };
}

unsupported!(
    MPI_Win_create(
        base: *mut c_void,
        size: MPI_Aint,
        disp_unit: c_int,
        info: MPI_Info,
        comm: MPI_Comm,
        win: *mut MPI_Win,
    ) on comm,
    WINDOWS
);

unsupported!(
    MPI_Win_allocate(
        size: MPI_Aint,
        disp_unit: c_int,
        info: MPI_Info,
        comm: MPI_Comm,
        baseptr: *mut c_void,
        win: *mut MPI_Win,
    ) on comm,
    WINDOWS
);

unsupported!(MPI_Win_free(win: *mut MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_fence(assert: c_int, win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(
    MPI_Put(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: c_int,
        target_datatype: MPI_Datatype,
        win: MPI_Win,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(
    MPI_Get(
        origin_addr: *mut c_void,
        origin_count: c_int,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: c_int,
        target_datatype: MPI_Datatype,
        win: MPI_Win,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(
    MPI_Accumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: c_int,
        target_datatype: MPI_Datatype,
        op: MPI_Op,
        win: MPI_Win,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(
    MPI_Win_lock(
        lock_type: c_int,
        rank: c_int,
        assert: c_int,
        win: MPI_Win,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(MPI_Win_unlock(rank: c_int, win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_lock_all(assert: c_int, win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_unlock_all(win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_flush(rank: c_int, win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(
    MPI_Graph_create(
        comm_old: MPI_Comm,
        nnodes: c_int,
        index: *const c_int,
        edges: *const c_int,
        reorder: c_int,
        comm_graph: *mut MPI_Comm,
    ) on comm_old,
    GRAPHS
);

unsupported!(
    MPI_Graph_get(
        comm: MPI_Comm,
        maxindex: c_int,
        maxedges: c_int,
        index: *mut c_int,
        edges: *mut c_int,
    ) on comm,
    GRAPHS
);

unsupported!(MPI_Graphdims_get(comm: MPI_Comm, nnodes: *mut c_int, nedges: *mut c_int) on comm, GRAPHS);

unsupported!(
    MPI_Dist_graph_create(
        comm_old: MPI_Comm,
        n: c_int,
        sources: *const c_int,
        degrees: *const c_int,
        destinations: *const c_int,
        weights: *const c_int,
        info: MPI_Info,
        reorder: c_int,
        comm_dist_graph: *mut MPI_Comm,
    ) on comm_old,
    GRAPHS
);

unsupported!(
    MPI_Dist_graph_create_adjacent(
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
    ) on comm_old,
    GRAPHS
);

unsupported!(
    MPI_Dist_graph_neighbors(
        comm: MPI_Comm,
        maxindegree: c_int,
        sources: *mut c_int,
        sourceweights: *mut c_int,
        maxoutdegree: c_int,
        destinations: *mut c_int,
        destweights: *mut c_int,
    ) on comm,
    GRAPHS
);

unsupported!(
    MPI_Dist_graph_neighbors_count(
        comm: MPI_Comm,
        indegree: *mut c_int,
        outdegree: *mut c_int,
        weighted: *mut c_int,
    ) on comm,
    GRAPHS
);
