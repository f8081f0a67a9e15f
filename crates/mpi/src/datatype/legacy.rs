//! MPI-1 datatype calls that MPI-3.0 removed but programs still use: MPI_Type_struct (with the
//! MPI_LB and MPI_UB markers), MPI_Type_hindexed, MPI_Type_extent, MPI_Type_lb, MPI_Type_ub and
//! MPI_Address. (MPI_Type_hvector lives with the other vectors.)

// The safety contract of every entry point is the MPI standard's: pointers valid for the sizes
// it documents.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use super::abi::{constructor, indexed, old_type, out, structure};
use crate::consts::*;
use crate::error::finish;

constructor!(
    MPI_Type_struct(
        count: c_int,
        array_of_blocklengths: *const c_int,
        array_of_displacements: *const MPI_Aint,
        array_of_types: *const MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => structure(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype)
);

constructor!(
    MPI_Type_hindexed(
        count: c_int,
        array_of_blocklengths: *const c_int,
        array_of_displacements: *const MPI_Aint,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => indexed(MPI_COMBINER_HINDEXED, count, Ok(array_of_blocklengths), array_of_displacements, oldtype, newtype)
);

/// Defines `$name`, which writes one bound of the datatype, `$bound`, to `*$output`.
macro_rules! bound_query {
    ($name:ident($output:ident) = $bound:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(datatype: MPI_Datatype, $output: *mut MPI_Aint) -> c_int {
            finish(
                stringify!($name),
                (|| {
                    let info = old_type(datatype)?;
                    // SAFETY: the output is null or the caller's variable.
                    *unsafe { out($output, stringify!($output)) }? = $bound(&info);
                    Ok(())
                })(),
            )
        }
    };
}

bound_query!(MPI_Type_extent(extent) = |info: &super::TypeInfo| info.extent);
bound_query!(MPI_Type_lb(displacement) = |info: &super::TypeInfo| info.lb);
bound_query!(MPI_Type_ub(displacement) = |info: &super::TypeInfo| info.ub());

#[no_mangle]
pub unsafe extern "C" fn MPI_Address(location: *const c_void, address: *mut MPI_Aint) -> c_int {
    finish(
        "MPI_Address",
        (|| {
            // SAFETY: `address` is null or the caller's output variable.
            *unsafe { out(address, "address") }? = location as MPI_Aint;
            Ok(())
        })(),
    )
}
