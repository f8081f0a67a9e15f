//! Communicators: the table of MPI_Comm handles, context ids, attributes, and [`CommChannel`], the
//! point-to-point channel the collectives run on.
//!
//! Each communicator has a context id `n`; its point-to-point traffic uses engine context `2n`, its
//! collective traffic `2n + 1`, so the two never match each other. MPI_COMM_WORLD is id 0 and
//! MPI_COMM_SELF id 1 on every rank. A new communicator takes the largest "next free id" of the
//! parent's members (one allgather), and every member then moves its next free id past it: the id
//! is therefore unused by every communicator any member belongs to. Ids are not reused (2^31 of them).

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use braid_engine::{RequestId, SendMode, Source, TagSelector};

use crate::coll::{algorithms, CollChannel, CollTuning};
use crate::consts::*;
use crate::error::{error, finish, MpiError, MpiResult};
use crate::group::{self, store, Members};
use crate::runtime::{self, engine_error};
use crate::topo::Topology;

/// The largest tag a program may use (the MPI_TAG_UB attribute).
pub const TAG_UB: c_int = c_int::MAX;
/// The tag of every collective message (collectives have their own context, and the order of
/// messages between two ranks is preserved, so one tag is enough).
const COLL_TAG: i32 = 0;
/// Keyvals created by MPI_Comm_create_keyval start here (below are the predefined ones).
const FIRST_USER_KEYVAL: c_int = 16;

static TAG_UB_VALUE: c_int = TAG_UB;
static HOST_VALUE: c_int = MPI_PROC_NULL;
static IO_VALUE: c_int = MPI_ANY_SOURCE;
static WTIME_IS_GLOBAL_VALUE: c_int = 0;
static APPNUM_VALUE: c_int = 0;
static UNIVERSE_SIZE_VALUE: AtomicI32 = AtomicI32::new(1);

/// What a communicator's members share, immutable once created (requests and channels keep it
/// alive after MPI_Comm_free).
#[derive(Debug)]
pub struct CommShared {
    /// Job rank of each communicator rank.
    pub members: Members,
    /// This process's communicator rank.
    pub rank: u32,
    pub p2p_context: u32,
    pub coll_context: u32,
    /// `(job rank, communicator rank)` sorted by job rank; empty when members[i] == i.
    by_job_rank: Vec<(u32, u32)>,
}

impl CommShared {
    /// `members` must contain `me`.
    pub fn new(members: Members, me: u32, context_id: u32) -> CommShared {
        let rank = group::position(&members, me).expect("a communicator is built only on its members") as u32;
        let identity = members.iter().enumerate().all(|(i, &m)| m == i as u32);
        let mut by_job_rank: Vec<(u32, u32)> = if identity { Vec::new() } else { members.iter().enumerate().map(|(i, &m)| (m, i as u32)).collect() };
        by_job_rank.sort_unstable();
        CommShared { members, rank, p2p_context: 2 * context_id, coll_context: 2 * context_id + 1, by_job_rank }
    }

    #[inline]
    pub fn size(&self) -> usize {
        self.members.len()
    }

    #[inline]
    pub fn job_rank(&self, rank: u32) -> u32 {
        self.members[rank as usize]
    }

    /// Whether communicator rank i is job rank i for every member.
    #[inline]
    pub fn ranks_are_job_ranks(&self) -> bool {
        self.by_job_rank.is_empty()
    }

    /// The communicator rank of job rank `job`, if it is a member.
    #[inline]
    pub fn rank_of_job(&self, job: u32) -> Option<u32> {
        if self.by_job_rank.is_empty() {
            return ((job as usize) < self.members.len()).then_some(job);
        }
        self.by_job_rank.binary_search_by_key(&job, |&(j, _)| j).ok().map(|i| self.by_job_rank[i].1)
    }
}

/// One communicator handle.
pub struct Comm {
    pub shared: Arc<CommShared>,
    pub errhandler: MPI_Errhandler,
    pub name: String,
    pub attributes: Vec<(c_int, *mut c_void)>,
    pub topology: Option<Topology>,
}

impl Comm {
    pub fn new(shared: Arc<CommShared>, errhandler: MPI_Errhandler) -> Comm {
        Comm { shared, errhandler, name: String::new(), attributes: Vec::new(), topology: None }
    }
}

/// A keyval made by MPI_Comm_create_keyval: callback addresses as the C caller passed them.
#[derive(Debug, Clone, Copy)]
struct Keyval {
    copy: *const c_void,
    delete: *const c_void,
    extra_state: *mut c_void,
}

/// A user delete callback to run once the state is no longer borrowed.
pub(crate) struct PendingDelete {
    comm: MPI_Comm,
    keyval: c_int,
    value: *mut c_void,
    callback: Keyval,
}

impl PendingDelete {
    /// Runs the callback; its non-success return is the call's error.
    ///
    /// # Safety
    /// The callback is the caller's function, called as MPI specifies.
    unsafe fn run(self) -> MpiResult<()> {
        if self.callback.delete.is_null() {
            return Ok(());
        }
        // SAFETY: a non-null delete address came from MPI_Comm_create_keyval, where C passed a
        // function of type MPI_Comm_delete_attr_function.
        let function: MPI_Comm_delete_attr_function = unsafe { std::mem::transmute(self.callback.delete) };
        // SAFETY: calling the user's callback with the arguments MPI defines.
        let code = unsafe { function(self.comm, self.keyval, self.value, self.callback.extra_state) };
        if code == MPI_SUCCESS {
            Ok(())
        } else {
            Err(error(self.comm, code, format!("the delete callback of keyval {} failed", self.keyval)))
        }
    }
}

/// All communicators of this process.
pub struct CommTable {
    slots: Vec<Option<Comm>>,
    next_context_id: u32,
    job_rank: u32,
    keyvals: Vec<Option<Keyval>>,
}

impl CommTable {
    /// MPI_COMM_WORLD and MPI_COMM_SELF of job rank `rank` in a job of `size`.
    pub fn new(rank: u32, size: u32) -> CommTable {
        UNIVERSE_SIZE_VALUE.store(size as c_int, Ordering::Relaxed);
        let mut world = Comm::new(Arc::new(CommShared::new((0..size).collect(), rank, 0)), MPI_ERRORS_ARE_FATAL);
        world.name = "MPI_COMM_WORLD".to_string();
        let mut own = Comm::new(Arc::new(CommShared::new(Arc::from(vec![rank]), rank, 1)), MPI_ERRORS_ARE_FATAL);
        own.name = "MPI_COMM_SELF".to_string();
        crate::error::set_world_errhandler(MPI_ERRORS_ARE_FATAL);
        CommTable { slots: vec![None, Some(world), Some(own)], next_context_id: 2, job_rank: rank, keyvals: Vec::new() }
    }

    #[inline]
    pub fn get(&self, comm: MPI_Comm) -> MpiResult<&Comm> {
        match usize::try_from(comm).ok().and_then(|i| self.slots.get(i)) {
            Some(Some(entry)) => Ok(entry),
            _ => Err(invalid_comm(comm)),
        }
    }

    pub fn get_mut(&mut self, comm: MPI_Comm) -> MpiResult<&mut Comm> {
        match usize::try_from(comm).ok().and_then(|i| self.slots.get_mut(i)) {
            Some(Some(entry)) => Ok(entry),
            _ => Err(invalid_comm(comm)),
        }
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

    pub fn next_context_id(&self) -> u32 {
        self.next_context_id
    }

    /// Records that ids below `next` are taken.
    pub fn reserve_context_ids(&mut self, next: u32) {
        self.next_context_id = self.next_context_id.max(next);
    }

    pub fn insert(&mut self, comm: Comm) -> MPI_Comm {
        match self.slots.iter().skip(3).position(|s| s.is_none()) {
            Some(free) => {
                self.slots[free + 3] = Some(comm);
                (free + 3) as MPI_Comm
            }
            None => {
                self.slots.push(Some(comm));
                (self.slots.len() - 1) as MPI_Comm
            }
        }
    }

    /// Removes a user communicator; returns the delete callbacks its attributes need.
    pub(crate) fn remove(&mut self, comm: MPI_Comm) -> MpiResult<Vec<PendingDelete>> {
        if comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF {
            return Err(error(comm, MPI_ERR_COMM, "predefined communicators cannot be freed"));
        }
        self.get(comm)?;
        let entry = self.slots[comm as usize].take().expect("checked above");
        Ok(entry.attributes.iter().filter_map(|&(keyval, value)| self.pending_delete(comm, keyval, value)).collect())
    }

    fn keyval(&self, keyval: c_int) -> Option<Keyval> {
        let index = usize::try_from(keyval.checked_sub(FIRST_USER_KEYVAL)?).ok()?;
        *self.keyvals.get(index)?
    }

    fn pending_delete(&self, comm: MPI_Comm, keyval: c_int, value: *mut c_void) -> Option<PendingDelete> {
        self.keyval(keyval).map(|callback| PendingDelete { comm, keyval, value, callback })
    }
}

#[cold]
fn invalid_comm(comm: MPI_Comm) -> MpiError {
    let detail = if comm == MPI_COMM_NULL { "MPI_COMM_NULL is not a communicator".to_string() } else { format!("{comm} is not a valid communicator") };
    error(MPI_COMM_WORLD, MPI_ERR_COMM, detail)
}

/// Point-to-point on a communicator's collective context (ranks are communicator ranks).
pub struct CommChannel {
    shared: Arc<CommShared>,
    tuning: CollTuning,
}

impl CommChannel {
    pub fn new(shared: Arc<CommShared>, tuning: CollTuning) -> CommChannel {
        CommChannel { shared, tuning }
    }

    fn peer(&self, rank: usize) -> Result<u32, i32> {
        if rank < self.shared.size() {
            Ok(self.shared.job_rank(rank as u32))
        } else {
            Err(MPI_ERR_RANK)
        }
    }
}

/// The channel the collectives of `comm` run on.
pub fn coll_channel(comm: MPI_Comm) -> Result<CommChannel, c_int> {
    runtime::with(|rt| Ok(CommChannel::new(rt.comms.get(comm)?.shared.clone(), rt.tuning))).map_err(|e| e.class)
}

/// Lends `data` to the engine as 'static.
///
/// # Safety
/// The caller waits for the engine request that uses the slice before `data`'s borrow ends.
unsafe fn lend(data: &[u8]) -> &'static [u8] {
    // SAFETY: same pointer and length; the caller keeps the memory alive until the engine is done.
    unsafe { std::slice::from_raw_parts(data.as_ptr(), data.len()) }
}

/// Lends `buffer` to the engine as 'static.
///
/// # Safety
/// As for [`lend`].
unsafe fn lend_mut(buffer: &mut [u8]) -> &'static mut [u8] {
    // SAFETY: same pointer and length; exclusive for the duration of the request.
    unsafe { std::slice::from_raw_parts_mut(buffer.as_mut_ptr(), buffer.len()) }
}

fn channel_failure(e: braid_engine::EngineError) -> i32 {
    engine_error(MPI_COMM_WORLD, e).class
}

impl CollChannel for CommChannel {
    fn rank(&self) -> usize {
        self.shared.rank as usize
    }

    fn size(&self) -> usize {
        self.shared.size()
    }

    fn send(&mut self, dest: usize, data: &[u8]) -> Result<(), i32> {
        let job = self.peer(dest)?;
        let context = self.shared.coll_context;
        runtime::with(|rt| {
            // A small message the transport takes at once needs no request.
            match rt.engine.try_send_now(data, job, COLL_TAG, context) {
                Ok(true) => return Ok(Ok(())),
                Ok(false) => {}
                Err(e) => return Ok(Err(channel_failure(e))),
            }
            // SAFETY: the request is waited for before this function returns.
            let request = rt.engine.isend(unsafe { lend(data) }, job, COLL_TAG, context, SendMode::Standard);
            Ok(request.and_then(|id| rt.engine.wait(id)).map(|_| ()).map_err(channel_failure))
        })
        .map_err(|e| e.class)?
    }

    fn recv(&mut self, source: usize, buffer: &mut [u8]) -> Result<(), i32> {
        let job = self.peer(source)?;
        let context = self.shared.coll_context;
        runtime::with(|rt| {
            // SAFETY: the request is waited for before this function returns.
            let request = rt.engine.irecv(unsafe { lend_mut(buffer) }, Source::Rank(job), TagSelector::Tag(COLL_TAG), context);
            Ok(request.and_then(|id| rt.engine.wait(id)).map_err(channel_failure).and_then(check_truncation))
        })
        .map_err(|e| e.class)?
    }

    fn sendrecv(&mut self, dest: usize, data: &[u8], source: usize, buffer: &mut [u8]) -> Result<(), i32> {
        let to = self.peer(dest)?;
        let from = self.peer(source)?;
        let context = self.shared.coll_context;
        runtime::with(|rt| {
            let engine = &mut rt.engine;
            let mut exchange = || -> Result<(RequestId, Option<RequestId>), braid_engine::EngineError> {
                // SAFETY: both requests are waited for before this function returns.
                let receive = engine.irecv(unsafe { lend_mut(buffer) }, Source::Rank(from), TagSelector::Tag(COLL_TAG), context)?;
                // A small message the transport takes at once needs no send request.
                if engine.try_send_now(data, to, COLL_TAG, context)? {
                    return Ok((receive, None));
                }
                // SAFETY: as above.
                let send = engine.isend(unsafe { lend(data) }, to, COLL_TAG, context, SendMode::Standard)?;
                Ok((receive, Some(send)))
            };
            let outcome = exchange().and_then(|(receive, send)| {
                let received = engine.wait(receive)?;
                if let Some(send) = send {
                    engine.wait(send)?;
                }
                Ok(received)
            });
            Ok(outcome.map_err(channel_failure).and_then(check_truncation))
        })
        .map_err(|e| e.class)?
    }

    fn exchange_all(&mut self, data: &[u8], all: &mut [u8]) -> Result<(), i32> {
        let (rank, size, len) = (self.rank(), self.size(), data.len());
        if size > EXCHANGE_ALL_MAX || all.len() != len * size {
            return crate::coll::pairwise_exchange_all(self, data, all);
        }
        let mut peers = [0u32; EXCHANGE_ALL_MAX];
        for (index, peer) in peers[..size].iter_mut().enumerate() {
            *peer = self.peer(index)?;
        }
        let context = self.shared.coll_context;
        runtime::with(|rt| {
            let engine = &mut rt.engine;
            let mut receives = [None; EXCHANGE_ALL_MAX];
            let mut sends = [None; EXCHANGE_ALL_MAX];
            let mut exchange = || -> Result<bool, braid_engine::EngineError> {
                for (source, block) in all.chunks_exact_mut(len.max(1)).enumerate().filter(|&(source, _)| source != rank) {
                    // SAFETY: every request is waited for before this function returns, and the
                    // blocks are disjoint.
                    let request = engine.irecv(unsafe { lend_mut(block) }, Source::Rank(peers[source]), TagSelector::Tag(COLL_TAG), context)?;
                    receives[source] = Some(request);
                }
                if len == 0 {
                    for (source, slot) in receives[..size].iter_mut().enumerate().filter(|&(source, _)| source != rank) {
                        // SAFETY: as above; an empty buffer is never written.
                        *slot = Some(engine.irecv(unsafe { lend_mut(&mut []) }, Source::Rank(peers[source]), TagSelector::Tag(COLL_TAG), context)?);
                    }
                }
                for step in 1..size {
                    let dest = (rank + step) % size;
                    if !engine.try_send_now(data, peers[dest], COLL_TAG, context)? {
                        // SAFETY: as above.
                        sends[dest] = Some(engine.isend(unsafe { lend(data) }, peers[dest], COLL_TAG, context, SendMode::Standard)?);
                    }
                }
                let mut truncated = false;
                for request in receives.iter_mut().filter_map(Option::take) {
                    truncated |= engine.wait(request)?.truncated;
                }
                for request in sends.iter_mut().filter_map(Option::take) {
                    engine.wait(request)?;
                }
                Ok(truncated)
            };
            Ok(exchange().map_err(channel_failure).and_then(|truncated| if truncated { Err(MPI_ERR_TRUNCATE) } else { Ok(()) }))
        })
        .map_err(|e| e.class)?
    }

    fn tuning(&self) -> CollTuning {
        self.tuning
    }
}

/// Most ranks [`CommChannel::exchange_all`] posts every receive for at once.
const EXCHANGE_ALL_MAX: usize = 16;

fn check_truncation(status: braid_engine::Status) -> Result<(), i32> {
    if status.truncated {
        Err(MPI_ERR_TRUNCATE)
    } else {
        Ok(())
    }
}

/// The parent's shared part, its error handler and the collective tuning.
fn parent_of(comm: MPI_Comm) -> MpiResult<(Arc<CommShared>, MPI_Errhandler, CollTuning, u32)> {
    runtime::with(|rt| {
        let parent = rt.comms.get(comm)?;
        Ok((parent.shared.clone(), parent.errhandler, rt.tuning, rt.comms.next_context_id()))
    })
}

/// Allgathers one u32 record of `words` per rank over the parent's collective channel.
fn allgather_words(comm: MPI_Comm, parent: &Arc<CommShared>, tuning: CollTuning, words: &[u32]) -> MpiResult<Vec<u32>> {
    let mine: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut all = vec![0u8; mine.len() * parent.size()];
    let mut channel = CommChannel::new(parent.clone(), tuning);
    algorithms::allgather(&mut channel, &mine, &mut all).map_err(|class| error(comm, class, "agreeing on a new communicator failed"))?;
    Ok(all.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

/// Installs a new communicator on context `context_id` after every parent member agreed on it.
fn install(members: Option<Vec<u32>>, context_id: u32, errhandler: MPI_Errhandler, topology: Option<Topology>) -> MpiResult<MPI_Comm> {
    runtime::with(|rt| {
        rt.comms.reserve_context_ids(context_id + 1);
        let Some(members) = members else { return Ok(MPI_COMM_NULL) };
        let shared = CommShared::new(Arc::from(members), rt.comms.job_rank(), context_id);
        let mut entry = Comm::new(Arc::new(shared), errhandler);
        entry.topology = topology;
        Ok(rt.comms.insert(entry))
    })
}

/// Collective over `comm`: a communicator of `members` (this rank's view: None when it is not a
/// member), on a fresh context; MPI_COMM_NULL for non-members.
pub(crate) fn create_from(comm: MPI_Comm, members: Option<Vec<u32>>, topology: Option<Topology>) -> MpiResult<MPI_Comm> {
    let (parent, errhandler, tuning, next) = parent_of(comm)?;
    let all = allgather_words(comm, &parent, tuning, &[next])?;
    let context_id = all.iter().copied().max().unwrap_or(next);
    install(members, context_id, errhandler, topology)
}

/// Collective over `comm`: MPI_Comm_split.
pub(crate) fn split(comm: MPI_Comm, color: c_int, key: c_int) -> MpiResult<MPI_Comm> {
    if color < 0 && color != MPI_UNDEFINED {
        return Err(error(comm, MPI_ERR_ARG, format!("color {color} is negative (only MPI_UNDEFINED may be)")));
    }
    let (parent, errhandler, tuning, next) = parent_of(comm)?;
    let all = allgather_words(comm, &parent, tuning, &[color as u32, key as u32, next])?;
    let context_id = all.chunks_exact(3).map(|r| r[2]).max().unwrap_or(next);
    let members = (color != MPI_UNDEFINED).then(|| split_members(&parent.members, &all, color));
    install(members, context_id, errhandler, None)
}

/// The job ranks of the parent's members with `color`, ordered by (key, parent rank); `records`
/// holds (color, key, _) per parent rank.
fn split_members(parent: &[u32], records: &[u32], color: c_int) -> Vec<u32> {
    let mut chosen: Vec<(c_int, usize)> =
        records.chunks_exact(3).enumerate().filter(|(_, r)| r[0] as c_int == color).map(|(rank, r)| (r[1] as c_int, rank)).collect();
    chosen.sort_unstable();
    chosen.into_iter().map(|(_, rank)| parent[rank]).collect()
}

/// Runs attribute delete callbacks, returning the first failure.
fn run_deletes(deletes: Vec<PendingDelete>) -> MpiResult<()> {
    let mut outcome = Ok(());
    for pending in deletes {
        // SAFETY: user callbacks registered through MPI_Comm_create_keyval.
        let result = unsafe { pending.run() };
        if outcome.is_ok() {
            outcome = result;
        }
    }
    outcome
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        let value = rt.comms.get(comm)?.shared.size() as c_int;
        // SAFETY: `size` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(size, value, "size") }
    });
    finish("MPI_Comm_size", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        let value = rt.comms.get(comm)?.shared.rank as c_int;
        // SAFETY: `rank` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(rank, value, "rank") }
    });
    finish("MPI_Comm_rank", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        if newcomm.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "newcomm must not be NULL"));
        }
        let (members, topology, attributes) = runtime::with(|rt| {
            let parent = rt.comms.get(comm)?;
            let attributes: Vec<(c_int, *mut c_void, Keyval)> =
                parent.attributes.iter().filter_map(|&(k, v)| rt.comms.keyval(k).map(|kv| (k, v, kv))).collect();
            Ok((parent.shared.members.to_vec(), parent.topology.clone(), attributes))
        })?;
        let created = create_from(comm, Some(members), topology)?;
        // SAFETY: `newcomm` is non-null and points to the caller's handle.
        unsafe { *newcomm = created };
        let copied = copy_attributes(comm, &attributes)?;
        runtime::with(|rt| {
            rt.comms.get_mut(created)?.attributes = copied;
            Ok(())
        })
    })();
    finish("MPI_Comm_dup", result)
}

/// Runs the copy callbacks of `attributes` for a duplicate of `comm`.
fn copy_attributes(comm: MPI_Comm, attributes: &[(c_int, *mut c_void, Keyval)]) -> MpiResult<Vec<(c_int, *mut c_void)>> {
    let mut copied = Vec::new();
    for &(keyval, value, callback) in attributes {
        match callback.copy as usize {
            MPI_COMM_NULL_COPY_FN => {}
            MPI_COMM_DUP_FN => copied.push((keyval, value)),
            _ => {
                // SAFETY: a copy address other than the two predefined ones is a function of type
                // MPI_Comm_copy_attr_function passed to MPI_Comm_create_keyval.
                let function: MPI_Comm_copy_attr_function = unsafe { std::mem::transmute(callback.copy) };
                let mut out: *mut c_void = std::ptr::null_mut();
                let mut flag: c_int = 0;
                // SAFETY: the user's callback, called with the arguments MPI defines.
                let code = unsafe { function(comm, keyval, callback.extra_state, value, (&mut out as *mut *mut c_void).cast(), &mut flag) };
                if code != MPI_SUCCESS {
                    return Err(error(comm, code, format!("the copy callback of keyval {keyval} failed")));
                }
                if flag != 0 {
                    copied.push((keyval, out));
                }
            }
        }
    }
    Ok(copied)
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
/// lowest job rank); MPI_UNDEFINED gives MPI_COMM_NULL.
fn split_type_color(comm: MPI_Comm, split_type: c_int, node_leader: u32) -> MpiResult<c_int> {
    match split_type {
        MPI_COMM_TYPE_SHARED => Ok(node_leader as c_int),
        MPI_UNDEFINED => Ok(MPI_UNDEFINED),
        other => Err(error(comm, MPI_ERR_ARG, format!("split type {other} is not MPI_COMM_TYPE_SHARED or MPI_UNDEFINED"))),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split_type(comm: MPI_Comm, split_type: c_int, key: c_int, info: MPI_Info, newcomm: *mut MPI_Comm) -> c_int {
    let _ = info;
    let result = (|| {
        if newcomm.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "newcomm must not be NULL"));
        }
        let leader = runtime::with(|rt| Ok(rt.engine.node_ranks().first().copied().unwrap_or(rt.comms.job_rank())))?;
        let created = split(comm, split_type_color(comm, split_type, leader)?, key)?;
        // SAFETY: non-null; points to the caller's handle.
        unsafe { *newcomm = created };
        Ok(())
    })();
    finish("MPI_Comm_split_type", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create(comm: MPI_Comm, group: MPI_Group, newcomm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        if newcomm.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "newcomm must not be NULL"));
        }
        let members = runtime::with(|rt| {
            let parent = rt.comms.get(comm)?;
            let members = rt.groups.get(group).map_err(|e| error(comm, e.class, e.detail))?;
            if let Some(stranger) = members.iter().find(|m| group::position(&parent.shared.members, **m).is_none()) {
                return Err(error(comm, MPI_ERR_GROUP, format!("job rank {stranger} of the group is not in the communicator")));
            }
            Ok(group::position(members, rt.comms.job_rank()).map(|_| members.to_vec()))
        })?;
        let created = create_from(comm, members, None)?;
        // SAFETY: non-null; points to the caller's handle.
        unsafe { *newcomm = created };
        Ok(())
    })();
    finish("MPI_Comm_create", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_compare(comm1: MPI_Comm, comm2: MPI_Comm, result: *mut c_int) -> c_int {
    let outcome = runtime::with(|rt| {
        let first = rt.comms.get(comm1)?;
        let second = rt.comms.get(comm2)?;
        let value = if comm1 == comm2 {
            MPI_IDENT
        } else {
            match group::compare(&first.shared.members, &second.shared.members) {
                MPI_IDENT => MPI_CONGRUENT,
                other => other,
            }
        };
        // SAFETY: `result` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(result, value, "result") }
    });
    finish("MPI_Comm_compare", outcome)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        if comm.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "comm must not be NULL"));
        }
        // SAFETY: non-null; points to the caller's handle.
        let handle = unsafe { *comm };
        let deletes = runtime::with(|rt| rt.comms.remove(handle))?;
        // SAFETY: as above.
        unsafe { *comm = MPI_COMM_NULL };
        run_deletes(deletes)
    })();
    finish("MPI_Comm_free", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_group(comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    let result = runtime::with(|rt| {
        let members = rt.comms.get(comm)?.shared.members.clone();
        let handle = rt.groups.insert(members);
        // SAFETY: `group` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(group, handle, "group") }
    });
    finish("MPI_Comm_group", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_test_inter(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        rt.comms.get(comm)?;
        // SAFETY: `flag` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(flag, 0, "flag") }
    });
    finish("MPI_Comm_test_inter", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_name(comm: MPI_Comm, comm_name: *const c_char) -> c_int {
    let result = runtime::with(|rt| {
        let entry = rt.comms.get_mut(comm)?;
        if comm_name.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "comm_name must not be NULL"));
        }
        // SAFETY: non-null; MPI requires a NUL-terminated string.
        let name = unsafe { CStr::from_ptr(comm_name) }.to_string_lossy();
        let mut end = name.len().min(MPI_MAX_OBJECT_NAME as usize - 1);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        entry.name = name[..end].to_string();
        Ok(())
    });
    finish("MPI_Comm_set_name", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_name(comm: MPI_Comm, comm_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        let entry = rt.comms.get(comm)?;
        if comm_name.is_null() || resultlen.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "comm_name and resultlen must not be NULL"));
        }
        // SAFETY: MPI requires `comm_name` to hold MPI_MAX_OBJECT_NAME characters; both non-null.
        unsafe { *resultlen = crate::error::write_c_string(&entry.name, comm_name, MPI_MAX_OBJECT_NAME as usize) };
        Ok(())
    });
    finish("MPI_Comm_get_name", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_keyval(
    comm_copy_attr_fn: *const c_void,
    comm_delete_attr_fn: *const c_void,
    comm_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    let result = runtime::with(|rt| {
        let keyval = Keyval { copy: comm_copy_attr_fn, delete: comm_delete_attr_fn, extra_state };
        let keyvals = &mut rt.comms.keyvals;
        let index = match keyvals.iter().position(|k| k.is_none()) {
            Some(free) => free,
            None => {
                keyvals.push(None);
                keyvals.len() - 1
            }
        };
        keyvals[index] = Some(keyval);
        // SAFETY: `comm_keyval` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(comm_keyval, FIRST_USER_KEYVAL + index as c_int, "comm_keyval") }
    });
    finish("MPI_Comm_create_keyval", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free_keyval(comm_keyval: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        if comm_keyval.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "comm_keyval must not be NULL"));
        }
        // SAFETY: non-null; points to the caller's keyval.
        let keyval = unsafe { *comm_keyval };
        if rt.comms.keyval(keyval).is_none() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_KEYVAL, format!("{keyval} is not a user keyval")));
        }
        rt.comms.keyvals[(keyval - FIRST_USER_KEYVAL) as usize] = None;
        // SAFETY: as above.
        unsafe { *comm_keyval = MPI_KEYVAL_INVALID };
        Ok(())
    });
    finish("MPI_Comm_free_keyval", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_attr(comm: MPI_Comm, comm_keyval: c_int, attribute_val: *mut c_void) -> c_int {
    let result = (|| {
        let replaced = runtime::with(|rt| {
            if rt.comms.keyval(comm_keyval).is_none() {
                rt.comms.get(comm)?;
                return Err(error(comm, MPI_ERR_KEYVAL, format!("{comm_keyval} is not a user keyval")));
            }
            let old = {
                let entry = rt.comms.get_mut(comm)?;
                let old = entry.attributes.iter().position(|a| a.0 == comm_keyval).map(|i| entry.attributes.remove(i));
                entry.attributes.push((comm_keyval, attribute_val));
                old
            };
            Ok(old.and_then(|(k, v)| rt.comms.pending_delete(comm, k, v)))
        })?;
        run_deletes(replaced.into_iter().collect())
    })();
    finish("MPI_Comm_set_attr", result)
}

/// The value of a predefined attribute: a pointer to its int.
fn predefined_attribute(keyval: c_int) -> Option<*mut c_void> {
    let value: *const c_int = match keyval {
        MPI_TAG_UB => &TAG_UB_VALUE,
        MPI_HOST => &HOST_VALUE,
        MPI_IO => &IO_VALUE,
        MPI_WTIME_IS_GLOBAL => &WTIME_IS_GLOBAL_VALUE,
        MPI_UNIVERSE_SIZE => UNIVERSE_SIZE_VALUE.as_ptr(),
        MPI_LASTUSEDCODE => crate::error::codes::LAST_USED_CODE.as_ptr(),
        MPI_APPNUM => &APPNUM_VALUE,
        _ => return None,
    };
    Some(value.cast_mut().cast())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_attr(comm: MPI_Comm, comm_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        let entry = rt.comms.get(comm)?;
        if attribute_val.is_null() || flag.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "attribute_val and flag must not be NULL"));
        }
        let value = match predefined_attribute(comm_keyval) {
            Some(value) => Some(value),
            None if rt.comms.keyval(comm_keyval).is_some() => entry.attributes.iter().find(|a| a.0 == comm_keyval).map(|a| a.1),
            None => return Err(error(comm, MPI_ERR_KEYVAL, format!("{comm_keyval} is not a keyval"))),
        };
        // SAFETY: for MPI_Comm_get_attr, `attribute_val` is really a `void **`; both are non-null.
        unsafe {
            if let Some(value) = value {
                *attribute_val.cast::<*mut c_void>() = value;
            }
            *flag = c_int::from(value.is_some());
        }
        Ok(())
    });
    finish("MPI_Comm_get_attr", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_delete_attr(comm: MPI_Comm, comm_keyval: c_int) -> c_int {
    let result = (|| {
        let removed = runtime::with(|rt| {
            let entry = rt.comms.get_mut(comm)?;
            let Some(index) = entry.attributes.iter().position(|a| a.0 == comm_keyval) else {
                return Err(error(comm, MPI_ERR_KEYVAL, format!("keyval {comm_keyval} has no value on this communicator")));
            };
            let (keyval, value) = entry.attributes.remove(index);
            Ok(rt.comms.pending_delete(comm, keyval, value))
        })?;
        run_deletes(removed.into_iter().collect())
    })();
    finish("MPI_Comm_delete_attr", result)
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
    }

    #[test]
    fn split_orders_by_key_then_parent_rank() {
        let parent = [10, 11, 12, 13, 14];
        let undefined = MPI_UNDEFINED as u32;
        let records = [1, 5, 0, 0, 9, 0, 1, 2, 0, undefined, 0, 0, 1, 2, 0];
        assert_eq!(split_members(&parent, &records, 1), vec![12, 14, 10]);
        assert_eq!(split_members(&parent, &records, 0), vec![11]);
    }

    #[test]
    fn the_table_protects_predefined_communicators() {
        let mut table = CommTable::new(0, 2);
        assert_eq!(table.get(MPI_COMM_WORLD).unwrap().shared.size(), 2);
        assert_eq!(table.get(MPI_COMM_SELF).unwrap().shared.size(), 1);
        assert_eq!(table.get(MPI_COMM_NULL).err().unwrap().class, MPI_ERR_COMM);
        assert_eq!(table.remove(MPI_COMM_WORLD).err().unwrap().class, MPI_ERR_COMM);
        let handle = table.insert(Comm::new(Arc::new(CommShared::new(Arc::from(vec![0]), 0, 2)), MPI_ERRORS_RETURN));
        assert_eq!(handle, 3);
        assert_eq!(table.errhandler(handle), MPI_ERRORS_RETURN);
        assert!(table.remove(handle).unwrap().is_empty());
        assert_eq!(table.get(handle).err().unwrap().class, MPI_ERR_COMM);
        assert_eq!(table.errhandler(handle), MPI_ERRORS_ARE_FATAL);
    }

    #[test]
    fn split_types_map_to_colors() {
        assert_eq!(split_type_color(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 4).unwrap(), 4);
        assert_eq!(split_type_color(MPI_COMM_WORLD, MPI_UNDEFINED, 4).unwrap(), MPI_UNDEFINED);
        assert_eq!(split_type_color(MPI_COMM_WORLD, 7, 4).unwrap_err().class, MPI_ERR_ARG);
    }

    #[test]
    fn predefined_attributes_point_at_their_values() {
        let tag_ub = predefined_attribute(MPI_TAG_UB).unwrap();
        // SAFETY: the pointer refers to a static int.
        assert!(unsafe { *tag_ub.cast::<c_int>() } >= (1 << 30) - 1);
        assert!(predefined_attribute(99).is_none());
    }
}
