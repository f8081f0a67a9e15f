//! Making communicators: MPI_Comm_dup(_with_info), MPI_Comm_split(_type), MPI_Comm_create and
//! MPI_Comm_create_group. The future members agree on a context id over the parent (see the
//! module above), then each installs the communicator; intercommunicator parents are handed to
//! `intercomm`.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;
use std::sync::Arc;

use super::abi::hints_of;
use super::ids::{from_bytes, to_bytes};
use super::{ids, intercomm, Agreement, Comm, CommShared, ContextIds, Hints, TAG_UB};
use crate::attr::{self, Object};
use crate::coll::{algorithms, CollTuning};
use crate::consts::*;
use crate::error::{error, finish, MpiResult};
use crate::group::{self, store};
use crate::runtime;
use crate::topo::Topology;

/// What a new communicator starts from.
pub(crate) struct Parent {
    pub shared: Arc<CommShared>,
    pub errhandler: MPI_Errhandler,
    pub tuning: CollTuning,
    /// This process's context ids, and its first free one when the call began.
    pub ids: Arc<ContextIds>,
    pub next: u32,
    /// This process's job rank.
    pub me: u32,
    /// The session the parent comes from, which what is made from it comes from too.
    pub session: Option<MPI_Session>,
}

/// A communicator made from `parent`: its handler and session.
pub(crate) fn derived(shared: Arc<CommShared>, parent: &Parent) -> Comm {
    Comm { session: parent.session, ..Comm::new(shared, parent.errhandler) }
}

pub(crate) fn parent_of(comm: MPI_Comm) -> MpiResult<Parent> {
    runtime::with(|rt| {
        let parent = rt.comms.get(comm)?;
        let ids = rt.comms.ids().clone();
        let next = ids.first_free(1);
        Ok(Parent { shared: parent.shared.clone(), errhandler: parent.errhandler, tuning: rt.tuning, ids, next, me: rt.comms.job_rank(), session: parent.session })
    })
}

/// Allgathers one record of `words` per rank among the members of `agreement`; errors are reported
/// on `comm`.
pub(crate) fn allgather_words(comm: MPI_Comm, agreement: &Agreement, words: &[u32]) -> MpiResult<Vec<u32>> {
    let mine = to_bytes(words);
    let mut all = vec![0u8; mine.len() * agreement.size()];
    let (mine_ref, all_ref) = (&mine, &mut all);
    agreement.run(comm, |port| async move { algorithms::allgather(&port, mine_ref, all_ref).await })?;
    Ok(from_bytes(&all))
}

/// The tag of the messages that agree on a communicator made with the program's `tag`
/// (MPI_Comm_create_group, MPI_Intercomm_create): negative, so never a collective's, and apart
/// for each program tag. They travel on a collective context, away from the program's messages.
pub(crate) fn agreement_tag(tag: c_int) -> i32 {
    -1 - tag
}

/// Checks the tag of MPI_Comm_create_group and MPI_Intercomm_create.
pub(crate) fn check_agreement_tag(comm: MPI_Comm, tag: c_int) -> MpiResult<()> {
    if (0..=TAG_UB).contains(&tag) {
        Ok(())
    } else {
        Err(error(comm, MPI_ERR_TAG, format!("tag {tag} is outside 0..={TAG_UB}")))
    }
}

/// Installs `made` (None: this process is not a member, MPI_COMM_NULL) once its members agreed on
/// its context ids (which [`ids`] has taken on each of them).
pub(crate) fn install(made: Option<Comm>) -> MpiResult<MPI_Comm> {
    runtime::with(|rt| Ok(made.map_or(MPI_COMM_NULL, |comm| rt.comms.insert(comm))))
}

/// The members of `agreement` agree on `span` context ids that are free on each of them, starting
/// from the largest of their proposals; errors are reported on `comm`.
pub(crate) fn agree_on_ids(comm: MPI_Comm, agreement: &Agreement, parent: &Parent, proposal: u32, span: u32) -> MpiResult<u32> {
    let mut agreed = 0;
    let (ids, agreed_ref) = (&*parent.ids, &mut agreed);
    // No two blocking creations on one communicator overlap (MPI orders them); an MPI_Comm_idup's
    // key has its collective tag instead.
    let key = ids::key(parent.shared.coll_context, -1);
    agreement.run(comm, |port| async move {
        *agreed_ref = ids::agree(&port, ids, proposal, span, key).await?;
        Ok(())
    })?;
    Ok(agreed)
}

/// Collective over intracommunicator `comm`: a communicator of `members` (this rank's view: None
/// when it is not a member), on a fresh context; MPI_COMM_NULL for non-members.
pub(crate) fn create_from(comm: MPI_Comm, members: Option<Vec<u32>>, topology: Option<Topology>) -> MpiResult<MPI_Comm> {
    let parent = parent_of(comm)?;
    if parent.shared.is_inter() {
        return Err(error(comm, MPI_ERR_COMM, "the communicator is an intercommunicator; this call needs an intracommunicator"));
    }
    let context_id = agree_on_ids(comm, &Agreement::new(parent.shared.clone(), parent.tuning), &parent, parent.next, 1)?;
    let made = members.map(|members| {
        let mut entry = derived(Arc::new(CommShared::new(Arc::from(members), parent.me, context_id)), &parent);
        entry.topology = topology;
        entry
    });
    install(made)
}

/// Collective over `comm`: MPI_Comm_split.
pub(crate) fn split(comm: MPI_Comm, color: c_int, key: c_int) -> MpiResult<MPI_Comm> {
    if color < 0 && color != MPI_UNDEFINED {
        return Err(error(comm, MPI_ERR_ARG, format!("color {color} is negative (only MPI_UNDEFINED may be)")));
    }
    let parent = parent_of(comm)?;
    if parent.shared.is_inter() {
        return intercomm::split(comm, &parent, color, key);
    }
    let agreement = Agreement::new(parent.shared.clone(), parent.tuning);
    let all = allgather_words(comm, &agreement, &[color as u32, key as u32, parent.next])?;
    let largest = all.chunks_exact(3).map(|r| r[2]).max().unwrap_or(parent.next);
    let context_id = agree_on_ids(comm, &agreement, &parent, largest, 1)?;
    let records = split_records(&all, 3);
    let made = (color != MPI_UNDEFINED).then(|| {
        let members = split_members(&parent.shared.members, &records, color);
        derived(Arc::new(CommShared::new(Arc::from(members), parent.me, context_id)), &parent)
    });
    install(made)
}

/// The (color, key) pairs at the start of each `stride`-word record.
pub(crate) fn split_records(words: &[u32], stride: usize) -> Vec<(c_int, c_int)> {
    words.chunks_exact(stride).map(|r| (r[0] as c_int, r[1] as c_int)).collect()
}

/// The job ranks of `group`'s members whose record has `color`, ordered by (key, rank in
/// `group`); `records` holds one (color, key) per member.
pub(crate) fn split_members(group: &[u32], records: &[(c_int, c_int)], color: c_int) -> Vec<u32> {
    let mut chosen: Vec<(c_int, usize)> = records.iter().enumerate().filter(|(_, r)| r.0 == color).map(|(rank, r)| (r.1, rank)).collect();
    chosen.sort_unstable();
    chosen.into_iter().map(|(_, rank)| group[rank]).collect()
}

/// MPI_Comm_dup and MPI_Comm_dup_with_info (`hints` None: the parent's): a communicator with the
/// same groups, topology and error handler, and the copies the attributes' callbacks make. If a
/// copy callback fails, the new communicator is freed again and its error returned.
fn duplicate(comm: MPI_Comm, hints: Option<Hints>) -> MpiResult<MPI_Comm> {
    let (members, topology, parent_hints) = runtime::with(|rt| {
        let parent = rt.comms.get(comm)?;
        Ok((parent.shared.members.to_vec(), parent.topology.clone(), parent.hints.clone()))
    })?;
    let parent = parent_of(comm)?;
    let created = if parent.shared.is_inter() { intercomm::duplicate(comm, &parent)? } else { create_from(comm, Some(members), topology)? };
    runtime::with(|rt| {
        rt.comms.get_mut(created)?.hints = hints.unwrap_or(parent_hints);
        Ok(())
    })?;
    if let Err(failure) = attr::access::copy_all(Object::Comm(comm), Object::Comm(created)) {
        // copy_all deleted the copies it had made: nothing refers to the communicator any more.
        runtime::with(|rt| rt.comms.remove(created).map(drop))?;
        return Err(failure);
    }
    Ok(created)
}

/// Shared body of MPI_Comm_dup and MPI_Comm_dup_with_info (`info` None: keep the hints).
unsafe fn duplicate_into(comm: MPI_Comm, info: Option<MPI_Info>, newcomm: *mut MPI_Comm) -> MpiResult<()> {
    if newcomm.is_null() {
        return Err(error(comm, MPI_ERR_ARG, "newcomm must not be NULL"));
    }
    let hints = match info {
        Some(info) => Some(runtime::with(|rt| {
            rt.comms.get(comm)?;
            hints_of(comm, info)
        })?),
        None => None,
    };
    let outcome = duplicate(comm, hints);
    // SAFETY: non-null; points to the caller's handle.
    unsafe { *newcomm = *outcome.as_ref().unwrap_or(&MPI_COMM_NULL) };
    outcome.map(drop)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    // SAFETY: `newcomm` is the caller's handle pointer.
    finish("MPI_Comm_dup", unsafe { duplicate_into(comm, None, newcomm) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm) -> c_int {
    // SAFETY: `newcomm` is the caller's handle pointer.
    finish("MPI_Comm_dup_with_info", unsafe { duplicate_into(comm, Some(info), newcomm) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split(comm: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        if newcomm.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "newcomm must not be NULL"));
        }
        let created = split(comm, color, key)?;
        // SAFETY: non-null; points to the caller's handle.
        unsafe { *newcomm = created };
        Ok(())
    })();
    finish("MPI_Comm_split", result)
}

/// MPI_Comm_split_type's color: MPI_COMM_TYPE_SHARED groups the ranks of one node (named by its
/// lowest job rank); MPI_UNDEFINED gives MPI_COMM_NULL. The hardware types split further
/// (`hardware`), starting from the node's color.
fn split_type_color(comm: MPI_Comm, split_type: c_int, node_leader: u32) -> MpiResult<c_int> {
    match split_type {
        MPI_COMM_TYPE_SHARED | MPI_COMM_TYPE_HW_GUIDED | MPI_COMM_TYPE_HW_UNGUIDED | MPI_COMM_TYPE_RESOURCE_GUIDED => Ok(node_leader as c_int),
        MPI_UNDEFINED => Ok(MPI_UNDEFINED),
        other => {
            Err(error(comm, MPI_ERR_ARG, format!("split type {other} is not MPI_COMM_TYPE_SHARED, MPI_COMM_TYPE_HW_GUIDED, MPI_COMM_TYPE_HW_UNGUIDED, MPI_COMM_TYPE_RESOURCE_GUIDED or MPI_UNDEFINED")))
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split_type(comm: MPI_Comm, split_type: c_int, key: c_int, info: MPI_Info, newcomm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        if newcomm.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "newcomm must not be NULL"));
        }
        let (leader, hints) = runtime::with(|rt| {
            rt.comms.get(comm)?;
            Ok((rt.engine.node_ranks().first().copied().unwrap_or(rt.comms.job_rank()), hints_of(comm, info)?))
        })?;
        let color = split_type_color(comm, split_type, leader)?;
        let created = match split_type {
            MPI_COMM_TYPE_HW_GUIDED | MPI_COMM_TYPE_HW_UNGUIDED | MPI_COMM_TYPE_RESOURCE_GUIDED => super::hardware::split_by_hardware(comm, split_type, key, info, &hints, color)?,
            _ => split(comm, color, key)?,
        };
        // SAFETY: non-null; points to the caller's handle.
        unsafe { *newcomm = created };
        Ok(())
    })();
    finish("MPI_Comm_split_type", result)
}

/// The job ranks of `group`, which must lie within the (local) group of `comm`.
fn subgroup(comm: MPI_Comm, group: MPI_Group) -> MpiResult<Vec<u32>> {
    runtime::with(|rt| {
        let parent = rt.comms.get(comm)?;
        let members = rt.groups.get(group).map_err(|e| error(comm, e.class, e.detail))?;
        if let Some(stranger) = members.iter().find(|m| group::position(&parent.shared.members, **m).is_none()) {
            return Err(error(comm, MPI_ERR_GROUP, format!("job rank {stranger} of the group is not in the communicator's group")));
        }
        Ok(members.to_vec())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create(comm: MPI_Comm, group: MPI_Group, newcomm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        if newcomm.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "newcomm must not be NULL"));
        }
        let members = subgroup(comm, group)?;
        let parent = parent_of(comm)?;
        let created = if parent.shared.is_inter() {
            intercomm::create(comm, &parent, members)?
        } else {
            let mine = group::position(&members, parent.me).map(|_| members);
            create_from(comm, mine, None)?
        };
        // SAFETY: non-null; points to the caller's handle.
        unsafe { *newcomm = created };
        Ok(())
    })();
    finish("MPI_Comm_create", result)
}

/// MPI_Comm_create_group: collective over `group`'s members only, which agree on a context id
/// among themselves, on the parent's collective context under a tag made from `tag`.
fn create_group(comm: MPI_Comm, group: MPI_Group, tag: c_int) -> MpiResult<MPI_Comm> {
    runtime::with(|rt| rt.comms.get_intra(comm).map(drop))?;
    check_agreement_tag(comm, tag)?;
    let members = subgroup(comm, group)?;
    create_among(comm, members, tag)
}

/// A communicator of `members` (job ranks, the caller among them) made without a parent, as
/// MPI_Comm_create_from_group does: they agree on it over MPI_COMM_WORLD, under `tag`.
pub(crate) fn create_group_of(members: Vec<u32>, tag: c_int) -> MpiResult<MPI_Comm> {
    create_among(MPI_COMM_WORLD, members, tag)
}

/// The communicator of `members` of `comm` (MPI_COMM_NULL when the caller is not one of them),
/// agreed on under `tag`.
fn create_among(comm: MPI_Comm, members: Vec<u32>, tag: c_int) -> MpiResult<MPI_Comm> {
    let parent = parent_of(comm)?;
    if group::position(&members, parent.me).is_none() {
        return Ok(MPI_COMM_NULL);
    }
    let members: group::Members = Arc::from(members);
    let view = Arc::new(CommShared::group_view(members.clone(), parent.me, parent.shared.coll_context));
    let context_id = agree_on_ids(comm, &Agreement::with_tag(view, parent.tuning, agreement_tag(tag)), &parent, parent.next, 1)?;
    let made = derived(Arc::new(CommShared::new(members, parent.me, context_id)), &parent);
    install(Some(made))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_group(comm: MPI_Comm, group: MPI_Group, tag: c_int, newcomm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        if newcomm.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "newcomm must not be NULL"));
        }
        let created = create_group(comm, group, tag)?;
        // SAFETY: non-null; points to the caller's handle.
        unsafe { store(newcomm, created, "newcomm") }
    })();
    finish("MPI_Comm_create_group", result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_orders_by_key_then_parent_rank() {
        let parent = [10, 11, 12, 13, 14];
        let undefined = MPI_UNDEFINED as u32;
        let words = [1, 5, 0, 0, 9, 0, 1, 2, 0, undefined, 0, 0, 1, 2, 0];
        let records = split_records(&words, 3);
        assert_eq!(split_members(&parent, &records, 1), vec![12, 14, 10]);
        assert_eq!(split_members(&parent, &records, 0), vec![11]);
        assert!(split_members(&parent, &records, 7).is_empty());
        assert_eq!(split_records(&[3, 4, 5, 6], 2), vec![(3, 4), (5, 6)]);
    }

    #[test]
    fn split_types_map_to_colors() {
        assert_eq!(split_type_color(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 4).unwrap(), 4);
        assert_eq!(split_type_color(MPI_COMM_WORLD, MPI_UNDEFINED, 4).unwrap(), MPI_UNDEFINED);
        assert_eq!(split_type_color(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 4).unwrap(), 4);
        assert_eq!(split_type_color(MPI_COMM_WORLD, 7, 4).unwrap_err().class, MPI_ERR_ARG);
    }

    #[test]
    fn agreement_tags_stay_clear_of_collectives_and_of_each_other() {
        assert_eq!(agreement_tag(0), -1);
        assert_eq!(agreement_tag(TAG_UB), i32::MIN);
        assert_ne!(agreement_tag(5), agreement_tag(6));
        assert_eq!(check_agreement_tag(MPI_COMM_WORLD, -1).unwrap_err().class, MPI_ERR_TAG);
        assert!(check_agreement_tag(MPI_COMM_WORLD, TAG_UB).is_ok());
    }
}
