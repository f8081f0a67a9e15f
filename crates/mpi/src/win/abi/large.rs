//! One-sided communication's large-count forms (MPI 4.0): the `_c` operations, whose counts are
//! MPI_Count, and the `_c` window constructors and query, whose displacement units are MPI_Aint.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{c_int, c_void};

use super::{accumulate_args, allocate, create, finish_on, get_accumulate_args, get_args, operation, put_args, request_operation, win_error, Flavor, MPI_Win_shared_query};
use crate::consts::*;
use crate::error::MpiResult;

#[no_mangle]
pub unsafe extern "C" fn MPI_Put_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> c_int {
    operation("MPI_Put_c", win, put_args(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_c(
    origin_addr: *mut c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
) -> c_int {
    operation("MPI_Get_c", win, get_args(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Accumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    operation("MPI_Accumulate_c", win, accumulate_args(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_accumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: MPI_Count,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    let args = get_accumulate_args(origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, target_rank, target_disp, target_count, target_datatype, op);
    operation("MPI_Get_accumulate_c", win, args)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rput_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: the caller's request pointer.
    unsafe { request_operation("MPI_Rput_c", win, put_args(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype), request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rget_c(
    origin_addr: *mut c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: the caller's request pointer.
    unsafe { request_operation("MPI_Rget_c", win, get_args(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype), request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Raccumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    let args = accumulate_args(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op);
    // SAFETY: the caller's request pointer.
    unsafe { request_operation("MPI_Raccumulate_c", win, args, request) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rget_accumulate_c(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: MPI_Count,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
    win: MPI_Win,
    request: *mut MPI_Request,
) -> c_int {
    let args = get_accumulate_args(origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, target_rank, target_disp, target_count, target_datatype, op);
    // SAFETY: the caller's request pointer.
    unsafe { request_operation("MPI_Rget_accumulate_c", win, args, request) }
}

/// A `_c` window's displacement unit: windows keep an int one, as MPI-3 defines them.
fn disp_unit_of(disp_unit: MPI_Aint) -> MpiResult<c_int> {
    c_int::try_from(disp_unit).map_err(|_| win_error(MPI_ERR_DISP, format!("disp_unit {disp_unit} does not fit in an int")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_c(base: *mut c_void, size: MPI_Aint, disp_unit: MPI_Aint, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
    let result = disp_unit_of(disp_unit).and_then(|disp_unit| create(Flavor::Create, base, size, disp_unit, info, comm, win).map(|_| ()));
    crate::error::finish("MPI_Win_create_c", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_c(size: MPI_Aint, disp_unit: MPI_Aint, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
    match disp_unit_of(disp_unit) {
        // SAFETY: the caller's arguments.
        Ok(disp_unit) => unsafe { allocate("MPI_Win_allocate_c", Flavor::Allocate, size, disp_unit, info, comm, baseptr, win) },
        Err(e) => crate::error::finish("MPI_Win_allocate_c", Err(e)),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_shared_c(size: MPI_Aint, disp_unit: MPI_Aint, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
    match disp_unit_of(disp_unit) {
        // SAFETY: the caller's arguments.
        Ok(disp_unit) => unsafe { allocate("MPI_Win_allocate_shared_c", Flavor::Shared, size, disp_unit, info, comm, baseptr, win) },
        Err(e) => crate::error::finish("MPI_Win_allocate_shared_c", Err(e)),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_shared_query_c(win: MPI_Win, rank: c_int, size: *mut MPI_Aint, disp_unit: *mut MPI_Aint, baseptr: *mut c_void) -> c_int {
    if disp_unit.is_null() {
        return finish_on("MPI_Win_shared_query_c", win, Err(win_error(MPI_ERR_ARG, "size, disp_unit and baseptr must not be NULL")));
    }
    let mut unit: c_int = 0;
    // SAFETY: the caller's outputs; the unit goes through an int.
    let code = unsafe { MPI_Win_shared_query(win, rank, size, &mut unit, baseptr) };
    if code == MPI_SUCCESS {
        // SAFETY: checked non-null; the caller's variable.
        unsafe { *disp_unit = unit as MPI_Aint };
    }
    code
}
