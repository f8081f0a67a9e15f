//! Process groups: ordered lists of job (world) ranks.
//!
//! The set operations are pure functions over rank lists (unit-tested); the table maps MPI_Group
//! handles to lists; [`abi`] has the MPI_Group_* calls. Group calls use MPI_COMM_WORLD's error handler.

pub mod abi;

use std::ffi::c_int;
use std::sync::Arc;

use crate::consts::*;
use crate::error::{error, MpiResult};

/// Members of a group: index = group rank, value = job rank.
pub type Members = Arc<[u32]>;

fn group_error(class: c_int, detail: String) -> crate::error::MpiError {
    error(MPI_COMM_WORLD, class, detail)
}

/// Checks that every rank is a valid, distinct rank of a group of `size`.
fn check_distinct_ranks(size: usize, ranks: &[c_int]) -> MpiResult<()> {
    let mut seen = vec![false; size];
    for &rank in ranks {
        if rank < 0 || rank as usize >= size {
            return Err(group_error(MPI_ERR_RANK, format!("rank {rank} is not in a group of size {size}")));
        }
        if std::mem::replace(&mut seen[rank as usize], true) {
            return Err(group_error(MPI_ERR_RANK, format!("rank {rank} appears twice")));
        }
    }
    Ok(())
}

/// MPI_Group_incl: the members at `ranks`, in that order.
pub fn include(group: &[u32], ranks: &[c_int]) -> MpiResult<Vec<u32>> {
    check_distinct_ranks(group.len(), ranks)?;
    Ok(ranks.iter().map(|&r| group[r as usize]).collect())
}

/// MPI_Group_excl: the members not at `ranks`, in group order.
pub fn exclude(group: &[u32], ranks: &[c_int]) -> MpiResult<Vec<u32>> {
    check_distinct_ranks(group.len(), ranks)?;
    Ok(group.iter().enumerate().filter(|(i, _)| !ranks.contains(&(*i as c_int))).map(|(_, &m)| m).collect())
}

/// The ranks that MPI_Group_range_incl/excl's `(first, last, stride)` triplets name, in order:
/// first, first + stride, ... as far as last. Every rank must be in a group of `size`.
pub fn expand_ranges(size: usize, ranges: &[[c_int; 3]]) -> MpiResult<Vec<c_int>> {
    let mut ranks = Vec::new();
    for &[first, last, stride] in ranges {
        let triplet = format!("range ({first}, {last}, {stride})");
        if stride == 0 {
            return Err(group_error(MPI_ERR_ARG, format!("{triplet} has stride 0")));
        }
        if let Some(outside) = [first, last].into_iter().find(|&rank| rank < 0 || rank as usize >= size) {
            return Err(group_error(MPI_ERR_RANK, format!("{triplet}: rank {outside} is not in a group of size {size}")));
        }
        if (stride > 0 && first > last) || (stride < 0 && first < last) {
            return Err(group_error(MPI_ERR_ARG, format!("{triplet} steps away from its last rank")));
        }
        let count = (i64::from(last) - i64::from(first)) / i64::from(stride) + 1;
        ranks.extend((0..count).map(|step| (i64::from(first) + step * i64::from(stride)) as c_int));
    }
    Ok(ranks)
}

/// MPI_Group_translate_ranks.
pub fn translate(from: &[u32], ranks: &[c_int], to: &[u32]) -> MpiResult<Vec<c_int>> {
    ranks
        .iter()
        .map(|&rank| {
            if rank == MPI_PROC_NULL {
                return Ok(MPI_PROC_NULL);
            }
            if rank < 0 || rank as usize >= from.len() {
                return Err(group_error(MPI_ERR_RANK, format!("rank {rank} is not in a group of size {}", from.len())));
            }
            let member = from[rank as usize];
            Ok(position(to, member).map_or(MPI_UNDEFINED, |p| p as c_int))
        })
        .collect()
}

/// The group rank of job rank `member`, if it belongs to the group.
pub fn position(group: &[u32], member: u32) -> Option<usize> {
    group.iter().position(|&m| m == member)
}

/// MPI_Group_compare / the group part of MPI_Comm_compare.
pub fn compare(a: &[u32], b: &[u32]) -> c_int {
    if a == b {
        MPI_IDENT
    } else if a.len() == b.len() && a.iter().all(|m| b.contains(m)) {
        MPI_SIMILAR
    } else {
        MPI_UNEQUAL
    }
}

/// MPI_Group_union: `a`, then the members of `b` not in `a`.
pub fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    a.iter().copied().chain(b.iter().copied().filter(|m| !a.contains(m))).collect()
}

/// MPI_Group_intersection: the members of `a` also in `b`, in `a`'s order.
pub fn intersection(a: &[u32], b: &[u32]) -> Vec<u32> {
    a.iter().copied().filter(|m| b.contains(m)).collect()
}

/// MPI_Group_difference: the members of `a` not in `b`, in `a`'s order.
pub fn difference(a: &[u32], b: &[u32]) -> Vec<u32> {
    a.iter().copied().filter(|m| !b.contains(m)).collect()
}

/// MPI_Group handles: slot 0 is MPI_GROUP_NULL, slot 1 MPI_GROUP_EMPTY.
pub struct GroupTable {
    slots: Vec<Option<Members>>,
    /// The session of each group made from a session's process set.
    sessions: std::collections::HashMap<MPI_Group, MPI_Session>,
}

impl Default for GroupTable {
    fn default() -> Self {
        GroupTable::new()
    }
}

impl GroupTable {
    pub fn new() -> GroupTable {
        GroupTable { slots: vec![None, Some(Arc::from(Vec::new()))], sessions: Default::default() }
    }

    pub fn get(&self, group: MPI_Group) -> MpiResult<&Members> {
        usize::try_from(group).ok().and_then(|i| self.slots.get(i)).and_then(|slot| slot.as_ref()).ok_or_else(|| group_error(MPI_ERR_GROUP, format!("{group} is not a valid group")))
    }

    /// A handle for `members` (MPI_GROUP_EMPTY when there are none).
    pub fn insert(&mut self, members: Members) -> MPI_Group {
        if members.is_empty() {
            return MPI_GROUP_EMPTY;
        }
        match self.slots.iter().skip(2).position(|s| s.is_none()) {
            Some(free) => {
                self.slots[free + 2] = Some(members);
                (free + 2) as MPI_Group
            }
            None => {
                self.slots.push(Some(members));
                (self.slots.len() - 1) as MPI_Group
            }
        }
    }

    /// Releases a handle (MPI_GROUP_EMPTY is predefined and stays).
    pub fn free(&mut self, group: MPI_Group) -> MpiResult<()> {
        self.get(group)?;
        if group != MPI_GROUP_EMPTY {
            self.slots[group as usize] = None;
            self.sessions.remove(&group);
        }
        Ok(())
    }

    /// A handle for `members`, a process set of `session` (MPI_Group_from_session_pset).
    pub fn insert_from_session(&mut self, members: Members, session: MPI_Session) -> MPI_Group {
        let group = self.insert(members);
        if group != MPI_GROUP_EMPTY {
            self.sessions.insert(group, session);
        }
        group
    }

    /// The session `group` was made from, if it was made from one's process set.
    pub fn session_of(&self, group: MPI_Group) -> Option<MPI_Session> {
        self.sessions.get(&group).copied()
    }
}

/// Reads `n` ranks from a C array (empty when `n` is 0).
///
/// # Safety
/// `ranks` must point to `n` ints when `n > 0`.
pub(crate) unsafe fn rank_array<'a>(ranks: *const c_int, n: c_int) -> MpiResult<&'a [c_int]> {
    if n < 0 {
        return Err(group_error(MPI_ERR_ARG, format!("negative rank count {n}")));
    }
    if n == 0 {
        return Ok(&[]);
    }
    if ranks.is_null() {
        return Err(group_error(MPI_ERR_ARG, "the rank array is NULL".to_string()));
    }
    // SAFETY: non-null, and the caller guarantees `n` readable ints.
    Ok(unsafe { std::slice::from_raw_parts(ranks, n as usize) })
}

/// Writes `value` through an out-pointer, failing cleanly when it is NULL.
///
/// # Safety
/// `out` must be NULL or valid for a write of T.
pub(crate) unsafe fn store<T>(out: *mut T, value: T, what: &str) -> MpiResult<()> {
    if out.is_null() {
        return Err(group_error(MPI_ERR_ARG, format!("{what} must not be NULL")));
    }
    // SAFETY: non-null; the caller guarantees it is valid for writes.
    unsafe { out.write(value) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_and_exclude_keep_the_right_order() {
        let group = [10, 11, 12, 13, 14];
        assert_eq!(include(&group, &[3, 0, 4]).unwrap(), vec![13, 10, 14]);
        assert_eq!(exclude(&group, &[3, 0]).unwrap(), vec![11, 12, 14]);
        assert!(include(&group, &[]).unwrap().is_empty());
    }

    #[test]
    fn invalid_or_repeated_ranks_are_rank_errors() {
        let group = [10, 11, 12];
        assert_eq!(include(&group, &[3]).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(include(&group, &[-1]).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(exclude(&group, &[1, 1]).unwrap_err().class, MPI_ERR_RANK);
    }

    #[test]
    fn ranges_expand_with_any_stride() {
        assert_eq!(expand_ranges(10, &[[0, 9, 3]]).unwrap(), vec![0, 3, 6, 9]);
        assert_eq!(expand_ranges(10, &[[1, 8, 3]]).unwrap(), vec![1, 4, 7]);
        assert_eq!(expand_ranges(10, &[[9, 0, -4], [5, 5, 1]]).unwrap(), vec![9, 5, 1, 5]);
        assert_eq!(expand_ranges(10, &[[4, 4, -7]]).unwrap(), vec![4]);
        assert!(expand_ranges(10, &[]).unwrap().is_empty());
        assert_eq!(expand_ranges(2, &[[0, 1, c_int::MAX]]).unwrap(), vec![0]);
    }

    #[test]
    fn bad_ranges_have_the_right_class() {
        assert_eq!(expand_ranges(4, &[[0, 3, 0]]).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(expand_ranges(4, &[[3, 0, 1]]).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(expand_ranges(4, &[[0, 3, -1]]).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(expand_ranges(4, &[[0, 4, 1]]).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(expand_ranges(4, &[[-1, 2, 1]]).unwrap_err().class, MPI_ERR_RANK);
        let ranks = expand_ranges(4, &[[0, 2, 1], [2, 3, 1]]).unwrap();
        assert_eq!(include(&[10, 11, 12, 13], &ranks).unwrap_err().class, MPI_ERR_RANK, "rank 2 twice");
        assert_eq!(exclude(&[10, 11, 12, 13], &expand_ranges(4, &[[3, 0, -3]]).unwrap()).unwrap(), vec![11, 12]);
    }

    #[test]
    fn translation_handles_missing_members_and_proc_null() {
        let from = [4, 5, 6, 7];
        let to = [7, 6];
        assert_eq!(translate(&from, &[0, 2, 3, MPI_PROC_NULL], &to).unwrap(), vec![MPI_UNDEFINED, 1, 0, MPI_PROC_NULL]);
        assert_eq!(translate(&from, &[4], &to).unwrap_err().class, MPI_ERR_RANK);
    }

    #[test]
    fn comparison_distinguishes_order_and_membership() {
        assert_eq!(compare(&[1, 2, 3], &[1, 2, 3]), MPI_IDENT);
        assert_eq!(compare(&[1, 2, 3], &[3, 1, 2]), MPI_SIMILAR);
        assert_eq!(compare(&[1, 2, 3], &[1, 2]), MPI_UNEQUAL);
        assert_eq!(compare(&[1, 2, 3], &[1, 2, 4]), MPI_UNEQUAL);
    }

    #[test]
    fn set_operations_follow_the_standard_order() {
        let a = [5, 1, 3];
        let b = [3, 4, 5, 6];
        assert_eq!(union(&a, &b), vec![5, 1, 3, 4, 6]);
        assert_eq!(intersection(&a, &b), vec![5, 3]);
        assert_eq!(difference(&a, &b), vec![1]);
        assert_eq!(difference(&b, &a), vec![4, 6]);
    }

    #[test]
    fn the_table_reuses_slots_and_keeps_group_empty() {
        let mut table = GroupTable::new();
        assert!(table.get(MPI_GROUP_EMPTY).unwrap().is_empty());
        assert_eq!(table.get(MPI_GROUP_NULL).unwrap_err().class, MPI_ERR_GROUP);
        assert_eq!(table.insert(Arc::from(Vec::new())), MPI_GROUP_EMPTY);
        let first = table.insert(Arc::from(vec![1, 2]));
        let second = table.insert(Arc::from(vec![3]));
        assert_ne!(first, second);
        table.free(first).unwrap();
        assert_eq!(table.get(first).unwrap_err().class, MPI_ERR_GROUP);
        assert_eq!(table.insert(Arc::from(vec![4])), first);
        table.free(MPI_GROUP_EMPTY).unwrap();
        assert!(table.get(MPI_GROUP_EMPTY).is_ok());
    }
}
