//! The MPI_Info_* calls over the table of [`super::InfoTable`].

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, CStr};

use crate::consts::*;
use crate::error::{error, finish, write_c_string, MpiResult};
use crate::group::store;

/// A C string argument.
///
/// # Safety
/// `text` must be NULL or a NUL-terminated string.
pub(crate) unsafe fn c_text<'a>(text: *const c_char, what: &str) -> MpiResult<std::borrow::Cow<'a, str>> {
    if text.is_null() {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("{what} must not be NULL")));
    }
    // SAFETY: non-null and NUL-terminated per the caller.
    Ok(unsafe { CStr::from_ptr(text) }.to_string_lossy())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create(info: *mut MPI_Info) -> c_int {
    let result = crate::info::with_infos(|infos| {
        let handle = infos.insert(Vec::new());
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(info, handle, "info") }
    });
    finish("MPI_Info_create", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_set(info: MPI_Info, key: *const c_char, value: *const c_char) -> c_int {
    let result = crate::info::with_infos(|infos| {
        // SAFETY: MPI requires NUL-terminated strings.
        let (key, value) = unsafe { (c_text(key, "key")?, c_text(value, "value")?) };
        infos.set(info, &key, &value)
    });
    finish("MPI_Info_set", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get(info: MPI_Info, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) -> c_int {
    let result = crate::info::with_infos(|infos| {
        // SAFETY: MPI requires a NUL-terminated key.
        let key = unsafe { c_text(key, "key")? };
        if valuelen < 0 {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("valuelen {valuelen} is negative")));
        }
        let found = infos.lookup(info, &key)?;
        if let Some(text) = found {
            if value.is_null() {
                return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "value must not be NULL"));
            }
            // SAFETY: MPI requires `value` to hold `valuelen + 1` characters.
            unsafe { write_c_string(text, value, valuelen as usize + 1) };
        }
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(flag, c_int::from(found.is_some()), "flag") }
    });
    finish("MPI_Info_get", result)
}

/// MPI 4.0's MPI_Info_get: `*buflen` says how many characters `value` holds (its NUL
/// included) and comes back as the value's length plus one, so that a call with `*buflen` 0
/// asks for the size; a longer value is cut to fit.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_string(info: MPI_Info, key: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int) -> c_int {
    let result = crate::info::with_infos(|infos| {
        // SAFETY: MPI requires a NUL-terminated key.
        let key = unsafe { c_text(key, "key")? };
        if buflen.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "buflen must not be NULL"));
        }
        // SAFETY: checked non-null; the caller's in-out length.
        let capacity = unsafe { *buflen };
        if capacity < 0 {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("buflen {capacity} is negative")));
        }
        let found = infos.lookup(info, &key)?;
        if let Some(text) = found {
            if capacity > 0 {
                if value.is_null() {
                    return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "value must not be NULL"));
                }
                // SAFETY: MPI requires `value` to hold `*buflen` characters.
                unsafe { write_c_string(text, value, capacity as usize) };
            }
            let needed = c_int::try_from(text.len() + 1).map_err(|_| error(MPI_COMM_WORLD, MPI_ERR_INFO_VALUE, "the value is too long for an int length"))?;
            // SAFETY: checked non-null above.
            unsafe { *buflen = needed };
        }
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(flag, c_int::from(found.is_some()), "flag") }
    });
    finish("MPI_Info_get_string", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_valuelen(info: MPI_Info, key: *const c_char, valuelen: *mut c_int, flag: *mut c_int) -> c_int {
    let result = crate::info::with_infos(|infos| {
        // SAFETY: MPI requires a NUL-terminated key.
        let key = unsafe { c_text(key, "key")? };
        let found = infos.lookup(info, &key)?;
        // SAFETY: the caller's out-pointers (NULL is rejected by store).
        unsafe {
            if let Some(text) = found {
                store(valuelen, text.len() as c_int, "valuelen")?;
            }
            store(flag, c_int::from(found.is_some()), "flag")
        }
    });
    finish("MPI_Info_get_valuelen", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_delete(info: MPI_Info, key: *const c_char) -> c_int {
    let result = crate::info::with_infos(|infos| {
        // SAFETY: MPI requires a NUL-terminated key.
        let key = unsafe { c_text(key, "key")? };
        infos.delete(info, &key)
    });
    finish("MPI_Info_delete", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nkeys(info: MPI_Info, nkeys: *mut c_int) -> c_int {
    let result = crate::info::with_infos(|infos| {
        let count = infos.get(info)?.len() as c_int;
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(nkeys, count, "nkeys") }
    });
    finish("MPI_Info_get_nkeys", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) -> c_int {
    let result = crate::info::with_infos(|infos| {
        let entries = infos.get(info)?;
        let Some((name, _)) = usize::try_from(n).ok().and_then(|i| entries.get(i)) else {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("key number {n} does not exist ({} keys)", entries.len())));
        };
        if key.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "key must not be NULL"));
        }
        // SAFETY: MPI requires `key` to hold MPI_MAX_INFO_KEY + 1 characters.
        unsafe { write_c_string(name, key, MPI_MAX_INFO_KEY as usize + 1) };
        Ok(())
    });
    finish("MPI_Info_get_nthkey", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) -> c_int {
    let result = crate::info::with_infos(|infos| {
        let copy = infos.get(info)?.clone();
        let handle = infos.insert(copy);
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(newinfo, handle, "newinfo") }
    });
    finish("MPI_Info_dup", result)
}

/// MPI_Info_create_env: the environment info, with the command and arguments given (this
/// process's own when `argv` is NULL). Callable before MPI starts.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create_env(argc: c_int, argv: *mut *mut c_char, info: *mut MPI_Info) -> c_int {
    let result = crate::info::with_infos(|infos| {
        let args = if argv.is_null() || argc <= 0 {
            None
        } else {
            // SAFETY: MPI's rule: `argc` NUL-terminated strings at `argv`, as main received them.
            let args = (0..argc as usize).map(|i| unsafe { *argv.add(i) }).filter(|arg| !arg.is_null());
            // SAFETY: as above.
            Some(args.map(|arg| unsafe { CStr::from_ptr(arg) }.to_string_lossy().into_owned()).collect())
        };
        let handle = infos.insert(crate::info::environment(args));
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(info, handle, "info") }
    });
    finish("MPI_Info_create_env", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_free(info: *mut MPI_Info) -> c_int {
    let result = crate::info::with_infos(|infos| {
        if info.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "info must not be NULL"));
        }
        // SAFETY: non-null; the caller's handle.
        unsafe {
            infos.free(*info)?;
            *info = MPI_INFO_NULL;
        }
        Ok(())
    });
    finish("MPI_Info_free", result)
}
