//! The MPI_* attribute entry points: keyvals and cached values of communicators (with the MPI-1
//! names), datatypes and windows.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use super::{access, Callbacks, Kind, Object};
use crate::consts::*;
use crate::error::{error, finish, MpiResult};
use crate::group::store;

/// Shared body of the MPI_*_create_keyval calls.
unsafe fn create_keyval(function: &str, kind: Kind, copy: Option<MPI_Comm_copy_attr_function>, delete: Option<MPI_Comm_delete_attr_function>, keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
    let result = (|| {
        if keyval.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "the keyval pointer must not be NULL"));
        }
        let created = access::create_keyval(kind, Callbacks { copy, delete, extra_state })?;
        // SAFETY: checked non-null; the caller's int.
        unsafe { store(keyval, created, "keyval") }
    })();
    finish(function, result)
}

/// Shared body of the MPI_*_free_keyval calls.
unsafe fn free_keyval(function: &str, kind: Kind, keyval: *mut c_int) -> c_int {
    let result = (|| {
        if keyval.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "the keyval pointer must not be NULL"));
        }
        // SAFETY: checked non-null; the caller's int.
        access::free_keyval(kind, unsafe { *keyval })?;
        // SAFETY: as above.
        unsafe { *keyval = MPI_KEYVAL_INVALID };
        Ok(())
    })();
    finish(function, result)
}

/// Shared body of the MPI_*_get_attr calls: `attribute_val` is really a `void **`.
unsafe fn get_attr(function: &str, object: Object, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    let result = (|| -> MpiResult<()> {
        let found = access::get(object, keyval)?;
        if attribute_val.is_null() || flag.is_null() {
            return Err(error(object.error_comm(), MPI_ERR_ARG, "attribute_val and flag must not be NULL"));
        }
        // SAFETY: both non-null; MPI's get_attr calls pass a `void **` and an int pointer.
        unsafe {
            if let Some(value) = found {
                *attribute_val.cast::<*mut c_void>() = value;
            }
            *flag = c_int::from(found.is_some());
        }
        Ok(())
    })();
    finish(function, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_keyval(
    comm_copy_attr_fn: Option<MPI_Comm_copy_attr_function>,
    comm_delete_attr_fn: Option<MPI_Comm_delete_attr_function>,
    comm_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: the caller's arguments, as MPI specifies them.
    unsafe { create_keyval("MPI_Comm_create_keyval", Kind::Comm, comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free_keyval(comm_keyval: *mut c_int) -> c_int {
    // SAFETY: the caller's keyval pointer.
    unsafe { free_keyval("MPI_Comm_free_keyval", Kind::Comm, comm_keyval) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_attr(comm: MPI_Comm, comm_keyval: c_int, attribute_val: *mut c_void) -> c_int {
    finish("MPI_Comm_set_attr", access::set(Object::Comm(comm), comm_keyval, attribute_val))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_attr(comm: MPI_Comm, comm_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    // SAFETY: the caller's out-pointers.
    unsafe { get_attr("MPI_Comm_get_attr", Object::Comm(comm), comm_keyval, attribute_val, flag) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_delete_attr(comm: MPI_Comm, comm_keyval: c_int) -> c_int {
    finish("MPI_Comm_delete_attr", access::delete(Object::Comm(comm), comm_keyval))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_create(copy_fn: Option<MPI_Copy_function>, delete_fn: Option<MPI_Delete_function>, keyval: *mut c_int, extra_state: *mut c_void) -> c_int {
    // SAFETY: the caller's arguments, as MPI specifies them.
    unsafe { create_keyval("MPI_Keyval_create", Kind::Comm, copy_fn, delete_fn, keyval, extra_state) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Keyval_free(keyval: *mut c_int) -> c_int {
    // SAFETY: the caller's keyval pointer.
    unsafe { free_keyval("MPI_Keyval_free", Kind::Comm, keyval) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_put(comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void) -> c_int {
    finish("MPI_Attr_put", access::set(Object::Comm(comm), keyval, attribute_val))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_get(comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    // SAFETY: the caller's out-pointers.
    unsafe { get_attr("MPI_Attr_get", Object::Comm(comm), keyval, attribute_val, flag) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Attr_delete(comm: MPI_Comm, keyval: c_int) -> c_int {
    finish("MPI_Attr_delete", access::delete(Object::Comm(comm), keyval))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_keyval(
    type_copy_attr_fn: Option<MPI_Type_copy_attr_function>,
    type_delete_attr_fn: Option<MPI_Type_delete_attr_function>,
    type_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: the caller's arguments, as MPI specifies them.
    unsafe { create_keyval("MPI_Type_create_keyval", Kind::Datatype, type_copy_attr_fn, type_delete_attr_fn, type_keyval, extra_state) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free_keyval(type_keyval: *mut c_int) -> c_int {
    // SAFETY: the caller's keyval pointer.
    unsafe { free_keyval("MPI_Type_free_keyval", Kind::Datatype, type_keyval) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_attr(datatype: MPI_Datatype, type_keyval: c_int, attribute_val: *mut c_void) -> c_int {
    finish("MPI_Type_set_attr", access::set(Object::Datatype(datatype), type_keyval, attribute_val))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_attr(datatype: MPI_Datatype, type_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    // SAFETY: the caller's out-pointers.
    unsafe { get_attr("MPI_Type_get_attr", Object::Datatype(datatype), type_keyval, attribute_val, flag) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_delete_attr(datatype: MPI_Datatype, type_keyval: c_int) -> c_int {
    finish("MPI_Type_delete_attr", access::delete(Object::Datatype(datatype), type_keyval))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_keyval(
    win_copy_attr_fn: Option<MPI_Win_copy_attr_function>,
    win_delete_attr_fn: Option<MPI_Win_delete_attr_function>,
    win_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: the caller's arguments, as MPI specifies them.
    unsafe { create_keyval("MPI_Win_create_keyval", Kind::Win, win_copy_attr_fn, win_delete_attr_fn, win_keyval, extra_state) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free_keyval(win_keyval: *mut c_int) -> c_int {
    // SAFETY: the caller's keyval pointer.
    unsafe { free_keyval("MPI_Win_free_keyval", Kind::Win, win_keyval) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_attr(win: MPI_Win, win_keyval: c_int, attribute_val: *mut c_void) -> c_int {
    finish("MPI_Win_set_attr", access::set(Object::Win(win), win_keyval, attribute_val))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_attr(win: MPI_Win, win_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    // SAFETY: the caller's out-pointers.
    unsafe { get_attr("MPI_Win_get_attr", Object::Win(win), win_keyval, attribute_val, flag) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_delete_attr(win: MPI_Win, win_keyval: c_int) -> c_int {
    finish("MPI_Win_delete_attr", access::delete(Object::Win(win), win_keyval))
}
