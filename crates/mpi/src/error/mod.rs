//! Errors: [`MpiError`], the failure of a call, and [`raise`], which hands it to the error handler.
//!
//! Every MPI function reports a failure through [`raise`] (in [`report`], with what needs the
//! running state), which applies the communicator's error
//! handler. Under MPI_ERRORS_ARE_FATAL (the default) the message is printed and the whole job is
//! aborted with **the error class as exit code** (predefined classes are 1..=MPI_ERR_LASTCODE, so a
//! launcher can tell the failure apart from a crash); under MPI_ERRORS_RETURN the class is
//! returned; a user handler is called, then its (possibly changed) code is returned. The error
//! codes of Braid's own failures are their classes; `codes` holds the classes and codes a program
//! adds, `handlers` the error handler objects.

pub mod codes;
pub mod handlers;
pub mod report;

use std::ffi::c_int;

use braid_engine::EngineError;

use crate::consts::*;

pub use codes::class_text;
pub(crate) use handlers::set_world_errhandler;
pub use report::{finish, raise};

/// A failed MPI call, before the error handler has seen it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiError {
    /// The communicator whose error handler applies (MPI_COMM_WORLD for calls without one).
    pub comm: MPI_Comm,
    pub class: c_int,
    pub detail: String,
}

pub type MpiResult<T> = Result<T, MpiError>;

/// Builds an error; cold so that the format! of its detail stays off the hot path.
#[cold]
#[inline(never)]
pub fn error(comm: MPI_Comm, class: c_int, detail: impl Into<String>) -> MpiError {
    MpiError { comm, class, detail: detail.into() }
}

/// Maps an engine failure to an MPI error on `comm`.
#[cold]
pub fn engine_error(comm: MPI_Comm, failure: EngineError) -> MpiError {
    let class = match failure {
        EngineError::BadRequest => MPI_ERR_REQUEST,
        _ => MPI_ERR_OTHER,
    };
    error(comm, class, failure.to_string())
}

/// Copies `text` into a C buffer of `capacity` bytes (text truncated to fit, NUL-terminated) and
/// returns the length written, excluding the NUL.
///
/// # Safety
/// `out` must be valid for `capacity` bytes of writes.
pub unsafe fn write_c_string(text: &str, out: *mut std::ffi::c_char, capacity: usize) -> c_int {
    if out.is_null() || capacity == 0 {
        return 0;
    }
    let length = text.len().min(capacity - 1);
    // SAFETY: the caller guarantees `capacity` writable bytes; we write `length + 1 <= capacity`.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), out.cast::<u8>(), length);
        *out.add(length) = 0;
    }
    length as c_int
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime;

    #[test]
    fn c_strings_are_truncated_and_terminated() {
        let mut buffer = [0x55u8; 6];
        // SAFETY: the buffer has 6 bytes.
        let written = unsafe { write_c_string("truncate me", buffer.as_mut_ptr().cast(), buffer.len()) };
        assert_eq!(written, 5);
        assert_eq!(&buffer, b"trunc\0");
    }

    #[test]
    fn errors_before_init_are_returned() {
        assert!(!runtime::is_running());
        assert_eq!(raise(MPI_COMM_WORLD, "test", MPI_ERR_RANK, "rank 9"), MPI_ERR_RANK);
        assert_eq!(raise(42, "test", MPI_ERR_COMM, "no such communicator"), MPI_ERR_COMM);
        assert_eq!(raise(MPI_COMM_WORLD, "test", MPI_SUCCESS, ""), MPI_SUCCESS);
    }

    #[test]
    fn calls_before_init_fail_with_err_other() {
        let mut size = -1;
        // SAFETY: a valid out-pointer.
        assert_eq!(unsafe { crate::comm::abi::MPI_Comm_size(MPI_COMM_WORLD, &mut size) }, MPI_ERR_OTHER);
        assert_eq!(size, -1);
        let mut flag = -1;
        // SAFETY: a valid out-pointer.
        assert_eq!(unsafe { crate::runtime::abi::MPI_Initialized(&mut flag) }, MPI_SUCCESS);
        assert_eq!(flag, 0);
    }
}
