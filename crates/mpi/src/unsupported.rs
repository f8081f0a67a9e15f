//! Declared in mpi.h but not implemented yet: dynamic process management (dynamic.rs), MPI-IO
//! (io.rs), one-sided communication (one_sided.rs) and graph topologies. Each call raises
//! MPI_ERR_UNSUPPORTED_OPERATION, naming itself, through the applicable error handler.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use crate::consts::*;

const GRAPHS: &str = "graph topologies are not supported yet (Cartesian topologies are)";

/// Defines an entry point that ignores its arguments and raises MPI_ERR_UNSUPPORTED_OPERATION,
/// naming itself, on `$comm` (its communicator argument, or MPI_COMM_WORLD when it has none), or
/// `on files`: on the error handler of files.
macro_rules! unsupported {
    ($name:ident($($arg:ident: $ty:ty),* $(,)?) on files, $detail:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> std::ffi::c_int {
            let _ = ($($arg,)*);
            crate::unsupported::raise_on_files(stringify!($name), $detail)
        }
    };
    ($name:ident($($arg:ident: $ty:ty),* $(,)?) on $comm:expr, $detail:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> std::ffi::c_int {
            let _ = ($($arg,)*);
            crate::error::raise($comm, stringify!($name), crate::consts::MPI_ERR_UNSUPPORTED_OPERATION, $detail)
        }
    };
}

mod dynamic;
mod io;
mod one_sided;

/// Raises an unsupported I/O call on the error handler of files. Until MPI_File_set_errhandler can
/// change it, that is MPI_ERRORS_RETURN, the default for files (MPI 3.1 §13.7): the call returns
/// the class and the job goes on. `function` and `detail` are the message a fatal file handler
/// would print.
fn raise_on_files(function: &str, detail: &str) -> c_int {
    let _ = (function, detail);
    MPI_ERR_UNSUPPORTED_OPERATION
}

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
