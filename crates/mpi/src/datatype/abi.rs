//! The MPI_Type_*, MPI_Pack* and address functions of the C interface.

// The safety contract of every entry point is the MPI standard's: pointers valid for the sizes
// it documents.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::convert::identity;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::slice;
use std::sync::Arc;

use super::envelope::{Argument, Parts};
use super::{build_blocks, build_resized, build_struct, failure, lookup, lookup_committed, overflow, register, Blocks, DatatypeRef, Origin, TypeInfo};
use crate::consts::*;
use crate::error::{finish, MpiError, MpiResult};

pub(super) fn count_arg(count: impl Argument, what: &str) -> MpiResult<usize> {
    let count = count.value();
    usize::try_from(count).map_err(|_| failure(MPI_ERR_COUNT, format!("{what} is negative ({count})")))
}

fn blocklength_arg(blocklength: impl Argument) -> MpiResult<usize> {
    let blocklength = blocklength.value();
    usize::try_from(blocklength).map_err(|_| failure(MPI_ERR_ARG, format!("negative block length ({blocklength})")))
}

pub(super) fn old_type(dt: MPI_Datatype) -> MpiResult<Arc<TypeInfo>> {
    lookup(dt).map(|info| info.shared()).map_err(|class| failure(class, format!("invalid datatype ({dt})")))
}

/// # Safety
/// `pointer` is null or valid for writes.
pub(super) unsafe fn out<'a, T>(pointer: *mut T, what: &str) -> MpiResult<&'a mut T> {
    // SAFETY: non-null pointers are valid for writes (caller's guarantee).
    unsafe { pointer.as_mut() }.ok_or_else(|| failure(MPI_ERR_ARG, format!("{what} is NULL")))
}

/// # Safety
/// `pointer` is null or valid for reads of `len` elements.
pub(super) unsafe fn array<'a, T>(pointer: *const T, len: usize, what: &str) -> MpiResult<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if pointer.is_null() {
        return Err(failure(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: non-null and, per the caller, valid for `len` reads.
    Ok(unsafe { slice::from_raw_parts(pointer, len) })
}

/// # Safety
/// `pointer` is null or valid for writes of `len` elements.
pub(super) unsafe fn array_mut<'a, T>(pointer: *mut T, len: usize, what: &str) -> MpiResult<&'a mut [T]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if pointer.is_null() {
        return Err(failure(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: non-null and, per the caller, valid for `len` writes.
    Ok(unsafe { slice::from_raw_parts_mut(pointer, len) })
}

fn to_count(value: isize) -> MPI_Count {
    value as MPI_Count
}

/// Registers `built` and stores its handle in `*newtype`.
///
/// # Safety
/// `newtype` is null or valid for writes.
pub(super) unsafe fn define(newtype: *mut MPI_Datatype, built: impl FnOnce() -> MpiResult<TypeInfo>) -> MpiResult<()> {
    // SAFETY: forwarded from this function's contract.
    let newtype = unsafe { out(newtype, "newtype") }?;
    *newtype = register(built()?)?;
    Ok(())
}

/// Defines the type constructor `$name`, which runs the expression after `=>` and reports its
/// result under the call's name.
macro_rules! constructor {
    ($name:ident($($arg:ident: $ty:ty),* $(,)?) => $build:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            // SAFETY: the arrays and `newtype` are forwarded from the caller, who keeps MPI's
            // contract for them.
            finish(stringify!($name), unsafe { $build })
        }
    };
}
pub(super) use constructor;

pub(super) fn element_bytes(elements: impl Argument, extent: isize) -> MpiResult<isize> {
    isize::try_from(elements.value()).ok().and_then(|elements| elements.checked_mul(extent)).ok_or_else(overflow)
}

/// A byte displacement or stride argument, as an address.
fn byte_offset(bytes: impl Argument) -> MpiResult<isize> {
    isize::try_from(bytes.value()).map_err(|_| overflow())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) -> c_int {
    finish(
        "MPI_Type_size",
        (|| {
            let info = old_type(datatype)?;
            // SAFETY: `size` is null or the caller's output variable.
            *unsafe { out(size, "size") }? = c_int::try_from(info.size).unwrap_or(MPI_UNDEFINED);
            Ok(())
        })(),
    )
}

/// MPI_Type_size_x and MPI 4.0's MPI_Type_size_c: the size as an MPI_Count.
///
/// # Safety
/// `size` is null or the caller's output variable.
unsafe fn large_size(function: &str, datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    finish(
        function,
        (|| {
            let info = old_type(datatype)?;
            // SAFETY: per the caller.
            *unsafe { out(size, "size") }? = MPI_Count::try_from(info.size).unwrap_or(MPI_UNDEFINED.into());
            Ok(())
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size_x(datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    // SAFETY: the caller's output variable.
    unsafe { large_size("MPI_Type_size_x", datatype, size) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size_c(datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    // SAFETY: the caller's output variable.
    unsafe { large_size("MPI_Type_size_c", datatype, size) }
}

/// MPI 4.1: the predefined pair type of MPI_MINLOC and MPI_MAXLOC for `value_type` and
/// `index_type`; MPI_DATATYPE_NULL when there is none.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_value_index(value_type: MPI_Datatype, index_type: MPI_Datatype, pair_type: *mut MPI_Datatype) -> c_int {
    let result = (|| {
        old_type(value_type)?;
        old_type(index_type)?;
        let pair = match (value_type, index_type) {
            (MPI_FLOAT, MPI_INT) => MPI_FLOAT_INT,
            (MPI_DOUBLE, MPI_INT) => MPI_DOUBLE_INT,
            (MPI_LONG, MPI_INT) => MPI_LONG_INT,
            (MPI_SHORT, MPI_INT) => MPI_SHORT_INT,
            (MPI_INT, MPI_INT) => MPI_2INT,
            (MPI_LONG_DOUBLE, MPI_INT) => MPI_LONG_DOUBLE_INT,
            (MPI_REAL, MPI_REAL) => MPI_2REAL,
            (MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION) => MPI_2DOUBLE_PRECISION,
            (MPI_INTEGER, MPI_INTEGER) => MPI_2INTEGER,
            _ => MPI_DATATYPE_NULL,
        };
        // SAFETY: `pair_type` is null or the caller's output variable.
        *unsafe { out(pair_type, "pair_type") }? = pair;
        Ok(())
    })();
    finish("MPI_Type_get_value_index", result)
}

/// Defines `$name`, which writes the datatype's `$first` and `$second`, passed through
/// `$convert`, to the caller's output variables of the same names.
macro_rules! extent_query {
    ($name:ident($first:ident, $second:ident): $ty:ty = $convert:path) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(datatype: MPI_Datatype, $first: *mut $ty, $second: *mut $ty) -> c_int {
            let values = old_type(datatype).map(|info| ($convert(info.$first), $convert(info.$second)));
            // SAFETY: output pointers forwarded from the caller.
            unsafe { write_pair(stringify!($name), $first, $second, values) }
        }
    };
}

/// # Safety
/// Both pointers are null or valid for writes.
unsafe fn write_pair<T>(function: &str, first: *mut T, second: *mut T, values: MpiResult<(T, T)>) -> c_int {
    finish(
        function,
        (|| {
            let (a, b) = values?;
            // SAFETY: null or the caller's output variables.
            let (first, second) = unsafe { (out(first, "lb")?, out(second, "extent")?) };
            (*first, *second) = (a, b);
            Ok(())
        })(),
    )
}

extent_query!(MPI_Type_get_extent(lb, extent): MPI_Aint = identity);
extent_query!(MPI_Type_get_extent_x(lb, extent): MPI_Count = to_count);
extent_query!(MPI_Type_get_true_extent(true_lb, true_extent): MPI_Aint = identity);
extent_query!(MPI_Type_get_true_extent_x(true_lb, true_extent): MPI_Count = to_count);
extent_query!(MPI_Type_get_extent_c(lb, extent): MPI_Count = to_count);
extent_query!(MPI_Type_get_true_extent_c(true_lb, true_extent): MPI_Count = to_count);

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_name(datatype: MPI_Datatype, type_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    finish(
        "MPI_Type_get_name",
        (|| {
            // MPI 4.1: the null handle is named after itself.
            let name = if datatype == MPI_DATATYPE_NULL { "MPI_DATATYPE_NULL".to_string() } else { super::name(datatype).map_err(|class| failure(class, format!("invalid datatype ({datatype})")))? };
            if type_name.is_null() {
                return Err(failure(MPI_ERR_ARG, "type_name is NULL"));
            }
            // SAFETY: `resultlen` is null or the caller's output variable.
            let resultlen = unsafe { out(resultlen, "resultlen") }?;
            let bytes = &name.as_bytes()[..name.len().min(MPI_MAX_OBJECT_NAME as usize - 1)];
            // SAFETY: MPI requires `type_name` to hold MPI_MAX_OBJECT_NAME characters; we write at
            // most that many, the terminating NUL included.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), type_name.cast::<u8>(), bytes.len());
                *type_name.add(bytes.len()) = 0;
            }
            *resultlen = bytes.len() as c_int;
            Ok(())
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_name(datatype: MPI_Datatype, type_name: *const c_char) -> c_int {
    finish(
        "MPI_Type_set_name",
        (|| {
            if type_name.is_null() {
                return Err(failure(MPI_ERR_ARG, "type_name is NULL"));
            }
            // SAFETY: non-null; MPI requires a NUL-terminated string.
            let mut name = unsafe { CStr::from_ptr(type_name) }.to_string_lossy().into_owned();
            let mut keep = name.len().min(MPI_MAX_OBJECT_NAME as usize - 1);
            while !name.is_char_boundary(keep) {
                keep -= 1;
            }
            name.truncate(keep);
            super::set_name(datatype, name).map_err(|class| failure(class, format!("invalid datatype ({datatype})")))
        })(),
    )
}

constructor!(MPI_Type_contiguous(count: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) => contiguous(count, oldtype, newtype));

/// # Safety
/// `newtype` is null or valid for writes.
pub(super) unsafe fn contiguous(count: impl Argument, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> MpiResult<()> {
    let copies = count_arg(count, "count")?;
    let child = old_type(oldtype)?;
    let origin = Origin::recorded(MPI_COMBINER_CONTIGUOUS, Parts::default().with(count), vec![(oldtype, child.clone())]);
    // SAFETY: forwarded from this function's contract.
    unsafe { define(newtype, || build_blocks(&child, &Blocks::Regular { count: 1, blocklen: copies, stride: 0 }, origin)) }
}

/// The stride of a vector: in extents of the old type (MPI_Type_vector) or in bytes (the h-variants).
#[derive(Clone, Copy)]
pub(super) enum Stride<A: Argument> {
    Elements(A),
    Bytes(A),
}

/// MPI_Type_vector and the h-variants.
///
/// # Safety
/// `newtype` is null or valid for writes.
pub(super) unsafe fn vector<C: Argument>(count: C, blocklength: C, stride: Stride<impl Argument>, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> MpiResult<()> {
    let blocks = count_arg(count, "count")?;
    let blocklen = blocklength_arg(blocklength)?;
    let child = old_type(oldtype)?;
    let types = vec![(oldtype, child.clone())];
    let parts = Parts::default().with(count).with(blocklength);
    let (stride_bytes, origin) = match stride {
        Stride::Elements(elements) => (element_bytes(elements, child.extent)?, Origin::recorded(MPI_COMBINER_VECTOR, parts.with(elements), types)),
        Stride::Bytes(bytes) => (byte_offset(bytes)?, Origin::recorded(MPI_COMBINER_HVECTOR, parts.with(bytes), types)),
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { define(newtype, || build_blocks(&child, &Blocks::Regular { count: blocks, blocklen, stride: stride_bytes }, origin)) }
}

constructor!(
    MPI_Type_vector(
        count: c_int,
        blocklength: c_int,
        stride: c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => vector(count, blocklength, Stride::Elements(stride), oldtype, newtype)
);

constructor!(
    MPI_Type_create_hvector(
        count: c_int,
        blocklength: c_int,
        stride: MPI_Aint,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => vector(count, blocklength, Stride::Bytes(stride), oldtype, newtype)
);

constructor!(
    MPI_Type_hvector(
        count: c_int,
        blocklength: c_int,
        stride: MPI_Aint,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => vector(count, blocklength, Stride::Bytes(stride), oldtype, newtype)
);

/// The indexed family (`combiner` says which, and so whether displacements count extents of the
/// old type or bytes): `blocklengths`, or `Err(blocklength)` for all blocks alike.
///
/// # Safety
/// The arrays are null or valid for `count` reads; `newtype` null or valid for writes.
pub(super) unsafe fn indexed<C: Argument, D: Argument>(
    combiner: c_int,
    count: C,
    blocklengths: Result<*const C, C>,
    displacements: *const D,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult<()> {
    let blocks = count_arg(count, "count")?;
    let child = old_type(oldtype)?;
    // SAFETY: valid for `count` reads per the caller.
    let displacements = unsafe { array(displacements, blocks, "array_of_displacements") }?;
    let mut parts = Parts::default().with(count);
    let lengths = match blocklengths {
        Ok(pointer) => {
            // SAFETY: valid for `count` reads per the caller.
            let given = unsafe { array(pointer, blocks, "array_of_blocklengths") }?;
            parts = parts.with_all(given);
            given.iter().map(|&len| blocklength_arg(len)).collect::<MpiResult<Vec<_>>>()?
        }
        Err(same) => {
            parts = parts.with(same);
            vec![blocklength_arg(same)?; blocks]
        }
    };
    let in_elements = matches!(combiner, MPI_COMBINER_INDEXED | MPI_COMBINER_INDEXED_BLOCK);
    let offset = |disp: D| if in_elements { element_bytes(disp, child.extent) } else { byte_offset(disp) };
    let list = displacements.iter().zip(lengths).map(|(&disp, len)| Ok((offset(disp)?, len))).collect::<MpiResult<Vec<_>>>()?;
    let origin = Origin::recorded(combiner, parts.with_all(displacements), vec![(oldtype, child.clone())]);
    // SAFETY: forwarded from this function's contract.
    unsafe { define(newtype, || build_blocks(&child, &Blocks::List(list), origin)) }
}

constructor!(
    MPI_Type_indexed(
        count: c_int,
        array_of_blocklengths: *const c_int,
        array_of_displacements: *const c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => indexed(MPI_COMBINER_INDEXED, count, Ok(array_of_blocklengths), array_of_displacements, oldtype, newtype)
);

constructor!(
    MPI_Type_create_hindexed(
        count: c_int,
        array_of_blocklengths: *const c_int,
        array_of_displacements: *const MPI_Aint,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => indexed(MPI_COMBINER_HINDEXED, count, Ok(array_of_blocklengths), array_of_displacements, oldtype, newtype)
);

constructor!(
    MPI_Type_create_indexed_block(
        count: c_int,
        blocklength: c_int,
        array_of_displacements: *const c_int,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => indexed(MPI_COMBINER_INDEXED_BLOCK, count, Err(blocklength), array_of_displacements, oldtype, newtype)
);

constructor!(
    MPI_Type_create_hindexed_block(
        count: c_int,
        blocklength: c_int,
        array_of_displacements: *const MPI_Aint,
        oldtype: MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => indexed(MPI_COMBINER_HINDEXED_BLOCK, count, Err(blocklength), array_of_displacements, oldtype, newtype)
);

/// MPI_Type_create_struct (and MPI-1's MPI_Type_struct, where MPI_LB and MPI_UB set bounds).
///
/// # Safety
/// The arrays are null or valid for `count` reads; `newtype` null or valid for writes.
pub(super) unsafe fn structure<C: Argument>(
    count: C,
    array_of_blocklengths: *const C,
    array_of_displacements: *const impl Argument,
    array_of_types: *const MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult<()> {
    let blocks = count_arg(count, "count")?;
    // SAFETY: the arrays are null or valid for `count` reads (caller's guarantee).
    let (blocklengths, displacements, types) =
        unsafe { (array(array_of_blocklengths, blocks, "array_of_blocklengths")?, array(array_of_displacements, blocks, "array_of_displacements")?, array(array_of_types, blocks, "array_of_types")?) };
    let children = types.iter().map(|&dt| Ok((dt, old_type(dt)?))).collect::<MpiResult<Vec<_>>>()?;
    let list = (0..blocks).map(|index| Ok((children[index].1.clone(), byte_offset(displacements[index])?, blocklength_arg(blocklengths[index])?))).collect::<MpiResult<Vec<_>>>()?;
    let parts = Parts::default().with(count).with_all(blocklengths).with_all(displacements);
    let origin = Origin::recorded(MPI_COMBINER_STRUCT, parts, children);
    // SAFETY: `newtype` forwarded from the caller.
    unsafe { define(newtype, || build_struct(&list, origin)) }
}

constructor!(
    MPI_Type_create_struct(
        count: c_int,
        array_of_blocklengths: *const c_int,
        array_of_displacements: *const MPI_Aint,
        array_of_types: *const MPI_Datatype,
        newtype: *mut MPI_Datatype,
    ) => structure(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype)
);

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_resized(oldtype: MPI_Datatype, lb: MPI_Aint, extent: MPI_Aint, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: `newtype` forwarded from the caller.
    finish("MPI_Type_create_resized", unsafe { resized(oldtype, lb, extent, newtype) })
}

/// MPI_Type_create_resized(_c).
///
/// # Safety
/// `newtype` is null or valid for writes.
pub(super) unsafe fn resized<A: Argument>(oldtype: MPI_Datatype, lb: A, extent: A, newtype: *mut MPI_Datatype) -> MpiResult<()> {
    let child = old_type(oldtype)?;
    let (lower, span) = (byte_offset(lb)?, byte_offset(extent)?);
    let origin = Origin::recorded(MPI_COMBINER_RESIZED, Parts::default().with(lb).with(extent), vec![(oldtype, child.clone())]);
    // SAFETY: `newtype` forwarded from the caller.
    unsafe { define(newtype, || Ok(build_resized(&child, lower, span, origin))) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_commit(datatype: *mut MPI_Datatype) -> c_int {
    finish(
        "MPI_Type_commit",
        (|| {
            // SAFETY: `datatype` is null or the caller's handle variable.
            let datatype = *unsafe { out(datatype, "datatype") }?;
            super::commit(datatype).map_err(|class| failure(class, format!("invalid datatype ({datatype})")))
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free(datatype: *mut MPI_Datatype) -> c_int {
    finish(
        "MPI_Type_free",
        (|| {
            // SAFETY: `datatype` is null or the caller's handle variable.
            let datatype = unsafe { out(datatype, "datatype") }?;
            crate::attr::access::before_type_free(*datatype)?;
            super::free(*datatype)?;
            *datatype = MPI_DATATYPE_NULL;
            Ok(())
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_dup(oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    finish(
        "MPI_Type_dup",
        (|| {
            // SAFETY: `newtype` is null or the caller's output variable.
            let newtype = unsafe { out(newtype, "newtype") }?;
            let created = super::dup(oldtype)?;
            *newtype = MPI_DATATYPE_NULL;
            crate::attr::access::copy_to_type_dup(oldtype, created)?;
            *newtype = created;
            Ok(())
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_address(location: *const c_void, address: *mut MPI_Aint) -> c_int {
    finish(
        "MPI_Get_address",
        (|| {
            // SAFETY: `address` is null or the caller's output variable.
            *unsafe { out(address, "address") }? = location as MPI_Aint;
            Ok(())
        })(),
    )
}

/// Datatype handles are the same in C and Fortran.
#[no_mangle]
pub extern "C" fn MPI_Type_c2f(datatype: MPI_Datatype) -> MPI_Fint {
    datatype
}

#[no_mangle]
pub extern "C" fn MPI_Type_f2c(datatype: MPI_Fint) -> MPI_Datatype {
    datatype
}

#[no_mangle]
pub extern "C" fn MPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    base.wrapping_add(disp)
}

#[no_mangle]
pub extern "C" fn MPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    addr1.wrapping_sub(addr2)
}

/// A pack or unpack position: MPI_Pack's int, or MPI_Pack_c's large count.
pub(super) trait Position: Argument {
    fn advance(&mut self, by: usize);
}

impl Position for c_int {
    fn advance(&mut self, by: usize) {
        *self += by as c_int;
    }
}

impl Position for MPI_Count {
    fn advance(&mut self, by: usize) {
        *self += by as MPI_Count;
    }
}

/// Validates a pack/unpack position; returns (start, room after it).
fn position_arg(position: impl Argument, buffer_size: impl Argument) -> MpiResult<(usize, usize)> {
    let (position, buffer_size) = (position.value(), buffer_size.value());
    let size = usize::try_from(buffer_size).map_err(|_| failure(MPI_ERR_ARG, format!("negative buffer size ({buffer_size})")))?;
    match usize::try_from(position) {
        Ok(start) if start <= size => Ok((start, size - start)),
        _ => Err(failure(MPI_ERR_ARG, format!("position {position} is outside the buffer of {size} bytes"))),
    }
}

/// Pack calls report through the error handler of their communicator.
pub(super) fn on_comm(comm: MPI_Comm, call: impl FnOnce() -> MpiResult<()>) -> MpiResult<()> {
    // The communicator only names whose error handler applies, but an invalid one is still
    // MPI_ERR_COMM. Packing needs no MPI state otherwise, so the check is skipped where there is
    // none to ask (before MPI_Init) or it is in use (a callback of another MPI call packing).
    if let Some(Err(invalid)) = crate::runtime::try_with(|rt| rt.comms.get(comm).map(|_| ())) {
        return Err(invalid);
    }
    call().map_err(|error| MpiError { comm, ..error })
}

/// What a pack or unpack moves: `needed` bytes of the packed buffer, from `start`.
struct Span<'a, P> {
    count: usize,
    info: DatatypeRef,
    position: &'a mut P,
    start: usize,
    needed: usize,
}

/// The argument checks that MPI_Pack and MPI_Unpack share, in the same order; `verb` and
/// `side` word the truncation error, `packed_name` the error for a NULL packed buffer.
///
/// # Safety
/// `position` is null or valid for reads and writes.
#[allow(clippy::too_many_arguments)]
unsafe fn span<'a, P: Position>(
    count: impl Argument,
    count_name: &str,
    datatype: MPI_Datatype,
    position: *mut P,
    packed_size: impl Argument,
    packed: *const c_void,
    packed_name: &str,
    verb: &str,
    side: &str,
) -> MpiResult<Span<'a, P>> {
    let count = count_arg(count, count_name)?;
    let info = lookup_committed(datatype).map_err(|class| failure(class, format!("invalid or uncommitted datatype ({datatype})")))?;
    // SAFETY: forwarded from this function's contract.
    let position = unsafe { out(position, "position") }?;
    let (start, room) = position_arg(*position, packed_size)?;
    let needed = info.size.checked_mul(count).ok_or_else(overflow)?;
    if needed > room {
        return Err(failure(MPI_ERR_TRUNCATE, format!("{needed} bytes to {verb}, {room} left in the {side} buffer")));
    }
    if needed > 0 && packed.is_null() {
        return Err(failure(MPI_ERR_BUFFER, format!("{packed_name} is NULL")));
    }
    Ok(Span { count, info, position, start, needed })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack(inbuf: *const c_void, incount: c_int, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: c_int, position: *mut c_int, comm: MPI_Comm) -> c_int {
    // SAFETY: buffers and position forwarded from the caller.
    finish("MPI_Pack", on_comm(comm, || unsafe { pack_into(inbuf, incount, datatype, outbuf, outsize, position) }))
}

/// # Safety
/// As MPI_Pack: `outbuf` holds `outsize` bytes, `inbuf` the type map of `incount` elements.
pub(super) unsafe fn pack_into<C: Argument, P: Position>(inbuf: *const c_void, incount: C, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: C, position: *mut P) -> MpiResult<()> {
    // SAFETY: `position` is null or the caller's in/out variable.
    let Span { count, info, position, start, needed } = unsafe { span(incount, "incount", datatype, position, outsize, outbuf, "outbuf", "pack", "output") }?;
    // SAFETY: MPI requires `outbuf` to hold `outsize` bytes, and start + needed <= outsize;
    // the type map of `incount` elements at `inbuf` is the user's readable data.
    unsafe {
        let out_bytes = slice::from_raw_parts_mut(outbuf.cast::<u8>().add(start), needed);
        info.pack(count, inbuf.cast::<u8>(), out_bytes);
    }
    position.advance(needed);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack(inbuf: *const c_void, insize: c_int, position: *mut c_int, outbuf: *mut c_void, outcount: c_int, datatype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    // SAFETY: buffers and position forwarded from the caller.
    finish("MPI_Unpack", on_comm(comm, || unsafe { unpack_from(inbuf, insize, position, outbuf, outcount, datatype) }))
}

/// # Safety
/// As MPI_Unpack: `inbuf` holds `insize` bytes, `outbuf` the type map of `outcount` elements.
pub(super) unsafe fn unpack_from<C: Argument, P: Position>(inbuf: *const c_void, insize: C, position: *mut P, outbuf: *mut c_void, outcount: C, datatype: MPI_Datatype) -> MpiResult<()> {
    // SAFETY: `position` is null or the caller's in/out variable.
    let Span { count, info, position, start, needed } = unsafe { span(outcount, "outcount", datatype, position, insize, inbuf, "inbuf", "unpack", "input") }?;
    // SAFETY: MPI requires `inbuf` to hold `insize` bytes, and start + needed <= insize; the
    // type map of `outcount` elements at `outbuf` is the user's writable data.
    unsafe {
        let packed = slice::from_raw_parts(inbuf.cast::<u8>().add(start), needed);
        info.unpack(count, packed, outbuf.cast::<u8>());
    }
    position.advance(needed);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size(incount: c_int, datatype: MPI_Datatype, comm: MPI_Comm, size: *mut c_int) -> c_int {
    let result = on_comm(comm, || {
        let bytes = packed_size_of(incount, datatype)?;
        let bytes = c_int::try_from(bytes).map_err(|_| failure(MPI_ERR_COUNT, "the packed size does not fit in an int: use MPI_Pack_size_c"))?;
        // SAFETY: `size` is null or the caller's output variable.
        *unsafe { out(size, "size") }? = bytes;
        Ok(())
    });
    finish("MPI_Pack_size", result)
}

/// The bytes MPI_Pack needs for `incount` elements of `datatype`.
pub(super) fn packed_size_of(incount: impl Argument, datatype: MPI_Datatype) -> MpiResult<usize> {
    let count = count_arg(incount, "incount")?;
    let info = lookup_committed(datatype).map_err(|class| failure(class, format!("invalid or uncommitted datatype ({datatype})")))?;
    info.size.checked_mul(count).ok_or_else(overflow)
}
