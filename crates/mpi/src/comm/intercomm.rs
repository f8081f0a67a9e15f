//! Intercommunicators: MPI_Intercomm_create and MPI_Intercomm_merge, the intercommunicator forms
//! of MPI_Comm_dup, MPI_Comm_split and MPI_Comm_create, and the remote-group queries.
//!
//! The two groups agree through their leaders: each group gathers what it has to say over its
//! own context, the leaders swap it, and each leader broadcasts the other group's part to its
//! group. A new communicator's context id is the largest next free id of both groups.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;
use std::sync::Arc;

use super::channel::LEADER_TAG;
use super::construct::{agreement_tag, allgather_words, check_agreement_tag, derived, install, parent_of, split_members, split_records, Parent};
use super::ids::{self, Report};
use super::ids::{from_bytes, to_bytes};
use super::{Agreement, Comm, CommShared};
use crate::coll::{algorithms, CollTuning};
use crate::consts::*;
use crate::error::{error, finish, MpiError, MpiResult};
use crate::group::{self, store, Members};
use crate::runtime;

fn local_of(inter: &CommShared) -> Arc<CommShared> {
    inter.local.clone().expect("an intercommunicator has a local communicator")
}

/// Broadcasts `words` from local rank `root` to the group of `local`.
fn broadcast_words(comm: MPI_Comm, local: Arc<CommShared>, tuning: CollTuning, words: &mut Vec<u32>, root: usize) -> MpiResult<()> {
    let mut bytes = to_bytes(words);
    let bytes_ref = &mut bytes;
    Agreement::new(local, tuning).run(comm, |port| async move { algorithms::bcast(&port, bytes_ref, root).await })?;
    *words = from_bytes(&bytes);
    Ok(())
}

/// Collective over both groups of `inter`: each leader (local rank 0) sends `mine` to the other
/// leader, receives the other group's `theirs_len` words and broadcasts them to its group.
fn swap_with_remote(comm: MPI_Comm, inter: &Arc<CommShared>, tuning: CollTuning, mine: &[u32], theirs_len: usize) -> MpiResult<Vec<u32>> {
    let mut theirs = vec![0u8; theirs_len * 4];
    if inter.rank == 0 {
        let (mine, theirs) = (to_bytes(mine), &mut theirs);
        Agreement::with_tag(inter.clone(), tuning, LEADER_TAG).run(comm, |port| async move { port.sendrecv(0, &mine, 0, theirs).await })?;
    }
    let mut words = from_bytes(&theirs);
    broadcast_words(comm, local_of(inter), tuning, &mut words, 0)?;
    Ok(words)
}

/// Gathers one record of `words` from every member of the local group, over its own context.
fn gather_local(comm: MPI_Comm, parent: &Parent, words: &[u32]) -> MpiResult<Vec<u32>> {
    allgather_words(comm, &Agreement::new(local_of(&parent.shared), parent.tuning), words)
}

/// The largest of the records' word `field` (records of `stride` words).
fn largest(words: &[u32], stride: usize, field: usize) -> u32 {
    words.chunks_exact(stride).map(|r| r[field]).max().unwrap_or(0)
}

/// The context ids of a new communicator made over both groups of `parent`, from `candidate`
/// (the largest proposal of both groups) on: taken on every member of both groups.
fn agree_between_groups(comm: MPI_Comm, parent: &Parent, candidate: u32, span: u32) -> MpiResult<u32> {
    let exchange = |mine: Report| {
        let local = Report::combine(&gather_local(comm, parent, &mine.words())?);
        let theirs = swap_with_remote(comm, &parent.shared, parent.tuning, &local.words(), 2)?;
        Ok(local.and(Report::from_words(&theirs)))
    };
    ids::confirm_with(&parent.ids, candidate, span, ids::key(parent.shared.coll_context, -1), exchange, |class| ids_exhausted(comm, class))
}

#[cold]
fn ids_exhausted(comm: MPI_Comm, class: c_int) -> MpiError {
    error(comm, class, "the job has used up its 2^31 communicator context ids")
}

fn new_inter(parent: &Parent, local: Members, remote: Members, context_id: u32) -> Comm {
    derived(Arc::new(CommShared::new_inter(local, remote, parent.me, context_id)), parent)
}

/// MPI_Comm_dup of an intercommunicator.
pub(crate) fn duplicate(comm: MPI_Comm, parent: &Parent) -> MpiResult<MPI_Comm> {
    let local_max = largest(&gather_local(comm, parent, &[parent.next])?, 1, 0);
    let remote_max = swap_with_remote(comm, &parent.shared, parent.tuning, &[local_max], 1)?[0];
    let context_id = agree_between_groups(comm, parent, local_max.max(remote_max), 2)?;
    let made = new_inter(parent, parent.shared.members.clone(), parent.shared.peers.clone(), context_id);
    install(Some(made))
}

/// MPI_Comm_split of an intercommunicator: an intercommunicator between the members of each group
/// with the same color (MPI_COMM_NULL when either side has none).
pub(crate) fn split(comm: MPI_Comm, parent: &Parent, color: c_int, key: c_int) -> MpiResult<MPI_Comm> {
    let inter = &parent.shared;
    let gathered = gather_local(comm, parent, &[color as u32, key as u32, parent.next])?;
    let local_max = largest(&gathered, 3, 2);
    let local_records = split_records(&gathered, 3);
    let mut mine = vec![local_max];
    mine.extend(local_records.iter().flat_map(|&(color, key)| [color as u32, key as u32]));
    let theirs = swap_with_remote(comm, inter, parent.tuning, &mine, 1 + 2 * inter.peer_count())?;
    let context_id = agree_between_groups(comm, parent, local_max.max(theirs[0]), 2)?;
    let made = (color != MPI_UNDEFINED)
        .then(|| {
            let local = split_members(&inter.members, &local_records, color);
            let remote = split_members(&inter.peers, &split_records(&theirs[1..], 2), color);
            (!remote.is_empty()).then(|| new_inter(parent, Arc::from(local), Arc::from(remote), context_id))
        })
        .flatten();
    install(made)
}

/// MPI_Comm_create of an intercommunicator: between `group` (part of the local group) and the
/// group the remote processes name (MPI_COMM_NULL outside `group` or when the other is empty).
pub(crate) fn create(comm: MPI_Comm, parent: &Parent, group: Vec<u32>) -> MpiResult<MPI_Comm> {
    let inter = &parent.shared;
    let local_max = largest(&gather_local(comm, parent, &[parent.next])?, 1, 0);
    let header = swap_with_remote(comm, inter, parent.tuning, &[local_max, group.len() as u32], 2)?;
    let remote = swap_with_remote(comm, inter, parent.tuning, &group, header[1] as usize)?;
    let context_id = agree_between_groups(comm, parent, local_max.max(header[0]), 2)?;
    let member = group::position(&group, parent.me).is_some();
    let made = (member && !remote.is_empty()).then(|| new_inter(parent, Arc::from(group), Arc::from(remote), context_id));
    install(made)
}

/// What the local leader of MPI_Intercomm_create learns from the remote leader.
struct RemoteGroup {
    next_free: u32,
    members: Vec<u32>,
}

/// The local leader's line to the remote leader of MPI_Intercomm_create: over `peer_comm`, under
/// an agreement tag made from the program's tag.
struct LeaderLink {
    agreement: Agreement,
    leader: usize,
}

impl LeaderLink {
    fn new(local_comm: MPI_Comm, peer_comm: MPI_Comm, remote_leader: c_int, tag: c_int) -> MpiResult<LeaderLink> {
        let (peer, tuning, me) = runtime::with(|rt| {
            let peer = rt.comms.get(peer_comm)?.shared.clone();
            Ok((peer, rt.tuning, rt.comms.job_rank()))
        })
        .map_err(|e| error(local_comm, e.class, format!("peer_comm: {}", e.detail)))?;
        let leader = usize::try_from(remote_leader).ok().filter(|&r| r < peer.peer_count());
        let Some(leader) = leader else {
            return Err(error(local_comm, MPI_ERR_RANK, format!("remote_leader {remote_leader} is not a rank of peer_comm (size {})", peer.peer_count())));
        };
        if peer.job_rank(leader as u32) == me {
            return Err(error(local_comm, MPI_ERR_RANK, format!("remote_leader {remote_leader} is this process, the local leader")));
        }
        Ok(LeaderLink { agreement: Agreement::with_tag(peer, tuning, agreement_tag(tag)), leader })
    }

    /// Sends `mine` to the remote leader and receives its `theirs_len` words.
    fn swap(&self, local_comm: MPI_Comm, mine: &[u32], theirs_len: usize) -> MpiResult<Vec<u32>> {
        let failed = |e: MpiError| error(local_comm, e.class, "the leaders could not reach each other over peer_comm");
        let mut theirs = vec![0u8; theirs_len * 4];
        let (mine, theirs_ref, leader) = (to_bytes(mine), &mut theirs, self.leader);
        self.agreement.run(local_comm, |port| async move { port.sendrecv(leader, &mine, leader, theirs_ref).await }).map_err(failed)?;
        Ok(from_bytes(&theirs))
    }

    /// Swaps (next free id, group) with the remote leader.
    fn swap_groups(&self, local_comm: MPI_Comm, next_free: u32, members: &[u32]) -> MpiResult<RemoteGroup> {
        let header = self.swap(local_comm, &[next_free, members.len() as u32], 2)?;
        let members = self.swap(local_comm, members, header[1] as usize)?;
        Ok(RemoteGroup { next_free: header[0], members })
    }
}

/// The context ids of MPI_Intercomm_create's new communicator, from `candidate` on: each group
/// combines its members' reports, the leaders swap them over `peer_comm`, and each leader
/// broadcasts the result (or the class of its failure) to its group.
fn agree_through_leaders(local_comm: MPI_Comm, parent: &Parent, link: Option<&LeaderLink>, leader: usize, tag: c_int, candidate: u32) -> MpiResult<u32> {
    let local = parent.shared.clone();
    let exchange = |mine: Report| {
        let reports = allgather_words(local_comm, &Agreement::new(local.clone(), parent.tuning), &mine.words())?;
        let mut verdict = vec![MPI_SUCCESS as u32, 0, 0];
        let mut failure = None;
        if let Some(link) = link {
            let ours = Report::combine(&reports);
            match link.swap(local_comm, &ours.words(), 2) {
                Ok(theirs) => verdict[1..].copy_from_slice(&ours.and(Report::from_words(&theirs)).words()),
                Err(failed) => {
                    verdict[0] = failed.class as u32;
                    failure = Some(failed);
                }
            }
        }
        broadcast_words(local_comm, local.clone(), parent.tuning, &mut verdict, leader)?;
        if let Some(failed) = failure {
            return Err(failed);
        }
        if verdict[0] != MPI_SUCCESS as u32 {
            return Err(error(local_comm, verdict[0] as c_int, "the local leader failed to reach the remote group"));
        }
        Ok(Report::from_words(&verdict[1..]))
    };
    // Both groups know the program's tag (not each other's local contexts).
    ids::confirm_with(&parent.ids, candidate, 2, ids::key(u32::MAX, tag), exchange, |class| ids_exhausted(local_comm, class))
}

/// MPI_Intercomm_create: collective over `local_comm`; its leader and the remote group's leader
/// talk over `peer_comm` (significant at the leader only).
pub(crate) fn intercomm_create(local_comm: MPI_Comm, local_leader: c_int, peer_comm: MPI_Comm, remote_leader: c_int, tag: c_int) -> MpiResult<MPI_Comm> {
    let parent = parent_of(local_comm)?;
    if parent.shared.is_inter() {
        return Err(error(local_comm, MPI_ERR_COMM, "local_comm is an intercommunicator; it must be an intracommunicator"));
    }
    let local = parent.shared.clone();
    let Some(leader) = usize::try_from(local_leader).ok().filter(|&r| r < local.size()) else {
        return Err(error(local_comm, MPI_ERR_RANK, format!("local_leader {local_leader} is not a rank of local_comm (size {})", local.size())));
    };
    check_agreement_tag(local_comm, tag)?;
    let gathered = allgather_words(local_comm, &Agreement::new(local.clone(), parent.tuning), &[parent.next])?;
    let local_max = largest(&gathered, 1, 0);
    // The leader broadcasts [error class, context id, remote group size], then the remote group.
    let mut outcome = Ok(());
    let mut header = vec![MPI_SUCCESS as u32, 0, 0];
    let mut remote_members = Vec::new();
    let mut link = None;
    if local.rank as usize == leader {
        let swapped = LeaderLink::new(local_comm, peer_comm, remote_leader, tag).and_then(|made| {
            let remote = made.swap_groups(local_comm, local_max, &local.members);
            link = Some(made);
            remote
        });
        match swapped {
            Ok(remote) if remote.members.iter().any(|m| group::position(&local.members, *m).is_some()) => {
                outcome = Err(error(local_comm, MPI_ERR_COMM, "the local and remote groups overlap"));
            }
            Ok(remote) => {
                header = vec![MPI_SUCCESS as u32, local_max.max(remote.next_free), remote.members.len() as u32];
                remote_members = remote.members;
            }
            Err(failure) => outcome = Err(failure),
        }
        if let Err(failure) = &outcome {
            header[0] = failure.class as u32;
        }
    }
    broadcast_words(local_comm, local.clone(), parent.tuning, &mut header, leader)?;
    if header[0] != MPI_SUCCESS as u32 {
        outcome?;
        return Err(error(local_comm, header[0] as c_int, "the local leader failed to reach the remote group"));
    }
    remote_members.resize(header[2] as usize, 0);
    broadcast_words(local_comm, local.clone(), parent.tuning, &mut remote_members, leader)?;
    let context_id = agree_through_leaders(local_comm, &parent, link.as_ref(), leader, tag, header[1])?;
    let made = new_inter(&parent, local.members.clone(), Arc::from(remote_members), context_id);
    install(Some(made))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_create(local_comm: MPI_Comm, local_leader: c_int, peer_comm: MPI_Comm, remote_leader: c_int, tag: c_int, newintercomm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        if newintercomm.is_null() {
            return Err(error(local_comm, MPI_ERR_ARG, "newintercomm must not be NULL"));
        }
        let created = intercomm_create(local_comm, local_leader, peer_comm, remote_leader, tag)?;
        // SAFETY: non-null; points to the caller's handle.
        unsafe { *newintercomm = created };
        Ok(())
    })();
    finish("MPI_Intercomm_create", result)
}

/// Whether the local group comes first in the merged communicator: the group that passed high =
/// false does; if both passed the same, the group with the lowest job rank.
fn local_group_first(local_high: bool, remote_high: bool, local: &[u32], remote: &[u32]) -> bool {
    if local_high != remote_high {
        !local_high
    } else {
        local.iter().min() < remote.iter().min()
    }
}

/// MPI_Intercomm_merge: an intracommunicator of both groups. The local leader's `high` counts for
/// its whole group.
fn merge(intercomm: MPI_Comm, high: c_int) -> MpiResult<MPI_Comm> {
    let parent = parent_of(intercomm)?;
    let inter = &parent.shared;
    if !inter.is_inter() {
        return Err(error(intercomm, MPI_ERR_COMM, "the communicator is not an intercommunicator"));
    }
    let gathered = gather_local(intercomm, &parent, &[parent.next, u32::from(high != 0)])?;
    let (local_max, local_high) = (largest(&gathered, 2, 0), gathered[1] != 0);
    let theirs = swap_with_remote(intercomm, inter, parent.tuning, &[local_max, u32::from(local_high)], 2)?;
    let context_id = agree_between_groups(intercomm, &parent, local_max.max(theirs[0]), 1)?;
    let (first, second) = if local_group_first(local_high, theirs[1] != 0, &inter.members, &inter.peers) { (&inter.members, &inter.peers) } else { (&inter.peers, &inter.members) };
    let members: Vec<u32> = first.iter().chain(second.iter()).copied().collect();
    let made = derived(Arc::new(CommShared::new(Arc::from(members), parent.me, context_id)), &parent);
    install(Some(made))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_merge(intercomm: MPI_Comm, high: c_int, newintracomm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        if newintracomm.is_null() {
            return Err(error(intercomm, MPI_ERR_ARG, "newintracomm must not be NULL"));
        }
        let created = merge(intercomm, high)?;
        // SAFETY: non-null; points to the caller's handle.
        unsafe { *newintracomm = created };
        Ok(())
    })();
    finish("MPI_Intercomm_merge", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        let value = rt.comms.get_inter(comm)?.peer_count() as c_int;
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(size, value, "size") }
    });
    finish("MPI_Comm_remote_size", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_group(comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    let result = runtime::with(|rt| {
        let remote = rt.comms.get_inter(comm)?.peers.clone();
        if group.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "group must not be NULL"));
        }
        let handle = rt.groups.insert(remote);
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *group = handle };
        Ok(())
    });
    finish("MPI_Comm_remote_group", result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_low_group_comes_first_in_a_merge() {
        assert!(local_group_first(false, true, &[4, 5], &[0, 1]));
        assert!(!local_group_first(true, false, &[0, 1], &[4, 5]));
        assert!(local_group_first(true, true, &[0, 2], &[1, 3]));
        assert!(!local_group_first(false, false, &[1, 3], &[0, 2]));
    }

    #[test]
    fn largest_reads_one_field_of_each_record() {
        assert_eq!(largest(&[1, 9, 7, 2, 5, 3], 2, 0), 7);
        assert_eq!(largest(&[1, 9, 7, 2, 5, 3], 2, 1), 9);
        assert_eq!(largest(&[], 2, 1), 0);
    }
}
