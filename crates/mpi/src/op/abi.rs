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

/// MPI_Op_create(_c).
fn create(function_name: &str, user_fn: Option<super::UserFunction>, commute: c_int, op: *mut MPI_Op) -> c_int {
    finish(
        function_name,
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
pub unsafe extern "C" fn MPI_Op_create(user_fn: Option<MPI_User_function>, commute: c_int, op: *mut MPI_Op) -> c_int {
    create("MPI_Op_create", user_fn.map(super::UserFunction::Int), commute, op)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create_c(user_fn: Option<MPI_User_function_c>, commute: c_int, op: *mut MPI_Op) -> c_int {
    create("MPI_Op_create_c", user_fn.map(super::UserFunction::Large), commute, op)
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

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_local(inbuf: *const std::ffi::c_void, inoutbuf: *mut std::ffi::c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op) -> c_int {
    // SAFETY: MPI_Reduce_local's arguments, passed on.
    unsafe { reduce_local("MPI_Reduce_local", inbuf, inoutbuf, count.into(), datatype, op) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_local_c(inbuf: *const std::ffi::c_void, inoutbuf: *mut std::ffi::c_void, count: MPI_Count, datatype: MPI_Datatype, op: MPI_Op) -> c_int {
    // SAFETY: MPI_Reduce_local_c's arguments, passed on.
    unsafe { reduce_local("MPI_Reduce_local_c", inbuf, inoutbuf, count, datatype, op) }
}

/// MPI_Reduce_local(_c).
///
/// # Safety
/// MPI_Reduce_local's arguments.
unsafe fn reduce_local(function: &str, inbuf: *const std::ffi::c_void, inoutbuf: *mut std::ffi::c_void, count: MPI_Count, datatype: MPI_Datatype, op: MPI_Op) -> c_int {
    let result = (|| {
        let count = usize::try_from(count).map_err(|_| op_error(MPI_ERR_COUNT, format!("count {count} is negative")))?;
        let info = crate::datatype::lookup_committed(datatype).map_err(|class| op_error(class, format!("datatype {datatype} is not valid or not committed")))?;
        let reduction = super::reduction(op, datatype).map_err(|class| op_error(class, format!("operation {op} cannot reduce datatype {datatype}")))?;
        let len = info.size.checked_mul(count).ok_or_else(|| op_error(MPI_ERR_COUNT, "count too large".to_string()))?;
        if len == 0 {
            return Ok(());
        }
        if inbuf.is_null() || inoutbuf.is_null() || inbuf == MPI_IN_PLACE || inoutbuf.cast_const() == MPI_IN_PLACE {
            return Err(op_error(MPI_ERR_BUFFER, "inbuf and inoutbuf must be real buffers".to_string()));
        }
        let mut input = vec![0u8; len];
        // SAFETY: MPI requires `count` elements of `datatype` at inbuf; the type was validated.
        unsafe { info.pack(count, inbuf.cast(), &mut input) };
        match info.contiguous_run(count) {
            Some((offset, run)) => {
                // SAFETY: as above for inoutbuf, whose elements are this one run.
                let inout = unsafe { std::slice::from_raw_parts_mut(inoutbuf.cast::<u8>().wrapping_offset(offset), run) };
                reduction.apply(&input, inout);
            }
            None => {
                let mut inout = vec![0u8; len];
                // SAFETY: as above.
                unsafe { info.pack(count, inoutbuf.cast_const().cast(), &mut inout) };
                reduction.apply(&input, &mut inout);
                // SAFETY: as above; the staging is distinct from inoutbuf.
                unsafe { info.unpack(count, &inout, inoutbuf.cast()) };
            }
        }
        Ok(())
    })();
    finish(function, result)
}
