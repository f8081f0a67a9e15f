//! The predefined datatypes: their C types, sizes and layouts on this platform.

use std::ffi::{c_int, c_long, c_short};
use std::mem::{align_of, offset_of, size_of};

use crate::consts::*;

/// A predefined datatype, one per handle 1..=BRAID_PREDEFINED_DATATYPE_LAST.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Basic {
    Char,
    SignedChar,
    UnsignedChar,
    Byte,
    WChar,
    Short,
    UnsignedShort,
    Int,
    Unsigned,
    Long,
    UnsignedLong,
    LongLongInt,
    LongLong,
    UnsignedLongLong,
    Float,
    Double,
    LongDouble,
    CBool,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    Aint,
    Offset,
    Count,
    CComplex,
    CFloatComplex,
    CDoubleComplex,
    CLongDoubleComplex,
    Packed,
    FloatInt,
    DoubleInt,
    LongInt,
    TwoInt,
    ShortInt,
    LongDoubleInt,
    Character,
    Logical,
    Integer,
    Real,
    DoublePrecision,
    Complex,
    DoubleComplex,
    TwoInteger,
    TwoReal,
    TwoDoublePrecision,
    Integer1,
    Integer2,
    Integer4,
    Integer8,
    Real4,
    Real8,
    Real16,
    Complex8,
    Complex16,
    Complex32,
    CxxBool,
    CxxFloatComplex,
    CxxDoubleComplex,
    CxxLongDoubleComplex,
    /// The MPI-1 bound markers: no data, they set a struct's lower or upper bound.
    Lb,
    Ub,
    /// Fortran INTEGER(KIND=16) (MPI_INTEGER16, optional in MPI): a 128-bit integer.
    Integer16,
}

/// Handle, kind and MPI name of every predefined datatype.
pub const PREDEFINED: [(MPI_Datatype, Basic, &str); 67] = [
    (MPI_CHAR, Basic::Char, "MPI_CHAR"),
    (MPI_SIGNED_CHAR, Basic::SignedChar, "MPI_SIGNED_CHAR"),
    (MPI_UNSIGNED_CHAR, Basic::UnsignedChar, "MPI_UNSIGNED_CHAR"),
    (MPI_BYTE, Basic::Byte, "MPI_BYTE"),
    (MPI_WCHAR, Basic::WChar, "MPI_WCHAR"),
    (MPI_SHORT, Basic::Short, "MPI_SHORT"),
    (MPI_UNSIGNED_SHORT, Basic::UnsignedShort, "MPI_UNSIGNED_SHORT"),
    (MPI_INT, Basic::Int, "MPI_INT"),
    (MPI_UNSIGNED, Basic::Unsigned, "MPI_UNSIGNED"),
    (MPI_LONG, Basic::Long, "MPI_LONG"),
    (MPI_UNSIGNED_LONG, Basic::UnsignedLong, "MPI_UNSIGNED_LONG"),
    (MPI_LONG_LONG_INT, Basic::LongLongInt, "MPI_LONG_LONG_INT"),
    (MPI_LONG_LONG, Basic::LongLong, "MPI_LONG_LONG"),
    (MPI_UNSIGNED_LONG_LONG, Basic::UnsignedLongLong, "MPI_UNSIGNED_LONG_LONG"),
    (MPI_FLOAT, Basic::Float, "MPI_FLOAT"),
    (MPI_DOUBLE, Basic::Double, "MPI_DOUBLE"),
    (MPI_LONG_DOUBLE, Basic::LongDouble, "MPI_LONG_DOUBLE"),
    (MPI_C_BOOL, Basic::CBool, "MPI_C_BOOL"),
    (MPI_INT8_T, Basic::Int8, "MPI_INT8_T"),
    (MPI_INT16_T, Basic::Int16, "MPI_INT16_T"),
    (MPI_INT32_T, Basic::Int32, "MPI_INT32_T"),
    (MPI_INT64_T, Basic::Int64, "MPI_INT64_T"),
    (MPI_UINT8_T, Basic::Uint8, "MPI_UINT8_T"),
    (MPI_UINT16_T, Basic::Uint16, "MPI_UINT16_T"),
    (MPI_UINT32_T, Basic::Uint32, "MPI_UINT32_T"),
    (MPI_UINT64_T, Basic::Uint64, "MPI_UINT64_T"),
    (MPI_AINT, Basic::Aint, "MPI_AINT"),
    (MPI_OFFSET, Basic::Offset, "MPI_OFFSET"),
    (MPI_COUNT, Basic::Count, "MPI_COUNT"),
    (MPI_C_COMPLEX, Basic::CComplex, "MPI_C_COMPLEX"),
    (MPI_C_FLOAT_COMPLEX, Basic::CFloatComplex, "MPI_C_FLOAT_COMPLEX"),
    (MPI_C_DOUBLE_COMPLEX, Basic::CDoubleComplex, "MPI_C_DOUBLE_COMPLEX"),
    (MPI_C_LONG_DOUBLE_COMPLEX, Basic::CLongDoubleComplex, "MPI_C_LONG_DOUBLE_COMPLEX"),
    (MPI_PACKED, Basic::Packed, "MPI_PACKED"),
    (MPI_FLOAT_INT, Basic::FloatInt, "MPI_FLOAT_INT"),
    (MPI_DOUBLE_INT, Basic::DoubleInt, "MPI_DOUBLE_INT"),
    (MPI_LONG_INT, Basic::LongInt, "MPI_LONG_INT"),
    (MPI_2INT, Basic::TwoInt, "MPI_2INT"),
    (MPI_SHORT_INT, Basic::ShortInt, "MPI_SHORT_INT"),
    (MPI_LONG_DOUBLE_INT, Basic::LongDoubleInt, "MPI_LONG_DOUBLE_INT"),
    (MPI_CHARACTER, Basic::Character, "MPI_CHARACTER"),
    (MPI_LOGICAL, Basic::Logical, "MPI_LOGICAL"),
    (MPI_INTEGER, Basic::Integer, "MPI_INTEGER"),
    (MPI_REAL, Basic::Real, "MPI_REAL"),
    (MPI_DOUBLE_PRECISION, Basic::DoublePrecision, "MPI_DOUBLE_PRECISION"),
    (MPI_COMPLEX, Basic::Complex, "MPI_COMPLEX"),
    (MPI_DOUBLE_COMPLEX, Basic::DoubleComplex, "MPI_DOUBLE_COMPLEX"),
    (MPI_2INTEGER, Basic::TwoInteger, "MPI_2INTEGER"),
    (MPI_2REAL, Basic::TwoReal, "MPI_2REAL"),
    (MPI_2DOUBLE_PRECISION, Basic::TwoDoublePrecision, "MPI_2DOUBLE_PRECISION"),
    (MPI_INTEGER1, Basic::Integer1, "MPI_INTEGER1"),
    (MPI_INTEGER2, Basic::Integer2, "MPI_INTEGER2"),
    (MPI_INTEGER4, Basic::Integer4, "MPI_INTEGER4"),
    (MPI_INTEGER8, Basic::Integer8, "MPI_INTEGER8"),
    (MPI_REAL4, Basic::Real4, "MPI_REAL4"),
    (MPI_REAL8, Basic::Real8, "MPI_REAL8"),
    (MPI_REAL16, Basic::Real16, "MPI_REAL16"),
    (MPI_COMPLEX8, Basic::Complex8, "MPI_COMPLEX8"),
    (MPI_COMPLEX16, Basic::Complex16, "MPI_COMPLEX16"),
    (MPI_COMPLEX32, Basic::Complex32, "MPI_COMPLEX32"),
    (MPI_CXX_BOOL, Basic::CxxBool, "MPI_CXX_BOOL"),
    (MPI_CXX_FLOAT_COMPLEX, Basic::CxxFloatComplex, "MPI_CXX_FLOAT_COMPLEX"),
    (MPI_CXX_DOUBLE_COMPLEX, Basic::CxxDoubleComplex, "MPI_CXX_DOUBLE_COMPLEX"),
    (MPI_CXX_LONG_DOUBLE_COMPLEX, Basic::CxxLongDoubleComplex, "MPI_CXX_LONG_DOUBLE_COMPLEX"),
    (MPI_LB, Basic::Lb, "MPI_LB"),
    (MPI_UB, Basic::Ub, "MPI_UB"),
    (MPI_INTEGER16, Basic::Integer16, "MPI_INTEGER16"),
];

/// `long double` on the Linux targets Braid supports (x86_64: 80-bit x87 in 16 bytes;
/// aarch64: IEEE binary128). The C helper checks this at build time.
pub const LONG_DOUBLE_SIZE: usize = 16;
pub const LONG_DOUBLE_ALIGN: usize = 16;

/// Fortran REAL*16 (MPI_REAL16, and each half of MPI_COMPLEX32): IEEE binary128, as gfortran's
/// REAL(16) and C's `_Float128`.
pub const BINARY128_SIZE: usize = 16;

#[repr(C)]
struct FloatIntPair {
    value: f32,
    index: c_int,
}
#[repr(C)]
struct DoubleIntPair {
    value: f64,
    index: c_int,
}
#[repr(C)]
struct LongIntPair {
    value: c_long,
    index: c_int,
}
#[repr(C)]
struct ShortIntPair {
    value: c_short,
    index: c_int,
}
#[repr(C, align(16))]
struct LongDoubleIntPair {
    value: [u8; LONG_DOUBLE_SIZE],
    index: c_int,
}

/// Where the parts of a predefined type lie in its C representation.
pub struct Shape {
    /// (offset, size) of each basic part: one for scalars, two for the (value, index) pairs.
    pub parts: &'static [(usize, usize)],
    /// `sizeof` of the C type, i.e. the extent.
    pub extent: usize,
    pub align: usize,
}

macro_rules! scalar {
    ($t:ty) => {
        Shape { parts: &[(0, size_of::<$t>())], extent: size_of::<$t>(), align: align_of::<$t>() }
    };
}

macro_rules! pair {
    ($pair:ty, $value_size:expr) => {
        Shape { parts: &[(0, $value_size), (offset_of!($pair, index), size_of::<c_int>())], extent: size_of::<$pair>(), align: align_of::<$pair>() }
    };
}

impl Basic {
    pub fn shape(self) -> Shape {
        match self {
            Basic::Char | Basic::SignedChar | Basic::Int8 | Basic::Integer1 => scalar!(i8),
            Basic::UnsignedChar | Basic::Byte | Basic::Uint8 | Basic::Packed | Basic::CBool | Basic::Character | Basic::CxxBool => {
                scalar!(u8)
            }
            Basic::WChar => scalar!(libc::wchar_t),
            Basic::Short | Basic::Int16 | Basic::Integer2 => scalar!(c_short),
            Basic::UnsignedShort | Basic::Uint16 => scalar!(u16),
            Basic::Int | Basic::Int32 | Basic::Integer | Basic::Integer4 | Basic::Logical => scalar!(c_int),
            Basic::Unsigned | Basic::Uint32 => scalar!(u32),
            Basic::Long | Basic::UnsignedLong => scalar!(c_long),
            Basic::LongLongInt | Basic::LongLong | Basic::UnsignedLongLong | Basic::Int64 | Basic::Uint64 | Basic::Integer8 => {
                scalar!(i64)
            }
            Basic::Aint => scalar!(MPI_Aint),
            Basic::Offset => scalar!(MPI_Offset),
            Basic::Count => scalar!(MPI_Count),
            Basic::Float | Basic::Real | Basic::Real4 => scalar!(f32),
            Basic::Double | Basic::DoublePrecision | Basic::Real8 => scalar!(f64),
            Basic::CComplex | Basic::CFloatComplex | Basic::Complex | Basic::Complex8 | Basic::CxxFloatComplex => Shape { parts: &[(0, 8)], extent: 8, align: 4 },
            Basic::CDoubleComplex | Basic::DoubleComplex | Basic::Complex16 | Basic::CxxDoubleComplex => Shape { parts: &[(0, 16)], extent: 16, align: 8 },
            Basic::LongDouble => Shape { parts: &[(0, LONG_DOUBLE_SIZE)], extent: LONG_DOUBLE_SIZE, align: LONG_DOUBLE_ALIGN },
            Basic::CLongDoubleComplex | Basic::CxxLongDoubleComplex => Shape { parts: &[(0, 2 * LONG_DOUBLE_SIZE)], extent: 2 * LONG_DOUBLE_SIZE, align: LONG_DOUBLE_ALIGN },
            Basic::Real16 => Shape { parts: &[(0, BINARY128_SIZE)], extent: BINARY128_SIZE, align: BINARY128_SIZE },
            // gfortran's INTEGER(16) is C's __int128: 16 bytes, 16-aligned.
            Basic::Integer16 => Shape { parts: &[(0, 16)], extent: 16, align: 16 },
            Basic::Complex32 => Shape { parts: &[(0, 2 * BINARY128_SIZE)], extent: 2 * BINARY128_SIZE, align: BINARY128_SIZE },
            Basic::TwoInteger => Shape { parts: &[(0, 4), (4, 4)], extent: 8, align: 4 },
            Basic::TwoReal => Shape { parts: &[(0, 4), (4, 4)], extent: 8, align: 4 },
            Basic::TwoDoublePrecision => Shape { parts: &[(0, 8), (8, 8)], extent: 16, align: 8 },
            Basic::Lb | Basic::Ub => Shape { parts: &[], extent: 0, align: 1 },
            Basic::FloatInt => pair!(FloatIntPair, size_of::<f32>()),
            Basic::DoubleInt => pair!(DoubleIntPair, size_of::<f64>()),
            Basic::LongInt => pair!(LongIntPair, size_of::<c_long>()),
            Basic::TwoInt => Shape { parts: &[(0, 4), (4, 4)], extent: 8, align: 4 },
            Basic::ShortInt => pair!(ShortIntPair, size_of::<c_short>()),
            Basic::LongDoubleInt => pair!(LongDoubleIntPair, LONG_DOUBLE_SIZE),
        }
    }

    pub fn from_handle(handle: MPI_Datatype) -> Option<Basic> {
        let index = usize::try_from(handle).ok()?.checked_sub(1)?;
        PREDEFINED.get(index).map(|(_, basic, _)| *basic)
    }

    pub fn name(self) -> &'static str {
        PREDEFINED.iter().find(|(_, basic, _)| *basic == self).map_or("", |(_, _, name)| name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_consecutive_from_one_in_table_order() {
        for (index, (handle, basic, _)) in PREDEFINED.iter().enumerate() {
            assert_eq!(*handle, index as c_int + 1);
            assert_eq!(Basic::from_handle(*handle), Some(*basic));
        }
        assert_eq!(PREDEFINED.len() as c_int, BRAID_PREDEFINED_DATATYPE_LAST);
        assert_eq!(Basic::from_handle(0), None);
        assert_eq!(Basic::from_handle(BRAID_PREDEFINED_DATATYPE_LAST + 1), None);
    }

    #[test]
    fn pair_types_follow_c_struct_layout() {
        let double_int = Basic::DoubleInt.shape();
        assert_eq!((double_int.parts, double_int.extent), (&[(0, 8), (8, 4)][..], 16));
        let short_int = Basic::ShortInt.shape();
        assert_eq!((short_int.parts, short_int.extent), (&[(0, 2), (4, 4)][..], 8));
        let long_double_int = Basic::LongDoubleInt.shape();
        assert_eq!((long_double_int.parts, long_double_int.extent), (&[(0, 16), (16, 4)][..], 32));
        let two_double_precision = Basic::TwoDoublePrecision.shape();
        assert_eq!((two_double_precision.parts, two_double_precision.extent), (&[(0, 8), (8, 8)][..], 16));
    }

    #[test]
    fn fortran_types_have_the_sizes_of_their_c_counterparts() {
        let size = |basic: Basic| basic.shape().parts.iter().map(|(_, len)| len).sum::<usize>();
        for (basic, expected) in [
            (Basic::Character, 1),
            (Basic::Logical, 4),
            (Basic::Integer, 4),
            (Basic::Real, 4),
            (Basic::DoublePrecision, 8),
            (Basic::Complex, 8),
            (Basic::DoubleComplex, 16),
            (Basic::Integer1, 1),
            (Basic::Integer8, 8),
            (Basic::Integer16, 16),
            (Basic::Real16, 16),
            (Basic::Complex32, 32),
            (Basic::CxxBool, 1),
            (Basic::CxxLongDoubleComplex, 32),
            (Basic::Lb, 0),
        ] {
            assert_eq!(size(basic), expected, "{basic:?}");
        }
    }
}
