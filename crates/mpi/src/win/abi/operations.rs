//! The one-sided communication calls: put, get, accumulate, get-accumulate and their
//! request-based forms, each defined once for int counts and once for MPI 4.0's large counts
//! (the `_c` forms).

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{c_int, c_void};

use super::{accumulate_args, get_accumulate_args, get_args, operation, put_args, request_operation};
use crate::consts::*;

/// Defines the eight calls for counts of type `$count`, under the names given.
macro_rules! rma_calls {
    ($count:ty, $put:ident, $get:ident, $accumulate:ident, $get_accumulate:ident, $rput:ident, $rget:ident, $raccumulate:ident, $rget_accumulate:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $put(
            origin_addr: *const c_void,
            origin_count: $count,
            origin_datatype: MPI_Datatype,
            target_rank: c_int,
            target_disp: MPI_Aint,
            target_count: $count,
            target_datatype: MPI_Datatype,
            win: MPI_Win,
        ) -> c_int {
            operation(stringify!($put), win, put_args(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype))
        }

        #[no_mangle]
        pub unsafe extern "C" fn $get(
            origin_addr: *mut c_void,
            origin_count: $count,
            origin_datatype: MPI_Datatype,
            target_rank: c_int,
            target_disp: MPI_Aint,
            target_count: $count,
            target_datatype: MPI_Datatype,
            win: MPI_Win,
        ) -> c_int {
            operation(stringify!($get), win, get_args(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype))
        }

        #[no_mangle]
        pub unsafe extern "C" fn $accumulate(
            origin_addr: *const c_void,
            origin_count: $count,
            origin_datatype: MPI_Datatype,
            target_rank: c_int,
            target_disp: MPI_Aint,
            target_count: $count,
            target_datatype: MPI_Datatype,
            op: MPI_Op,
            win: MPI_Win,
        ) -> c_int {
            operation(stringify!($accumulate), win, accumulate_args(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op))
        }

        #[no_mangle]
        pub unsafe extern "C" fn $get_accumulate(
            origin_addr: *const c_void,
            origin_count: $count,
            origin_datatype: MPI_Datatype,
            result_addr: *mut c_void,
            result_count: $count,
            result_datatype: MPI_Datatype,
            target_rank: c_int,
            target_disp: MPI_Aint,
            target_count: $count,
            target_datatype: MPI_Datatype,
            op: MPI_Op,
            win: MPI_Win,
        ) -> c_int {
            let args = get_accumulate_args(origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, target_rank, target_disp, target_count, target_datatype, op);
            operation(stringify!($get_accumulate), win, args)
        }

        #[no_mangle]
        pub unsafe extern "C" fn $rput(
            origin_addr: *const c_void,
            origin_count: $count,
            origin_datatype: MPI_Datatype,
            target_rank: c_int,
            target_disp: MPI_Aint,
            target_count: $count,
            target_datatype: MPI_Datatype,
            win: MPI_Win,
            request: *mut MPI_Request,
        ) -> c_int {
            let args = put_args(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype);
            // SAFETY: the caller's request pointer.
            unsafe { request_operation(stringify!($rput), win, args, request) }
        }

        #[no_mangle]
        pub unsafe extern "C" fn $rget(
            origin_addr: *mut c_void,
            origin_count: $count,
            origin_datatype: MPI_Datatype,
            target_rank: c_int,
            target_disp: MPI_Aint,
            target_count: $count,
            target_datatype: MPI_Datatype,
            win: MPI_Win,
            request: *mut MPI_Request,
        ) -> c_int {
            let args = get_args(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype);
            // SAFETY: the caller's request pointer.
            unsafe { request_operation(stringify!($rget), win, args, request) }
        }

        #[no_mangle]
        pub unsafe extern "C" fn $raccumulate(
            origin_addr: *const c_void,
            origin_count: $count,
            origin_datatype: MPI_Datatype,
            target_rank: c_int,
            target_disp: MPI_Aint,
            target_count: $count,
            target_datatype: MPI_Datatype,
            op: MPI_Op,
            win: MPI_Win,
            request: *mut MPI_Request,
        ) -> c_int {
            let args = accumulate_args(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op);
            // SAFETY: the caller's request pointer.
            unsafe { request_operation(stringify!($raccumulate), win, args, request) }
        }

        #[no_mangle]
        pub unsafe extern "C" fn $rget_accumulate(
            origin_addr: *const c_void,
            origin_count: $count,
            origin_datatype: MPI_Datatype,
            result_addr: *mut c_void,
            result_count: $count,
            result_datatype: MPI_Datatype,
            target_rank: c_int,
            target_disp: MPI_Aint,
            target_count: $count,
            target_datatype: MPI_Datatype,
            op: MPI_Op,
            win: MPI_Win,
            request: *mut MPI_Request,
        ) -> c_int {
            let args = get_accumulate_args(origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, target_rank, target_disp, target_count, target_datatype, op);
            // SAFETY: the caller's request pointer.
            unsafe { request_operation(stringify!($rget_accumulate), win, args, request) }
        }
    };
}

rma_calls!(c_int, MPI_Put, MPI_Get, MPI_Accumulate, MPI_Get_accumulate, MPI_Rput, MPI_Rget, MPI_Raccumulate, MPI_Rget_accumulate);
rma_calls!(MPI_Count, MPI_Put_c, MPI_Get_c, MPI_Accumulate_c, MPI_Get_accumulate_c, MPI_Rput_c, MPI_Rget_c, MPI_Raccumulate_c, MPI_Rget_accumulate_c);
