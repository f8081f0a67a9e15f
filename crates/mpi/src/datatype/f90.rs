//! Types chosen by size or by Fortran precision and range: MPI_Type_match_size and
//! MPI_Type_create_f90_integer / _real / _complex (MPI-3.1 §17.1.9).
//!
//! The kinds are those of gfortran on the platforms Braid supports: INTEGER(1..8), REAL(4),
//! REAL(8) and REAL(16) (IEEE binary128), and the COMPLEX of each REAL.

// The safety contract of every entry point is the MPI standard's: pointers valid for the sizes
// it documents.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;
use std::sync::Arc;

use super::abi::out;
use super::{failure, lookup, parameterized, Origin, TypeInfo};
use crate::consts::*;
use crate::error::{finish, MpiResult};

/// The named type of `typeclass` whose size is `size` bytes.
fn matching_size(typeclass: c_int, size: c_int) -> MpiResult<MPI_Datatype> {
    let candidates: &[MPI_Datatype] = match typeclass {
        MPI_TYPECLASS_INTEGER => &[MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8, MPI_INTEGER16],
        MPI_TYPECLASS_REAL => &[MPI_REAL4, MPI_REAL8, MPI_REAL16],
        MPI_TYPECLASS_COMPLEX => &[MPI_COMPLEX8, MPI_COMPLEX16, MPI_COMPLEX32],
        other => return Err(failure(MPI_ERR_ARG, format!("typeclass {other} is not an MPI_TYPECLASS_* value"))),
    };
    let size_of = |dt: MPI_Datatype| lookup(dt).map_or(0, |info| info.size);
    candidates.iter().copied().find(|&dt| usize::try_from(size).is_ok_and(|size| size_of(dt) == size)).ok_or_else(|| failure(MPI_ERR_ARG, format!("no type of class {typeclass} has {size} bytes")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_match_size(typeclass: c_int, size: c_int, datatype: *mut MPI_Datatype) -> c_int {
    finish(
        "MPI_Type_match_size",
        (|| {
            // SAFETY: `datatype` is null or the caller's output variable.
            let datatype = unsafe { out(datatype, "datatype") }?;
            *datatype = matching_size(typeclass, size)?;
            Ok(())
        })(),
    )
}

/// The integer kind of at least `range` decimal digits (SELECTED_INT_KIND).
fn integer_kind(range: c_int) -> Option<MPI_Datatype> {
    Some(match range {
        ..=2 => MPI_INTEGER1,
        3..=4 => MPI_INTEGER2,
        5..=9 => MPI_INTEGER4,
        10..=18 => MPI_INTEGER8,
        19..=38 => MPI_INTEGER16,
        _ => return None,
    })
}

/// The real kind of at least `precision` decimal digits and decimal exponent range `range`
/// (SELECTED_REAL_KIND; MPI_UNDEFINED leaves one unconstrained, not both): the index of
/// REAL(4), REAL(8), REAL(16).
fn real_kind(precision: c_int, range: c_int) -> Option<usize> {
    if precision == MPI_UNDEFINED && range == MPI_UNDEFINED {
        return None;
    }
    let wanted = |value: c_int| if value == MPI_UNDEFINED { 0 } else { value };
    let (precision, range) = (wanted(precision), wanted(range));
    [(6, 37), (15, 307), (33, 4931)].iter().position(|&(digits, exponent)| precision <= digits && range <= exponent)
}

/// The MPI_Type_create_f90_* type of `basic` for these arguments (see [`parameterized`]).
fn f90_type(combiner: c_int, integers: Vec<c_int>, basic: MPI_Datatype) -> MpiResult<MPI_Datatype> {
    let key = [combiner, integers[0], integers.get(1).copied().unwrap_or(MPI_UNDEFINED)];
    let base = lookup(basic).map_err(|class| failure(class, "a Fortran kind type is missing"))?.shared();
    parameterized(key, |handle| {
        let envelope = Arc::new(super::Envelope { combiner, integers, addresses: vec![], large: vec![], types: vec![] });
        TypeInfo { origin: Origin::Parameterized(handle, envelope), ..(*base).clone() }
    })
}

/// Writes the handle that `choose` picks to `*newtype`, or reports why there is none.
///
/// # Safety
/// `newtype` is null or valid for writes.
unsafe fn deliver(function: &str, newtype: *mut MPI_Datatype, choose: impl FnOnce() -> MpiResult<MPI_Datatype>) -> c_int {
    finish(
        function,
        (|| {
            // SAFETY: forwarded from this function's contract.
            let newtype = unsafe { out(newtype, "newtype") }?;
            *newtype = choose()?;
            Ok(())
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_integer(r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: `newtype` forwarded from the caller.
    unsafe {
        deliver("MPI_Type_create_f90_integer", newtype, || {
            let basic = integer_kind(r).ok_or_else(|| failure(MPI_ERR_ARG, format!("no integer kind has a range of {r} digits")))?;
            f90_type(MPI_COMBINER_F90_INTEGER, vec![r], basic)
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_real(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: `newtype` forwarded from the caller.
    unsafe {
        deliver("MPI_Type_create_f90_real", newtype, || {
            let kind = real_kind(p, r).ok_or_else(|| failure(MPI_ERR_ARG, format!("no real kind has precision {p} and range {r}")))?;
            f90_type(MPI_COMBINER_F90_REAL, vec![p, r], [MPI_REAL4, MPI_REAL8, MPI_REAL16][kind])
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_complex(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: `newtype` forwarded from the caller.
    unsafe {
        deliver("MPI_Type_create_f90_complex", newtype, || {
            let kind = real_kind(p, r).ok_or_else(|| failure(MPI_ERR_ARG, format!("no complex kind has precision {p} and range {r}")))?;
            f90_type(MPI_COMBINER_F90_COMPLEX, vec![p, r], [MPI_COMPLEX8, MPI_COMPLEX16, MPI_COMPLEX32][kind])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_gfortran() {
        assert_eq!(integer_kind(2), Some(MPI_INTEGER1));
        assert_eq!(integer_kind(9), Some(MPI_INTEGER4));
        assert_eq!(integer_kind(10), Some(MPI_INTEGER8));
        assert_eq!(integer_kind(19), Some(MPI_INTEGER16));
        assert_eq!(integer_kind(38), Some(MPI_INTEGER16));
        assert_eq!(integer_kind(39), None);
        assert_eq!(real_kind(6, MPI_UNDEFINED), Some(0));
        assert_eq!(real_kind(7, MPI_UNDEFINED), Some(1));
        assert_eq!(real_kind(MPI_UNDEFINED, 38), Some(1));
        assert_eq!(real_kind(20, 300), Some(2));
        assert_eq!(real_kind(34, 10), None);
        assert_eq!(real_kind(MPI_UNDEFINED, MPI_UNDEFINED), None);
    }

    #[test]
    fn sizes_match_the_fortran_kinds() {
        assert_eq!(matching_size(MPI_TYPECLASS_INTEGER, 8).ok(), Some(MPI_INTEGER8));
        assert_eq!(matching_size(MPI_TYPECLASS_REAL, 16).ok(), Some(MPI_REAL16));
        assert_eq!(matching_size(MPI_TYPECLASS_COMPLEX, 8).ok(), Some(MPI_COMPLEX8));
        assert_eq!(matching_size(MPI_TYPECLASS_REAL, 2).map_err(|error| error.class), Err(MPI_ERR_ARG));
        assert_eq!(matching_size(7, 4).map_err(|error| error.class), Err(MPI_ERR_ARG));
    }
}
