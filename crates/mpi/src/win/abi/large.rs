//! The window constructors' and MPI_Win_shared_query's large-count forms (MPI 4.0), whose
//! displacement units are MPI_Aint (the operations' are in `operations`).

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use super::{allocate, create, finish_on, win_error, Flavor, MPI_Win_shared_query};
use crate::consts::*;
use crate::error::MpiResult;

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
