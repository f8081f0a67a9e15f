//! Attribute values and LOGICAL results as Fortran sees them. A Fortran attribute is an
//! INTEGER(KIND=MPI_ADDRESS_KIND) stored as the C attribute's pointer value; the predefined
//! attributes are pointers to their values in C and the values themselves in Fortran. Request
//! indices count from 1 in Fortran.

use std::ffi::c_int;

use crate::consts::*;

/// Turns the C value of attribute `keyval` at `value` into its Fortran value.
///
/// # Safety
/// `value` holds what the C get-attribute function stored for `keyval`.
pub unsafe fn attribute_to_fortran(keyval: c_int, value: *mut MPI_Aint) {
    // SAFETY: predefined attributes' C values point to an int (an MPI_Aint for MPI_WIN_SIZE).
    unsafe {
        match keyval {
            MPI_TAG_UB | MPI_HOST | MPI_IO | MPI_WTIME_IS_GLOBAL | MPI_UNIVERSE_SIZE | MPI_LASTUSEDCODE | MPI_APPNUM | MPI_WIN_DISP_UNIT | MPI_WIN_CREATE_FLAVOR | MPI_WIN_MODEL => {
                value.write((value.read() as *const c_int).read() as MPI_Aint)
            }
            MPI_WIN_SIZE => value.write((value.read() as *const MPI_Aint).read()),
            _ => {}
        }
    }
}

/// Makes a LOGICAL result gfortran's .TRUE. (1) or .FALSE. (0).
///
/// # Safety
/// `flag` points to an integer.
pub unsafe fn logical_result(flag: *mut MPI_Fint) {
    // SAFETY: the caller's contract.
    unsafe { flag.write(MPI_Fint::from(flag.read() != 0)) }
}

/// Makes `count` request indices (C's, from 0) Fortran's (from 1); MPI_UNDEFINED stays.
///
/// # Safety
/// `indices` points to `count` integers (none read for a negative count).
pub unsafe fn indices_to_fortran(indices: *mut MPI_Fint, count: MPI_Fint) {
    for i in 0..usize::try_from(count).unwrap_or(0) {
        // SAFETY: the caller's contract.
        unsafe {
            let index = indices.add(i);
            if index.read() >= 0 {
                index.write(index.read() + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_attributes_become_values() {
        let tag_ub: c_int = 12345;
        let mut value = &raw const tag_ub as MPI_Aint;
        // SAFETY: MPI_TAG_UB's C value points to an int.
        unsafe { attribute_to_fortran(MPI_TAG_UB, &mut value) };
        assert_eq!(value, 12345);
        let mut user = 77;
        // SAFETY: a user keyval's value is left as it is.
        unsafe { attribute_to_fortran(1000, &mut user) };
        assert_eq!(user, 77);
        let mut flag = 5;
        // SAFETY: a valid integer.
        unsafe { logical_result(&mut flag) };
        assert_eq!(flag, 1);
    }

    #[test]
    fn request_indices_count_from_one() {
        let mut indices = [0, 2, MPI_UNDEFINED, 7];
        // SAFETY: 4 integers, 3 converted.
        unsafe { indices_to_fortran(indices.as_mut_ptr(), 3) };
        assert_eq!(indices, [1, 3, MPI_UNDEFINED, 7]);
        // SAFETY: no integer read for MPI_UNDEFINED.
        unsafe { indices_to_fortran(indices.as_mut_ptr(), MPI_UNDEFINED) };
        assert_eq!(indices, [1, 3, MPI_UNDEFINED, 7]);
    }
}
