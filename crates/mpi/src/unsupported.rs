//! Declared in mpi.h but not implemented yet: one-sided windows. Each call raises
//! MPI_ERR_UNSUPPORTED_OPERATION through the error handler.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::error::raise;

const WINDOWS: &str = "one-sided windows are not supported yet";

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
