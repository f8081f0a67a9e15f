//! Predefined attributes (MPI_TAG_UB ... on communicators, MPI_WIN_BASE ... on windows) and the
//! predefined copy and delete callbacks, exported as functions a C program can pass or call.

// The callbacks carry the names mpi.h gives them.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use super::{Kind, Object};
use crate::comm::TAG_UB;
use crate::consts::*;

static TAG_UB_VALUE: c_int = TAG_UB;
/// No process is a host: Braid has none.
static HOST_VALUE: c_int = MPI_PROC_NULL;
/// Every process can do I/O.
static IO_VALUE: c_int = MPI_ANY_SOURCE;
/// MPI_Wtime is each process's own monotonic clock, not synchronised across nodes.
static WTIME_IS_GLOBAL_VALUE: c_int = 0;
/// Which command of its job started this process (0 but in a job of several commands).
static APPNUM_VALUE: AtomicI32 = AtomicI32::new(0);
static UNIVERSE_SIZE_VALUE: AtomicI32 = AtomicI32::new(1);

/// Records how many processes the job may grow to, the value of MPI_UNIVERSE_SIZE.
pub fn set_universe_size(size: u32) {
    UNIVERSE_SIZE_VALUE.store(size as c_int, Ordering::Relaxed);
}

/// Records the value of MPI_APPNUM.
pub fn set_appnum(appnum: c_int) {
    APPNUM_VALUE.store(appnum, Ordering::Relaxed);
}

/// The kind of object a predefined keyval belongs to; None for any other keyval.
pub fn kind_of(keyval: c_int) -> Option<Kind> {
    match keyval {
        MPI_TAG_UB | MPI_HOST | MPI_IO | MPI_WTIME_IS_GLOBAL | MPI_UNIVERSE_SIZE | MPI_LASTUSEDCODE | MPI_APPNUM => Some(Kind::Comm),
        MPI_WIN_BASE | MPI_WIN_SIZE | MPI_WIN_DISP_UNIT | MPI_WIN_CREATE_FLAVOR | MPI_WIN_MODEL => Some(Kind::Win),
        _ => None,
    }
}

/// The value of predefined attribute `keyval` on a communicator: a pointer to its int (they all
/// carry the same values). Windows have their own (`WinTable::predefined_attribute`).
pub fn value(object: Object, keyval: c_int) -> Option<*mut c_void> {
    if !matches!(object, Object::Comm(_)) {
        return None;
    }
    let value: *const c_int = match keyval {
        MPI_TAG_UB => &TAG_UB_VALUE,
        MPI_HOST => &HOST_VALUE,
        MPI_IO => &IO_VALUE,
        MPI_WTIME_IS_GLOBAL => &WTIME_IS_GLOBAL_VALUE,
        MPI_UNIVERSE_SIZE => UNIVERSE_SIZE_VALUE.as_ptr(),
        MPI_LASTUSEDCODE => crate::error::codes::LAST_USED_CODE.as_ptr(),
        MPI_APPNUM => APPNUM_VALUE.as_ptr(),
        _ => return None,
    };
    Some(value.cast_mut().cast())
}

/// Defines copy callbacks that copy nothing: the duplicate does not get the value.
macro_rules! null_copy {
    ($($name:ident),*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(oldobject: c_int, keyval: c_int, extra_state: *mut c_void, attribute_val_in: *mut c_void, attribute_val_out: *mut c_void, flag: *mut c_int) -> c_int {
            let _ = (oldobject, keyval, extra_state, attribute_val_in, attribute_val_out);
            if !flag.is_null() {
                // SAFETY: MPI passes a pointer to the flag.
                unsafe { *flag = 0 };
            }
            MPI_SUCCESS
        }
    )*};
}

/// Defines delete callbacks that do nothing.
macro_rules! null_delete {
    ($($name:ident),*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(object: c_int, keyval: c_int, attribute_val: *mut c_void, extra_state: *mut c_void) -> c_int {
            let _ = (object, keyval, attribute_val, extra_state);
            MPI_SUCCESS
        }
    )*};
}

/// Defines copy callbacks that give the duplicate the same value.
macro_rules! dup_copy {
    ($($name:ident),*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(oldobject: c_int, keyval: c_int, extra_state: *mut c_void, attribute_val_in: *mut c_void, attribute_val_out: *mut c_void, flag: *mut c_int) -> c_int {
            let _ = (oldobject, keyval, extra_state);
            if attribute_val_out.is_null() || flag.is_null() {
                return MPI_ERR_ARG;
            }
            // SAFETY: MPI passes the copy's location (really a `void **`) and a pointer to the flag.
            unsafe {
                *attribute_val_out.cast::<*mut c_void>() = attribute_val_in;
                *flag = 1;
            }
            MPI_SUCCESS
        }
    )*};
}

null_copy!(MPI_COMM_NULL_COPY_FN, MPI_TYPE_NULL_COPY_FN, MPI_WIN_NULL_COPY_FN, MPI_NULL_COPY_FN);
null_delete!(MPI_COMM_NULL_DELETE_FN, MPI_TYPE_NULL_DELETE_FN, MPI_WIN_NULL_DELETE_FN, MPI_NULL_DELETE_FN);
dup_copy!(MPI_COMM_DUP_FN, MPI_TYPE_DUP_FN, MPI_WIN_DUP_FN, MPI_DUP_FN);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_attributes_point_at_their_values() {
        let tag_ub = value(Object::Comm(MPI_COMM_WORLD), MPI_TAG_UB).unwrap();
        // SAFETY: the pointer refers to a static int.
        assert!(unsafe { *tag_ub.cast::<c_int>() } >= (1 << 30) - 1);
        let host = value(Object::Comm(MPI_COMM_SELF), MPI_HOST).unwrap();
        // SAFETY: as above.
        assert_eq!(unsafe { *host.cast::<c_int>() }, MPI_PROC_NULL);
        assert!(value(Object::Comm(MPI_COMM_WORLD), 99).is_none());
        assert!(value(Object::Win(1), MPI_WIN_BASE).is_none());
        assert_eq!(kind_of(MPI_APPNUM), Some(Kind::Comm));
        assert_eq!(kind_of(MPI_WIN_MODEL), Some(Kind::Win));
        assert_eq!(kind_of(super::super::FIRST_USER_KEYVAL), None);
    }

    #[test]
    fn the_predefined_callbacks_copy_or_not() {
        let mut out: *mut c_void = std::ptr::null_mut();
        let mut flag = -1;
        let input = 7usize as *mut c_void;
        let out_ptr = (&mut out as *mut *mut c_void).cast();
        // SAFETY: valid out-pointers.
        unsafe {
            assert_eq!(MPI_COMM_DUP_FN(1, 20, std::ptr::null_mut(), input, out_ptr, &mut flag), MPI_SUCCESS);
            assert_eq!((out, flag), (input, 1));
            assert_eq!(MPI_TYPE_NULL_COPY_FN(1, 20, std::ptr::null_mut(), input, out_ptr, &mut flag), MPI_SUCCESS);
            assert_eq!(flag, 0);
            assert_eq!(MPI_NULL_DELETE_FN(1, 20, input, std::ptr::null_mut()), MPI_SUCCESS);
        }
    }
}
