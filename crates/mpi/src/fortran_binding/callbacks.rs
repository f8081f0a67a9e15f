//! Callbacks with Fortran signatures: the predefined attribute callbacks as Fortran programs name
//! them (MPI_COMM_DUP_FN, ...), and the C callbacks that call a program's Fortran attribute
//! copy/delete functions and generalized-request functions. Fortran passes every argument by
//! reference, returns its error in a last `ierror` argument, and (MPI-1's MPI_KEYVAL_CREATE)
//! holds attribute values and extra state in default INTEGERs.

// The symbols are Fortran's names.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use crate::consts::*;

/// A Fortran attribute copy function: (oldobj, keyval, extra_state, attribute_val_in,
/// attribute_val_out, flag, ierror); `T` is MPI_Aint, or MPI_Fint for MPI-1's.
pub type FortranCopy<T> = unsafe extern "C" fn(*const MPI_Fint, *const MPI_Fint, *const T, *const T, *mut T, *mut MPI_Fint, *mut MPI_Fint);
/// A Fortran attribute delete function: (obj, keyval, attribute_val, extra_state, ierror).
pub type FortranDelete<T> = unsafe extern "C" fn(*const MPI_Fint, *const MPI_Fint, *const T, *const T, *mut MPI_Fint);

/// Defines Fortran's predefined copy functions: NULL_COPY sets flag to .FALSE., DUP copies.
macro_rules! predefined_copy {
    ($value:ty: $($null:ident),+ ; $($dup:ident),+) => {
        $(
            #[no_mangle]
            pub unsafe extern "C" fn $null(_old: *const MPI_Fint, _keyval: *const MPI_Fint, _extra: *const $value, _input: *const $value, _output: *mut $value, flag: *mut MPI_Fint, ierror: *mut MPI_Fint) {
                // SAFETY: Fortran passes every argument.
                unsafe {
                    flag.write(0);
                    ierror.write(MPI_SUCCESS);
                }
            }
        )+
        $(
            #[no_mangle]
            pub unsafe extern "C" fn $dup(_old: *const MPI_Fint, _keyval: *const MPI_Fint, _extra: *const $value, input: *const $value, output: *mut $value, flag: *mut MPI_Fint, ierror: *mut MPI_Fint) {
                // SAFETY: Fortran passes every argument.
                unsafe {
                    output.write(input.read());
                    flag.write(1);
                    ierror.write(MPI_SUCCESS);
                }
            }
        )+
    };
}

/// Defines Fortran's predefined delete functions, which do nothing.
macro_rules! predefined_delete {
    ($value:ty: $($name:ident),+) => {
        $(
            #[no_mangle]
            pub unsafe extern "C" fn $name(_obj: *const MPI_Fint, _keyval: *const MPI_Fint, _value: *const $value, _extra: *const $value, ierror: *mut MPI_Fint) {
                // SAFETY: Fortran passes every argument.
                unsafe { ierror.write(MPI_SUCCESS) }
            }
        )+
    };
}

predefined_copy!(MPI_Aint:
    mpi_comm_null_copy_fn_, mpi_comm_null_copy_fn__, mpi_comm_null_copy_fn, mpi_type_null_copy_fn_, mpi_type_null_copy_fn__, mpi_type_null_copy_fn, mpi_win_null_copy_fn_, mpi_win_null_copy_fn__, mpi_win_null_copy_fn;
    mpi_comm_dup_fn_, mpi_comm_dup_fn__, mpi_comm_dup_fn, mpi_type_dup_fn_, mpi_type_dup_fn__, mpi_type_dup_fn, mpi_win_dup_fn_, mpi_win_dup_fn__, mpi_win_dup_fn);
predefined_copy!(MPI_Fint: mpi_null_copy_fn_, mpi_null_copy_fn__, mpi_null_copy_fn; mpi_dup_fn_, mpi_dup_fn__, mpi_dup_fn);
predefined_delete!(MPI_Aint:
    mpi_comm_null_delete_fn_, mpi_comm_null_delete_fn__, mpi_comm_null_delete_fn, mpi_type_null_delete_fn_, mpi_type_null_delete_fn__, mpi_type_null_delete_fn, mpi_win_null_delete_fn_, mpi_win_null_delete_fn__, mpi_win_null_delete_fn);
predefined_delete!(MPI_Fint: mpi_null_delete_fn_, mpi_null_delete_fn__, mpi_null_delete_fn);

/// Fortran's MPI_CONVERSION_FN_NULL: (userbuf, datatype, count, filebuf, position, extra_state,
/// ierror); it converts nothing.
#[no_mangle]
pub unsafe extern "C" fn mpi_conversion_fn_null_(
    _userbuf: *mut c_void,
    _datatype: *const MPI_Fint,
    _count: *const MPI_Fint,
    _filebuf: *mut c_void,
    _position: *const MPI_Offset,
    _extra: *const MPI_Aint,
    ierror: *mut MPI_Fint,
) {
    // SAFETY: Fortran passes every argument.
    unsafe { ierror.write(MPI_SUCCESS) }
}

/// Fortran's MPI_CONVERSION_FN_NULL_C, the large-count form: its count is an
/// INTEGER(KIND=MPI_COUNT_KIND); it converts nothing.
#[no_mangle]
pub unsafe extern "C" fn mpi_conversion_fn_null_c_(
    _userbuf: *mut c_void,
    _datatype: *const MPI_Fint,
    _count: *const MPI_Count,
    _filebuf: *mut c_void,
    _position: *const MPI_Offset,
    _extra: *const MPI_Aint,
    ierror: *mut MPI_Fint,
) {
    // SAFETY: Fortran passes every argument.
    unsafe { ierror.write(MPI_SUCCESS) }
}

/// A keyval's Fortran functions and extra state: the C keyval's extra state. It lives as long as
/// the program (the keyval's callbacks may run after MPI_*_free_keyval, until the last attribute
/// goes).
pub enum FortranKeyval {
    /// MPI_COMM_CREATE_KEYVAL and its type and window twins: INTEGER(KIND=MPI_ADDRESS_KIND) values.
    Address { copy: FortranCopy<MPI_Aint>, delete: FortranDelete<MPI_Aint>, extra_state: MPI_Aint },
    /// MPI_KEYVAL_CREATE: INTEGER values.
    Integer { copy: FortranCopy<MPI_Fint>, delete: FortranDelete<MPI_Fint>, extra_state: MPI_Fint },
}

/// The C copy callback that runs a keyval's Fortran copy function.
pub unsafe extern "C" fn copy_trampoline(old: c_int, keyval: c_int, extra_state: *mut c_void, input: *mut c_void, output: *mut c_void, flag: *mut c_int) -> c_int {
    let mut ierror = MPI_SUCCESS;
    let mut fortran_flag: MPI_Fint = 0;
    // SAFETY: the extra state is the FortranKeyval the binding registered; output and flag are the
    // library's.
    unsafe {
        let copied: MPI_Aint = match &*extra_state.cast::<FortranKeyval>() {
            FortranKeyval::Address { copy, extra_state, .. } => {
                let mut value: MPI_Aint = 0;
                copy(&old, &keyval, extra_state, &(input as MPI_Aint), &mut value, &mut fortran_flag, &mut ierror);
                value
            }
            FortranKeyval::Integer { copy, extra_state, .. } => {
                let mut value: MPI_Fint = 0;
                copy(&old, &keyval, extra_state, &(input as MPI_Aint as MPI_Fint), &mut value, &mut fortran_flag, &mut ierror);
                value as MPI_Aint
            }
        };
        flag.write(c_int::from(fortran_flag != 0));
        if fortran_flag != 0 {
            output.cast::<*mut c_void>().write(copied as *mut c_void);
        }
    }
    ierror
}

/// The C delete callback that runs a keyval's Fortran delete function.
pub unsafe extern "C" fn delete_trampoline(obj: c_int, keyval: c_int, value: *mut c_void, extra_state: *mut c_void) -> c_int {
    let mut ierror = MPI_SUCCESS;
    // SAFETY: the extra state is the FortranKeyval the binding registered.
    unsafe {
        match &*extra_state.cast::<FortranKeyval>() {
            FortranKeyval::Address { delete, extra_state, .. } => delete(&obj, &keyval, &(value as MPI_Aint), extra_state, &mut ierror),
            FortranKeyval::Integer { delete, extra_state, .. } => delete(&obj, &keyval, &(value as MPI_Aint as MPI_Fint), extra_state, &mut ierror),
        }
    }
    ierror
}

/// Fortran generalized-request functions: query(extra_state, status, ierror),
/// free(extra_state, ierror), cancel(extra_state, complete, ierror).
pub struct FortranGrequest {
    pub query: unsafe extern "C" fn(*const MPI_Aint, *mut MPI_Fint, *mut MPI_Fint),
    pub free: unsafe extern "C" fn(*const MPI_Aint, *mut MPI_Fint),
    pub cancel: unsafe extern "C" fn(*const MPI_Aint, *const MPI_Fint, *mut MPI_Fint),
    pub extra_state: MPI_Aint,
}

pub unsafe extern "C" fn grequest_query_trampoline(extra_state: *mut c_void, status: *mut MPI_Status) -> c_int {
    let mut ierror = MPI_SUCCESS;
    // SAFETY: the extra state is the binding's FortranGrequest; a Fortran status is an MPI_Status.
    unsafe {
        let request = &*extra_state.cast::<FortranGrequest>();
        (request.query)(&request.extra_state, status.cast(), &mut ierror);
    }
    ierror
}

/// Runs the Fortran free function, then frees the binding's record (the request is gone).
pub unsafe extern "C" fn grequest_free_trampoline(extra_state: *mut c_void) -> c_int {
    let mut ierror = MPI_SUCCESS;
    // SAFETY: the extra state is the binding's boxed FortranGrequest, freed once, here.
    unsafe {
        let request = Box::from_raw(extra_state.cast::<FortranGrequest>());
        (request.free)(&request.extra_state, &mut ierror);
    }
    ierror
}

pub unsafe extern "C" fn grequest_cancel_trampoline(extra_state: *mut c_void, complete: c_int) -> c_int {
    let mut ierror = MPI_SUCCESS;
    // SAFETY: the extra state is the binding's FortranGrequest.
    unsafe {
        let request = &*extra_state.cast::<FortranGrequest>();
        (request.cancel)(&request.extra_state, &MPI_Fint::from(complete != 0), &mut ierror);
    }
    ierror
}
