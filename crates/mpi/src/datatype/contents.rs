//! MPI_Type_get_envelope and MPI_Type_get_contents: how a datatype was made ([`super::envelope`]).

// The safety contract of every entry point is the MPI standard's: pointers valid for the sizes
// it documents.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use super::abi::{array_mut, old_type, out};
use super::{failure, handle_for_contents};
use crate::consts::*;
use crate::error::{finish, MpiResult};

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_envelope(datatype: MPI_Datatype, num_integers: *mut c_int, num_addresses: *mut c_int, num_datatypes: *mut c_int, combiner: *mut c_int) -> c_int {
    finish(
        "MPI_Type_get_envelope",
        (|| {
            let info = old_type(datatype)?;
            // SAFETY: each output is null or the caller's variable.
            let outputs = unsafe { (out(num_integers, "num_integers")?, out(num_addresses, "num_addresses")?, out(num_datatypes, "num_datatypes")?, out(combiner, "combiner")?) };
            let counts = match info.origin.envelope() {
                None => (MPI_COMBINER_NAMED, 0, 0, 0),
                Some(envelope) if !envelope.large.is_empty() => return Err(made_with_large_counts()),
                Some(envelope) => (envelope.combiner, envelope.integers.len(), envelope.addresses.len(), envelope.types.len()),
            };
            let length = |len: usize| c_int::try_from(len).map_err(|_| failure(MPI_ERR_ARG, "the arguments do not fit in an int count"));
            *outputs.3 = counts.0;
            (*outputs.0, *outputs.1, *outputs.2) = (length(counts.1)?, length(counts.2)?, length(counts.3)?);
            Ok(())
        })(),
    )
}

/// The int forms cannot list the arguments of a type made by a large-count constructor.
fn made_with_large_counts() -> crate::error::MpiError {
    failure(MPI_ERR_TYPE, "the datatype was made by a large-count constructor: its arguments are listed by MPI_Type_get_envelope_c and MPI_Type_get_contents_c")
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_envelope_c(
    datatype: MPI_Datatype,
    num_integers: *mut MPI_Count,
    num_addresses: *mut MPI_Count,
    num_large_counts: *mut MPI_Count,
    num_datatypes: *mut MPI_Count,
    combiner: *mut c_int,
) -> c_int {
    finish(
        "MPI_Type_get_envelope_c",
        (|| {
            let info = old_type(datatype)?;
            // SAFETY: each output is null or the caller's variable.
            let outputs = unsafe {
                (out(num_integers, "num_integers")?, out(num_addresses, "num_addresses")?, out(num_large_counts, "num_large_counts")?, out(num_datatypes, "num_datatypes")?, out(combiner, "combiner")?)
            };
            let (kind, lengths) = match info.origin.envelope() {
                None => (MPI_COMBINER_NAMED, [0; 4]),
                Some(envelope) => (envelope.combiner, [envelope.integers.len(), envelope.addresses.len(), envelope.large.len(), envelope.types.len()]),
            };
            *outputs.4 = kind;
            (*outputs.0, *outputs.1, *outputs.2, *outputs.3) = (lengths[0] as MPI_Count, lengths[1] as MPI_Count, lengths[2] as MPI_Count, lengths[3] as MPI_Count);
            Ok(())
        })(),
    )
}

/// Copies `values` into the caller's array of `max` entries, named `what`.
///
/// # Safety
/// `array` is null or valid for `max` writes.
unsafe fn deliver<T: Copy>(values: &[T], array: *mut T, max: impl Into<MPI_Count>, what: &str) -> MpiResult<()> {
    let max: MPI_Count = max.into();
    let room = usize::try_from(max).map_err(|_| failure(MPI_ERR_ARG, format!("max_{what} is negative ({max})")))?;
    if values.len() > room {
        return Err(failure(MPI_ERR_ARG, format!("max_{what} is {max}, the type has {}", values.len())));
    }
    // SAFETY: valid for `room` >= `values.len()` writes (caller's guarantee).
    unsafe { array_mut(array, values.len(), &format!("array_of_{what}")) }?.copy_from_slice(values);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_contents(
    datatype: MPI_Datatype,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut MPI_Aint,
    array_of_datatypes: *mut MPI_Datatype,
) -> c_int {
    finish(
        "MPI_Type_get_contents",
        (|| {
            let info = old_type(datatype)?;
            let envelope = info.origin.envelope().ok_or_else(|| failure(MPI_ERR_TYPE, "a predefined datatype has no contents (its combiner is MPI_COMBINER_NAMED)"))?;
            if !envelope.large.is_empty() {
                return Err(made_with_large_counts());
            }
            if usize::try_from(max_datatypes).map_or(true, |room| room < envelope.types.len()) {
                return Err(failure(MPI_ERR_ARG, format!("max_datatypes is {max_datatypes}, the type has {}", envelope.types.len())));
            }
            // SAFETY: the arrays are null or hold max_* entries (caller's guarantee), and
            // max_datatypes covers the types.
            let slots = unsafe {
                deliver(&envelope.integers, array_of_integers, max_integers, "integers")?;
                deliver(&envelope.addresses, array_of_addresses, max_addresses, "addresses")?;
                array_mut(array_of_datatypes, envelope.types.len(), "array_of_datatypes")?
            };
            // Handles are made only once every check has passed: none is left behind on failure.
            for (slot, (handle, child)) in slots.iter_mut().zip(&envelope.types) {
                *slot = handle_for_contents(*handle, child)?;
            }
            Ok(())
        })(),
    )
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn MPI_Type_get_contents_c(
    datatype: MPI_Datatype,
    max_integers: MPI_Count,
    max_addresses: MPI_Count,
    max_large_counts: MPI_Count,
    max_datatypes: MPI_Count,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut MPI_Aint,
    array_of_large_counts: *mut MPI_Count,
    array_of_datatypes: *mut MPI_Datatype,
) -> c_int {
    finish(
        "MPI_Type_get_contents_c",
        (|| {
            let info = old_type(datatype)?;
            let envelope = info.origin.envelope().ok_or_else(|| failure(MPI_ERR_TYPE, "a predefined datatype has no contents (its combiner is MPI_COMBINER_NAMED)"))?;
            if usize::try_from(max_datatypes).map_or(true, |room| room < envelope.types.len()) {
                return Err(failure(MPI_ERR_ARG, format!("max_datatypes is {max_datatypes}, the type has {}", envelope.types.len())));
            }
            // SAFETY: the arrays are null or hold max_* entries (caller's guarantee), and
            // max_datatypes covers the types.
            let slots = unsafe {
                deliver(&envelope.integers, array_of_integers, max_integers, "integers")?;
                deliver(&envelope.addresses, array_of_addresses, max_addresses, "addresses")?;
                deliver(&envelope.large, array_of_large_counts, max_large_counts, "large_counts")?;
                array_mut(array_of_datatypes, envelope.types.len(), "array_of_datatypes")?
            };
            // Handles are made only once every check has passed: none is left behind on failure.
            for (slot, (handle, child)) in slots.iter_mut().zip(&envelope.types) {
                *slot = handle_for_contents(*handle, child)?;
            }
            Ok(())
        })(),
    )
}
