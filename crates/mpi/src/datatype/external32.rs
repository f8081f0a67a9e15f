//! The "external32" data representation (MPI-3.1 §13.5.2) and MPI_Pack_external,
//! MPI_Unpack_external and MPI_Pack_external_size.
//!
//! Data is packed natively first (the type map's bytes, in order), then each basic value is
//! converted on its own: big-endian, in the standard's fixed sizes (MPI_LONG and
//! MPI_UNSIGNED_LONG 4 bytes, MPI_WCHAR 2, long double as IEEE binary128 in 16 bytes, bool and
//! LOGICAL read as true when nonzero).

// The safety contract of every entry point is the MPI standard's: pointers valid for the sizes
// it documents.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_long, c_ulong, c_void, CStr};
use std::mem::size_of;
use std::slice;

use super::abi::{count_arg, out};
use super::{failure, lookup_committed, overflow, Basic, DatatypeRef, Signature, TypeInfo, LONG_DOUBLE_SIZE};
use crate::consts::*;
use crate::error::{finish, MpiResult};

/// How one basic value is written in external32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire {
    /// One byte as it is: characters, MPI_BYTE, MPI_PACKED.
    Byte,
    /// A value of this many bytes, the same size natively, big-endian in external32.
    Ordered(usize),
    /// A native `long` (or `unsigned long`) in 4 bytes.
    Long { signed: bool },
    /// A native `wchar_t` as a 2-byte Unicode character.
    WideChar,
    /// `long double` as IEEE binary128.
    LongDouble,
    /// C `_Bool`, C++ `bool`: one byte, nonzero is true.
    Bool,
    /// Fortran LOGICAL: an int, nonzero is true.
    Logical,
}

impl Wire {
    fn native_len(self) -> usize {
        match self {
            Wire::Byte | Wire::Bool => 1,
            Wire::Ordered(len) => len,
            Wire::Long { .. } => size_of::<c_long>(),
            Wire::WideChar => size_of::<libc::wchar_t>(),
            Wire::LongDouble => LONG_DOUBLE_SIZE,
            Wire::Logical => size_of::<c_int>(),
        }
    }

    fn external_len(self) -> usize {
        match self {
            Wire::Byte | Wire::Bool => 1,
            Wire::Ordered(len) => len,
            Wire::Long { .. } | Wire::Logical => 4,
            Wire::WideChar => 2,
            Wire::LongDouble => 16,
        }
    }
}

/// The values of one basic type, in packed order.
fn wire_parts(basic: Basic) -> &'static [Wire] {
    use Wire::*;
    match basic {
        Basic::Char | Basic::SignedChar | Basic::UnsignedChar | Basic::Byte | Basic::Packed | Basic::Character => &[Byte],
        Basic::Int8 | Basic::Uint8 | Basic::Integer1 => &[Byte],
        Basic::CBool | Basic::CxxBool => &[Bool],
        Basic::Logical => &[Logical],
        Basic::WChar => &[WideChar],
        Basic::Short | Basic::UnsignedShort | Basic::Int16 | Basic::Uint16 | Basic::Integer2 => &[Ordered(2)],
        Basic::Int | Basic::Unsigned | Basic::Int32 | Basic::Uint32 | Basic::Integer | Basic::Integer4 => &[Ordered(4)],
        Basic::Float | Basic::Real | Basic::Real4 => &[Ordered(4)],
        Basic::Long => &[Long { signed: true }],
        Basic::UnsignedLong => &[Long { signed: false }],
        Basic::LongLongInt | Basic::LongLong | Basic::UnsignedLongLong | Basic::Int64 | Basic::Uint64 | Basic::Integer8 => &[Ordered(8)],
        Basic::Aint | Basic::Offset | Basic::Count => &[Ordered(8)],
        Basic::Double | Basic::DoublePrecision | Basic::Real8 => &[Ordered(8)],
        Basic::LongDouble => &[LongDouble],
        Basic::Real16 => &[Ordered(16)],
        Basic::CComplex | Basic::CFloatComplex | Basic::Complex | Basic::Complex8 | Basic::CxxFloatComplex => &[Ordered(4), Ordered(4)],
        Basic::CDoubleComplex | Basic::DoubleComplex | Basic::Complex16 | Basic::CxxDoubleComplex => &[Ordered(8), Ordered(8)],
        Basic::CLongDoubleComplex | Basic::CxxLongDoubleComplex => &[LongDouble, LongDouble],
        Basic::Complex32 => &[Ordered(16), Ordered(16)],
        Basic::Integer16 => &[Ordered(16)],
        Basic::FloatInt | Basic::TwoInt | Basic::TwoInteger | Basic::TwoReal => &[Ordered(4), Ordered(4)],
        Basic::DoubleInt => &[Ordered(8), Ordered(4)],
        Basic::LongInt => &[Long { signed: true }, Ordered(4)],
        Basic::ShortInt => &[Ordered(2), Ordered(4)],
        Basic::LongDoubleInt => &[LongDouble, Ordered(4)],
        Basic::TwoDoublePrecision => &[Ordered(8), Ordered(8)],
        Basic::Lb | Basic::Ub => &[],
    }
}

extern "C" {
    fn braid_long_double_to_binary128(native: *const u8, binary128: *mut u8);
    fn braid_binary128_to_long_double(binary128: *const u8, native: *mut u8);
}

/// Copies `from` to `to` (the same length), reversing the bytes on little-endian machines.
fn big_endian(from: &[u8], to: &mut [u8]) {
    to.copy_from_slice(from);
    if cfg!(target_endian = "little") {
        to.reverse();
    }
}

/// Writes one native value as external32; the reason when it does not fit.
fn to_external(part: Wire, native: &[u8], external: &mut [u8]) -> Result<(), String> {
    match part {
        Wire::Byte => external.copy_from_slice(native),
        Wire::Ordered(_) | Wire::Logical => big_endian(native, external),
        Wire::Bool => external[0] = u8::from(native[0] != 0),
        Wire::Long { signed: true } => {
            let value = c_long::from_ne_bytes(native.try_into().expect("a long"));
            let narrow = i32::try_from(value).map_err(|_| format!("MPI_LONG value {value} does not fit the 4 bytes of external32"))?;
            external.copy_from_slice(&narrow.to_be_bytes());
        }
        Wire::Long { signed: false } => {
            let value = c_ulong::from_ne_bytes(native.try_into().expect("an unsigned long"));
            let narrow = u32::try_from(value).map_err(|_| format!("MPI_UNSIGNED_LONG value {value} does not fit the 4 bytes of external32"))?;
            external.copy_from_slice(&narrow.to_be_bytes());
        }
        Wire::WideChar => {
            let value = libc::wchar_t::from_ne_bytes(native.try_into().expect("a wchar_t"));
            let narrow = u16::try_from(value).map_err(|_| format!("MPI_WCHAR value {value:#x} is beyond the 2-byte characters of external32"))?;
            external.copy_from_slice(&narrow.to_be_bytes());
        }
        Wire::LongDouble => {
            let mut wide = [0u8; 16];
            // SAFETY: `native` holds one long double (LONG_DOUBLE_SIZE bytes), `wide` 16 bytes.
            unsafe { braid_long_double_to_binary128(native.as_ptr(), wide.as_mut_ptr()) };
            big_endian(&wide, external);
        }
    }
    Ok(())
}

/// Writes one external32 value natively.
fn from_external(part: Wire, external: &[u8], native: &mut [u8]) {
    match part {
        Wire::Byte => native.copy_from_slice(external),
        Wire::Ordered(_) => big_endian(external, native),
        Wire::Bool => native[0] = u8::from(external[0] != 0),
        Wire::Logical => {
            let truth = external.iter().any(|&byte| byte != 0);
            native.copy_from_slice(&c_int::from(truth).to_ne_bytes());
        }
        Wire::Long { signed: true } => {
            let value = i32::from_be_bytes(external.try_into().expect("4 bytes"));
            native.copy_from_slice(&c_long::from(value).to_ne_bytes());
        }
        Wire::Long { signed: false } => {
            let value = u32::from_be_bytes(external.try_into().expect("4 bytes"));
            native.copy_from_slice(&c_ulong::from(value).to_ne_bytes());
        }
        Wire::WideChar => {
            let value = u16::from_be_bytes(external.try_into().expect("2 bytes"));
            native.copy_from_slice(&libc::wchar_t::from(value).to_ne_bytes());
        }
        Wire::LongDouble => {
            let mut wide = [0u8; 16];
            big_endian(external, &mut wide);
            // SAFETY: `wide` holds one binary128 value, `native` LONG_DOUBLE_SIZE bytes.
            unsafe { braid_binary128_to_long_double(wide.as_ptr(), native.as_mut_ptr()) };
        }
    }
}

/// Calls `visit(basic, n)` over the basic types of `copies` elements of `info` in type-map
/// order, `n` consecutive values of one type at a time.
fn walk(info: &TypeInfo, copies: usize, visit: &mut impl FnMut(Basic, usize)) {
    if copies == 0 {
        return;
    }
    match &info.signature {
        Signature::Basic(basic) => visit(*basic, copies),
        Signature::Repeat(child) => {
            if let Some(repeats) = info.size.checked_div(child.size) {
                walk(child, copies * repeats, visit);
            }
        }
        Signature::Sequence(children) => {
            for _ in 0..copies {
                for (child, count) in children {
                    walk(child, *count, visit);
                }
            }
        }
    }
}

/// Bytes that one element of `info` takes in external32.
pub(crate) fn external_size(info: &TypeInfo) -> usize {
    let mut total = 0;
    walk(info, 1, &mut |basic, copies| total += copies * wire_parts(basic).iter().map(|part| part.external_len()).sum::<usize>());
    total
}

/// Converts `count` natively packed elements of `info` to external32; the first value that does
/// not fit, if any (the rest is converted all the same).
fn encode(info: &TypeInfo, count: usize, native: &[u8], external: &mut [u8]) -> Result<(), String> {
    let (mut native_at, mut external_at, mut unfit) = (0, 0, None);
    walk(info, count, &mut |basic, copies| {
        for _ in 0..copies {
            for &part in wire_parts(basic) {
                let (from, to) = (native_at + part.native_len(), external_at + part.external_len());
                if let Err(reason) = to_external(part, &native[native_at..from], &mut external[external_at..to]) {
                    unfit.get_or_insert(reason);
                }
                (native_at, external_at) = (from, to);
            }
        }
    });
    unfit.map_or(Ok(()), Err)
}

/// Converts `count` elements of `info` from external32 to native packing.
fn decode(info: &TypeInfo, count: usize, external: &[u8], native: &mut [u8]) {
    let (mut native_at, mut external_at) = (0, 0);
    walk(info, count, &mut |basic, copies| {
        for _ in 0..copies {
            for &part in wire_parts(basic) {
                let (to, from) = (native_at + part.native_len(), external_at + part.external_len());
                from_external(part, &external[external_at..from], &mut native[native_at..to]);
                (native_at, external_at) = (to, from);
            }
        }
    });
}

/// Writes `count` elements of `info` at `buffer` in external32 into `external`, which holds
/// their external size; MPI_ERR_CONVERSION when a value does not fit its external size.
///
/// # Safety
/// The type map of the `count` elements at `buffer` must be readable.
pub(crate) unsafe fn to_external32(info: &TypeInfo, count: usize, buffer: *const u8, external: &mut [u8]) -> MpiResult<()> {
    let mut native = vec![0u8; info.size.checked_mul(count).ok_or_else(overflow)?];
    // SAFETY: per the caller.
    unsafe { info.pack(count, buffer, &mut native) };
    encode(info, count, &native, external).map_err(|reason| failure(MPI_ERR_CONVERSION, reason))
}

/// Reads `count` elements of `info` from their external32 form in `external` into `buffer`.
///
/// # Safety
/// The type map of the `count` elements at `buffer` must be writable, apart from `external`.
pub(crate) unsafe fn from_external32(info: &TypeInfo, count: usize, external: &[u8], buffer: *mut u8) -> MpiResult<()> {
    let mut native = vec![0u8; info.size.checked_mul(count).ok_or_else(overflow)?];
    decode(info, count, external, &mut native);
    // SAFETY: per the caller.
    unsafe { info.unpack(count, &native, buffer) };
    Ok(())
}

/// Checks the data representation: only "external32" exists.
///
/// # Safety
/// `datarep` is null or a NUL-terminated string.
unsafe fn datarep_arg(datarep: *const c_char) -> MpiResult<()> {
    if datarep.is_null() {
        return Err(failure(MPI_ERR_ARG, "datarep is NULL"));
    }
    // SAFETY: non-null and NUL-terminated (caller's guarantee).
    let name = unsafe { CStr::from_ptr(datarep) };
    if name.to_bytes() != b"external32" {
        return Err(failure(MPI_ERR_UNSUPPORTED_DATAREP, format!("data representation {name:?} is not supported (only \"external32\" is)")));
    }
    Ok(())
}

/// The checks the three calls share: the representation, a count and a committed type with
/// its external size for `count` elements.
///
/// # Safety
/// `datarep` is null or a NUL-terminated string.
unsafe fn typed(datarep: *const c_char, count: impl super::envelope::Argument, count_name: &str, datatype: MPI_Datatype) -> MpiResult<(usize, DatatypeRef, usize)> {
    // SAFETY: forwarded from this function's contract.
    unsafe { datarep_arg(datarep) }?;
    let count = count_arg(count, count_name)?;
    let info = lookup_committed(datatype).map_err(|class| failure(class, format!("invalid or uncommitted datatype ({datatype})")))?;
    let bytes = external_size(&info).checked_mul(count).ok_or_else(overflow)?;
    Ok((count, info, bytes))
}

/// Where `bytes` external bytes go in, or come from, a buffer of `size` bytes at `*position`:
/// (start, the position variable).
///
/// # Safety
/// `position` is null or valid for reads and writes.
unsafe fn place<'a>(position: *mut MPI_Aint, size: MPI_Aint, bytes: usize, buffer: *const c_void, buffer_name: &str) -> MpiResult<(usize, &'a mut MPI_Aint)> {
    // SAFETY: forwarded from this function's contract.
    let position = unsafe { out(position, "position") }?;
    let size = usize::try_from(size).map_err(|_| failure(MPI_ERR_ARG, format!("negative buffer size ({size})")))?;
    let start = usize::try_from(*position).ok().filter(|&start| start <= size);
    let start = start.ok_or_else(|| failure(MPI_ERR_ARG, format!("position {} is outside the buffer of {size} bytes", *position)))?;
    if bytes > size - start {
        return Err(failure(MPI_ERR_TRUNCATE, format!("{bytes} bytes of external32 data, {} left in the buffer", size - start)));
    }
    if bytes > 0 && buffer.is_null() {
        return Err(failure(MPI_ERR_BUFFER, format!("{buffer_name} is NULL")));
    }
    Ok((start, position))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: c_int,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Aint,
    position: *mut MPI_Aint,
) -> c_int {
    // SAFETY: the caller's arguments, forwarded.
    unsafe { pack_external("MPI_Pack_external", datarep, inbuf, incount, datatype, outbuf, outsize, position) }
}

/// MPI_Pack_external and the `_c` form (whose count is converted).
///
/// # Safety
/// MPI_Pack_external's arguments.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn pack_external(
    function: &str,
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: impl super::envelope::Argument,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Aint,
    position: *mut MPI_Aint,
) -> c_int {
    finish(
        function,
        (|| {
            // SAFETY: `datarep` and `position` are the caller's, as MPI requires them.
            let (count, info, bytes) = unsafe { typed(datarep, incount, "incount", datatype) }?;
            // SAFETY: as above.
            let (start, position) = unsafe { place(position, outsize, bytes, outbuf, "outbuf") }?;
            // SAFETY: MPI requires `outbuf` to hold `outsize` bytes, and start + bytes <= outsize.
            let external = unsafe { slice::from_raw_parts_mut(outbuf.cast::<u8>().add(start), bytes) };
            // SAFETY: the type map of `incount` elements at `inbuf` is the user's readable data.
            unsafe { to_external32(&info, count, inbuf.cast::<u8>(), external) }?;
            *position += bytes as MPI_Aint;
            Ok(())
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: MPI_Aint,
    position: *mut MPI_Aint,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: MPI_Datatype,
) -> c_int {
    // SAFETY: the caller's arguments, forwarded.
    unsafe { unpack_external("MPI_Unpack_external", datarep, inbuf, insize, position, outbuf, outcount, datatype) }
}

/// MPI_Unpack_external and the `_c` form.
///
/// # Safety
/// MPI_Unpack_external's arguments.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn unpack_external(
    function: &str,
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: MPI_Aint,
    position: *mut MPI_Aint,
    outbuf: *mut c_void,
    outcount: impl super::envelope::Argument,
    datatype: MPI_Datatype,
) -> c_int {
    finish(
        function,
        (|| {
            // SAFETY: `datarep` and `position` are the caller's, as MPI requires them.
            let (count, info, bytes) = unsafe { typed(datarep, outcount, "outcount", datatype) }?;
            // SAFETY: as above.
            let (start, position) = unsafe { place(position, insize, bytes, inbuf, "inbuf") }?;
            // SAFETY: MPI requires `inbuf` to hold `insize` bytes, and start + bytes <= insize.
            let external = unsafe { slice::from_raw_parts(inbuf.cast::<u8>().add(start), bytes) };
            // SAFETY: the type map of `outcount` elements at `outbuf` is the user's writable data.
            unsafe { from_external32(&info, count, external, outbuf.cast::<u8>()) }?;
            *position += bytes as MPI_Aint;
            Ok(())
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external_size(datarep: *const c_char, incount: c_int, datatype: MPI_Datatype, size: *mut MPI_Aint) -> c_int {
    finish(
        "MPI_Pack_external_size",
        (|| {
            // SAFETY: `datarep` is the caller's string.
            let bytes = unsafe { external_size_of(datarep, incount, datatype) }?;
            // SAFETY: `size` is null or the caller's output variable.
            *unsafe { out(size, "size") }? = MPI_Aint::try_from(bytes).map_err(|_| overflow())?;
            Ok(())
        })(),
    )
}

/// The external32 bytes of `incount` elements of `datatype`.
///
/// # Safety
/// `datarep` is null or a NUL-terminated string.
pub(super) unsafe fn external_size_of(datarep: *const c_char, incount: impl super::envelope::Argument, datatype: MPI_Datatype) -> MpiResult<usize> {
    // SAFETY: per the caller.
    unsafe { typed(datarep, incount, "incount", datatype) }.map(|(_, _, bytes)| bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::lookup;

    fn external(dt: MPI_Datatype, native: &[u8]) -> Result<Vec<u8>, String> {
        let info = lookup(dt).unwrap();
        let mut out = vec![0u8; external_size(&info)];
        encode(&info, 1, native, &mut out).map(|()| out)
    }

    #[test]
    fn sizes_follow_the_standard_table() {
        let size = |dt| external_size(&lookup(dt).unwrap());
        for (dt, bytes) in [
            (MPI_CHAR, 1),
            (MPI_WCHAR, 2),
            (MPI_SHORT, 2),
            (MPI_INT, 4),
            (MPI_LONG, 4),
            (MPI_UNSIGNED_LONG, 4),
            (MPI_LONG_LONG, 8),
            (MPI_FLOAT, 4),
            (MPI_DOUBLE, 8),
            (MPI_LONG_DOUBLE, 16),
            (MPI_C_BOOL, 1),
            (MPI_AINT, 8),
            (MPI_C_LONG_DOUBLE_COMPLEX, 32),
            (MPI_LOGICAL, 4),
            (MPI_DOUBLE_COMPLEX, 16),
            (MPI_CXX_BOOL, 1),
            (MPI_DOUBLE_INT, 12),
            (MPI_LONG_INT, 8),
            (MPI_LONG_DOUBLE_INT, 20),
            (MPI_UB, 0),
        ] {
            assert_eq!(size(dt), bytes, "datatype {dt}");
        }
    }

    #[test]
    fn values_are_big_endian_in_their_fixed_sizes() {
        assert_eq!(external(MPI_INT, &0x0102_0304i32.to_ne_bytes()), Ok(vec![1, 2, 3, 4]));
        assert_eq!(external(MPI_LONG, &c_long::from(-2i32).to_ne_bytes()), Ok(vec![0xff, 0xff, 0xff, 0xfe]));
        assert_eq!(external(MPI_DOUBLE, &1.0f64.to_ne_bytes()), Ok(vec![0x3f, 0xf0, 0, 0, 0, 0, 0, 0]));
        let mut long_double = [0u8; 16];
        long_double[..10].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0xc0, 0xff, 0x3f]);
        if cfg!(target_arch = "x86_64") {
            // 1.5L in x87 extended: binary128 keeps sign and exponent, drops the explicit integer bit.
            assert_eq!(external(MPI_LONG_DOUBLE, &long_double), Ok([&[0x3f, 0xff, 0x80][..], &[0; 13]].concat()));
        }
        assert_eq!(external(MPI_C_BOOL, &[7]), Ok(vec![1]));
        assert_eq!(external(MPI_WCHAR, &libc::wchar_t::from(0x263au16).to_ne_bytes()), Ok(vec![0x26, 0x3a]));
    }

    #[test]
    fn values_beyond_the_fixed_sizes_are_refused() {
        assert!(external(MPI_LONG, &c_long::MAX.to_ne_bytes()).is_err());
        assert!(external(MPI_WCHAR, &0x1f600u32.to_ne_bytes()).is_err());
    }

    #[test]
    fn decoding_restores_values_and_reads_any_nonzero_logical_as_true() {
        let info = lookup(MPI_LONG_INT).unwrap();
        let mut native = vec![0u8; info.size];
        decode(&info, 1, &[0xff, 0xff, 0xff, 0xfd, 0, 0, 0, 9], &mut native);
        assert_eq!(c_long::from_ne_bytes(native[..8].try_into().unwrap()), -3);
        assert_eq!(i32::from_ne_bytes(native[8..].try_into().unwrap()), 9);
        let logical = lookup(MPI_LOGICAL).unwrap();
        let mut truth = [0u8; 4];
        decode(&logical, 1, &[0, 0x80, 0, 0], &mut truth);
        assert_eq!(c_int::from_ne_bytes(truth), 1);
    }
}
