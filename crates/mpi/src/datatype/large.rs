//! The datatype calls' large-count forms (MPI 4.0): the `_c` constructors, whose counts,
//! displacements and strides are MPI_Count (recorded as large counts, which
//! MPI_Type_get_contents_c lists) and packing with MPI_Count sizes and positions. (The `_c` size
//! and extent queries are the `_x` ones again, beside them.)

// The safety contract of every entry point is the MPI standard's: pointers valid for the sizes
// it documents.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};

use super::abi::{constructor, contiguous, indexed, on_comm, out, pack_into, packed_size_of, resized, structure, unpack_from, vector, Stride};
use super::arrays::{darray, subarray};
use super::external32::{external_size_of, pack_external, unpack_external};
use crate::consts::*;
use crate::error::finish;

constructor!(MPI_Type_contiguous_c(count: MPI_Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) => contiguous(count, oldtype, newtype));

constructor!(
    MPI_Type_vector_c(count: MPI_Count, blocklength: MPI_Count, stride: MPI_Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) => vector(count, blocklength, Stride::Elements(stride), oldtype, newtype)
);

constructor!(
    MPI_Type_create_hvector_c(count: MPI_Count, blocklength: MPI_Count, stride: MPI_Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) => vector(count, blocklength, Stride::Bytes(stride), oldtype, newtype)
);

constructor!(
    MPI_Type_indexed_c(
        count: MPI_Count,
        array_of_blocklengths: *const MPI_Count,
        array_of_displacements: *const MPI_Count,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => indexed(MPI_COMBINER_INDEXED, count, Ok(array_of_blocklengths), array_of_displacements, oldtype, newtype)
);

constructor!(
    MPI_Type_create_hindexed_c(
        count: MPI_Count,
        array_of_blocklengths: *const MPI_Count,
        array_of_displacements: *const MPI_Count,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => indexed(MPI_COMBINER_HINDEXED, count, Ok(array_of_blocklengths), array_of_displacements, oldtype, newtype)
);

constructor!(
    MPI_Type_create_indexed_block_c(
        count: MPI_Count,
        blocklength: MPI_Count,
        array_of_displacements: *const MPI_Count,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => indexed(MPI_COMBINER_INDEXED_BLOCK, count, Err(blocklength), array_of_displacements, oldtype, newtype)
);

constructor!(
    MPI_Type_create_hindexed_block_c(
        count: MPI_Count,
        blocklength: MPI_Count,
        array_of_displacements: *const MPI_Count,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => indexed(MPI_COMBINER_HINDEXED_BLOCK, count, Err(blocklength), array_of_displacements, oldtype, newtype)
);

constructor!(
    MPI_Type_create_struct_c(
        count: MPI_Count,
        array_of_blocklengths: *const MPI_Count,
        array_of_displacements: *const MPI_Count,
        array_of_types: *const MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => structure(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype)
);

constructor!(MPI_Type_create_resized_c(oldtype: MPI_Datatype, lb: MPI_Count, extent: MPI_Count, newtype: *mut MPI_Datatype) => resized(oldtype, lb, extent, newtype));

constructor!(
    MPI_Type_create_subarray_c(
        ndims: c_int,
        array_of_sizes: *const MPI_Count,
        array_of_subsizes: *const MPI_Count,
        array_of_starts: *const MPI_Count,
        order: c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => subarray(ndims, array_of_sizes, array_of_subsizes, array_of_starts, order, oldtype, newtype)
);

constructor!(
    MPI_Type_create_darray_c(
        size: c_int,
        rank: c_int,
        ndims: c_int,
        array_of_gsizes: *const MPI_Count,
        array_of_distribs: *const c_int,
        array_of_dargs: *const c_int,
        array_of_psizes: *const c_int,
        order: c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => darray(size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs, array_of_psizes, order, oldtype, newtype)
);

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_c(inbuf: *const c_void, incount: MPI_Count, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: MPI_Count, position: *mut MPI_Count, comm: MPI_Comm) -> c_int {
    // SAFETY: buffers and position forwarded from the caller.
    finish("MPI_Pack_c", on_comm(comm, || unsafe { pack_into(inbuf, incount, datatype, outbuf, outsize, position) }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack_c(inbuf: *const c_void, insize: MPI_Count, position: *mut MPI_Count, outbuf: *mut c_void, outcount: MPI_Count, datatype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    // SAFETY: buffers and position forwarded from the caller.
    finish("MPI_Unpack_c", on_comm(comm, || unsafe { unpack_from(inbuf, insize, position, outbuf, outcount, datatype) }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size_c(incount: MPI_Count, datatype: MPI_Datatype, comm: MPI_Comm, size: *mut MPI_Count) -> c_int {
    let result = on_comm(comm, || {
        let bytes = packed_size_of(incount, datatype)?;
        // SAFETY: `size` is null or the caller's output variable.
        *unsafe { out(size, "size") }? = bytes as MPI_Count;
        Ok(())
    });
    finish("MPI_Pack_size_c", result)
}

/// Runs an external32 call whose size and position are address-sized on a large-count
/// position: the position goes through an MPI_Aint, which holds every MPI_Count on the 64-bit
/// machines Braid runs on.
///
/// # Safety
/// `position` is null or the caller's in/out variable.
unsafe fn through_address(position: *mut MPI_Count, call: impl FnOnce(*mut MPI_Aint) -> c_int) -> c_int {
    if position.is_null() {
        return call(std::ptr::null_mut());
    }
    // SAFETY: non-null; the caller's variable.
    let mut address = unsafe { *position } as MPI_Aint;
    let code = call(&mut address);
    if code == MPI_SUCCESS {
        // SAFETY: as above.
        unsafe { *position = address as MPI_Count };
    }
    code
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: MPI_Count,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Count,
    position: *mut MPI_Count,
) -> c_int {
    // SAFETY: the caller's arguments, forwarded.
    unsafe { through_address(position, |position| pack_external("MPI_Pack_external_c", datarep, inbuf, incount, datatype, outbuf, outsize as MPI_Aint, position)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: MPI_Count,
    position: *mut MPI_Count,
    outbuf: *mut c_void,
    outcount: MPI_Count,
    datatype: MPI_Datatype,
) -> c_int {
    // SAFETY: the caller's arguments, forwarded.
    unsafe { through_address(position, |position| unpack_external("MPI_Unpack_external_c", datarep, inbuf, insize as MPI_Aint, position, outbuf, outcount, datatype)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external_size_c(datarep: *const c_char, incount: MPI_Count, datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    let result = (|| {
        // SAFETY: `datarep` is the caller's string.
        let bytes = unsafe { external_size_of(datarep, incount, datatype) }?;
        // SAFETY: `size` is null or the caller's output variable.
        *unsafe { out(size, "size") }? = bytes as MPI_Count;
        Ok(())
    })();
    finish("MPI_Pack_external_size_c", result)
}
