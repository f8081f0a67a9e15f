//! Communicators: the table of MPI_Comm handles, context ids, and the calls that query or free a
//! communicator. [`abi`] has the calls that query or free one, `construct` makes intracommunicators,
//! `intercomm` intercommunicators, `coming` is one that MPI_Comm_idup completes later; `channel`
//! is the point-to-point channel the collectives run on.
//!
//! Each communicator has a context id `n`; its point-to-point traffic uses engine context `2n`, its
//! collective traffic `2n + 1`, so the two never match each other. MPI_COMM_WORLD is id 0 and
//! MPI_COMM_SELF id 1 on every rank. A new communicator takes the largest "next free id" of its
//! future members (gathered over the parent), and every one of them then moves its next free id
//! past it: the id is therefore unused by every communicator any member belongs to. An
//! intercommunicator takes two ids: `n` for the traffic between its groups and `n + 1` for a
//! communicator of its local group alone ([`CommShared::local`]). Ids are not reused (2^31 of them).

pub mod abi;
pub mod channel;
pub mod coming;
pub mod construct;
pub(crate) mod hardware;
pub mod ids;
pub mod idup;
pub mod intercomm;

use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

pub(crate) use channel::Agreement;
pub use ids::ContextIds;

use braid_engine::Engine;

use crate::coll::algorithms::flags::FlagsCell;
use crate::coll::hierarchy::{Hierarchy, LinkCosts, NodeLayout};
use crate::consts::*;
use crate::error::{error, MpiError, MpiResult};
use crate::group::{self, Members};
use crate::topo::Topology;

/// The largest tag a program may use (the MPI_TAG_UB attribute).
pub const TAG_UB: c_int = c_int::MAX;

/// Info hints of a communicator (MPI_Comm_set_info), in the order their keys were first set.
pub type Hints = Vec<(String, String)>;

/// What a communicator's members share, immutable once created (requests and channels keep it
/// alive after MPI_Comm_free).
#[derive(Debug)]
pub struct CommShared {
    /// Job rank of each communicator rank: the local group of an intercommunicator.
    pub members: Members,
    /// This process's communicator rank (in the local group).
    pub rank: u32,
    /// Job rank of each rank that point-to-point calls name: `members` itself, or the remote group
    /// of an intercommunicator.
    pub peers: Members,
    pub p2p_context: u32,
    /// Collective traffic; on an intercommunicator, traffic between the two groups.
    pub coll_context: u32,
    /// An intercommunicator's local group as an intracommunicator of its own, on the next context
    /// id: what the group agrees on among itself (and the local steps of collectives).
    pub local: Option<Arc<CommShared>>,
    /// `(job rank, peer rank)` sorted by job rank; empty when peers[i] == i.
    by_job_rank: Vec<(u32, u32)>,
    /// Collectives started on this communicator: the next one's tag on the collective context.
    coll_sequence: AtomicU32,
    /// Blocking collectives started on this communicator (their tags are apart).
    blocking_sequence: AtomicU32,
    /// The node structure and links its collectives may use, found at the first collective.
    hierarchy: OnceLock<Option<Arc<Hierarchy>>>,
    /// The flag segment of the blocking collectives, when every rank is on this node.
    node_flags: OnceLock<Option<Arc<FlagsCell>>>,
}

/// Collective sequence numbers wrap within this mask (below 2^29): only the collectives in flight
/// at once on one communicator need different tags.
const COLL_SEQUENCE_MASK: u32 = 0x1FFF_FFFF;
/// Set in the tags of blocking collectives, clear in the non-blocking ones' (tags stay
/// non-negative i32s below 2^30).
const BLOCKING_COLL_TAG: u32 = 0x2000_0000;

/// The next number of a sequence that one thread at a time advances (a communicator's
/// collectives run one at a time).
fn next_in(sequence: &AtomicU32) -> u32 {
    let number = sequence.load(Ordering::Relaxed);
    sequence.store(number.wrapping_add(1), Ordering::Relaxed);
    number
}

impl CommShared {
    /// An intracommunicator of `members` (which contain `me`) on context id `context_id`.
    pub fn new(members: Members, me: u32, context_id: u32) -> CommShared {
        CommShared::build(members.clone(), me, members, 2 * context_id, 2 * context_id + 1, None)
    }

    /// An intercommunicator between `local` (which contains `me`) and `remote`, on context ids
    /// `context_id` and `context_id + 1`.
    pub fn new_inter(local: Members, remote: Members, me: u32, context_id: u32) -> CommShared {
        let local_comm = Arc::new(CommShared::new(local.clone(), me, context_id + 1));
        CommShared::build(local, me, remote, 2 * context_id, 2 * context_id + 1, Some(local_comm))
    }

    /// `members` talking on `context` only: for an [`Agreement`] among some of a communicator's
    /// members, on that communicator's collective context (with a tag of its own).
    pub(crate) fn group_view(members: Members, me: u32, context: u32) -> CommShared {
        CommShared::build(members.clone(), me, members, context, context, None)
    }

    fn build(members: Members, me: u32, peers: Members, p2p_context: u32, coll_context: u32, local: Option<Arc<CommShared>>) -> CommShared {
        let rank = group::position(&members, me).expect("a communicator is built only on its members") as u32;
        let identity = peers.iter().enumerate().all(|(i, &m)| m == i as u32);
        let mut by_job_rank: Vec<(u32, u32)> = if identity { Vec::new() } else { peers.iter().enumerate().map(|(i, &m)| (m, i as u32)).collect() };
        by_job_rank.sort_unstable();
        CommShared {
            members,
            rank,
            peers,
            p2p_context,
            coll_context,
            local,
            by_job_rank,
            coll_sequence: AtomicU32::new(0),
            blocking_sequence: AtomicU32::new(0),
            hierarchy: OnceLock::new(),
            node_flags: OnceLock::new(),
        }
    }

    /// The nodes of an intracommunicator's ranks and the links between them, when the ranks span
    /// nodes with more than one rank on some node and both links have profiles.
    /// With `debug`, the first call says what it found.
    pub fn hierarchy(&self, engine: &Engine, debug: bool) -> Option<Arc<Hierarchy>> {
        let found = self.hierarchy.get_or_init(|| {
            // With processes of another job, the members would not see the same layout.
            if self.is_inter() || self.members.iter().any(|&job| engine.is_joined(job)) {
                return None;
            }
            let node_ids: Vec<u32> = self.members.iter().map(|&job| engine.node_id(job)).collect();
            let layout = NodeLayout::new(&node_ids);
            let links = engine.links();
            let costs = LinkCosts { intra: links.intra_node.clone()?, inter: links.inter_node.clone()?, wake_up: links.wake_up_ns.unwrap_or(0.0), awake: links.awake_ns };
            if debug {
                eprintln!(
                    "braid: rank {}: a communicator of {} ranks on nodes {:?}: hierarchical collectives where the cost model predicts they pay (wake-up {:.1} us, for rounds longer than {:.0} us)",
                    engine.rank(),
                    self.size(),
                    layout.nodes(),
                    costs.wake_up / 1e3,
                    costs.awake / 1e3
                );
            }
            let hierarchy = Hierarchy::new(layout, costs);
            // One rank prints the model's choices: every rank makes the same ones.
            let hierarchy = if debug && self.rank == 0 { hierarchy.reporting() } else { hierarchy };
            hierarchy.layout.is_hierarchical().then(|| Arc::new(hierarchy))
        });
        found.clone()
    }

    /// The cell of the flag segment through which the blocking collectives of an
    /// intracommunicator of several ranks, all on this node, may pass small data (see
    /// [`crate::coll::algorithms::flags`]); made, or found unusable, at the first of them.
    #[inline]
    pub fn node_flags(&self, engine: &Engine) -> Option<Arc<FlagsCell>> {
        self.node_flags
            .get_or_init(|| {
                let node_of = |job: u32| engine.node_of().get(job as usize).copied();
                let one_node = self.members.iter().all(|&job| node_of(job).is_some() && node_of(job) == node_of(self.members[0]));
                (!self.is_inter() && self.size() > 1 && one_node).then(|| Arc::new(FlagsCell::new(engine.wakes_on_ring(), engine.oversubscribed())))
            })
            .clone()
    }

    /// The flag segment's cell, if [`CommShared::node_flags`] has been asked for it before (and
    /// found the communicator on one node); this asks nothing of the engine.
    #[inline]
    pub fn node_flags_known(&self) -> Option<&FlagsCell> {
        self.node_flags.get()?.as_deref()
    }

    /// The size of the (local) group.
    #[inline]
    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// How many ranks point-to-point calls can name (the remote group's size on an
    /// intercommunicator).
    #[inline]
    pub fn peer_count(&self) -> usize {
        self.peers.len()
    }

    /// The job rank of point-to-point rank `rank`.
    #[inline]
    pub fn job_rank(&self, rank: u32) -> u32 {
        self.peers[rank as usize]
    }

    /// Whether point-to-point rank i is job rank i for every peer.
    #[inline]
    pub fn ranks_are_job_ranks(&self) -> bool {
        self.by_job_rank.is_empty()
    }

    /// The point-to-point rank of job rank `job`, if it is a peer.
    #[inline]
    pub fn rank_of_job(&self, job: u32) -> Option<u32> {
        if self.by_job_rank.is_empty() {
            return ((job as usize) < self.peers.len()).then_some(job);
        }
        self.by_job_rank.binary_search_by_key(&job, |&(j, _)| j).ok().map(|i| self.by_job_rank[i].1)
    }

    /// The tag of the next collective on this communicator (every member starts its collectives
    /// in the same order, so the n-th has the same tag everywhere).
    pub fn next_coll_tag(&self) -> i32 {
        (next_in(&self.coll_sequence) & COLL_SEQUENCE_MASK) as i32
    }

    /// The tag of the next blocking collective: a sequence of its own, apart from the
    /// non-blocking ones'. Programs interleave the two differently on different ranks (a rank
    /// that starts an MPI_Iallreduce before an MPI_Barrier that the others call first: mpi4py's
    /// MPI_Comm_iagree does), which MPICH and Open MPI tolerate because their non-blocking
    /// collectives number their messages apart too.
    pub fn next_blocking_coll_tag(&self) -> i32 {
        ((next_in(&self.blocking_sequence) & COLL_SEQUENCE_MASK) | BLOCKING_COLL_TAG) as i32
    }

    pub fn is_inter(&self) -> bool {
        self.local.is_some()
    }

    /// How many context ids the communicator takes (from `p2p_context / 2` on).
    pub fn context_ids(&self) -> u32 {
        if self.is_inter() {
            2
        } else {
            1
        }
    }
}

/// One communicator handle.
pub struct Comm {
    pub shared: Arc<CommShared>,
    pub errhandler: MPI_Errhandler,
    pub name: String,
    pub hints: Hints,
    pub topology: Option<Topology>,
    /// The session it comes from (MPI_Comm_create_from_group, and what is made from that).
    pub session: Option<MPI_Session>,
}

impl Comm {
    pub fn new(shared: Arc<CommShared>, errhandler: MPI_Errhandler) -> Comm {
        Comm { shared, errhandler, name: String::new(), hints: Hints::new(), topology: None, session: None }
    }
}

/// All communicators of this process.
pub struct CommTable {
    slots: Vec<Option<Comm>>,
    /// Handles that MPI_Comm_idup has given out and not completed yet, with the error handler
    /// each will have (set on the handle before completion, as bindings do at once).
    coming: Vec<(MPI_Comm, MPI_Errhandler)>,
    ids: Arc<ContextIds>,
    job_rank: u32,
}

impl CommTable {
    /// MPI_COMM_WORLD and MPI_COMM_SELF of job rank `rank` in a job of `size`.
    pub fn new(rank: u32, size: u32) -> CommTable {
        let mut world = Comm::new(Arc::new(CommShared::new((0..size).collect(), rank, 0)), MPI_ERRORS_ARE_FATAL);
        world.name = "MPI_COMM_WORLD".to_string();
        let mut own = Comm::new(Arc::new(CommShared::new(Arc::from(vec![rank]), rank, 1)), MPI_ERRORS_ARE_FATAL);
        own.name = "MPI_COMM_SELF".to_string();
        crate::error::set_world_errhandler(MPI_ERRORS_ARE_FATAL);
        CommTable { slots: vec![None, Some(world), Some(own)], coming: Vec::new(), ids: Arc::new(ContextIds::new(2)), job_rank: rank }
    }

    /// The processes at least one communicator still reaches (either group of an
    /// intercommunicator): what MPI_Comm_disconnect must keep connected.
    pub fn reached(&self) -> std::collections::HashSet<u32> {
        let mut reached = std::collections::HashSet::new();
        for comm in self.slots.iter().flatten() {
            reached.extend(comm.shared.members.iter().chain(comm.shared.peers.iter()).copied());
        }
        reached
    }

    #[inline]
    pub fn get(&self, comm: MPI_Comm) -> MpiResult<&Comm> {
        match usize::try_from(comm).ok().and_then(|i| self.slots.get(i)) {
            Some(Some(entry)) => Ok(entry),
            _ => Err(self.unusable(comm)),
        }
    }

    #[cold]
    fn unusable(&self, comm: MPI_Comm) -> MpiError {
        if self.is_coming(comm) {
            return error(MPI_COMM_WORLD, MPI_ERR_COMM, format!("communicator {comm} is not usable before its MPI_Comm_idup request completes"));
        }
        invalid_comm(comm)
    }

    pub fn get_mut(&mut self, comm: MPI_Comm) -> MpiResult<&mut Comm> {
        if !matches!(usize::try_from(comm).ok().and_then(|i| self.slots.get(i)), Some(Some(_))) {
            return Err(self.unusable(comm));
        }
        Ok(self.slots[comm as usize].as_mut().expect("checked above"))
    }

    /// An intercommunicator's shared part (MPI_ERR_COMM for an intracommunicator).
    pub fn get_inter(&self, comm: MPI_Comm) -> MpiResult<&Arc<CommShared>> {
        let shared = &self.get(comm)?.shared;
        if !shared.is_inter() {
            return Err(error(comm, MPI_ERR_COMM, "the communicator is not an intercommunicator"));
        }
        Ok(shared)
    }

    /// An intracommunicator's shared part (MPI_ERR_COMM for an intercommunicator).
    pub fn get_intra(&self, comm: MPI_Comm) -> MpiResult<&Arc<CommShared>> {
        let shared = &self.get(comm)?.shared;
        if shared.is_inter() {
            return Err(error(comm, MPI_ERR_COMM, "the communicator is an intercommunicator; this call needs an intracommunicator"));
        }
        Ok(shared)
    }

    /// The error handler that applies to errors on `comm` (MPI_COMM_WORLD's if `comm` is invalid).
    pub fn errhandler(&self, comm: MPI_Comm) -> MPI_Errhandler {
        self.get(comm).or_else(|_| self.get(MPI_COMM_WORLD)).map_or(MPI_ERRORS_ARE_FATAL, |c| c.errhandler)
    }

    /// Whether a communicator has `errhandler` attached (a user handler lives while it is).
    pub fn uses_errhandler(&self, errhandler: MPI_Errhandler) -> bool {
        self.slots.iter().flatten().any(|c| c.errhandler == errhandler)
    }

    pub fn job_rank(&self) -> u32 {
        self.job_rank
    }

    /// The context ids this process has taken.
    pub fn ids(&self) -> &Arc<ContextIds> {
        &self.ids
    }

    pub fn insert(&mut self, comm: Comm) -> MPI_Comm {
        let handle = self.free_handle();
        self.slots[handle as usize] = Some(comm);
        handle
    }

    /// A handle for a communicator that MPI_Comm_idup completes later ([`CommTable::fill`]); until
    /// then it names no communicator.
    /// `errhandler`: the one it will have unless one is set meanwhile.
    pub fn reserve_handle(&mut self, errhandler: MPI_Errhandler) -> MPI_Comm {
        let handle = self.free_handle();
        self.coming.push((handle, errhandler));
        handle
    }

    /// Whether `comm` is a handle that MPI_Comm_idup has not completed yet.
    pub fn is_coming(&self, comm: MPI_Comm) -> bool {
        self.coming.iter().any(|&(handle, _)| handle == comm)
    }

    /// The error handler a not yet completed MPI_Comm_idup handle will have.
    pub fn coming_errhandler(&self, comm: MPI_Comm) -> Option<MPI_Errhandler> {
        self.coming.iter().find(|&&(handle, _)| handle == comm).map(|&(_, errhandler)| errhandler)
    }

    /// Sets the error handler of a not yet completed MPI_Comm_idup handle; false if `comm` is
    /// not one.
    pub fn set_coming_errhandler(&mut self, comm: MPI_Comm, errhandler: MPI_Errhandler) -> bool {
        match self.coming.iter_mut().find(|(handle, _)| *handle == comm) {
            Some(entry) => {
                entry.1 = errhandler;
                true
            }
            None => false,
        }
    }

    /// Puts the communicator a reserved handle was waiting for in place (None: it failed, and the
    /// handle is free again).
    pub fn fill(&mut self, handle: MPI_Comm, comm: Option<Comm>) {
        let errhandler = self.coming_errhandler(handle);
        self.coming.retain(|&(h, _)| h != handle);
        self.slots[handle as usize] = comm.map(|comm| Comm { errhandler: errhandler.unwrap_or(comm.errhandler), ..comm });
    }

    /// An empty slot that no MPI_Comm_idup has reserved (the slot vector grows to hold it).
    fn free_handle(&mut self) -> MPI_Comm {
        let free = (3..self.slots.len()).find(|&i| self.slots[i].is_none() && !self.is_coming(i as MPI_Comm));
        match free {
            Some(free) => free as MPI_Comm,
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as MPI_Comm
            }
        }
    }

    /// Checks that `comm` is a user communicator, which MPI_Comm_free may free.
    pub fn check_freeable(&self, comm: MPI_Comm) -> MpiResult<()> {
        if comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF {
            return Err(error(comm, MPI_ERR_COMM, "predefined communicators cannot be freed"));
        }
        self.get(comm).map(|_| ())
    }

    /// Removes a user communicator (its attributes must be deleted already).
    pub fn remove(&mut self, comm: MPI_Comm) -> MpiResult<Comm> {
        self.check_freeable(comm)?;
        Ok(self.slots[comm as usize].take().expect("checked above"))
    }
}

#[cold]
fn invalid_comm(comm: MPI_Comm) -> MpiError {
    let detail = if comm == MPI_COMM_NULL { "MPI_COMM_NULL is not a communicator".to_string() } else { format!("{comm} is not a valid communicator") };
    error(MPI_COMM_WORLD, MPI_ERR_COMM, detail)
}

/// MPI_Comm_compare of two different handles.
fn compare(first: &CommShared, second: &CommShared) -> c_int {
    if first.is_inter() != second.is_inter() {
        return MPI_UNEQUAL;
    }
    let local = group::compare(&first.members, &second.members);
    let remote = if first.is_inter() { group::compare(&first.peers, &second.peers) } else { MPI_IDENT };
    match local.max(remote) {
        MPI_IDENT => MPI_CONGRUENT,
        other => other,
    }
}

/// `hints` with `update`'s keys set to its values (a key keeps its place).
fn merge_hints(mut hints: Hints, update: Hints) -> Hints {
    for (key, value) in update {
        match hints.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => hints.push((key, value)),
        }
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_translation_works_for_world_and_subsets() {
        let world = CommShared::new((0..4).collect(), 2, 0);
        assert_eq!(world.rank, 2);
        assert_eq!(world.rank_of_job(3), Some(3));
        assert_eq!(world.rank_of_job(4), None);
        let subset = CommShared::new(Arc::from(vec![7, 3, 5]), 5, 4);
        assert_eq!(subset.rank, 2);
        assert_eq!((subset.p2p_context, subset.coll_context), (8, 9));
        assert_eq!(subset.job_rank(1), 3);
        assert_eq!(subset.rank_of_job(7), Some(0));
        assert_eq!(subset.rank_of_job(5), Some(2));
        assert_eq!(subset.rank_of_job(4), None);
        assert!(!subset.is_inter());
        assert_eq!(subset.context_ids(), 1);
    }

    #[test]
    fn intercommunicator_ranks_name_the_remote_group() {
        let inter = CommShared::new_inter(Arc::from(vec![4, 1]), Arc::from(vec![0, 5, 2]), 1, 6);
        assert!(inter.is_inter());
        assert_eq!((inter.rank, inter.size(), inter.peer_count()), (1, 2, 3));
        assert_eq!((inter.p2p_context, inter.coll_context), (12, 13));
        assert_eq!(inter.job_rank(2), 2);
        assert_eq!(inter.rank_of_job(5), Some(1));
        assert_eq!(inter.rank_of_job(4), None, "a local member is not a peer");
        let local = inter.local.as_ref().unwrap();
        assert_eq!((local.rank, local.peer_count(), local.coll_context), (1, 2, 15));
        assert_eq!(inter.context_ids(), 2);
        let remote_is_identity = CommShared::new_inter(Arc::from(vec![2, 3]), Arc::from(vec![0, 1]), 3, 6);
        assert!(remote_is_identity.ranks_are_job_ranks());
        assert_eq!(remote_is_identity.rank_of_job(1), Some(1));
        assert_eq!(remote_is_identity.rank_of_job(2), None);
    }

    #[test]
    fn comparison_of_intercommunicators_looks_at_both_groups() {
        let inter = CommShared::new_inter(Arc::from(vec![0, 2]), Arc::from(vec![1, 3]), 0, 4);
        let same = CommShared::new_inter(Arc::from(vec![0, 2]), Arc::from(vec![1, 3]), 0, 6);
        let reordered = CommShared::new_inter(Arc::from(vec![2, 0]), Arc::from(vec![1, 3]), 0, 8);
        let other_remote = CommShared::new_inter(Arc::from(vec![0, 2]), Arc::from(vec![1]), 0, 10);
        let intra = CommShared::new(Arc::from(vec![0, 2]), 0, 12);
        assert_eq!(compare(&inter, &same), MPI_CONGRUENT);
        assert_eq!(compare(&inter, &reordered), MPI_SIMILAR);
        assert_eq!(compare(&inter, &other_remote), MPI_UNEQUAL);
        assert_eq!(compare(&inter, &intra), MPI_UNEQUAL);
        assert_eq!(compare(&intra, &CommShared::new(Arc::from(vec![2, 0]), 0, 14)), MPI_SIMILAR);
    }

    #[test]
    fn the_table_protects_predefined_communicators() {
        let mut table = CommTable::new(0, 2);
        assert_eq!(table.get(MPI_COMM_WORLD).unwrap().shared.size(), 2);
        assert_eq!(table.get(MPI_COMM_SELF).unwrap().shared.size(), 1);
        assert_eq!(table.get(MPI_COMM_NULL).err().unwrap().class, MPI_ERR_COMM);
        assert_eq!(table.remove(MPI_COMM_WORLD).err().unwrap().class, MPI_ERR_COMM);
        assert_eq!(table.get_inter(MPI_COMM_WORLD).err().unwrap().class, MPI_ERR_COMM);
        assert!(table.get_intra(MPI_COMM_WORLD).is_ok());
        let handle = table.insert(Comm::new(Arc::new(CommShared::new(Arc::from(vec![0]), 0, 2)), MPI_ERRORS_RETURN));
        assert_eq!(handle, 3);
        assert_eq!(table.errhandler(handle), MPI_ERRORS_RETURN);
        assert!(table.remove(handle).is_ok());
        assert_eq!(table.get(handle).err().unwrap().class, MPI_ERR_COMM);
        assert_eq!(table.errhandler(handle), MPI_ERRORS_ARE_FATAL);
    }

    #[test]
    fn hints_merge_by_key() {
        let hints = vec![("a".to_string(), "1".to_string()), ("b".to_string(), "2".to_string())];
        let update = vec![("b".to_string(), "3".to_string()), ("c".to_string(), "4".to_string())];
        let merged = merge_hints(hints, update);
        assert_eq!(merged, vec![("a".to_string(), "1".to_string()), ("b".to_string(), "3".to_string()), ("c".to_string(), "4".to_string())]);
    }
}
