//! Error classes, their texts, and error handlers.
//!
//! Every MPI function reports a failure through [`raise`], which applies the communicator's error
//! handler. Under MPI_ERRORS_ARE_FATAL (the default) the message is printed and the whole job is
//! aborted with **the error class as exit code** (always 1..=MPI_ERR_LASTCODE, so a launcher can
//! tell the failure apart from a crash); under MPI_ERRORS_RETURN the class is returned. Error codes
//! are error classes: Braid defines no codes of its own.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::consts::*;
use crate::runtime;

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

/// The error handler of MPI_COMM_WORLD, also used before MPI_Init and after MPI_Finalize.
static WORLD_ERRHANDLER: AtomicI32 = AtomicI32::new(MPI_ERRORS_ARE_FATAL);

pub(crate) fn set_world_errhandler(errhandler: MPI_Errhandler) {
    WORLD_ERRHANDLER.store(errhandler, Ordering::Relaxed);
}

/// Applies `comm`'s error handler to an error of `class` in `function`. Returns `class` under
/// MPI_ERRORS_RETURN; under MPI_ERRORS_ARE_FATAL prints `Braid: <function>: <class text>: <detail>`
/// and ends the job with exit code `class` (outside MPI_Init..MPI_Finalize it prints and returns).
/// Unknown or null communicators use MPI_COMM_WORLD's handler.
#[cold]
#[inline(never)]
pub fn raise(comm: MPI_Comm, function: &str, class: c_int, detail: &str) -> c_int {
    if class == MPI_SUCCESS {
        return MPI_SUCCESS;
    }
    let handler = runtime::try_with(|rt| rt.comms.errhandler(comm)).unwrap_or_else(|| WORLD_ERRHANDLER.load(Ordering::Relaxed));
    if handler == MPI_ERRORS_RETURN {
        return class;
    }
    let message = format!("Braid: {function}: {}: {detail}", class_text(class));
    eprintln!("{message}");
    if !runtime::is_running() {
        // Before MPI_Init and after MPI_Finalize there is no job to abort: report and return.
        return class;
    }
    runtime::abort_job(class, &message)
}

/// Turns a call's result into its return code, raising the error if there is one.
pub fn finish(function: &str, result: MpiResult<()>) -> c_int {
    match result {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise(e.comm, function, e.class, &e.detail),
    }
}

/// The text of an error class (MPI_Error_string).
pub fn class_text(class: c_int) -> &'static str {
    match class {
        MPI_SUCCESS => "no error",
        MPI_ERR_BUFFER => "invalid buffer pointer",
        MPI_ERR_COUNT => "invalid count argument",
        MPI_ERR_TYPE => "invalid datatype",
        MPI_ERR_TAG => "invalid tag",
        MPI_ERR_COMM => "invalid communicator",
        MPI_ERR_RANK => "invalid rank",
        MPI_ERR_ROOT => "invalid root",
        MPI_ERR_GROUP => "invalid group",
        MPI_ERR_OP => "invalid reduction operation",
        MPI_ERR_TOPOLOGY => "invalid topology",
        MPI_ERR_DIMS => "invalid dimension argument",
        MPI_ERR_ARG => "invalid argument",
        MPI_ERR_UNKNOWN => "unknown error",
        MPI_ERR_TRUNCATE => "message truncated",
        MPI_ERR_OTHER => "other error",
        MPI_ERR_INTERN => "internal error",
        MPI_ERR_IN_STATUS => "error code is in status",
        MPI_ERR_PENDING => "pending request",
        MPI_ERR_REQUEST => "invalid request",
        MPI_ERR_ACCESS => "permission denied",
        MPI_ERR_AMODE => "invalid file access mode",
        MPI_ERR_BAD_FILE => "invalid file name",
        MPI_ERR_CONVERSION => "data conversion error",
        MPI_ERR_DUP_DATAREP => "data representation already defined",
        MPI_ERR_FILE_EXISTS => "file exists",
        MPI_ERR_FILE_IN_USE => "file in use",
        MPI_ERR_FILE => "invalid file handle",
        MPI_ERR_INFO => "invalid info object",
        MPI_ERR_INFO_KEY => "info key too long",
        MPI_ERR_INFO_VALUE => "info value too long",
        MPI_ERR_INFO_NOKEY => "info key not defined",
        MPI_ERR_IO => "I/O error",
        MPI_ERR_NAME => "invalid service name",
        MPI_ERR_NO_MEM => "out of memory",
        MPI_ERR_NOT_SAME => "collective arguments differ between processes",
        MPI_ERR_NO_SPACE => "not enough space",
        MPI_ERR_NO_SUCH_FILE => "no such file",
        MPI_ERR_PORT => "invalid port name",
        MPI_ERR_QUOTA => "quota exceeded",
        MPI_ERR_READ_ONLY => "read-only file or file system",
        MPI_ERR_SERVICE => "invalid service",
        MPI_ERR_SPAWN => "spawn failed",
        MPI_ERR_UNSUPPORTED_DATAREP => "unsupported data representation",
        MPI_ERR_UNSUPPORTED_OPERATION => "unsupported operation",
        MPI_ERR_WIN => "invalid window",
        MPI_ERR_BASE => "invalid base address",
        MPI_ERR_LOCKTYPE => "invalid lock type",
        MPI_ERR_KEYVAL => "invalid attribute key",
        MPI_ERR_RMA_CONFLICT => "conflicting window accesses",
        MPI_ERR_RMA_SYNC => "wrong window synchronisation",
        MPI_ERR_SIZE => "invalid size",
        MPI_ERR_DISP => "invalid displacement",
        MPI_ERR_ASSERT => "invalid assert argument",
        MPI_ERR_RMA_RANGE => "target memory outside the window",
        MPI_ERR_RMA_ATTACH => "memory cannot be attached",
        MPI_ERR_RMA_SHARED => "memory cannot be shared",
        MPI_ERR_RMA_FLAVOR => "wrong window flavor",
        MPI_T_ERR_MEMORY => "tool interface: out of memory",
        MPI_T_ERR_NOT_INITIALIZED => "tool interface not initialized",
        MPI_T_ERR_CANNOT_INIT => "tool interface cannot be initialized now",
        MPI_T_ERR_INVALID_INDEX => "tool interface: invalid or out-of-range index",
        MPI_T_ERR_INVALID_ITEM => "tool interface: item index out of range",
        MPI_T_ERR_INVALID_HANDLE => "tool interface: invalid handle",
        MPI_T_ERR_OUT_OF_HANDLES => "tool interface: no more handles",
        MPI_T_ERR_OUT_OF_SESSIONS => "tool interface: no more sessions",
        MPI_T_ERR_INVALID_SESSION => "tool interface: invalid session",
        MPI_T_ERR_CVAR_SET_NOT_NOW => "control variable cannot be set now",
        MPI_T_ERR_CVAR_SET_NEVER => "control variable can no longer be set",
        MPI_T_ERR_PVAR_NO_STARTSTOP => "performance variable cannot be started or stopped",
        MPI_T_ERR_PVAR_NO_WRITE => "performance variable cannot be written or reset",
        MPI_T_ERR_PVAR_NO_ATOMIC => "performance variable cannot be read and reset atomically",
        MPI_T_ERR_INVALID_NAME => "tool interface: no variable or category of that name",
        MPI_T_ERR_INVALID => "tool interface: invalid use",
        _ => "unknown error class",
    }
}

/// Whether `class` is a valid error class (or code: they are the same here).
pub fn is_valid_class(class: c_int) -> bool {
    (MPI_SUCCESS..=MPI_ERR_LASTCODE).contains(&class)
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

#[no_mangle]
pub unsafe extern "C" fn MPI_Error_string(errorcode: c_int, string: *mut std::ffi::c_char, resultlen: *mut c_int) -> c_int {
    if string.is_null() || resultlen.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Error_string", MPI_ERR_ARG, "string and resultlen must not be NULL");
    }
    if !is_valid_class(errorcode) {
        return raise(MPI_COMM_WORLD, "MPI_Error_string", MPI_ERR_ARG, &format!("{errorcode} is not an error code"));
    }
    // SAFETY: MPI requires `string` to hold MPI_MAX_ERROR_STRING characters; `resultlen` is non-null.
    unsafe {
        *resultlen = write_c_string(class_text(errorcode), string, MPI_MAX_ERROR_STRING as usize);
    }
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> c_int {
    if errorclass.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Error_class", MPI_ERR_ARG, "errorclass must not be NULL");
    }
    if !is_valid_class(errorcode) {
        return raise(MPI_COMM_WORLD, "MPI_Error_class", MPI_ERR_ARG, &format!("{errorcode} is not an error code"));
    }
    // SAFETY: checked non-null above; the caller passes a pointer to an int.
    unsafe { *errorclass = errorcode };
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_errhandler(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    if errhandler != MPI_ERRORS_ARE_FATAL && errhandler != MPI_ERRORS_RETURN {
        return raise(comm, "MPI_Comm_set_errhandler", MPI_ERR_ARG, &format!("{errhandler} is not an error handler (only MPI_ERRORS_ARE_FATAL and MPI_ERRORS_RETURN exist)"));
    }
    let result = runtime::with(|rt| {
        let entry = rt.comms.get_mut(comm)?;
        entry.errhandler = errhandler;
        if comm == MPI_COMM_WORLD {
            set_world_errhandler(errhandler);
        }
        Ok(())
    });
    finish("MPI_Comm_set_errhandler", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_errhandler(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> c_int {
    if errhandler.is_null() {
        return raise(comm, "MPI_Comm_get_errhandler", MPI_ERR_ARG, "errhandler must not be NULL");
    }
    let result = runtime::with(|rt| rt.comms.get(comm).map(|c| c.errhandler));
    match result {
        Ok(handler) => {
            // SAFETY: checked non-null; points to the caller's MPI_Errhandler.
            unsafe { *errhandler = handler };
            MPI_SUCCESS
        }
        Err(e) => raise(e.comm, "MPI_Comm_get_errhandler", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_free(errhandler: *mut MPI_Errhandler) -> c_int {
    if errhandler.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Errhandler_free", MPI_ERR_ARG, "errhandler must not be NULL");
    }
    // SAFETY: checked non-null; points to the caller's MPI_Errhandler.
    let handler = unsafe { *errhandler };
    if handler != MPI_ERRORS_ARE_FATAL && handler != MPI_ERRORS_RETURN {
        return raise(MPI_COMM_WORLD, "MPI_Errhandler_free", MPI_ERR_ARG, &format!("{handler} is not an error handler"));
    }
    // Predefined handlers stay usable: freeing only releases the caller's reference.
    // SAFETY: as above.
    unsafe { *errhandler = MPI_ERRHANDLER_NULL };
    MPI_SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_its_own_text() {
        let mut texts: Vec<&str> = (MPI_SUCCESS..=MPI_ERR_LASTCODE).map(class_text).collect();
        assert!(texts.iter().all(|t| *t != "unknown error class"));
        texts.sort();
        texts.dedup();
        assert_eq!(texts.len(), (MPI_ERR_LASTCODE + 1) as usize);
        assert_eq!(class_text(MPI_ERR_LASTCODE + 1), "unknown error class");
    }

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
        assert_eq!(unsafe { crate::comm::MPI_Comm_size(MPI_COMM_WORLD, &mut size) }, MPI_ERR_OTHER);
        assert_eq!(size, -1);
        let mut flag = -1;
        // SAFETY: a valid out-pointer.
        assert_eq!(unsafe { crate::runtime::MPI_Initialized(&mut flag) }, MPI_SUCCESS);
        assert_eq!(flag, 0);
    }
}
