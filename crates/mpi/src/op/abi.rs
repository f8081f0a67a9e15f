//! MPI_Op_create, MPI_Op_free and MPI_Op_commutative.

// The safety contract of every entry point is the MPI standard's: pointers valid for the sizes
// it documents.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use crate::consts::*;
use crate::error::{error, finish, MpiResult};

fn op_error(class: c_int, detail: String) -> crate::error::MpiError {
    error(MPI_COMM_WORLD, class, detail)
}

/// # Safety
/// `pointer` is null or valid for writes.
unsafe fn out<'a, T>(pointer: *mut T, what: &str) -> MpiResult<&'a mut T> {
    // SAFETY: non-null pointers are valid for writes (caller's guarantee).
    unsafe { pointer.as_mut() }.ok_or_else(|| op_error(MPI_ERR_ARG, format!("{what} is NULL")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create(user_fn: Option<MPI_User_function>, commute: c_int, op: *mut MPI_Op) -> c_int {
    finish(
        "MPI_Op_create",
        (|| {
            let function = user_fn.ok_or_else(|| op_error(MPI_ERR_ARG, "user_fn is NULL".into()))?;
            // SAFETY: `op` is null or the caller's output variable.
            let op = unsafe { out(op, "op") }?;
            *op = super::create(function, commute != 0).map_err(|class| op_error(class, "out of operation handles".into()))?;
            Ok(())
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Op_free(op: *mut MPI_Op) -> c_int {
    finish(
        "MPI_Op_free",
        (|| {
            // SAFETY: `op` is null or the caller's handle variable.
            let op = unsafe { out(op, "op") }?;
            if super::builtin(*op).is_some() {
                return Err(op_error(MPI_ERR_OP, "predefined operations cannot be freed".into()));
            }
            super::free(*op).map_err(|class| op_error(class, format!("invalid operation ({})", *op)))?;
            *op = MPI_OP_NULL;
            Ok(())
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Op_commutative(op: MPI_Op, commute: *mut c_int) -> c_int {
    finish(
        "MPI_Op_commutative",
        (|| {
            let commutative = super::is_commutative(op).map_err(|class| op_error(class, format!("invalid operation ({op})")))?;
            // SAFETY: `commute` is null or the caller's output variable.
            *unsafe { out(commute, "commute") }? = commutative as c_int;
            Ok(())
        })(),
    )
}
