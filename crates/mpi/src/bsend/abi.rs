//! MPI_Buffer_attach and MPI_Buffer_detach over the process's [`super::BsendBuffer`].

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::error::{engine_error, error, finish, MpiResult};
use crate::runtime;

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach(buffer: *mut c_void, size: c_int) -> c_int {
    let result = runtime::with(|rt| rt.bsend.attach(buffer.cast(), size));
    finish("MPI_Buffer_attach", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach_c(buffer: *mut c_void, size: MPI_Count) -> c_int {
    let result = runtime::with(|rt| rt.bsend.attach(buffer.cast(), size));
    finish("MPI_Buffer_attach_c", result)
}

/// MPI_Buffer_detach(_c): waits for the buffered sends, then hands back the buffer and its size,
/// which `store_size` writes (an int: the buffer was attached with an int size, or refused).
///
/// # Safety
/// `buffer_addr` must be NULL or the address of the caller's `void *`.
unsafe fn detach(function: &str, buffer_addr: *mut c_void, size_missing: bool, store_size: impl FnOnce(usize) -> MpiResult<()>) -> c_int {
    let result = runtime::with(|rt| {
        if buffer_addr.is_null() || size_missing {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "buffer_addr and size must not be NULL"));
        }
        let (base, bytes) = rt.bsend.detach(&mut rt.engine).map_err(|e| engine_error(MPI_COMM_WORLD, e))?;
        // SAFETY: checked non-null; MPI passes the address of the caller's `void *`.
        unsafe { *buffer_addr.cast::<*mut c_void>() = base.cast() };
        store_size(bytes)
    });
    finish(function, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    // SAFETY: MPI_Buffer_detach's arguments; `size` is written only when non-null.
    unsafe {
        detach("MPI_Buffer_detach", buffer_addr, size.is_null(), |bytes| {
            // A buffer attached with MPI_Buffer_attach_c may be larger than an int holds.
            *size = c_int::try_from(bytes).map_err(|_| error(MPI_COMM_WORLD, MPI_ERR_VALUE_TOO_LARGE, format!("the buffer's {bytes} bytes do not fit in an int: use MPI_Buffer_detach_c")))?;
            Ok(())
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut MPI_Count) -> c_int {
    // SAFETY: MPI_Buffer_detach_c's arguments; `size` is written only when non-null.
    unsafe {
        detach("MPI_Buffer_detach_c", buffer_addr, size.is_null(), |bytes| {
            *size = bytes as MPI_Count;
            Ok(())
        })
    }
}
