//! MPI_Type_create_subarray and MPI_Type_create_darray (MPI-3.1 §4.1.3, §4.1.4).
//!
//! Both select, in each dimension of an n-dimensional array of old types, some runs of indices.
//! The type is built one dimension at a time from the fastest-varying: the runs of the previous
//! level, each level resized to lower bound 0 and extent (dimension size) x (previous extent),
//! exactly as the standard defines them with lb/ub markers. The whole array is thus the extent.

// The safety contract of every entry point is the MPI standard's: pointers valid for the sizes
// it documents.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;
use std::sync::Arc;

use super::abi::{array, define, old_type};
use super::envelope::{Argument, Envelope, Parts};
use super::{build_blocks, build_resized, failure, overflow, Blocks, Origin, TypeInfo};
use crate::consts::*;
use crate::error::{finish, MpiError, MpiResult};

/// One dimension: its size and the runs (first index, length) of the selected indices, in
/// increasing order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Dimension {
    size: usize,
    runs: Vec<(usize, usize)>,
}

/// `values` as positive sizes (`minimum` 1) or counts (`minimum` 0).
fn at_least(values: &[impl Argument], minimum: c_int, what: &str) -> MpiResult<Vec<usize>> {
    values
        .iter()
        .enumerate()
        .map(|(index, &value)| match usize::try_from(value.value()) {
            Ok(value) if value >= minimum as usize => Ok(value),
            _ => Err(failure(MPI_ERR_ARG, format!("{what}[{index}] is {}, not at least {minimum}", value.value()))),
        })
        .collect()
}

/// The dimensions of a subarray, in argument order.
fn subarray_dimensions<A: Argument>(sizes: &[A], subsizes: &[A], starts: &[A]) -> MpiResult<Vec<Dimension>> {
    let sizes = at_least(sizes, 1, "array_of_sizes")?;
    let subsizes = at_least(subsizes, 0, "array_of_subsizes")?;
    let starts = at_least(starts, 0, "array_of_starts")?;
    (0..sizes.len())
        .map(|index| {
            let (size, subsize, start) = (sizes[index], subsizes[index], starts[index]);
            if subsize > size || start > size - subsize {
                return Err(failure(MPI_ERR_ARG, format!("dimension {index}: {subsize} elements from index {start} do not fit in {size}")));
            }
            Ok(Dimension { size, runs: vec![(start, subsize)] })
        })
        .collect()
}

/// The part of a dimension of `size` indices that process coordinate `coord` of `procs` owns.
fn distributed_dimension(size: usize, distribution: c_int, darg: c_int, procs: usize, coord: usize, index: usize) -> MpiResult<Dimension> {
    let bad_darg = || failure(MPI_ERR_ARG, format!("array_of_dargs[{index}] is {darg}: neither positive nor MPI_DISTRIBUTE_DFLT_DARG"));
    let block = |default: usize| match darg {
        MPI_DISTRIBUTE_DFLT_DARG => Ok(default),
        darg => usize::try_from(darg).ok().filter(|&darg| darg > 0).ok_or_else(bad_darg),
    };
    let runs = match distribution {
        MPI_DISTRIBUTE_NONE => {
            if procs != 1 {
                return Err(failure(MPI_ERR_ARG, format!("dimension {index} is not distributed (MPI_DISTRIBUTE_NONE) but has {procs} processes")));
            }
            vec![(0, size)]
        }
        MPI_DISTRIBUTE_BLOCK => {
            let block = block(size.div_ceil(procs))?;
            if block.saturating_mul(procs) < size {
                return Err(failure(MPI_ERR_ARG, format!("dimension {index}: {procs} blocks of {block} do not cover {size} elements")));
            }
            let start = block.saturating_mul(coord);
            if start < size {
                vec![(start, block.min(size - start))]
            } else {
                vec![]
            }
        }
        MPI_DISTRIBUTE_CYCLIC => {
            let block = block(1)?;
            let cycle = block.saturating_mul(procs);
            let first = block.saturating_mul(coord);
            (0..).map(|k: usize| first.saturating_add(k.saturating_mul(cycle))).take_while(|&start| start < size).map(|start| (start, block.min(size - start))).collect()
        }
        other => return Err(failure(MPI_ERR_ARG, format!("array_of_distribs[{index}] is {other}, not an MPI_DISTRIBUTE_* value"))),
    };
    Ok(Dimension { size, runs })
}

/// The dimensions of a distributed array, in argument order.
#[allow(clippy::too_many_arguments)]
fn darray_dimensions(size: c_int, rank: c_int, gsizes: &[impl Argument], distribs: &[c_int], dargs: &[c_int], psizes: &[c_int]) -> MpiResult<Vec<Dimension>> {
    let procs = usize::try_from(size).ok().filter(|&procs| procs > 0).ok_or_else(|| failure(MPI_ERR_ARG, format!("size is {size}, not positive")))?;
    let rank = usize::try_from(rank).ok().filter(|&rank| rank < procs).ok_or_else(|| failure(MPI_ERR_ARG, format!("rank {rank} is not in a group of {procs}")))?;
    let gsizes = at_least(gsizes, 1, "array_of_gsizes")?;
    let psizes = at_least(psizes, 1, "array_of_psizes")?;
    let grid = psizes.iter().try_fold(1usize, |product, &procs| product.checked_mul(procs));
    if grid != Some(procs) {
        return Err(failure(MPI_ERR_ARG, format!("the process grid {psizes:?} does not hold size = {procs} processes")));
    }
    // Process coordinates are row-major whatever the array order, as for Cartesian topologies.
    let mut coords = vec![0; psizes.len()];
    let mut rest = rank;
    for (coord, &procs) in coords.iter_mut().zip(&psizes).rev() {
        (*coord, rest) = (rest % procs, rest / procs);
    }
    (0..gsizes.len()).map(|index| distributed_dimension(gsizes[index], distribs[index], dargs[index], psizes[index], coords[index], index)).collect()
}

/// Dimensions in argument order, fastest-varying first.
fn fastest_first(mut dimensions: Vec<Dimension>, order: c_int) -> MpiResult<Vec<Dimension>> {
    match order {
        MPI_ORDER_FORTRAN => Ok(dimensions),
        MPI_ORDER_C => {
            dimensions.reverse();
            Ok(dimensions)
        }
        other => Err(failure(MPI_ERR_ARG, format!("order is {other}, neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"))),
    }
}

/// The array type over `child`: one level per dimension, fastest first (see the module comment).
fn build_array(child: &Arc<TypeInfo>, dimensions: &[Dimension], origin: Origin) -> Result<TypeInfo, MpiError> {
    let mut level = child.clone();
    for (index, dimension) in dimensions.iter().enumerate() {
        let stride = level.extent;
        let scaled = |elements: usize| isize::try_from(elements).ok().and_then(|elements| elements.checked_mul(stride)).ok_or_else(overflow);
        let blocks = dimension.runs.iter().map(|&(start, len)| Ok((scaled(start)?, len))).collect::<MpiResult<Vec<_>>>()?;
        // The levels below the last are internal, never handed out; they carry the final origin.
        let selected = Arc::new(build_blocks(&level, &Blocks::List(blocks), origin.clone())?);
        let resized = build_resized(&selected, 0, scaled(dimension.size)?, origin.clone());
        if index + 1 == dimensions.len() {
            return Ok(resized);
        }
        level = Arc::new(resized);
    }
    Err(failure(MPI_ERR_ARG, "an array type needs at least one dimension"))
}

/// `ndims` as a positive length.
fn dimensions_arg(ndims: c_int) -> MpiResult<usize> {
    usize::try_from(ndims).ok().filter(|&ndims| ndims > 0).ok_or_else(|| failure(MPI_ERR_ARG, format!("ndims is {ndims}, not positive")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_subarray(
    ndims: c_int,
    array_of_sizes: *const c_int,
    array_of_subsizes: *const c_int,
    array_of_starts: *const c_int,
    order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    // SAFETY: the caller's arrays and handle, forwarded.
    finish("MPI_Type_create_subarray", unsafe { subarray(ndims, array_of_sizes, array_of_subsizes, array_of_starts, order, oldtype, newtype) })
}

/// MPI_Type_create_subarray(_c).
///
/// # Safety
/// The arrays are null or hold `ndims` entries; `newtype` is null or valid for writes.
pub(super) unsafe fn subarray<A: Argument>(
    ndims: c_int,
    array_of_sizes: *const A,
    array_of_subsizes: *const A,
    array_of_starts: *const A,
    order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult<()> {
    let rank = dimensions_arg(ndims)?;
    // SAFETY: the arrays are null or hold `ndims` entries (caller's guarantee).
    let (sizes, subsizes, starts) = unsafe { (array(array_of_sizes, rank, "array_of_sizes")?, array(array_of_subsizes, rank, "array_of_subsizes")?, array(array_of_starts, rank, "array_of_starts")?) };
    let dimensions = fastest_first(subarray_dimensions(sizes, subsizes, starts)?, order)?;
    let child = old_type(oldtype)?;
    let parts = Parts::default().with(ndims).with_all(sizes).with_all(subsizes).with_all(starts).with(order);
    let origin = Origin::recorded(MPI_COMBINER_SUBARRAY, parts, vec![(oldtype, child.clone())]);
    // SAFETY: `newtype` forwarded from the caller.
    unsafe { define(newtype, || build_array(&child, &dimensions, origin)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: *const c_int,
    array_of_distribs: *const c_int,
    array_of_dargs: *const c_int,
    array_of_psizes: *const c_int,
    order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    // SAFETY: the caller's arrays and handle, forwarded.
    finish("MPI_Type_create_darray", unsafe { darray(size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs, array_of_psizes, order, oldtype, newtype) })
}

/// MPI_Type_create_darray(_c).
///
/// # Safety
/// The arrays are null or hold `ndims` entries; `newtype` is null or valid for writes.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: *const impl Argument,
    array_of_distribs: *const c_int,
    array_of_dargs: *const c_int,
    array_of_psizes: *const c_int,
    order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> MpiResult<()> {
    let count = dimensions_arg(ndims)?;
    // SAFETY: the arrays are null or hold `ndims` entries (caller's guarantee).
    let (gsizes, distribs, dargs, psizes) = unsafe {
        (
            array(array_of_gsizes, count, "array_of_gsizes")?,
            array(array_of_distribs, count, "array_of_distribs")?,
            array(array_of_dargs, count, "array_of_dargs")?,
            array(array_of_psizes, count, "array_of_psizes")?,
        )
    };
    let dimensions = fastest_first(darray_dimensions(size, rank, gsizes, distribs, dargs, psizes)?, order)?;
    let child = old_type(oldtype)?;
    let parts = Parts::default().with(size).with(rank).with(ndims).with_all(gsizes).with_all(distribs).with_all(dargs).with_all(psizes).with(order);
    let origin = Origin::recorded(MPI_COMBINER_DARRAY, parts, vec![(oldtype, child.clone())]);
    // SAFETY: `newtype` forwarded from the caller.
    unsafe { define(newtype, || build_array(&child, &dimensions, origin)) }
}

/// A subarray type rebuilt over `child` (the old type in another representation) from the
/// arguments it was made with.
pub(crate) fn subarray_layout(child: &Arc<TypeInfo>, envelope: &Envelope, origin: Origin) -> MpiResult<TypeInfo> {
    let integers = &envelope.integers;
    let rank = dimensions_arg(integers.first().copied().unwrap_or(0))?;
    let (sizes, subsizes, starts, order): (Vec<MPI_Count>, Vec<MPI_Count>, Vec<MPI_Count>, c_int) = if envelope.large.is_empty() {
        let wide = |from: usize| integers.get(from..from + rank).map(|values| values.iter().map(|&v| v as MPI_Count).collect::<Vec<_>>()).ok_or_else(incomplete);
        (wide(1)?, wide(1 + rank)?, wide(1 + 2 * rank)?, *integers.get(1 + 3 * rank).ok_or_else(incomplete)?)
    } else {
        let large = |from: usize| envelope.large.get(from..from + rank).map(<[MPI_Count]>::to_vec).ok_or_else(incomplete);
        (large(0)?, large(rank)?, large(2 * rank)?, *integers.get(1).ok_or_else(incomplete)?)
    };
    build_array(child, &fastest_first(subarray_dimensions(&sizes, &subsizes, &starts)?, order)?, origin)
}

/// A darray type rebuilt over `child` (the old type in another representation) from the
/// arguments it was made with.
pub(crate) fn darray_layout(child: &Arc<TypeInfo>, envelope: &Envelope, origin: Origin) -> MpiResult<TypeInfo> {
    let integers = &envelope.integers;
    let int = |index: usize| integers.get(index).copied().ok_or_else(incomplete);
    let (size, rank, count) = (int(0)?, int(1)?, dimensions_arg(int(2)?)?);
    let ints = |from: usize| integers.get(from..from + count).map(<[c_int]>::to_vec).ok_or_else(incomplete);
    // The int form lists gsizes among the integers; the large form as large counts.
    let (gsizes, rest): (Vec<MPI_Count>, usize) = if envelope.large.is_empty() { (ints(3)?.iter().map(|&v| v as MPI_Count).collect(), 3 + count) } else { (envelope.large.clone(), 3) };
    let (distribs, dargs, psizes, order) = (ints(rest)?, ints(rest + count)?, ints(rest + 2 * count)?, int(rest + 3 * count)?);
    build_array(child, &fastest_first(darray_dimensions(size, rank, &gsizes, &distribs, &dargs, &psizes)?, order)?, origin)
}

fn incomplete() -> MpiError {
    failure(MPI_ERR_INTERN, "an array type's recorded arguments are incomplete")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dimension(size: usize, runs: &[(usize, usize)]) -> Dimension {
        Dimension { size, runs: runs.to_vec() }
    }

    fn class<T>(result: MpiResult<T>) -> Result<T, c_int> {
        result.map_err(|error| error.class)
    }

    #[test]
    fn block_distribution_gives_each_process_one_run() {
        let owned = |coord| distributed_dimension(10, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG, 4, coord, 0).unwrap();
        assert_eq!(owned(0), dimension(10, &[(0, 3)]));
        assert_eq!(owned(2), dimension(10, &[(6, 3)]));
        assert_eq!(owned(3), dimension(10, &[(9, 1)]));
        // Blocks of 5 over 3 processes: the last one owns nothing.
        assert_eq!(distributed_dimension(10, MPI_DISTRIBUTE_BLOCK, 5, 3, 2, 0).unwrap(), dimension(10, &[]));
        assert_eq!(class(distributed_dimension(10, MPI_DISTRIBUTE_BLOCK, 2, 4, 0, 0)), Err(MPI_ERR_ARG));
    }

    #[test]
    fn cyclic_distribution_deals_blocks_round_robin() {
        let owned = |darg, coord| distributed_dimension(11, MPI_DISTRIBUTE_CYCLIC, darg, 3, coord, 0).unwrap();
        assert_eq!(owned(MPI_DISTRIBUTE_DFLT_DARG, 1), dimension(11, &[(1, 1), (4, 1), (7, 1), (10, 1)]));
        assert_eq!(owned(2, 0), dimension(11, &[(0, 2), (6, 2)]));
        assert_eq!(owned(2, 2), dimension(11, &[(4, 2), (10, 1)]));
        assert_eq!(class(distributed_dimension(11, MPI_DISTRIBUTE_CYCLIC, 0, 3, 0, 0)), Err(MPI_ERR_ARG));
        assert_eq!(class(distributed_dimension(11, 99, 1, 3, 0, 0)), Err(MPI_ERR_ARG));
    }

    #[test]
    fn undistributed_dimensions_need_one_process() {
        assert_eq!(distributed_dimension(7, MPI_DISTRIBUTE_NONE, 3, 1, 0, 0).unwrap(), dimension(7, &[(0, 7)]));
        assert_eq!(class(distributed_dimension(7, MPI_DISTRIBUTE_NONE, 3, 2, 0, 0)), Err(MPI_ERR_ARG));
    }

    #[test]
    fn darray_coordinates_are_row_major() {
        let blocks = [MPI_DISTRIBUTE_BLOCK; 2];
        let default = [MPI_DISTRIBUTE_DFLT_DARG; 2];
        // Rank 5 of a 2x3 grid is at (1, 2).
        let dimensions = darray_dimensions(6, 5, &[4, 9], &blocks, &default, &[2, 3]).unwrap();
        assert_eq!(dimensions, vec![dimension(4, &[(2, 2)]), dimension(9, &[(6, 3)])]);
        assert_eq!(class(darray_dimensions(5, 0, &[4, 9], &blocks, &default, &[2, 3])), Err(MPI_ERR_ARG));
        assert_eq!(class(darray_dimensions(6, 6, &[4, 9], &blocks, &default, &[2, 3])), Err(MPI_ERR_ARG));
        assert_eq!(class(darray_dimensions(6, 0, &[0, 9], &blocks, &default, &[2, 3])), Err(MPI_ERR_ARG));
    }

    #[test]
    fn subarrays_must_fit_their_arrays() {
        assert_eq!(subarray_dimensions(&[4, 5], &[2, 3], &[1, 2]).unwrap(), vec![dimension(4, &[(1, 2)]), dimension(5, &[(2, 3)])]);
        assert_eq!(class(subarray_dimensions(&[4, 5], &[2, 3], &[3, 0])), Err(MPI_ERR_ARG));
        assert_eq!(class(subarray_dimensions(&[4, 5], &[5, 3], &[0, 0])), Err(MPI_ERR_ARG));
        assert_eq!(class(subarray_dimensions(&[4, 0], &[1, 0], &[0, 0])), Err(MPI_ERR_ARG));
        assert_eq!(class(subarray_dimensions(&[4, 5], &[1, 1], &[-1, 0])), Err(MPI_ERR_ARG));
        assert_eq!(class(fastest_first(vec![], 3)), Err(MPI_ERR_ARG));
    }

    #[test]
    fn array_levels_place_runs_and_span_the_whole_array() {
        let int = super::super::lookup(MPI_INT).unwrap().shared();
        // A 2x3 block at (1, 2) of a C-order 4x5 int array: rows 1-2, columns 2-4.
        let dimensions = fastest_first(subarray_dimensions(&[4, 5], &[2, 3], &[1, 2]).unwrap(), MPI_ORDER_C).unwrap();
        let info = build_array(&int, &dimensions, Origin::Named(MPI_INT)).unwrap();
        assert_eq!((info.size, info.lb, info.extent, info.true_lb, info.true_extent), (24, 0, 80, 28, 32));
        let source: Vec<i32> = (0..20).collect();
        let mut packed = vec![0u8; 24];
        // SAFETY: the type map lies within the 20 ints of `source`.
        unsafe { info.pack(1, source.as_ptr().cast(), &mut packed) };
        let values: Vec<i32> = packed.chunks_exact(4).map(|bytes| i32::from_ne_bytes(bytes.try_into().unwrap())).collect();
        assert_eq!(values, [7, 8, 9, 12, 13, 14]);
    }
}
