//! Timers, names, versions and memory allocation.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};

use crate::consts::*;
use crate::error::{error, finish, raise, write_c_string};
use crate::group::store;

/// The text MPI_Get_library_version reports.
pub fn library_version() -> String {
    format!("Braid {} (MPI {MPI_VERSION}.{MPI_SUBVERSION}; transports: self, shared memory, TCP rails)", env!("CARGO_PKG_VERSION"))
}

fn monotonic() -> libc::timespec {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now
}

/// Seconds on the monotonic clock (callable before MPI_Init, as MPI allows).
#[no_mangle]
pub extern "C" fn MPI_Wtime() -> f64 {
    let now = monotonic();
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

#[no_mangle]
pub extern "C" fn MPI_Wtick() -> f64 {
    let mut resolution = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `resolution` is a valid timespec to write.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut resolution) };
    (resolution.tv_sec as f64 + resolution.tv_nsec as f64 * 1e-9).max(1e-9)
}

/// This host's name.
pub fn processor_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is writable for its length; gethostname NUL-terminates when it fits.
    let status = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len() - 1) };
    if status != 0 {
        return "localhost".to_string();
    }
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int {
    if name.is_null() || resultlen.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Get_processor_name", MPI_ERR_ARG, "name and resultlen must not be NULL");
    }
    // SAFETY: MPI requires `name` to hold MPI_MAX_PROCESSOR_NAME characters; both non-null.
    unsafe { *resultlen = write_c_string(&processor_name(), name, MPI_MAX_PROCESSOR_NAME as usize) };
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    // SAFETY: the caller's out-pointers (NULL is rejected by store).
    let result = unsafe { store(version, MPI_VERSION, "version").and_then(|_| store(subversion, MPI_SUBVERSION, "subversion")) };
    finish("MPI_Get_version", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) -> c_int {
    if version.is_null() || resultlen.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Get_library_version", MPI_ERR_ARG, "version and resultlen must not be NULL");
    }
    // SAFETY: MPI requires `version` to hold MPI_MAX_LIBRARY_VERSION_STRING characters.
    unsafe { *resultlen = write_c_string(&library_version(), version, MPI_MAX_LIBRARY_VERSION_STRING as usize) };
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alloc_mem(size: MPI_Aint, info: MPI_Info, baseptr: *mut c_void) -> c_int {
    let _ = info;
    let result = (|| {
        let bytes = usize::try_from(size).map_err(|_| error(MPI_COMM_WORLD, MPI_ERR_SIZE, format!("size {size} is negative")))?;
        // SAFETY: plain malloc; one byte for size 0 so that the result is a freeable pointer.
        let memory = unsafe { libc::malloc(bytes.max(1)) };
        if memory.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_NO_MEM, format!("cannot allocate {bytes} bytes")));
        }
        // SAFETY: for MPI_Alloc_mem, `baseptr` is really a `void **` (NULL is rejected by store).
        unsafe { store(baseptr.cast::<*mut c_void>(), memory, "baseptr") }
    })();
    finish("MPI_Alloc_mem", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Free_mem(base: *mut c_void) -> c_int {
    // SAFETY: `base` came from MPI_Alloc_mem (malloc) or is NULL.
    unsafe { libc::free(base) };
    MPI_SUCCESS
}

/// MPI 4.1: an info object describing the machine's levels and where the calling process runs
/// (see `comm::hardware::resource_entries` for its keys); the caller frees it.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_hw_resource_info(hw_info: *mut MPI_Info) -> c_int {
    let result = (|| {
        if hw_info.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "hw_info must not be NULL"));
        }
        let info = crate::info::create(crate::comm::hardware::own_resource_entries())?;
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *hw_info = info };
        Ok(())
    })();
    finish("MPI_Get_hw_resource_info", result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wtime_is_monotonic_and_ticks_are_small() {
        let first = MPI_Wtime();
        let second = MPI_Wtime();
        assert!(second >= first);
        assert!(MPI_Wtick() > 0.0 && MPI_Wtick() < 1e-3);
    }

    #[test]
    fn names_and_versions_are_reported() {
        assert!(!processor_name().is_empty());
        let (mut version, mut subversion) = (0, 0);
        // SAFETY: valid out-pointers.
        assert_eq!(unsafe { MPI_Get_version(&mut version, &mut subversion) }, MPI_SUCCESS);
        assert_eq!((version, subversion), (4, 1));
        assert!(library_version().starts_with("Braid"));
    }
}
