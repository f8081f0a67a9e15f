//! Type maps, extents, pack/unpack and element counting against hand-computed layouts, through
//! the C interface.

use std::ffi::{c_int, CStr};

use super::abi::*;
use super::*;
use crate::error::MpiResult;

fn commit(mut dt: MPI_Datatype) -> MPI_Datatype {
    // SAFETY: `dt` is a live local.
    assert_eq!(unsafe { MPI_Type_commit(&mut dt) }, MPI_SUCCESS);
    dt
}

fn vector(count: c_int, blocklength: c_int, stride: c_int, old: MPI_Datatype) -> MPI_Datatype {
    let mut dt = MPI_DATATYPE_NULL;
    // SAFETY: `dt` is a live local.
    assert_eq!(unsafe { MPI_Type_vector(count, blocklength, stride, old, &mut dt) }, MPI_SUCCESS);
    commit(dt)
}

fn hvector(count: c_int, blocklength: c_int, stride: MPI_Aint, old: MPI_Datatype) -> MPI_Datatype {
    let mut dt = MPI_DATATYPE_NULL;
    // SAFETY: `dt` is a live local.
    assert_eq!(unsafe { MPI_Type_create_hvector(count, blocklength, stride, old, &mut dt) }, MPI_SUCCESS);
    commit(dt)
}

fn contiguous(count: c_int, old: MPI_Datatype) -> MPI_Datatype {
    let mut dt = MPI_DATATYPE_NULL;
    // SAFETY: `dt` is a live local.
    assert_eq!(unsafe { MPI_Type_contiguous(count, old, &mut dt) }, MPI_SUCCESS);
    commit(dt)
}

fn indexed(blocklengths: &[c_int], displacements: &[c_int], old: MPI_Datatype) -> MPI_Datatype {
    let mut dt = MPI_DATATYPE_NULL;
    // SAFETY: both arrays hold `len` entries; `dt` is a live local.
    let rc = unsafe { MPI_Type_indexed(blocklengths.len() as c_int, blocklengths.as_ptr(), displacements.as_ptr(), old, &mut dt) };
    assert_eq!(rc, MPI_SUCCESS);
    commit(dt)
}

fn structure(blocks: &[(c_int, MPI_Aint, MPI_Datatype)]) -> MPI_Datatype {
    let lengths: Vec<c_int> = blocks.iter().map(|b| b.0).collect();
    let displacements: Vec<MPI_Aint> = blocks.iter().map(|b| b.1).collect();
    let types: Vec<MPI_Datatype> = blocks.iter().map(|b| b.2).collect();
    let mut dt = MPI_DATATYPE_NULL;
    // SAFETY: the three arrays hold `len` entries; `dt` is a live local.
    let rc = unsafe { MPI_Type_create_struct(blocks.len() as c_int, lengths.as_ptr(), displacements.as_ptr(), types.as_ptr(), &mut dt) };
    assert_eq!(rc, MPI_SUCCESS);
    commit(dt)
}

fn resized(old: MPI_Datatype, lb: MPI_Aint, extent: MPI_Aint) -> MPI_Datatype {
    let mut dt = MPI_DATATYPE_NULL;
    // SAFETY: `dt` is a live local.
    assert_eq!(unsafe { MPI_Type_create_resized(old, lb, extent, &mut dt) }, MPI_SUCCESS);
    commit(dt)
}

/// (size, lb, extent, true_lb, true_extent) as the C interface reports them.
fn bounds(dt: MPI_Datatype) -> (c_int, MPI_Aint, MPI_Aint, MPI_Aint, MPI_Aint) {
    let (mut size, mut lb, mut extent, mut true_lb, mut true_extent) = (0, 0, 0, 0, 0);
    // SAFETY: all outputs are live locals.
    unsafe {
        assert_eq!(MPI_Type_size(dt, &mut size), MPI_SUCCESS);
        assert_eq!(MPI_Type_get_extent(dt, &mut lb, &mut extent), MPI_SUCCESS);
        assert_eq!(MPI_Type_get_true_extent(dt, &mut true_lb, &mut true_extent), MPI_SUCCESS);
    }
    (size, lb, extent, true_lb, true_extent)
}

fn free(mut dt: MPI_Datatype) {
    // SAFETY: `dt` is a live local.
    assert_eq!(unsafe { MPI_Type_free(&mut dt) }, MPI_SUCCESS);
    assert_eq!(dt, MPI_DATATYPE_NULL);
}

/// Packs `count` elements of `dt` whose buffer pointer is `buffer[origin]`.
fn pack_from<T: Copy>(dt: MPI_Datatype, count: usize, buffer: &[T], origin: usize) -> Vec<u8> {
    let mut out = vec![0u8; packed_size(dt, count).unwrap()];
    // SAFETY: the tests choose buffers that cover the type map of `count` elements at `origin`.
    unsafe { pack(dt, count, buffer.as_ptr().add(origin).cast::<u8>(), &mut out) };
    out
}

fn doubles(bytes: &[u8]) -> Vec<f64> {
    bytes.chunks_exact(8).map(|chunk| f64::from_ne_bytes(chunk.try_into().unwrap())).collect()
}

fn ints(bytes: &[u8]) -> Vec<i32> {
    bytes.chunks_exact(4).map(|chunk| i32::from_ne_bytes(chunk.try_into().unwrap())).collect()
}

#[test]
fn predefined_sizes_and_extents_match_the_c_types() {
    assert_eq!(bounds(MPI_DOUBLE), (8, 0, 8, 0, 8));
    assert_eq!(bounds(MPI_LONG_DOUBLE), (16, 0, 16, 0, 16));
    assert_eq!(bounds(MPI_C_LONG_DOUBLE_COMPLEX), (32, 0, 32, 0, 32));
    assert_eq!(bounds(MPI_DOUBLE_INT), (12, 0, 16, 0, 12));
    assert_eq!(bounds(MPI_SHORT_INT), (6, 0, 8, 0, 8));
    assert_eq!(bounds(MPI_2INT), (8, 0, 8, 0, 8));
    assert_eq!(bounds(MPI_LONG_DOUBLE_INT), (20, 0, 32, 0, 20));
    assert_eq!(bounds(MPI_C_BOOL).0, 1);
    assert_eq!(bounds(MPI_WCHAR).0, std::mem::size_of::<libc::wchar_t>() as c_int);
    assert_eq!(contiguous_bytes(MPI_DOUBLE, 10), Ok(Some((0, 80))));
    assert_eq!(contiguous_bytes(MPI_DOUBLE_INT, 1), Ok(Some((0, 12))));
    assert_eq!(contiguous_bytes(MPI_DOUBLE_INT, 2), Ok(None));
}

#[test]
fn invalid_handles_are_type_errors() {
    for dt in [MPI_DATATYPE_NULL, -3, BRAID_PREDEFINED_DATATYPE_LAST + 1, 255, 1_000_000] {
        assert_eq!(is_valid_committed(dt), Err(MPI_ERR_TYPE));
        assert_eq!(type_size(dt), Err(MPI_ERR_TYPE));
    }
}

#[test]
fn vector_of_doubles_packs_strided_blocks() {
    let dt = vector(3, 2, 4, MPI_DOUBLE);
    assert_eq!(bounds(dt), (48, 0, 80, 0, 80));
    assert_eq!(contiguous_bytes(dt, 1), Ok(None));
    let source: Vec<f64> = (0..30).map(f64::from).collect();
    let packed = pack_from(dt, 2, &source, 0);
    assert_eq!(doubles(&packed), [0., 1., 4., 5., 8., 9., 10., 11., 14., 15., 18., 19.]);
    let mut restored = vec![-1.0f64; 30];
    // SAFETY: two elements span 20 doubles of the 30.
    unsafe { unpack(dt, 2, &packed, restored.as_mut_ptr().cast::<u8>()) };
    for (index, value) in restored.iter().enumerate() {
        let covered = index < 20 && index % 10 % 4 < 2;
        assert_eq!(*value, if covered { index as f64 } else { -1.0 }, "double {index}");
    }
    free(dt);
}

#[test]
fn negative_stride_vector_reaches_below_the_pointer() {
    let dt = vector(3, 1, -2, MPI_INT);
    assert_eq!(bounds(dt), (12, -16, 20, -16, 20));
    let source: Vec<i32> = (0..10).collect();
    assert_eq!(ints(&pack_from(dt, 1, &source, 6)), [6, 4, 2]);
}

#[test]
fn indexed_packs_in_type_map_order() {
    let dt = indexed(&[2, 1, 3], &[5, 0, 10], MPI_INT);
    assert_eq!(bounds(dt), (24, 0, 52, 0, 52));
    let source: Vec<i32> = (0..13).collect();
    assert_eq!(ints(&pack_from(dt, 1, &source, 0)), [5, 6, 0, 10, 11, 12]);
    assert_eq!(elements(dt, 24), Ok(6));
    assert_eq!(elements(dt, 10), Ok(2));
}

#[test]
fn struct_extent_is_padded_to_the_strictest_alignment() {
    // struct { char c; double d; int i; }: members at 0, 8, 16; sizeof 24.
    let dt = structure(&[(1, 0, MPI_CHAR), (1, 8, MPI_DOUBLE), (1, 16, MPI_INT)]);
    assert_eq!(bounds(dt), (13, 0, 24, 0, 20));
    let mut record = [0u8; 48];
    record[0] = b'x';
    record[8..16].copy_from_slice(&2.5f64.to_ne_bytes());
    record[16..20].copy_from_slice(&7i32.to_ne_bytes());
    record[24] = b'y';
    record[40..44].copy_from_slice(&9i32.to_ne_bytes());
    let packed = pack_from(dt, 2, &record, 0);
    assert_eq!(packed.len(), 26);
    assert_eq!(packed[0], b'x');
    assert_eq!(&packed[1..9], &2.5f64.to_ne_bytes());
    assert_eq!(&packed[9..13], &7i32.to_ne_bytes());
    assert_eq!(packed[13], b'y');
    assert_eq!(&packed[22..26], &9i32.to_ne_bytes());
    assert_eq!(elements(dt, 26), Ok(6));
    assert_eq!(elements(dt, 13 + 9), Ok(5));
    assert_eq!(elements(dt, 13 + 8), Ok(4));
    let mut restored = [0u8; 48];
    // SAFETY: two elements span 48 bytes.
    unsafe { unpack(dt, 2, &packed, restored.as_mut_ptr()) };
    assert_eq!(restored, record);
}

#[test]
fn resized_types_set_the_extent_and_are_never_padded() {
    let int_window = resized(MPI_INT, -4, 12);
    assert_eq!(bounds(int_window), (4, -4, 12, 0, 4));
    let pair = contiguous(2, int_window);
    assert_eq!(bounds(pair), (8, -4, 24, 0, 16));
    let source: Vec<i32> = (0..8).collect();
    assert_eq!(ints(&pack_from(pair, 1, &source, 0)), [0, 3]);
    // A struct holding a resized type keeps the exact bounds: no alignment padding.
    let tight = structure(&[(1, 0, resized(MPI_DOUBLE, 0, 9))]);
    assert_eq!(bounds(tight).2, 9);
}

#[test]
fn shifted_dense_types_are_used_in_place() {
    let shifted = structure(&[(1, 8, MPI_INT)]);
    assert_eq!(bounds(shifted), (4, 8, 4, 8, 4));
    assert_eq!(contiguous_bytes(shifted, 3), Ok(Some((8, 12))));
    let block = contiguous(4, MPI_INT);
    assert_eq!(contiguous_bytes(block, 3), Ok(Some((0, 48))));
    assert_eq!(contiguous_bytes(block, 0), Ok(Some((0, 0))));
}

#[test]
fn pair_type_elements_count_value_and_index() {
    assert_eq!(elements(MPI_DOUBLE_INT, 12), Ok(2));
    assert_eq!(elements(MPI_DOUBLE_INT, 8), Ok(1));
    assert_eq!(elements(MPI_DOUBLE_INT, 7), Ok(0));
    assert_eq!(elements(MPI_DOUBLE_INT, 20), Ok(3));
    assert_eq!(elements(MPI_INT, 10), Ok(2));
}

#[test]
fn nested_vectors_match_a_naive_walk() {
    // A 4x5x6 sub-block of a 10x10x10 int array, as a vector of hvectors of contiguous rows.
    let row = contiguous(6, MPI_INT);
    let plane = hvector(5, 1, 10 * 4, row);
    let cube = hvector(4, 1, 10 * 10 * 4, plane);
    let source: Vec<i32> = (0..1000).collect();
    let expected: Vec<i32> = (0..4).flat_map(|z| (0..5).flat_map(move |y| (0..6).map(move |x| z * 100 + y * 10 + x))).collect();
    assert_eq!(ints(&pack_from(cube, 1, &source, 0)), expected);
    assert_eq!(elements(cube, 4 * 120), Ok(120));
}

#[test]
fn large_repetitions_of_padded_structs_stay_compact_and_correct() {
    // struct { char c; int i; } (size 5, extent 8), 1000 of them every other record.
    let record = structure(&[(1, 0, MPI_CHAR), (1, 4, MPI_INT)]);
    let sparse = vector(1000, 1, 2, record);
    let info = lookup(sparse).unwrap();
    assert!(info.pieces.len() <= 2, "{} pieces", info.pieces.len());
    let source: Vec<u8> = (0..16_000).map(|byte| (byte % 251) as u8).collect();
    let packed = pack_from(sparse, 1, &source, 0);
    let expected: Vec<u8> = (0..1000)
        .flat_map(|index| {
            let base = index * 16;
            [source[base], source[base + 4], source[base + 5], source[base + 6], source[base + 7]]
        })
        .collect();
    assert_eq!(packed, expected);
    let mut restored = vec![0u8; 16_000];
    // SAFETY: one element spans 16000 - 8 bytes.
    unsafe { unpack(sparse, 1, &packed, restored.as_mut_ptr()) };
    assert_eq!(pack_from(sparse, 1, &restored, 0), expected);
}

#[test]
fn uncommitted_and_freed_types_are_refused_for_communication() {
    let mut dt = MPI_DATATYPE_NULL;
    // SAFETY: `dt` is a live local.
    assert_eq!(unsafe { MPI_Type_contiguous(3, MPI_INT, &mut dt) }, MPI_SUCCESS);
    assert_eq!(is_valid_committed(dt), Err(MPI_ERR_TYPE));
    assert_eq!(type_size(dt), Ok(12));
    let mut copy = MPI_DATATYPE_NULL;
    // SAFETY: `copy` is a live local.
    assert_eq!(unsafe { MPI_Type_dup(dt, &mut copy) }, MPI_SUCCESS);
    assert_eq!(is_valid_committed(copy), Err(MPI_ERR_TYPE));
    let dt = commit(dt);
    assert_eq!(is_valid_committed(dt), Ok(()));
    let derived = contiguous(2, dt);
    free(dt);
    assert_eq!(is_valid_committed(dt), Err(MPI_ERR_TYPE));
    assert_eq!(type_size(derived), Ok(24), "types built on a freed type stay usable");
    free(copy);
    assert_eq!(super::free(MPI_INT).map_err(|error| error.class), Err(MPI_ERR_TYPE));
}

#[test]
fn invalid_constructor_arguments_are_reported() {
    let mut dt = MPI_DATATYPE_NULL;
    let class = |result: MpiResult<()>| result.map_err(|error| error.class);
    let element_stride = abi::Stride::Elements(1);
    // SAFETY: `dt` is a live local; the NULL arrays are refused before use.
    unsafe {
        assert_eq!(class(abi::contiguous(-1, MPI_INT, &mut dt)), Err(MPI_ERR_COUNT));
        assert_eq!(class(abi::vector(2, -1, element_stride, MPI_INT, &mut dt)), Err(MPI_ERR_ARG));
        assert_eq!(class(abi::vector(2, 1, element_stride, MPI_DATATYPE_NULL, &mut dt)), Err(MPI_ERR_TYPE));
        let no_displacements: *const c_int = std::ptr::null();
        assert_eq!(class(abi::indexed(MPI_COMBINER_INDEXED, 2, Ok(std::ptr::null()), no_displacements, MPI_INT, &mut dt)), Err(MPI_ERR_ARG));
        assert_eq!(class(abi::contiguous(1, MPI_INT, std::ptr::null_mut())), Err(MPI_ERR_ARG));
    }
    assert_eq!(dt, MPI_DATATYPE_NULL);
}

#[test]
fn names_default_to_the_mpi_names_and_can_be_set() {
    let mut name = [0 as std::ffi::c_char; MPI_MAX_OBJECT_NAME as usize];
    let mut len = 0;
    // SAFETY: `name` holds MPI_MAX_OBJECT_NAME characters; `len` is a live local.
    let read = |dt: MPI_Datatype, name: &mut [std::ffi::c_char], len: &mut c_int| unsafe {
        assert_eq!(MPI_Type_get_name(dt, name.as_mut_ptr(), len), MPI_SUCCESS);
        CStr::from_ptr(name.as_ptr()).to_str().unwrap().to_owned()
    };
    assert_eq!(read(MPI_LONG_DOUBLE_INT, &mut name, &mut len), "MPI_LONG_DOUBLE_INT");
    assert_eq!(len, 19);
    let dt = contiguous(2, MPI_INT);
    assert_eq!(read(dt, &mut name, &mut len), "");
    // SAFETY: a NUL-terminated literal.
    assert_eq!(unsafe { MPI_Type_set_name(dt, c"pair of ints".as_ptr()) }, MPI_SUCCESS);
    assert_eq!(read(dt, &mut name, &mut len), "pair of ints");
}

#[test]
fn pack_and_unpack_advance_the_position_and_refuse_overflow() {
    let dt = vector(2, 1, 2, MPI_INT);
    let source = [1i32, 2, 3, 4];
    let mut buffer = [0u8; 20];
    let mut position = 0;
    let (mut needed, mut value) = (0, 5i32);
    // SAFETY: every buffer outlives the calls and has the sizes passed.
    unsafe {
        assert_eq!(MPI_Pack_size(1, dt, MPI_COMM_WORLD, &mut needed), MPI_SUCCESS);
        assert_eq!(needed, 8);
        let out = buffer.as_mut_ptr().cast();
        assert_eq!(MPI_Pack(source.as_ptr().cast(), 1, dt, out, 20, &mut position, MPI_COMM_WORLD), MPI_SUCCESS);
        assert_eq!(MPI_Pack((&value as *const i32).cast(), 1, MPI_INT, out, 20, &mut position, MPI_COMM_WORLD), MPI_SUCCESS);
        assert_eq!(position, 12);
        let overflow = pack_into(source.as_ptr().cast(), 2, dt, out, 20, &mut position);
        assert_eq!(overflow.map_err(|error| error.class), Err(MPI_ERR_TRUNCATE));
        assert_eq!(position, 12);
        assert_eq!(ints(&buffer[..12]), [1, 3, 5]);

        let mut restored = [0i32; 4];
        position = 0;
        let input = buffer.as_ptr().cast();
        assert_eq!(MPI_Unpack(input, 12, &mut position, restored.as_mut_ptr().cast(), 1, dt, MPI_COMM_WORLD), MPI_SUCCESS);
        assert_eq!(MPI_Unpack(input, 12, &mut position, (&mut value as *mut i32).cast(), 1, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
        assert_eq!((restored, value, position), ([1, 0, 3, 0], 5, 12));
        let overflow = unpack_from(input, 12, &mut position, restored.as_mut_ptr().cast(), 1, MPI_INT);
        assert_eq!(overflow.map_err(|error| error.class), Err(MPI_ERR_TRUNCATE));
    }
}

#[test]
fn addresses_are_plain_integers() {
    let values = [0u64; 4];
    let (mut first, mut third) = (0, 0);
    // SAFETY: outputs are live locals; the locations are only converted to integers.
    unsafe {
        assert_eq!(MPI_Get_address(values.as_ptr().cast(), &mut first), MPI_SUCCESS);
        assert_eq!(MPI_Get_address(values.as_ptr().add(2).cast(), &mut third), MPI_SUCCESS);
    }
    assert_eq!(MPI_Aint_diff(third, first), 16);
    assert_eq!(MPI_Aint_add(first, 16), third);
}

#[test]
fn block_variants_agree_with_indexed() {
    let mut by_elements = MPI_DATATYPE_NULL;
    let mut by_bytes = MPI_DATATYPE_NULL;
    let mut hindexed = MPI_DATATYPE_NULL;
    let element_displacements = [4, 0, 9];
    let byte_displacements: [MPI_Aint; 3] = [16, 0, 36];
    let lengths = [2, 2, 2];
    // SAFETY: the arrays hold 3 entries; outputs are live locals.
    unsafe {
        assert_eq!(MPI_Type_create_indexed_block(3, 2, element_displacements.as_ptr(), MPI_INT, &mut by_elements), MPI_SUCCESS);
        assert_eq!(MPI_Type_create_hindexed_block(3, 2, byte_displacements.as_ptr(), MPI_INT, &mut by_bytes), MPI_SUCCESS);
        assert_eq!(MPI_Type_create_hindexed(3, lengths.as_ptr(), byte_displacements.as_ptr(), MPI_INT, &mut hindexed), MPI_SUCCESS);
    }
    let reference = indexed(&lengths, &element_displacements, MPI_INT);
    let source: Vec<i32> = (0..11).collect();
    for dt in [by_elements, by_bytes, hindexed].map(commit) {
        assert_eq!(bounds(dt), (24, 0, 44, 0, 44));
        assert_eq!(ints(&pack_from(dt, 1, &source, 0)), [4, 5, 0, 1, 9, 10]);
        assert_eq!(pack_from(dt, 1, &source, 0), pack_from(reference, 1, &source, 0));
    }
    let mut size = 0;
    // SAFETY: `size` is a live local.
    assert_eq!(unsafe { MPI_Type_size_x(by_bytes, &mut size) }, MPI_SUCCESS);
    assert_eq!(size, 24);
}

#[test]
fn many_small_records_round_trip_across_batches() {
    // struct { short s; double d; } x 1000: two fields per element, more elements than one batch.
    let record = structure(&[(1, 0, MPI_SHORT), (1, 8, MPI_DOUBLE)]);
    assert_eq!(bounds(record), (10, 0, 16, 0, 16));
    let source: Vec<u8> = (0..16_000).map(|byte| (byte % 253) as u8).collect();
    let packed = pack_from(record, 1000, &source, 0);
    let expected: Vec<u8> = (0..1000)
        .flat_map(|index| {
            let base = index * 16;
            [&source[base..base + 2], &source[base + 8..base + 16]].concat()
        })
        .collect();
    assert_eq!(packed, expected);
    let mut restored = vec![0u8; 16_000];
    // SAFETY: 1000 elements span 16000 bytes.
    unsafe { unpack(record, 1000, &packed, restored.as_mut_ptr()) };
    for (index, byte) in restored.iter().enumerate() {
        let covered = matches!(index % 16, 0..=1 | 8..=15);
        assert_eq!(*byte, if covered { source[index] } else { 0 }, "byte {index}");
    }
}

#[test]
fn bound_markers_stick_and_override_the_data_bounds() {
    // As MPI-3.1 4.1.6 (and Open MPI): a marked lower bound wins over data below it.
    let marked = resized(MPI_INT, 4, 4);
    let both = structure(&[(1, 0, marked), (1, 0, MPI_INT)]);
    assert_eq!(bounds(both), (8, 4, 4, 0, 4));
    // MPI_LB alone: the natural extent is padded, then the bound moves.
    let low = structure(&[(1, 4, MPI_INT), (1, 8, MPI_DOUBLE), (1, 2, MPI_LB)]);
    assert_eq!(bounds(low), (12, 2, 18, 4, 12));
    // MPI_UB: no padding, even below the data.
    let high = structure(&[(1, 4, MPI_INT), (1, 8, MPI_DOUBLE), (1, 13, MPI_UB)]);
    assert_eq!(bounds(high), (12, 4, 9, 4, 12));
    // A marker alone sets no natural bound.
    let upper_only = structure(&[(1, 16, MPI_UB), (1, 4, MPI_INT)]);
    assert_eq!(bounds(upper_only), (4, 4, 12, 4, 4));
    assert_eq!(bounds(contiguous(2, upper_only)), (8, 4, 24, 4, 16));
    assert_eq!(bounds(MPI_LB), (0, 0, 0, 0, 0));
    assert_eq!(elements(upper_only, 4), Ok(1));
}

fn envelope(dt: MPI_Datatype) -> (c_int, c_int, c_int, c_int) {
    let (mut ni, mut na, mut nd, mut combiner) = (0, 0, 0, 0);
    // SAFETY: all outputs are live locals.
    assert_eq!(unsafe { MPI_Type_get_envelope(dt, &mut ni, &mut na, &mut nd, &mut combiner) }, MPI_SUCCESS);
    (combiner, ni, na, nd)
}

/// MPI_Type_get_contents with exactly the room the envelope asks for.
fn contents(dt: MPI_Datatype) -> (Vec<c_int>, Vec<MPI_Aint>, Vec<MPI_Datatype>) {
    let (_, ni, na, nd) = envelope(dt);
    let (mut integers, mut addresses, mut types) = (vec![0; ni as usize], vec![0; na as usize], vec![0; nd as usize]);
    // SAFETY: the arrays hold exactly the counts passed.
    let rc = unsafe { MPI_Type_get_contents(dt, ni, na, nd, integers.as_mut_ptr(), addresses.as_mut_ptr(), types.as_mut_ptr()) };
    assert_eq!(rc, MPI_SUCCESS);
    (integers, addresses, types)
}

#[test]
fn contents_return_live_input_types_by_handle_and_freed_ones_anew() {
    let row = contiguous(3, MPI_SHORT);
    let strided = hvector(2, 1, 40, row);
    assert_eq!(envelope(strided), (MPI_COMBINER_HVECTOR, 2, 1, 1));
    let (integers, addresses, types) = contents(strided);
    assert_eq!((integers, addresses), (vec![2, 1], vec![40]));
    // The same handle, one reference more: two frees, and the type stays until the second.
    assert_eq!(types, vec![row]);
    free(types[0]);
    assert_eq!(type_size(row), Ok(6));
    free(row);
    assert_eq!(type_size(row), Err(MPI_ERR_TYPE));
    // A freed input type comes back as a new handle (which may reuse the number).
    let (_, _, types) = contents(strided);
    assert_eq!(type_size(types[0]), Ok(6));
    assert_eq!(envelope(types[0]), (MPI_COMBINER_CONTIGUOUS, 1, 0, 1));
    assert_eq!(contents(types[0]).2, vec![MPI_SHORT]);
    free(types[0]);
    free(strided);
    assert_eq!(envelope(MPI_INT), (MPI_COMBINER_NAMED, 0, 0, 0));
    let (mut integer, mut address, mut datatype) = (0, 0, 0);
    // SAFETY: one-element outputs.
    let named = unsafe { MPI_Type_get_contents(MPI_INT, 1, 1, 1, &mut integer, &mut address, &mut datatype) };
    assert_eq!(named, MPI_ERR_TYPE);
}

#[test]
fn every_constructor_records_its_arguments() {
    let indexed_type = indexed(&[2, 1], &[4, -1], MPI_INT);
    assert_eq!(envelope(indexed_type), (MPI_COMBINER_INDEXED, 5, 0, 1));
    assert_eq!(contents(indexed_type).0, vec![2, 2, 1, 4, -1]);
    let record = structure(&[(2, 8, MPI_CHAR), (1, 16, indexed_type)]);
    assert_eq!(envelope(record), (MPI_COMBINER_STRUCT, 3, 2, 2));
    let (integers, addresses, types) = contents(record);
    assert_eq!((integers, addresses, types[0]), (vec![2, 2, 1], vec![8, 16], MPI_CHAR));
    assert_eq!(types[1], indexed_type);
    free(types[1]);
    let window = resized(record, -8, 64);
    assert_eq!(envelope(window), (MPI_COMBINER_RESIZED, 0, 2, 1));
    assert_eq!(contents(window).1, vec![-8, 64]);
    let mut duplicate = MPI_DATATYPE_NULL;
    // SAFETY: `duplicate` is a live local.
    assert_eq!(unsafe { MPI_Type_dup(window, &mut duplicate) }, MPI_SUCCESS);
    assert_eq!(envelope(duplicate), (MPI_COMBINER_DUP, 0, 0, 1));
    assert_eq!(bounds(duplicate), bounds(window));
    let (_, _, types) = contents(duplicate);
    assert_eq!(types, vec![window]);
    free(types[0]);
    let strided = vector(3, 2, -5, MPI_DOUBLE);
    assert_eq!(contents(strided).0, vec![3, 2, -5]);
}

#[test]
fn short_messages_unpack_the_basic_elements_that_arrived() {
    // struct { int; double; } x 2 receiving int, double, int: the second double stays.
    let pair = structure(&[(1, 0, MPI_INT), (1, 8, MPI_DOUBLE)]);
    let info = lookup(pair).unwrap();
    let mut packed = Vec::new();
    packed.extend(7i32.to_ne_bytes());
    packed.extend(2.5f64.to_ne_bytes());
    packed.extend(9i32.to_ne_bytes());
    packed.resize(24, 0xee);
    let mut buffer = [0x55u8; 32];
    // SAFETY: two elements span the 32 bytes.
    unsafe { info.unpack_received(16, &packed, buffer.as_mut_ptr()) };
    assert_eq!(&buffer[..4], &7i32.to_ne_bytes());
    assert_eq!(&buffer[8..16], &2.5f64.to_ne_bytes());
    assert_eq!(&buffer[16..20], &9i32.to_ne_bytes());
    assert_eq!(&buffer[20..], &[0x55; 12], "nothing past the last whole basic element");
    // A vector of 3 ints receiving 2 ints, then 2 ints and half of a third: whole ints only.
    let every_other = vector(3, 1, 2, MPI_INT);
    let info = lookup(every_other).unwrap();
    let ints_in: Vec<u8> = [1i32, 2, 3].iter().flat_map(|v| v.to_ne_bytes()).collect();
    for arrived in [8, 10] {
        let mut spread = [-1i32; 6];
        // SAFETY: one element spans 5 ints of the 6.
        unsafe { info.unpack_received(arrived, &ints_in, spread.as_mut_ptr().cast()) };
        assert_eq!(spread, [1, -1, 2, -1, -1, -1], "{arrived} bytes");
    }
    assert_eq!(elements(every_other, 10), Ok(2));
}

#[test]
fn subarrays_and_darrays_through_the_c_interface() {
    let (sizes, subsizes, starts) = ([6, 4], [2, 3], [3, 1]);
    let mut fortran = MPI_DATATYPE_NULL;
    // SAFETY: the arrays hold `ndims` entries; `fortran` is a live local.
    let rc = unsafe { MPI_Type_create_subarray(2, sizes.as_ptr(), subsizes.as_ptr(), starts.as_ptr(), MPI_ORDER_FORTRAN, MPI_INT, &mut fortran) };
    assert_eq!(rc, MPI_SUCCESS);
    let fortran = commit(fortran);
    // Column-major 6x4: elements (3..5, 1..4) at i + 6 j.
    assert_eq!(bounds(fortran), (24, 0, 96, 36, 56));
    let source: Vec<i32> = (0..24).collect();
    assert_eq!(ints(&pack_from(fortran, 1, &source, 0)), [9, 10, 15, 16, 21, 22]);
    assert_eq!(envelope(fortran), (MPI_COMBINER_SUBARRAY, 8, 0, 1));

    // 2 processes over a cyclic(2) dimension of 7 and a block dimension of 2 (C order).
    let (gsizes, distribs, dargs, psizes) = ([7, 2], [MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK], [2, MPI_DISTRIBUTE_DFLT_DARG], [2, 1]);
    let mut second = MPI_DATATYPE_NULL;
    // SAFETY: as above.
    let rc = unsafe { MPI_Type_create_darray(2, 1, 2, gsizes.as_ptr(), distribs.as_ptr(), dargs.as_ptr(), psizes.as_ptr(), MPI_ORDER_C, MPI_INT, &mut second) };
    assert_eq!(rc, MPI_SUCCESS);
    let second = commit(second);
    // Rows 2, 3 and 6 of a 7x2 array.
    assert_eq!(ints(&pack_from(second, 1, &source, 0)), [4, 5, 6, 7, 12, 13]);
    assert_eq!(bounds(second).1..bounds(second).2, 0..56);
    assert_eq!(envelope(second), (MPI_COMBINER_DARRAY, 12, 0, 1));
}
