//! MPI_Buffer_attach and MPI_Buffer_detach over the process's [`super::BsendBuffer`].

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::error::{engine_error, error, finish};
use crate::runtime;

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach(buffer: *mut c_void, size: c_int) -> c_int {
    let result = runtime::with(|rt| rt.bsend.attach(buffer.cast(), size));
    finish("MPI_Buffer_attach", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        if buffer_addr.is_null() || size.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "buffer_addr and size must not be NULL"));
        }
        let (base, bytes) = rt.bsend.detach(&mut rt.engine).map_err(|e| engine_error(MPI_COMM_WORLD, e))?;
        // SAFETY: checked non-null; MPI passes the address of the caller's `void *` as
        // `buffer_addr`, and `size` points to an int. The size came from MPI_Buffer_attach's int.
        unsafe {
            *buffer_addr.cast::<*mut c_void>() = base.cast();
            *size = bytes as c_int;
        }
        Ok(())
    });
    finish("MPI_Buffer_detach", result)
}
