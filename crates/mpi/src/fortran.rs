//! Handle and status conversions between C and Fortran (MPI 3.1 §17.2.4); the datatype module
//! has those of datatypes. Handles are ints in both languages, so a handle converts to itself; a
//! Fortran status is MPI_F_STATUS_SIZE MPI_Fint holding the fields of MPI_Status in order
//! (MPI_F_SOURCE, MPI_F_TAG, MPI_F_ERROR index three).

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use crate::consts::*;
use crate::error::raise;

/// Defines `$name`, the Fortran handle of a C handle of type `$handle`.
macro_rules! to_fortran {
    ($name:ident($handle:ty)) => {
        #[no_mangle]
        pub extern "C" fn $name(handle: $handle) -> MPI_Fint {
            handle
        }
    };
}

/// Defines `$name`, the C handle of type `$handle` of a Fortran handle.
macro_rules! from_fortran {
    ($name:ident($handle:ty)) => {
        #[no_mangle]
        pub extern "C" fn $name(handle: MPI_Fint) -> $handle {
            handle
        }
    };
}

to_fortran!(MPI_Comm_c2f(MPI_Comm));
from_fortran!(MPI_Comm_f2c(MPI_Comm));
to_fortran!(MPI_Group_c2f(MPI_Group));
from_fortran!(MPI_Group_f2c(MPI_Group));
to_fortran!(MPI_Request_c2f(MPI_Request));
from_fortran!(MPI_Request_f2c(MPI_Request));
to_fortran!(MPI_Op_c2f(MPI_Op));
from_fortran!(MPI_Op_f2c(MPI_Op));
to_fortran!(MPI_Info_c2f(MPI_Info));
from_fortran!(MPI_Info_f2c(MPI_Info));
to_fortran!(MPI_Win_c2f(MPI_Win));
from_fortran!(MPI_Win_f2c(MPI_Win));
to_fortran!(MPI_Session_c2f(MPI_Session));
from_fortran!(MPI_Session_f2c(MPI_Session));
to_fortran!(MPI_File_c2f(MPI_File));
from_fortran!(MPI_File_f2c(MPI_File));
to_fortran!(MPI_Errhandler_c2f(MPI_Errhandler));
from_fortran!(MPI_Errhandler_f2c(MPI_Errhandler));
to_fortran!(MPI_Message_c2f(MPI_Message));
from_fortran!(MPI_Message_f2c(MPI_Message));

/// The Fortran status of a C status: every field, the hidden count and cancelled flag included.
pub fn status_to_fortran(status: &MPI_Status) -> [MPI_Fint; MPI_F_STATUS_SIZE as usize] {
    let mut fortran = [0; MPI_F_STATUS_SIZE as usize];
    fortran[0] = status.count_lo;
    fortran[1] = status.count_hi_and_cancelled;
    fortran[MPI_F_SOURCE as usize] = status.MPI_SOURCE;
    fortran[MPI_F_TAG as usize] = status.MPI_TAG;
    fortran[MPI_F_ERROR as usize] = status.MPI_ERROR;
    fortran
}

/// The C status of a Fortran status.
pub fn status_from_fortran(fortran: &[MPI_Fint; MPI_F_STATUS_SIZE as usize]) -> MPI_Status {
    MPI_Status { count_lo: fortran[0], count_hi_and_cancelled: fortran[1], MPI_SOURCE: fortran[MPI_F_SOURCE as usize], MPI_TAG: fortran[MPI_F_TAG as usize], MPI_ERROR: fortran[MPI_F_ERROR as usize] }
}

/// Why a status argument cannot be converted, if it cannot: null, or an "ignore" value, which
/// stands for no status at all.
fn unusable_status<T>(status: *const T, ignore: *const T, name: &str) -> Option<String> {
    if status.is_null() {
        Some(format!("{name} must not be NULL"))
    } else if status == ignore {
        Some(format!("{name} is an \"ignore\" value, not a status"))
    } else {
        None
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_c2f(c_status: *const MPI_Status, f_status: *mut MPI_Fint) -> c_int {
    let problem = unusable_status(c_status, MPI_STATUS_IGNORE, "c_status").or_else(|| unusable_status(f_status.cast_const(), MPI_F_STATUS_IGNORE, "f_status"));
    if let Some(detail) = problem {
        return raise(MPI_COMM_WORLD, "MPI_Status_c2f", MPI_ERR_ARG, &detail);
    }
    // SAFETY: both checked non-null and not sentinels; the caller passes a status and room for
    // MPI_F_STATUS_SIZE integers.
    unsafe { f_status.cast::<[MPI_Fint; MPI_F_STATUS_SIZE as usize]>().write_unaligned(status_to_fortran(&c_status.read_unaligned())) };
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_f2c(f_status: *const MPI_Fint, c_status: *mut MPI_Status) -> c_int {
    let problem = unusable_status(f_status, MPI_F_STATUS_IGNORE.cast_const(), "f_status").or_else(|| unusable_status(c_status.cast_const(), MPI_STATUS_IGNORE, "c_status"));
    if let Some(detail) = problem {
        return raise(MPI_COMM_WORLD, "MPI_Status_f2c", MPI_ERR_ARG, &detail);
    }
    // SAFETY: both checked non-null and not sentinels; the caller passes MPI_F_STATUS_SIZE
    // integers and a status to write.
    unsafe { c_status.write_unaligned(status_from_fortran(&f_status.cast::<[MPI_Fint; MPI_F_STATUS_SIZE as usize]>().read_unaligned())) };
    MPI_SUCCESS
}

/// Copies a status from `from` to `to` after checking both (MPI 4.0's conversions between C,
/// `mpi_f08` and `mpi` statuses); `convert` maps the one layout to the other.
///
/// # Safety
/// Both pointers are NULL, their "ignore" value, or valid for a read of `F` (from) and a write of
/// `T` (to).
unsafe fn convert_status<F: Copy, T>(function: &str, from: *const F, from_ignore: *const F, to: *mut T, to_ignore: *const T, convert: impl FnOnce(F) -> T) -> c_int {
    let problem = unusable_status(from, from_ignore, "the status to convert").or_else(|| unusable_status(to.cast_const(), to_ignore, "the status to write"));
    if let Some(detail) = problem {
        return raise(MPI_COMM_WORLD, function, MPI_ERR_ARG, &detail);
    }
    // SAFETY: both checked non-null and not sentinels; valid per the caller.
    unsafe { to.write_unaligned(convert(from.read_unaligned())) };
    MPI_SUCCESS
}

type FortranStatus = [MPI_Fint; MPI_F_STATUS_SIZE as usize];

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_c2f08(c_status: *const MPI_Status, f08_status: *mut MPI_F08_status) -> c_int {
    // SAFETY: the caller's statuses.
    unsafe { convert_status("MPI_Status_c2f08", c_status, MPI_STATUS_IGNORE, f08_status, MPI_F08_STATUS_IGNORE, |status| status) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_f082c(f08_status: *const MPI_F08_status, c_status: *mut MPI_Status) -> c_int {
    // SAFETY: the caller's statuses.
    unsafe { convert_status("MPI_Status_f082c", f08_status, MPI_F08_STATUS_IGNORE, c_status, MPI_STATUS_IGNORE, |status| status) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_f082f(f08_status: *const MPI_F08_status, f_status: *mut MPI_Fint) -> c_int {
    // SAFETY: the caller's statuses; `f_status` has room for MPI_F_STATUS_SIZE integers.
    unsafe { convert_status("MPI_Status_f082f", f08_status, MPI_F08_STATUS_IGNORE, f_status.cast::<FortranStatus>(), MPI_F_STATUS_IGNORE.cast(), |status| status_to_fortran(&status)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_f2f08(f_status: *const MPI_Fint, f08_status: *mut MPI_F08_status) -> c_int {
    // SAFETY: the caller's statuses; `f_status` holds MPI_F_STATUS_SIZE integers.
    unsafe { convert_status("MPI_Status_f2f08", f_status.cast::<FortranStatus>(), MPI_F_STATUS_IGNORE.cast_const().cast(), f08_status, MPI_F08_STATUS_IGNORE, |status| status_from_fortran(&status)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_survives_the_round_trip_through_fortran() {
        let status = MPI_Status { count_lo: -5, count_hi_and_cancelled: 3, MPI_SOURCE: 2, MPI_TAG: 77, MPI_ERROR: MPI_ERR_TRUNCATE };
        let fortran = status_to_fortran(&status);
        assert_eq!(fortran, [-5, 3, 2, 77, MPI_ERR_TRUNCATE]);
        assert_eq!(status_from_fortran(&fortran), status);
    }

    #[test]
    fn handles_convert_to_themselves() {
        assert_eq!(MPI_Comm_c2f(MPI_COMM_WORLD), MPI_COMM_WORLD);
        assert_eq!(MPI_Group_f2c(MPI_Group_c2f(MPI_GROUP_EMPTY)), MPI_GROUP_EMPTY);
        assert_eq!(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NO_PROC)), MPI_MESSAGE_NO_PROC);
    }

    #[test]
    fn status_conversions_refuse_null_and_ignore() {
        let status = MPI_Status::default();
        let mut fortran = [0; MPI_F_STATUS_SIZE as usize];
        // SAFETY: valid or sentinel arguments, which the functions check before any access.
        unsafe {
            assert_eq!(MPI_Status_c2f(MPI_STATUS_IGNORE, fortran.as_mut_ptr()), MPI_ERR_ARG);
            assert_eq!(MPI_Status_c2f(&status, std::ptr::null_mut()), MPI_ERR_ARG);
            assert_eq!(MPI_Status_f2c(MPI_F_STATUS_IGNORE, &mut MPI_Status::default()), MPI_ERR_ARG);
            assert_eq!(MPI_Status_f2c(fortran.as_ptr(), MPI_STATUS_IGNORE), MPI_ERR_ARG);
            assert_eq!(MPI_Status_c2f(&status, fortran.as_mut_ptr()), MPI_SUCCESS);
        }
    }
}
