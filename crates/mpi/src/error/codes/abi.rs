//! Error codes as the calls see them: [`class_of`] and [`text_of`] outside any borrow of the
//! state, and the MPI_Error_* and MPI_Add_error_* calls over [`super::ErrorCodes`].

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, CStr};

use super::{class_text, is_predefined};
use crate::consts::*;
use crate::error::{error, finish, raise, write_c_string, MpiResult};
use crate::runtime;

/// The class of `code` outside any borrow of the state: predefined codes always, added ones while
/// MPI runs.
pub fn class_of(code: c_int) -> Option<c_int> {
    if is_predefined(code) {
        return Some(code);
    }
    runtime::try_with(|rt| rt.error_codes.class_of(code)).flatten()
}

/// The text of `code` as [`class_of`] finds it.
pub fn text_of(code: c_int) -> Option<String> {
    if is_predefined(code) {
        return Some(class_text(code).to_string());
    }
    runtime::try_with(|rt| rt.error_codes.text(code).map(str::to_string)).flatten()
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) -> c_int {
    if string.is_null() || resultlen.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Error_string", MPI_ERR_ARG, "string and resultlen must not be NULL");
    }
    let Some(text) = text_of(errorcode) else {
        return raise(MPI_COMM_WORLD, "MPI_Error_string", MPI_ERR_ARG, &format!("{errorcode} is not an error code"));
    };
    // SAFETY: MPI requires `string` to hold MPI_MAX_ERROR_STRING characters; `resultlen` is non-null.
    unsafe {
        *resultlen = write_c_string(&text, string, MPI_MAX_ERROR_STRING as usize);
    }
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> c_int {
    if errorclass.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Error_class", MPI_ERR_ARG, "errorclass must not be NULL");
    }
    let Some(class) = class_of(errorcode) else {
        return raise(MPI_COMM_WORLD, "MPI_Error_class", MPI_ERR_ARG, &format!("{errorcode} is not an error code"));
    };
    // SAFETY: checked non-null above; the caller passes a pointer to an int.
    unsafe { *errorclass = class };
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_class(errorclass: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        if errorclass.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "errorclass must not be NULL"));
        }
        let class = rt.error_codes.add_class();
        // SAFETY: checked non-null; the caller's int.
        unsafe { *errorclass = class };
        Ok(())
    });
    finish("MPI_Add_error_class", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        if errorcode.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "errorcode must not be NULL"));
        }
        let code = rt.error_codes.add_code(errorclass).map_err(|detail| error(MPI_COMM_WORLD, MPI_ERR_ARG, detail))?;
        // SAFETY: checked non-null; the caller's int.
        unsafe { *errorcode = code };
        Ok(())
    });
    finish("MPI_Add_error_code", result)
}

/// The text of MPI_Add_error_string: at most MPI_MAX_ERROR_STRING - 1 bytes.
///
/// # Safety
/// `string` must be NULL or a NUL-terminated string.
unsafe fn error_text(string: *const c_char) -> MpiResult<String> {
    if string.is_null() {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "string must not be NULL"));
    }
    // SAFETY: non-null; MPI requires a NUL-terminated string.
    let text = unsafe { CStr::from_ptr(string) }.to_string_lossy().into_owned();
    if text.len() >= MPI_MAX_ERROR_STRING as usize {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("the string has {} bytes; at most {} fit", text.len(), MPI_MAX_ERROR_STRING - 1)));
    }
    Ok(text)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_string(errorcode: c_int, string: *const c_char) -> c_int {
    let result = runtime::with(|rt| {
        // SAFETY: MPI requires a NUL-terminated string.
        let text = unsafe { error_text(string)? };
        rt.error_codes.set_text(errorcode, &text).map_err(|detail| error(MPI_COMM_WORLD, MPI_ERR_ARG, detail))
    });
    finish("MPI_Add_error_string", result)
}

/// MPI 4.1's MPI_Remove_error_class, _code and _string.
fn remove(function: &str, what: impl FnOnce(&mut super::ErrorCodes) -> Result<(), String>) -> c_int {
    let result = runtime::with(|rt| what(&mut rt.error_codes).map_err(|detail| error(MPI_COMM_WORLD, MPI_ERR_ARG, detail)));
    finish(function, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Remove_error_class(errorclass: c_int) -> c_int {
    remove("MPI_Remove_error_class", |codes| codes.remove_class(errorclass))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Remove_error_code(errorcode: c_int) -> c_int {
    remove("MPI_Remove_error_code", |codes| codes.remove_code(errorcode))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Remove_error_string(errorcode: c_int) -> c_int {
    remove("MPI_Remove_error_string", |codes| codes.remove_text(errorcode))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_codes_resolve_without_mpi() {
        assert_eq!(class_of(MPI_ERR_TRUNCATE), Some(MPI_ERR_TRUNCATE));
        assert_eq!(class_of(MPI_ERR_LASTCODE + 1), None);
        assert_eq!(text_of(MPI_ERR_TAG).as_deref(), Some("invalid tag"));
        let mut class = 0;
        // SAFETY: a valid out-pointer.
        assert_eq!(unsafe { MPI_Error_class(MPI_ERR_LASTCODE + 1, &mut class) }, MPI_ERR_ARG);
    }
}
