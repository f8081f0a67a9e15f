//! Status objects: what MPI_Get_count and MPI_Get_elements(_x) read from a status, and what
//! MPI_Status_set_elements(_x) and MPI_Status_set_cancelled write into one (a generalized
//! request's query function fills its status with them).
//!
//! A status keeps the byte count of the message (see [`crate::request::pack_count`]); counts of
//! elements are derived from it through the datatype.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use crate::consts::*;
use crate::datatype::{self, TypeInfo};
use crate::error::{error, finish, MpiResult};
use crate::group::store;
use crate::request::{is_real_status, pack_count, status_cancelled, status_count};

/// Elements of `element_size` bytes in `bytes`: MPI_UNDEFINED when not a whole number or too many.
pub fn count_of(bytes: usize, element_size: usize) -> c_int {
    c_int::try_from(large_count_of(bytes, element_size)).unwrap_or(MPI_UNDEFINED)
}

/// [`count_of`] as a large count (MPI_Get_count_c).
pub fn large_count_of(bytes: usize, element_size: usize) -> MPI_Count {
    if element_size == 0 {
        return 0;
    }
    if !bytes.is_multiple_of(element_size) {
        return MPI_UNDEFINED.into();
    }
    MPI_Count::try_from(bytes / element_size).unwrap_or(MPI_UNDEFINED.into())
}

/// The packed bytes that hold exactly the first `elements` basic elements of a stream of
/// `info`'s elements (the inverse of [`TypeInfo::elements_in`]); `None` when `info` holds no
/// data or the size overflows.
pub fn bytes_of_elements(info: &TypeInfo, elements: usize) -> Option<usize> {
    if elements == 0 {
        return Some(0);
    }
    let per_element = info.elements_in(info.size);
    if per_element == 0 {
        return None;
    }
    let (whole, rest) = (elements / per_element, elements % per_element);
    // `elements_in` grows by one at each basic element's end: the shortest prefix of one
    // element holding `rest` of them ends where the `rest`-th does.
    let (mut low, mut high) = (0, info.size);
    while low < high {
        let middle = low + (high - low) / 2;
        if info.elements_in(middle) >= rest {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    whole.checked_mul(info.size)?.checked_add(low)
}

/// The status behind a `const MPI_Status *` argument.
///
/// # Safety
/// `status` must be NULL, MPI_STATUS_IGNORE or point to a status.
unsafe fn read_status<'a>(status: *const MPI_Status) -> MpiResult<&'a MPI_Status> {
    if !is_real_status(status) {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "status must be a real status, not NULL or MPI_STATUS_IGNORE"));
    }
    // SAFETY: a real status pointer, per the caller.
    Ok(unsafe { &*status })
}

/// The status behind an `MPI_Status *` argument that is written.
///
/// # Safety
/// `status` must be NULL, MPI_STATUS_IGNORE or point to a writable status.
unsafe fn status_to_write<'a>(status: *mut MPI_Status) -> MpiResult<&'a mut MPI_Status> {
    if !is_real_status(status) {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "status must be a real status, not NULL or MPI_STATUS_IGNORE"));
    }
    // SAFETY: a real status pointer, writable per the caller.
    Ok(unsafe { &mut *status })
}

fn invalid_datatype(datatype: MPI_Datatype) -> impl FnOnce(c_int) -> crate::error::MpiError {
    move |class| error(MPI_COMM_WORLD, class, format!("datatype {datatype} is not valid"))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_count(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) -> c_int {
    let result = (|| {
        // SAFETY: the caller's status.
        let status = unsafe { read_status(status)? };
        let size = datatype::type_size(datatype).map_err(invalid_datatype(datatype))?;
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(count, count_of(status_count(status), size), "count") }
    })();
    finish("MPI_Get_count", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_count_c(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> c_int {
    let result = (|| {
        // SAFETY: the caller's status.
        let status = unsafe { read_status(status)? };
        let size = datatype::type_size(datatype).map_err(invalid_datatype(datatype))?;
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(count, large_count_of(status_count(status), size), "count") }
    })();
    finish("MPI_Get_count_c", result)
}

/// Basic elements in a status, for MPI_Get_elements(_x, _c).
unsafe fn elements_of(status: *const MPI_Status, datatype: MPI_Datatype) -> MpiResult<usize> {
    // SAFETY: the caller's status.
    let status = unsafe { read_status(status)? };
    datatype::elements(datatype, status_count(status)).map_err(invalid_datatype(datatype))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) -> c_int {
    let result = (|| {
        // SAFETY: the caller's status.
        let elements = unsafe { elements_of(status, datatype)? };
        let value = c_int::try_from(elements).unwrap_or(MPI_UNDEFINED);
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(count, value, "count") }
    })();
    finish("MPI_Get_elements", result)
}

/// MPI_Get_elements_x and MPI_Get_elements_c: the elements as a large count.
///
/// # Safety
/// The caller's status and out-pointer.
unsafe fn large_elements(function: &str, status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> c_int {
    let result = (|| {
        // SAFETY: the caller's status.
        let elements = unsafe { elements_of(status, datatype)? };
        let value = MPI_Count::try_from(elements).unwrap_or(MPI_UNDEFINED.into());
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(count, value, "count") }
    })();
    finish(function, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements_x(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> c_int {
    // SAFETY: the caller's arguments, passed on.
    unsafe { large_elements("MPI_Get_elements_x", status, datatype, count) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements_c(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> c_int {
    // SAFETY: the caller's arguments, passed on.
    unsafe { large_elements("MPI_Get_elements_c", status, datatype, count) }
}

/// MPI_Status_set_elements(_x): the status then reports `count` basic elements of `datatype`
/// (and the matching MPI_Get_count); its cancelled flag is kept.
unsafe fn set_elements(status: *mut MPI_Status, datatype: MPI_Datatype, count: MPI_Count) -> MpiResult<()> {
    // SAFETY: the caller's status.
    let status = unsafe { status_to_write(status)? };
    let elements = usize::try_from(count).map_err(|_| error(MPI_COMM_WORLD, MPI_ERR_COUNT, format!("count {count} is negative")))?;
    let info = datatype::lookup(datatype).map_err(invalid_datatype(datatype))?;
    let Some(bytes) = bytes_of_elements(&info, elements) else {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_COUNT, format!("{count} elements of datatype {datatype} do not fit in a status")));
    };
    (status.count_lo, status.count_hi_and_cancelled) = pack_count(bytes, status_cancelled(status));
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements(status: *mut MPI_Status, datatype: MPI_Datatype, count: c_int) -> c_int {
    // SAFETY: the caller's status.
    finish("MPI_Status_set_elements", unsafe { set_elements(status, datatype, count.into()) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements_x(status: *mut MPI_Status, datatype: MPI_Datatype, count: MPI_Count) -> c_int {
    // SAFETY: the caller's status.
    finish("MPI_Status_set_elements_x", unsafe { set_elements(status, datatype, count) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_cancelled(status: *mut MPI_Status, flag: c_int) -> c_int {
    let result = (|| {
        // SAFETY: the caller's status.
        let status = unsafe { status_to_write(status)? };
        (status.count_lo, status.count_hi_and_cancelled) = pack_count(status_count(status), flag != 0);
        Ok(())
    })();
    finish("MPI_Status_set_cancelled", result)
}

/// Defines MPI 4.1's getter and setter of a public status field: `$get(status, *value)` and
/// `$set(status, value)`, on a real status only.
macro_rules! status_field {
    ($get:ident / $set:ident => $field:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $get(status: *const MPI_Status, value: *mut c_int) -> c_int {
            let result = (|| {
                if !is_real_status(status.cast_mut()) {
                    return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "status must be a real status, not NULL or MPI_STATUS_IGNORE"));
                }
                // SAFETY: a real status pointer, readable per the caller.
                let field = unsafe { (*status).$field };
                // SAFETY: the caller's out-pointer (NULL is rejected by store).
                unsafe { store(value, field, "value") }
            })();
            finish(stringify!($get), result)
        }

        #[no_mangle]
        pub unsafe extern "C" fn $set(status: *mut MPI_Status, value: c_int) -> c_int {
            let result = (|| {
                // SAFETY: the caller's status.
                let status = unsafe { status_to_write(status)? };
                status.$field = value;
                Ok(())
            })();
            finish(stringify!($set), result)
        }
    };
}

status_field!(MPI_Status_get_source / MPI_Status_set_source => MPI_SOURCE);
status_field!(MPI_Status_get_tag / MPI_Status_set_tag => MPI_TAG);
status_field!(MPI_Status_get_error / MPI_Status_set_error => MPI_ERROR);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_bytes() {
        assert_eq!(count_of(12, 4), 3);
        assert_eq!(count_of(13, 4), MPI_UNDEFINED);
        assert_eq!(count_of(0, 0), 0);
        assert_eq!(count_of(1 << 40, 1), MPI_UNDEFINED);
    }

    #[test]
    fn element_counts_round_trip_through_bytes() {
        let int = datatype::lookup(MPI_INT).unwrap();
        assert_eq!(bytes_of_elements(&int, 0), Some(0));
        assert_eq!(bytes_of_elements(&int, 7), Some(28));
        // MPI_DOUBLE_INT: two basic elements (a double, then an int) in 12 packed bytes.
        let pair = datatype::lookup(MPI_DOUBLE_INT).unwrap();
        for elements in 0..9 {
            let bytes = bytes_of_elements(&pair, elements).unwrap();
            assert_eq!(pair.elements_in(bytes), elements, "{elements} elements of MPI_DOUBLE_INT took {bytes} bytes");
        }
        assert_eq!(bytes_of_elements(&pair, 3), Some(12 + 8));
        assert_eq!(bytes_of_elements(&int, usize::MAX), None);
    }

    #[test]
    fn setters_keep_the_other_half_of_the_count_words() {
        let mut status = MPI_Status::default();
        // SAFETY: a real status on the stack.
        unsafe {
            assert_eq!(MPI_Status_set_cancelled(&mut status, 1), MPI_SUCCESS);
            assert_eq!(MPI_Status_set_elements_x(&mut status, MPI_DOUBLE, 3 << 30), MPI_SUCCESS);
        }
        assert_eq!((status_count(&status), status_cancelled(&status)), (24 << 30, true));
        // SAFETY: as above.
        unsafe {
            assert_eq!(MPI_Status_set_cancelled(&mut status, 0), MPI_SUCCESS);
            assert_eq!(MPI_Status_set_elements(&mut status, MPI_SHORT, -1), MPI_ERR_COUNT);
            assert_eq!(MPI_Status_set_elements(&mut status, MPI_DATATYPE_NULL, 1), MPI_ERR_TYPE);
            assert_eq!(MPI_Status_set_elements(MPI_STATUS_IGNORE, MPI_INT, 1), MPI_ERR_ARG);
        }
        assert_eq!((status_count(&status), status_cancelled(&status)), (24 << 30, false));
    }
}
