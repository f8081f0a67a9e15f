//! Cartesian topologies. Ranks are laid out in row-major order (the last dimension varies
//! fastest).

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use super::abi::{int_array, length, no_topology, with_topology, write_ints};
use super::Topology;
use crate::comm;
use crate::consts::*;
use crate::error::{error, finish, MpiResult};
use crate::group::store;
use crate::runtime;

/// A communicator's Cartesian layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cartesian {
    pub dims: Vec<c_int>,
    pub periods: Vec<bool>,
}

impl Cartesian {
    /// Number of processes in the grid.
    pub fn size(&self) -> usize {
        self.dims.iter().fold(1usize, |product, &d| product.saturating_mul(d as usize))
    }

    /// The coordinates of `rank`.
    pub fn coords(&self, rank: usize) -> Vec<c_int> {
        let mut rest = rank;
        let mut coords = vec![0; self.dims.len()];
        for (coord, &dim) in coords.iter_mut().zip(&self.dims).rev() {
            *coord = (rest % dim as usize) as c_int;
            rest /= dim as usize;
        }
        coords
    }

    /// The rank at `coords`; periodic dimensions wrap, others must be in range.
    pub fn rank(&self, coords: &[c_int]) -> Option<usize> {
        let mut rank = 0usize;
        for ((&coord, &dim), &periodic) in coords.iter().zip(&self.dims).zip(&self.periods) {
            let coord = if periodic {
                coord.rem_euclid(dim)
            } else if (0..dim).contains(&coord) {
                coord
            } else {
                return None;
            };
            rank = rank * dim as usize + coord as usize;
        }
        Some(rank)
    }

    /// MPI_Cart_shift: (source, destination) of a shift by `displacement` along `direction`.
    /// The grid's links: each position to its +1 neighbour in every dimension, weight 1.
    pub fn edges(&self) -> Vec<(usize, usize, u64)> {
        (0..self.size())
            .flat_map(|position| (0..self.dims.len()).map(move |direction| (position, direction)))
            .filter_map(|(position, direction)| {
                let (_, above) = self.shift(position, direction, 1);
                usize::try_from(above).ok().map(|above| (position, above, 1))
            })
            .collect()
    }

    pub fn shift(&self, rank: usize, direction: usize, displacement: c_int) -> (c_int, c_int) {
        let at = |offset: c_int| {
            let mut coords = self.coords(rank);
            coords[direction] += offset;
            self.rank(&coords).map_or(MPI_PROC_NULL, |r| r as c_int)
        };
        (at(-displacement), at(displacement))
    }
}

/// The Cartesian layout of `comm` and this process's rank in it.
fn cartesian_of(comm: MPI_Comm) -> MpiResult<(Cartesian, usize)> {
    with_topology(comm, |topology, rank| match topology {
        Topology::Cartesian(layout) => Ok((layout.clone(), rank)),
        _ => Err(no_topology(comm, "a Cartesian topology")),
    })
}

/// ndims of MPI_Cart_create: MPI_ERR_DIMS when negative.
pub(super) fn check_ndims(comm: MPI_Comm, ndims: c_int) -> MpiResult<usize> {
    usize::try_from(ndims).map_err(|_| error(comm, MPI_ERR_DIMS, format!("ndims {ndims} is negative")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_create(comm_old: MPI_Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, reorder: c_int, comm_cart: *mut MPI_Comm) -> c_int {
    let result = (|| {
        let count = check_ndims(comm_old, ndims)?;
        // SAFETY: MPI requires `ndims` ints in each array.
        let (dims, periods) = unsafe { (int_array(comm_old, dims, count, "dims")?, int_array(comm_old, periods, count, "periods")?) };
        if comm_cart.is_null() {
            return Err(error(comm_old, MPI_ERR_ARG, "comm_cart must not be NULL"));
        }
        if let Some(bad) = dims.iter().find(|&&d| d <= 0) {
            return Err(error(comm_old, MPI_ERR_DIMS, format!("dimension {bad} must be positive")));
        }
        let layout = Cartesian { dims: dims.to_vec(), periods: periods.iter().map(|&p| p != 0).collect() };
        let (members, rank) = runtime::with(|rt| {
            let shared = &rt.comms.get(comm_old)?.shared;
            Ok((shared.members.clone(), shared.rank as usize))
        })?;
        if layout.size() > members.len() {
            return Err(error(comm_old, MPI_ERR_DIMS, format!("the grid needs {} processes, the communicator has {}", layout.size(), members.len())));
        }
        let positions = layout.size();
        let playing = match reorder != 0 {
            true => super::reorder::process_of_vertex(&members, layout.edges()),
            false => (0..members.len()).collect(),
        };
        let position = super::reorder::vertex_of(&playing, rank);
        let mine = (position < positions).then(|| playing[..positions].iter().map(|&process| members[process]).collect());
        let created = comm::construct::create_from(comm_old, mine, Some(Topology::Cartesian(layout)))?;
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *comm_cart = created };
        Ok(())
    })();
    finish("MPI_Cart_create", result)
}

/// MPI_Cart_map's answer for `rank`: its own rank when the grid of `dims` has room for it (ranks are
/// kept), MPI_UNDEFINED otherwise. MPI_ERR_DIMS when the grid has more than `size` processes.
fn cart_map(comm: MPI_Comm, dims: &[c_int], size: usize, rank: usize) -> MpiResult<c_int> {
    if let Some(bad) = dims.iter().find(|&&d| d <= 0) {
        return Err(error(comm, MPI_ERR_DIMS, format!("dimension {bad} must be positive")));
    }
    let grid = Cartesian { dims: dims.to_vec(), periods: vec![false; dims.len()] };
    if grid.size() > size {
        return Err(error(comm, MPI_ERR_DIMS, format!("the grid needs {} processes, the communicator has {size}", grid.size())));
    }
    Ok(if rank < grid.size() { rank as c_int } else { MPI_UNDEFINED })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_map(comm: MPI_Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, newrank: *mut c_int) -> c_int {
    let result = (|| {
        let count = length(comm, ndims, "ndims")?;
        // SAFETY: MPI requires `ndims` ints in each array.
        let (dims, periods) = unsafe { (int_array(comm, dims, count, "dims")?, int_array(comm, periods, count, "periods")?) };
        let (members, rank) = runtime::with(|rt| {
            let shared = &rt.comms.get(comm)?.shared;
            Ok((shared.members.clone(), shared.rank as usize))
        })?;
        cart_map(comm, dims, members.len(), rank)?;
        // The position MPI_Cart_create with reorder gives this process.
        let layout = Cartesian { dims: dims.to_vec(), periods: periods.iter().map(|&p| p != 0).collect() };
        let playing = super::reorder::process_of_vertex(&members, layout.edges());
        let position = super::reorder::vertex_of(&playing, rank);
        let mapped = if position < layout.size() { position as c_int } else { MPI_UNDEFINED };
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(newrank, mapped, "newrank") }
    })();
    finish("MPI_Cart_map", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_coords(comm: MPI_Comm, rank: c_int, maxdims: c_int, coords: *mut c_int) -> c_int {
    let result = (|| {
        let (layout, _) = cartesian_of(comm)?;
        if rank < 0 || rank as usize >= layout.size() {
            return Err(error(comm, MPI_ERR_RANK, format!("rank {rank} is not in the grid")));
        }
        if (maxdims as i64) < layout.dims.len() as i64 {
            return Err(error(comm, MPI_ERR_ARG, format!("maxdims {maxdims} is below the grid's {} dimensions", layout.dims.len())));
        }
        // SAFETY: MPI requires room for `maxdims` ints, at least the grid's dimensions.
        unsafe { write_ints(comm, coords, &layout.coords(rank as usize), "coords") }
    })();
    finish("MPI_Cart_coords", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_rank(comm: MPI_Comm, coords: *const c_int, rank: *mut c_int) -> c_int {
    let result = (|| {
        let (layout, _) = cartesian_of(comm)?;
        // SAFETY: MPI requires one coordinate per dimension.
        let coords = unsafe { int_array(comm, coords, layout.dims.len(), "coords")? };
        let found = layout.rank(coords).ok_or_else(|| error(comm, MPI_ERR_ARG, format!("coordinates {coords:?} are outside the grid")))?;
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(rank, found as c_int, "rank") }
    })();
    finish("MPI_Cart_rank", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_shift(comm: MPI_Comm, direction: c_int, disp: c_int, rank_source: *mut c_int, rank_dest: *mut c_int) -> c_int {
    let result = (|| {
        let (layout, rank) = cartesian_of(comm)?;
        if direction < 0 || direction as usize >= layout.dims.len() {
            return Err(error(comm, MPI_ERR_ARG, format!("direction {direction} is not a dimension of the grid")));
        }
        let (source, dest) = layout.shift(rank, direction as usize, disp);
        // SAFETY: the caller's out-pointers (NULL is rejected by store).
        unsafe {
            store(rank_source, source, "rank_source")?;
            store(rank_dest, dest, "rank_dest")
        }
    })();
    finish("MPI_Cart_shift", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_get(comm: MPI_Comm, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int) -> c_int {
    let result = (|| {
        let (layout, rank) = cartesian_of(comm)?;
        if (maxdims as i64) < layout.dims.len() as i64 {
            return Err(error(comm, MPI_ERR_ARG, format!("maxdims {maxdims} is below the grid's {} dimensions", layout.dims.len())));
        }
        let periodic: Vec<c_int> = layout.periods.iter().map(|&p| c_int::from(p)).collect();
        // SAFETY: MPI requires room for `maxdims` ints in each array.
        unsafe {
            write_ints(comm, dims, &layout.dims, "dims")?;
            write_ints(comm, periods, &periodic, "periods")?;
            write_ints(comm, coords, &layout.coords(rank), "coords")
        }
    })();
    finish("MPI_Cart_get", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cartdim_get(comm: MPI_Comm, ndims: *mut c_int) -> c_int {
    let result = (|| {
        let (layout, _) = cartesian_of(comm)?;
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(ndims, layout.dims.len() as c_int, "ndims") }
    })();
    finish("MPI_Cartdim_get", result)
}

/// MPI_Cart_sub's split: (color, key, sub-grid) for this process.
fn sub_grid(layout: &Cartesian, rank: usize, remain: &[bool]) -> (c_int, c_int, Cartesian) {
    let coords = layout.coords(rank);
    let mut color = 0usize;
    let mut key = 0usize;
    let mut kept = Cartesian { dims: Vec::new(), periods: Vec::new() };
    for (((&coord, &dim), &periodic), &keep) in coords.iter().zip(&layout.dims).zip(&layout.periods).zip(remain) {
        if keep {
            key = key * dim as usize + coord as usize;
            kept.dims.push(dim);
            kept.periods.push(periodic);
        } else {
            color = color * dim as usize + coord as usize;
        }
    }
    (color as c_int, key as c_int, kept)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_sub(comm: MPI_Comm, remain_dims: *const c_int, newcomm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        let (layout, rank) = cartesian_of(comm)?;
        // SAFETY: MPI requires one flag per dimension.
        let remain: Vec<bool> = unsafe { int_array(comm, remain_dims, layout.dims.len(), "remain_dims")? }.iter().map(|&r| r != 0).collect();
        if newcomm.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "newcomm must not be NULL"));
        }
        let (color, key, kept) = sub_grid(&layout, rank, &remain);
        let created = comm::construct::split(comm, color, key)?;
        runtime::with(|rt| {
            rt.comms.get_mut(created)?.topology = Some(Topology::Cartesian(kept));
            Ok(())
        })?;
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *newcomm = created };
        Ok(())
    })();
    finish("MPI_Cart_sub", result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_are_row_major_and_round_trip() {
        let grid = Cartesian { dims: vec![2, 3], periods: vec![false, true] };
        assert_eq!(grid.coords(4), vec![1, 1]);
        for rank in 0..grid.size() {
            assert_eq!(grid.rank(&grid.coords(rank)), Some(rank));
        }
        assert_eq!(grid.rank(&[0, 4]), Some(1));
        assert_eq!(grid.rank(&[2, 0]), None);
    }

    #[test]
    fn shifts_wrap_only_on_periodic_dimensions() {
        let grid = Cartesian { dims: vec![2, 3], periods: vec![false, true] };
        assert_eq!(grid.shift(0, 1, 1), (2, 1));
        assert_eq!(grid.shift(0, 0, 1), (MPI_PROC_NULL, 3));
        assert_eq!(grid.shift(3, 0, 1), (0, MPI_PROC_NULL));
    }

    #[test]
    fn cart_map_keeps_ranks_that_fit() {
        assert_eq!(cart_map(MPI_COMM_WORLD, &[2, 2], 5, 3).unwrap(), 3);
        assert_eq!(cart_map(MPI_COMM_WORLD, &[2, 2], 5, 4).unwrap(), MPI_UNDEFINED);
        assert_eq!(cart_map(MPI_COMM_WORLD, &[], 3, 0).unwrap(), 0);
        assert_eq!(cart_map(MPI_COMM_WORLD, &[], 3, 1).unwrap(), MPI_UNDEFINED);
        assert_eq!(cart_map(MPI_COMM_WORLD, &[3, 2], 5, 0).unwrap_err().class, MPI_ERR_DIMS);
        assert_eq!(cart_map(MPI_COMM_WORLD, &[2, 0], 5, 0).unwrap_err().class, MPI_ERR_DIMS);
        assert_eq!(cart_map(MPI_COMM_WORLD, &[1 << 30, 1 << 30, 1 << 30], 5, 0).unwrap_err().class, MPI_ERR_DIMS);
    }

    #[test]
    fn sub_grids_split_by_the_dropped_dimensions() {
        let grid = Cartesian { dims: vec![2, 3], periods: vec![true, false] };
        let (color, key, kept) = sub_grid(&grid, 5, &[false, true]);
        assert_eq!((color, key), (1, 2));
        assert_eq!(kept, Cartesian { dims: vec![3], periods: vec![false] });
        let (color, key, _) = sub_grid(&grid, 5, &[true, false]);
        assert_eq!((color, key), (2, 1));
    }
}
