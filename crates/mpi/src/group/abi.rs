//! The group calls (MPI_Group_*) over the table of [`super::GroupTable`].

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;
use std::sync::Arc;

use super::{compare, difference, exclude, expand_ranges, group_error, include, intersection, position, rank_array, store, translate, union, GroupTable};
use crate::consts::*;
use crate::error::{finish, MpiResult};
use crate::runtime;

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_size(group: MPI_Group, size: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        let members = rt.groups.get(group)?;
        // SAFETY: `size` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(size, members.len() as c_int, "size") }
    });
    finish("MPI_Group_size", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_rank(group: MPI_Group, rank: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        let me = rt.engine.rank();
        let members = rt.groups.get(group)?;
        let value = position(members, me).map_or(MPI_UNDEFINED, |p| p as c_int);
        // SAFETY: `rank` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(rank, value, "rank") }
    });
    finish("MPI_Group_rank", result)
}

/// Shared body of the calls that derive a new group from one or two groups (`from`): the new
/// group belongs to the session of the first of them that comes from one (MPI 4.1 §11.3.2:
/// groups derived from a session's process set stay with that session).
unsafe fn derive(function: &str, newgroup: *mut MPI_Group, from: &[MPI_Group], make: impl FnOnce(&GroupTable) -> MpiResult<Vec<u32>>) -> c_int {
    let result = runtime::with(|rt| {
        let members = make(&rt.groups)?;
        let handle = match from.iter().find_map(|&group| rt.groups.session_of(group)) {
            Some(session) => rt.groups.insert_from_session(Arc::from(members), session),
            None => rt.groups.insert(Arc::from(members)),
        };
        // SAFETY: `newgroup` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(newgroup, handle, "newgroup") }
    });
    finish(function, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_incl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: MPI requires `ranks` to hold `n` ints.
    unsafe { derive("MPI_Group_incl", newgroup, &[group], |groups| include(groups.get(group)?, rank_array(ranks, n)?)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_excl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: MPI requires `ranks` to hold `n` ints.
    unsafe { derive("MPI_Group_excl", newgroup, &[group], |groups| exclude(groups.get(group)?, rank_array(ranks, n)?)) }
}

/// Reads `n` range triplets from a C array (empty when `n` is 0).
///
/// # Safety
/// `ranges` must point to `n` triplets when `n > 0`.
unsafe fn range_array<'a>(ranges: *const [c_int; 3], n: c_int) -> MpiResult<&'a [[c_int; 3]]> {
    if n < 0 {
        return Err(group_error(MPI_ERR_ARG, format!("negative range count {n}")));
    }
    if n == 0 {
        return Ok(&[]);
    }
    if ranges.is_null() {
        return Err(group_error(MPI_ERR_ARG, "the range array is NULL".to_string()));
    }
    // SAFETY: non-null, and the caller guarantees `n` readable triplets.
    Ok(unsafe { std::slice::from_raw_parts(ranges, n as usize) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_incl(group: MPI_Group, n: c_int, ranges: *const [c_int; 3], newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: MPI requires `ranges` to hold `n` triplets.
    unsafe {
        derive("MPI_Group_range_incl", newgroup, &[group], |groups| {
            let members = groups.get(group)?;
            include(members, &expand_ranges(members.len(), range_array(ranges, n)?)?)
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_excl(group: MPI_Group, n: c_int, ranges: *const [c_int; 3], newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: MPI requires `ranges` to hold `n` triplets.
    unsafe {
        derive("MPI_Group_range_excl", newgroup, &[group], |groups| {
            let members = groups.get(group)?;
            exclude(members, &expand_ranges(members.len(), range_array(ranges, n)?)?)
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_union(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: `newgroup` is the caller's out-pointer.
    unsafe { derive("MPI_Group_union", newgroup, &[group1, group2], |groups| Ok(union(groups.get(group1)?, groups.get(group2)?))) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_intersection(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: `newgroup` is the caller's out-pointer.
    unsafe { derive("MPI_Group_intersection", newgroup, &[group1, group2], |groups| Ok(intersection(groups.get(group1)?, groups.get(group2)?))) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_difference(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: `newgroup` is the caller's out-pointer.
    unsafe { derive("MPI_Group_difference", newgroup, &[group1, group2], |groups| Ok(difference(groups.get(group1)?, groups.get(group2)?))) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_translate_ranks(group1: MPI_Group, n: c_int, ranks1: *const c_int, group2: MPI_Group, ranks2: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        // SAFETY: MPI requires `ranks1` to hold `n` ints.
        let input = unsafe { rank_array(ranks1, n)? };
        let translated = translate(rt.groups.get(group1)?, input, rt.groups.get(group2)?)?;
        if translated.is_empty() {
            return Ok(());
        }
        if ranks2.is_null() {
            return Err(group_error(MPI_ERR_ARG, "ranks2 must not be NULL".to_string()));
        }
        // SAFETY: MPI requires `ranks2` to hold `n` ints; it is non-null.
        unsafe { std::ptr::copy_nonoverlapping(translated.as_ptr(), ranks2, translated.len()) };
        Ok(())
    });
    finish("MPI_Group_translate_ranks", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_compare(group1: MPI_Group, group2: MPI_Group, result: *mut c_int) -> c_int {
    let outcome = runtime::with(|rt| {
        let value = compare(rt.groups.get(group1)?, rt.groups.get(group2)?);
        // SAFETY: `result` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(result, value, "result") }
    });
    finish("MPI_Group_compare", outcome)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_free(group: *mut MPI_Group) -> c_int {
    let result = runtime::with(|rt| {
        if group.is_null() {
            return Err(group_error(MPI_ERR_ARG, "group must not be NULL".to_string()));
        }
        // SAFETY: non-null; points to the caller's handle.
        unsafe {
            rt.groups.free(*group)?;
            *group = MPI_GROUP_NULL;
        }
        Ok(())
    });
    finish("MPI_Group_free", result)
}
