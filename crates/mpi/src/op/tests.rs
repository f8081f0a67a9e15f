//! Every predefined operation on every type it applies to, against references computed here.

use std::ffi::{c_int, c_long, c_short, c_void};

use super::abi::*;
use super::kernels::Scalar;
use super::*;
use crate::datatype::{Basic, PREDEFINED_DATATYPES};

fn bytes_of<T: Scalar>(values: &[T]) -> Vec<u8> {
    let mut bytes = vec![0u8; values.len() * T::SIZE];
    for (value, chunk) in values.iter().zip(bytes.chunks_exact_mut(T::SIZE)) {
        value.store(chunk);
    }
    bytes
}

fn values_of<T: Scalar>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(T::SIZE).map(T::load).collect()
}

/// `inout = input op inout` through [`reduction`].
fn reduce(op: MPI_Op, dt: MPI_Datatype, input: &[u8], inout: &[u8]) -> Vec<u8> {
    let reduction = reduction(op, dt).unwrap_or_else(|class| panic!("op {op} on type {dt}: error {class}"));
    let mut result = inout.to_vec();
    reduction.apply(input, &mut result);
    result
}

const SEEDS: [i64; 8] = [3, -2, 0, 7, 100, -128, 1 << 40, 5];

macro_rules! check_integer_type {
    ($handle:expr, $t:ty) => {{
        let a: Vec<$t> = SEEDS.iter().map(|&v| v as $t).collect();
        let b: Vec<$t> = SEEDS.iter().rev().map(|&v| (v + 1) as $t).collect();
        let cases: [(MPI_Op, fn($t, $t) -> $t); 10] = [
            (MPI_MAX, |x, y| if x > y { x } else { y }),
            (MPI_MIN, |x, y| if x < y { x } else { y }),
            (MPI_SUM, |x, y| (x as i128 + y as i128) as $t),
            (MPI_PROD, |x, y| (x as i128 * y as i128) as $t),
            (MPI_LAND, |x, y| ((x != 0) && (y != 0)) as $t),
            (MPI_LOR, |x, y| ((x != 0) || (y != 0)) as $t),
            (MPI_LXOR, |x, y| ((x != 0) != (y != 0)) as $t),
            (MPI_BAND, |x, y| x & y),
            (MPI_BOR, |x, y| x | y),
            (MPI_BXOR, |x, y| x ^ y),
        ];
        for (op, reference) in cases {
            if matches!($handle, MPI_AINT | MPI_OFFSET | MPI_COUNT) && matches!(op, MPI_LAND | MPI_LOR | MPI_LXOR) {
                continue;
            }
            let got = values_of::<$t>(&reduce(op, $handle, &bytes_of(&a), &bytes_of(&b)));
            let expected: Vec<$t> = a.iter().zip(&b).map(|(&x, &y)| reference(x, y)).collect();
            assert_eq!(got, expected, "op {op} on type {}", $handle);
        }
    }};
}

#[test]
fn integer_operations_match_references() {
    check_integer_type!(MPI_CHAR, i8);
    check_integer_type!(MPI_SIGNED_CHAR, i8);
    check_integer_type!(MPI_UNSIGNED_CHAR, u8);
    check_integer_type!(MPI_SHORT, c_short);
    check_integer_type!(MPI_UNSIGNED_SHORT, u16);
    check_integer_type!(MPI_INT, c_int);
    check_integer_type!(MPI_UNSIGNED, u32);
    check_integer_type!(MPI_LONG, c_long);
    check_integer_type!(MPI_UNSIGNED_LONG, std::ffi::c_ulong);
    check_integer_type!(MPI_LONG_LONG_INT, i64);
    check_integer_type!(MPI_LONG_LONG, i64);
    check_integer_type!(MPI_UNSIGNED_LONG_LONG, u64);
    check_integer_type!(MPI_INT8_T, i8);
    check_integer_type!(MPI_INT16_T, i16);
    check_integer_type!(MPI_INT32_T, i32);
    check_integer_type!(MPI_INT64_T, i64);
    check_integer_type!(MPI_UINT8_T, u8);
    check_integer_type!(MPI_UINT16_T, u16);
    check_integer_type!(MPI_UINT32_T, u32);
    check_integer_type!(MPI_UINT64_T, u64);
    check_integer_type!(MPI_AINT, MPI_Aint);
    check_integer_type!(MPI_OFFSET, MPI_Offset);
    check_integer_type!(MPI_COUNT, MPI_Count);
}

#[test]
fn fortran_integers_have_arithmetic_and_bitwise_operations() {
    for (dt, width) in [(MPI_INTEGER, 4), (MPI_INTEGER1, 1), (MPI_INTEGER2, 2), (MPI_INTEGER4, 4), (MPI_INTEGER8, 8)] {
        let encode = |values: &[i64]| -> Vec<u8> { values.iter().flat_map(|value| value.to_le_bytes()[..width].to_vec()).collect() };
        let (a, b) = (encode(&[3, -2, 12]), encode(&[5, 7, 10]));
        assert_eq!(reduce(MPI_SUM, dt, &a, &b), encode(&[8, 5, 22]), "type {dt}");
        assert_eq!(reduce(MPI_PROD, dt, &a, &b), encode(&[15, -14, 120]), "type {dt}");
        assert_eq!(reduce(MPI_MAX, dt, &a, &b), encode(&[5, 7, 12]), "type {dt}");
        assert_eq!(reduce(MPI_MIN, dt, &a, &b), encode(&[3, -2, 10]), "type {dt}");
        assert_eq!(reduce(MPI_BAND, dt, &a, &b), encode(&[1, 6, 8]), "type {dt}");
        assert_eq!(reduce(MPI_BXOR, dt, &a, &b), encode(&[6, -7, 6]), "type {dt}");
        assert_eq!(reduction(MPI_LAND, dt).map(|_| ()), Err(MPI_ERR_OP));
    }
}

#[test]
fn logical_types_have_logical_operations() {
    let (p, q) = (bytes_of(&[1 as c_int, 1, 0, 0]), bytes_of(&[7 as c_int, 0, -1, 0]));
    assert_eq!(values_of::<c_int>(&reduce(MPI_LAND, MPI_LOGICAL, &p, &q)), [1, 0, 0, 0]);
    assert_eq!(values_of::<c_int>(&reduce(MPI_LOR, MPI_LOGICAL, &p, &q)), [1, 1, 1, 0]);
    assert_eq!(values_of::<c_int>(&reduce(MPI_LXOR, MPI_LOGICAL, &p, &q)), [0, 1, 1, 0]);
    assert_eq!(reduce(MPI_LOR, MPI_CXX_BOOL, &[1, 0, 0], &[0, 0, 1]), [1, 0, 1]);
    assert_eq!(reduction(MPI_SUM, MPI_LOGICAL).map(|_| ()), Err(MPI_ERR_OP));
}

#[test]
fn byte_and_bool_operations_match_references() {
    let (a, b) = ([0b1100u8, 0, 1, 2], [0b1010u8, 3, 0, 2]);
    assert_eq!(reduce(MPI_BAND, MPI_BYTE, &a, &b), [0b1000, 0, 0, 2]);
    assert_eq!(reduce(MPI_BOR, MPI_BYTE, &a, &b), [0b1110, 3, 1, 2]);
    assert_eq!(reduce(MPI_BXOR, MPI_BYTE, &a, &b), [0b0110, 3, 1, 0]);
    let (p, q) = ([1u8, 1, 0, 0], [1u8, 0, 1, 0]);
    assert_eq!(reduce(MPI_LAND, MPI_C_BOOL, &p, &q), [1, 0, 0, 0]);
    assert_eq!(reduce(MPI_LOR, MPI_C_BOOL, &p, &q), [1, 1, 1, 0]);
    assert_eq!(reduce(MPI_LXOR, MPI_C_BOOL, &p, &q), [0, 1, 1, 0]);
}

macro_rules! check_float_type {
    ($handle:expr, $t:ty) => {{
        let a: [$t; 5] = [1.5, -2.0, 0.25, 8.0, -0.5];
        let b: [$t; 5] = [2.5, -3.0, 0.25, -8.0, 4.0];
        let cases: [(MPI_Op, fn($t, $t) -> $t); 4] = [(MPI_MAX, |x, y| x.max(y)), (MPI_MIN, |x, y| x.min(y)), (MPI_SUM, |x, y| x + y), (MPI_PROD, |x, y| x * y)];
        for (op, reference) in cases {
            let got = values_of::<$t>(&reduce(op, $handle, &bytes_of(&a), &bytes_of(&b)));
            let expected: Vec<$t> = a.iter().zip(&b).map(|(&x, &y)| reference(x, y)).collect();
            assert_eq!(got, expected, "op {op} on type {}", $handle);
        }
    }};
}

#[test]
fn floating_operations_match_references() {
    check_float_type!(MPI_FLOAT, f32);
    check_float_type!(MPI_DOUBLE, f64);
    check_float_type!(MPI_REAL, f32);
    check_float_type!(MPI_REAL4, f32);
    check_float_type!(MPI_DOUBLE_PRECISION, f64);
    check_float_type!(MPI_REAL8, f64);
}

#[test]
fn complex_sum_and_product() {
    let a = [1.5f64, -2.0, 0.0, 1.0];
    let b = [0.5f64, 3.0, 0.0, 1.0];
    // (1.5 - 2i)(0.5 + 3i) = 0.75 + 6 + (4.5 - 1)i; i * i = -1.
    let sum = values_of::<f64>(&reduce(MPI_SUM, MPI_C_DOUBLE_COMPLEX, &bytes_of(&a), &bytes_of(&b)));
    assert_eq!(sum, [2.0, 1.0, 0.0, 2.0]);
    let product = values_of::<f64>(&reduce(MPI_PROD, MPI_C_DOUBLE_COMPLEX, &bytes_of(&a), &bytes_of(&b)));
    assert_eq!(product, [6.75, 3.5, -1.0, 0.0]);
    let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
    let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
    for dt in [MPI_C_FLOAT_COMPLEX, MPI_C_COMPLEX, MPI_COMPLEX, MPI_COMPLEX8, MPI_CXX_FLOAT_COMPLEX] {
        let product = values_of::<f32>(&reduce(MPI_PROD, dt, &bytes_of(&a32), &bytes_of(&b32)));
        assert_eq!(product, [6.75, 3.5, -1.0, 0.0]);
    }
    for dt in [MPI_DOUBLE_COMPLEX, MPI_COMPLEX16, MPI_CXX_DOUBLE_COMPLEX] {
        assert_eq!(values_of::<f64>(&reduce(MPI_PROD, dt, &bytes_of(&a), &bytes_of(&b))), [6.75, 3.5, -1.0, 0.0]);
    }
}

/// IEEE binary128 encoding of a normal (or zero) f64, in native byte order.
fn quad(value: f64) -> [u8; 16] {
    let bits = value.to_bits() as u128;
    let sign = (bits >> 63) << 127;
    if value == 0.0 {
        return sign.to_ne_bytes();
    }
    let exponent = ((bits >> 52) & 0x7ff) + (16383 - 1023);
    let fraction = (bits & ((1 << 52) - 1)) << (112 - 52);
    (sign | (exponent << 112) | fraction).to_ne_bytes()
}

fn quads(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|&value| quad(value)).collect()
}

#[test]
fn binary128_operations_go_through_the_c_helper() {
    let (a, b) = (quads(&[1.5, -2.0, 0.25]), quads(&[2.25, 3.0, -8.0]));
    assert_eq!(reduce(MPI_SUM, MPI_REAL16, &a, &b), quads(&[3.75, 1.0, -7.75]));
    assert_eq!(reduce(MPI_PROD, MPI_REAL16, &a, &b), quads(&[3.375, -6.0, -2.0]));
    assert_eq!(reduce(MPI_MAX, MPI_REAL16, &a, &b), quads(&[2.25, 3.0, 0.25]));
    assert_eq!(reduce(MPI_MIN, MPI_REAL16, &a, &b), quads(&[1.5, -2.0, -8.0]));
    // (1.5 - 2i)(0.5 + 3i) = 6.75 + 3.5i.
    assert_eq!(reduce(MPI_PROD, MPI_COMPLEX32, &quads(&[1.5, -2.0]), &quads(&[0.5, 3.0])), quads(&[6.75, 3.5]));
    assert_eq!(reduce(MPI_SUM, MPI_COMPLEX32, &quads(&[1.5, -2.0]), &quads(&[0.5, 3.0])), quads(&[2.0, 1.0]));
}

/// Packed (value, index) pairs.
fn pairs<V: Scalar>(values: &[(V, c_int)]) -> Vec<u8> {
    values.iter().flat_map(|(value, index)| [bytes_of(&[*value]), bytes_of(&[*index])].concat()).collect()
}

macro_rules! check_location_type {
    ($handle:expr, $t:ty) => {{
        let v = |x: i32| x as $t;
        let input = pairs(&[(v(3), 5), (v(2), 1), (v(4), 7), (v(4), 2)]);
        let inout = pairs(&[(v(3), 2), (v(5), 0), (v(1), 9), (v(4), 3)]);
        assert_eq!(reduce(MPI_MAXLOC, $handle, &input, &inout), pairs(&[(v(3), 2), (v(5), 0), (v(4), 7), (v(4), 2)]));
        assert_eq!(reduce(MPI_MINLOC, $handle, &input, &inout), pairs(&[(v(3), 2), (v(2), 1), (v(1), 9), (v(4), 2)]));
    }};
}

#[test]
fn maxloc_and_minloc_keep_the_lower_index_on_ties() {
    check_location_type!(MPI_FLOAT_INT, f32);
    check_location_type!(MPI_DOUBLE_INT, f64);
    check_location_type!(MPI_LONG_INT, c_long);
    check_location_type!(MPI_2INT, c_int);
    check_location_type!(MPI_SHORT_INT, c_short);
    check_location_type!(MPI_2INTEGER, c_int);
}

#[test]
fn fortran_pairs_carry_the_index_in_the_value_type() {
    let real_pairs = |values: &[(f32, f32)]| -> Vec<u8> { values.iter().flat_map(|&(value, index)| bytes_of(&[value, index])).collect() };
    let input = real_pairs(&[(3.0, 5.0), (2.0, 1.0), (4.0, 7.0)]);
    let inout = real_pairs(&[(3.0, 2.0), (5.0, 0.0), (1.0, 9.0)]);
    assert_eq!(reduce(MPI_MAXLOC, MPI_2REAL, &input, &inout), real_pairs(&[(3.0, 2.0), (5.0, 0.0), (4.0, 7.0)]));
    assert_eq!(reduce(MPI_MINLOC, MPI_2REAL, &input, &inout), real_pairs(&[(3.0, 2.0), (2.0, 1.0), (1.0, 9.0)]));
    let double_pairs = |values: &[(f64, f64)]| -> Vec<u8> { values.iter().flat_map(|&(value, index)| bytes_of(&[value, index])).collect() };
    let input = double_pairs(&[(1.0, 4.0), (6.0, 3.0)]);
    let inout = double_pairs(&[(1.0, 2.0), (6.5, 8.0)]);
    assert_eq!(reduce(MPI_MINLOC, MPI_2DOUBLE_PRECISION, &input, &inout), double_pairs(&[(1.0, 2.0), (6.0, 3.0)]));
}

/// Which (op, type) pairs MPI-3.1 §5.9.2 defines, by type group (MPI_CHAR counted as a C integer).
fn defined(op: MPI_Op, basic: Basic) -> bool {
    use Basic::*;
    let c_integer = matches!(
        basic,
        Char | SignedChar
            | UnsignedChar
            | Short
            | UnsignedShort
            | Int
            | Unsigned
            | Long
            | UnsignedLong
            | LongLongInt
            | LongLong
            | UnsignedLongLong
            | Int8
            | Int16
            | Int32
            | Int64
            | Uint8
            | Uint16
            | Uint32
            | Uint64
    );
    let fortran_integer = matches!(basic, Integer | Integer1 | Integer2 | Integer4 | Integer8 | Integer16);
    let floating = matches!(basic, Float | Double | LongDouble | Real | DoublePrecision | Real4 | Real8 | Real16);
    let complex = matches!(
        basic,
        CComplex | CFloatComplex | CDoubleComplex | CLongDoubleComplex | Complex | DoubleComplex | Complex8 | Complex16 | Complex32 | CxxFloatComplex | CxxDoubleComplex | CxxLongDoubleComplex
    );
    let logical = matches!(basic, CBool | CxxBool | Logical);
    let multi_language = matches!(basic, Aint | Offset | Count);
    let pair = matches!(basic, FloatInt | DoubleInt | LongInt | TwoInt | ShortInt | LongDoubleInt | TwoInteger | TwoReal | TwoDoublePrecision);
    // The bound markers hold no data: every operation does nothing on them.
    let no_data = matches!(basic, Lb | Ub);
    no_data
        || match op {
            MPI_MAX | MPI_MIN => c_integer || fortran_integer || floating || multi_language,
            MPI_SUM | MPI_PROD => c_integer || fortran_integer || floating || complex || multi_language,
            MPI_LAND | MPI_LOR | MPI_LXOR => c_integer || logical,
            MPI_BAND | MPI_BOR | MPI_BXOR => c_integer || fortran_integer || basic == Byte || multi_language,
            MPI_MAXLOC | MPI_MINLOC => pair,
            MPI_REPLACE | MPI_NO_OP => true,
            _ => false,
        }
}

#[test]
fn undefined_operation_and_type_pairs_are_op_errors() {
    for (dt, basic, _) in PREDEFINED_DATATYPES {
        for op in MPI_MAX..=MPI_NO_OP {
            let result = reduction(op, dt).map(|_| ());
            assert_eq!(result, if defined(op, basic) { Ok(()) } else { Err(MPI_ERR_OP) }, "op {op} on {basic:?}");
        }
    }
    assert_eq!(reduction(MPI_OP_NULL, MPI_INT).map(|_| ()), Err(MPI_ERR_OP));
    assert_eq!(reduction(999, MPI_INT).map(|_| ()), Err(MPI_ERR_OP));
    assert_eq!(reduction(MPI_SUM, MPI_DATATYPE_NULL).map(|_| ()), Err(MPI_ERR_TYPE));
}

fn derived(build: impl FnOnce(&mut MPI_Datatype) -> c_int) -> MPI_Datatype {
    let mut dt = MPI_DATATYPE_NULL;
    assert_eq!(build(&mut dt), MPI_SUCCESS);
    // SAFETY: `dt` is a live local.
    assert_eq!(unsafe { crate::datatype::MPI_Type_commit(&mut dt) }, MPI_SUCCESS);
    dt
}

#[test]
fn derived_types_of_one_basic_type_reduce_elementwise() {
    // SAFETY (closures): outputs are live locals; the arrays hold `count` entries.
    let strided = derived(|dt| unsafe { crate::datatype::MPI_Type_vector(2, 1, 3, MPI_DOUBLE, dt) });
    let sum = reduction(MPI_SUM, strided).unwrap();
    assert_eq!(sum.element_size(), 16);
    let mut inout = bytes_of(&[1.0f64, 2.0, 3.0, 4.0]);
    sum.apply(&bytes_of(&[10.0f64, 20.0, 30.0, 40.0]), &mut inout);
    assert_eq!(values_of::<f64>(&inout), [11.0, 22.0, 33.0, 44.0]);

    // SAFETY: `dt` is a live output; MPI_2INT is predefined.
    let pairs_of_pairs = derived(|dt| unsafe { crate::datatype::MPI_Type_contiguous(2, MPI_2INT, dt) });
    let input = pairs(&[(1, 4), (9, 9)]);
    assert_eq!(reduce(MPI_MAXLOC, pairs_of_pairs, &input, &pairs(&[(1, 3), (8, 0)])), pairs(&[(1, 3), (9, 9)]));

    let lengths = [1, 1];
    let displacements: [MPI_Aint; 2] = [0, 8];
    let types = [MPI_INT, MPI_DOUBLE];
    // SAFETY: the three arrays hold 2 entries each and outlive the call.
    let mixed = derived(|dt| unsafe { crate::datatype::MPI_Type_create_struct(2, lengths.as_ptr(), displacements.as_ptr(), types.as_ptr(), dt) });
    assert_eq!(reduction(MPI_SUM, mixed).map(|_| ()), Err(MPI_ERR_OP));
    // SAFETY: `dt` is a live output.
    let empty = derived(|dt| unsafe { crate::datatype::MPI_Type_contiguous(0, MPI_INT, dt) });
    assert_eq!(reduction(MPI_SUM, empty).map(|sum| sum.element_size()), Ok(0));
    let replaced = reduce(MPI_REPLACE, mixed, &[7u8; 12], &[0u8; 12]);
    assert_eq!(replaced, [7u8; 12]);
}

#[test]
fn kernels_accept_unaligned_buffers() {
    let mut input = vec![0u8; 1];
    input.extend(bytes_of(&[1.5f64, 2.5]));
    let mut inout = vec![0u8; 3];
    inout.extend(bytes_of(&[1.0f64, -1.0]));
    reduction(MPI_SUM, MPI_DOUBLE).unwrap().apply(&input[1..], &mut inout[3..]);
    assert_eq!(values_of::<f64>(&inout[3..]), [2.5, 1.5]);
}

/// `inoutvec[i] = 10 * invec[i] + inoutvec[i]` on ints: not commutative, so the operand order shows.
unsafe extern "C" fn weighted_sum(invec: *mut c_void, inoutvec: *mut c_void, len: *mut c_int, datatype: *mut MPI_Datatype) {
    // SAFETY: called by `apply` with valid `len` and `datatype`.
    let (len, datatype) = unsafe { (*len as usize, *datatype) };
    let ints_per_element = crate::datatype::type_size(datatype).unwrap() / 4;
    let extent = crate::datatype::type_extent(datatype).unwrap() as usize / 4;
    let stride = if ints_per_element == 1 { 1 } else { 2 };
    for element in 0..len {
        for item in 0..ints_per_element {
            let at = element * extent + item * stride;
            // SAFETY: `at` lies in the type map of element `element`, which both buffers hold.
            unsafe {
                let (a, b) = (invec.cast::<c_int>().add(at), inoutvec.cast::<c_int>().add(at));
                assert_eq!((a as usize) % 4, 0, "user buffers are aligned");
                *b += 10 * *a;
            }
        }
    }
}

#[test]
fn user_operations_see_the_native_layout_and_operand_order() {
    let mut op = MPI_OP_NULL;
    let mut commute = -1;
    // SAFETY: outputs are live locals.
    unsafe {
        assert_eq!(MPI_Op_create(Some(weighted_sum), 0, &mut op), MPI_SUCCESS);
        assert_eq!(MPI_Op_commutative(op, &mut commute), MPI_SUCCESS);
    }
    assert!(op >= BRAID_FIRST_USER_OP);
    assert_eq!(commute, 0);

    let dense = reduction(op, MPI_INT).unwrap();
    assert!(!dense.commutative());
    let mut inout = bytes_of(&[1, 2, 3]);
    dense.apply(&bytes_of(&[4, 5, 6]), &mut inout);
    assert_eq!(values_of::<c_int>(&inout), [41, 52, 63]);
    let mut unaligned = vec![0u8; 1];
    unaligned.extend(bytes_of(&[1, 2]));
    dense.apply(&bytes_of(&[1, 1]), &mut unaligned[1..]);
    assert_eq!(values_of::<c_int>(&unaligned[1..]), [11, 12]);

    // Two ints two apart per element, so the function must see them unpacked.
    // SAFETY: `dt` is a live local.
    let strided = derived(|dt| unsafe { crate::datatype::MPI_Type_vector(2, 1, 2, MPI_INT, dt) });
    let mut inout = bytes_of(&[1, 2, 3, 4]);
    reduction(op, strided).unwrap().apply(&bytes_of(&[5, 6, 7, 8]), &mut inout);
    assert_eq!(values_of::<c_int>(&inout), [51, 62, 73, 84]);

    let mut freed = op;
    // SAFETY: `freed` is a live local.
    assert_eq!(unsafe { MPI_Op_free(&mut freed) }, MPI_SUCCESS);
    assert_eq!(freed, MPI_OP_NULL);
    assert_eq!(reduction(op, MPI_INT).map(|_| ()), Err(MPI_ERR_OP));
    assert_eq!(super::free(MPI_SUM), Err(MPI_ERR_OP));
    assert_eq!(is_commutative(MPI_MAXLOC), Ok(true));
}

/// x87 80-bit extended encoding of a normal (or zero) f64, in the 16 bytes of a `long double`.
#[cfg(target_arch = "x86_64")]
fn long_double(value: f64) -> [u8; 16] {
    let bits = value.to_bits();
    let sign = ((bits >> 63) as u16) << 15;
    let mut out = [0u8; 16];
    if value != 0.0 {
        let exponent = ((bits >> 52) & 0x7ff) as u16 + (16383 - 1023);
        let mantissa = (1u64 << 63) | ((bits & ((1 << 52) - 1)) << 11);
        out[..8].copy_from_slice(&mantissa.to_le_bytes());
        out[8..10].copy_from_slice(&(sign | exponent).to_le_bytes());
    } else {
        out[8..10].copy_from_slice(&sign.to_le_bytes());
    }
    out
}

#[cfg(target_arch = "x86_64")]
fn long_doubles(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|&value| long_double(value)).collect()
}

/// Compares only the 10 meaningful bytes of each x87 value (the rest is padding).
#[cfg(target_arch = "x86_64")]
fn assert_long_doubles(got: &[u8], expected: &[f64]) {
    let expected = long_doubles(expected);
    for (index, (got, expected)) in got.chunks_exact(16).zip(expected.chunks_exact(16)).enumerate() {
        assert_eq!(got[..10], expected[..10], "long double {index}");
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn long_double_operations_go_through_the_c_helper() {
    let a = long_doubles(&[1.5, -2.0, 1e300]);
    let b = long_doubles(&[2.25, 3.0, 1e300]);
    assert_long_doubles(&reduce(MPI_SUM, MPI_LONG_DOUBLE, &a, &b), &[3.75, 1.0, 2e300]);
    assert_long_doubles(&reduce(MPI_MAX, MPI_LONG_DOUBLE, &a, &b), &[2.25, 3.0, 1e300]);
    assert_long_doubles(&reduce(MPI_MIN, MPI_LONG_DOUBLE, &a, &b), &[1.5, -2.0, 1e300]);
    assert_long_doubles(&reduce(MPI_PROD, MPI_LONG_DOUBLE, &long_doubles(&[1.5, -2.0]), &long_doubles(&[2.0, 0.5])), &[3.0, -1.0]);

    // (1.5 - 2i)(0.5 + 3i) = 6.75 + 3.5i.
    let (x, y) = (long_doubles(&[1.5, -2.0]), long_doubles(&[0.5, 3.0]));
    assert_long_doubles(&reduce(MPI_SUM, MPI_C_LONG_DOUBLE_COMPLEX, &x, &y), &[2.0, 1.0]);
    assert_long_doubles(&reduce(MPI_PROD, MPI_C_LONG_DOUBLE_COMPLEX, &x, &y), &[6.75, 3.5]);

    let pair = |value: f64, index: c_int| [&long_double(value)[..], &index.to_ne_bytes()].concat();
    let input = [pair(3.0, 5), pair(4.0, 1)].concat();
    let inout = [pair(3.0, 2), pair(4.0, 3)].concat();
    let mut unaligned = vec![0u8; 1];
    unaligned.extend(&inout);
    reduction(MPI_MAXLOC, MPI_LONG_DOUBLE_INT).unwrap().apply(&input, &mut unaligned[1..]);
    assert_eq!(unaligned[1..], [pair(3.0, 2), pair(4.0, 1)].concat());
    assert_eq!(reduce(MPI_MINLOC, MPI_LONG_DOUBLE_INT, &pair(1.0, 8), &pair(2.0, 0)), pair(1.0, 8));
}
