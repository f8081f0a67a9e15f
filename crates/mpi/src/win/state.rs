//! One window's shared state: its targets and their paths, the epochs open here, the requests
//! this rank has in flight as an origin and what it serves as a target on the `Messages` path.
//! The window's progress agent and the MPI calls share it (`Rc<RefCell<..>>`); nothing here
//! enters the runtime: callers hand in the engine.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::ffi::c_int;
use std::rc::Rc;

use braid_engine::{Engine, EngineError, RequestId, Source, TagSelector};
use braid_sys::shm::SharedMapping;

use super::atomics;
use super::lockword;
use super::ops::{self, Action};
use super::regions;
use super::single_copy::Remote;
use super::sync::{Epochs, LockKind, TargetLock};
use super::wire::{self, Header, RequestKind};
use crate::coll::drive::Outcome;
use crate::consts::*;
use crate::datatype::DatatypeRef;

/// How an operation reaches one target's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// The memory is mapped here (a shared segment, or this rank's own memory).
    Direct,
    /// Another process on this node: process_vm_readv/writev at its addresses.
    SingleCopy,
    /// A request to the target's window agent.
    Messages,
}

/// What this rank knows of one target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    pub job: u32,
    pub size: usize,
    pub disp_unit: usize,
    pub path: Path,
    /// `Direct`: the target's window memory as mapped here.
    pub base: *mut u8,
    /// `SingleCopy`: the target's process and its window memory's address there.
    pub pid: i32,
    pub address: u64,
}

/// A window's shared segment (the `Direct` and `SingleCopy` paths): a header of per-rank lock
/// words (dynamic windows: then per-rank region tables), then the members' memory (`Direct`).
pub struct Segment {
    pub mapping: SharedMapping,
    /// Members of the window.
    pub members: usize,
}

/// Bytes of the segment header per rank: the lock word and the accumulate lock, one cache line.
pub const LOCK_SLOT: usize = 64;

/// Bytes of a segment's header for `members` ranks, with region tables for a dynamic window.
pub fn header_len(members: usize, tables: bool) -> usize {
    members * LOCK_SLOT + if tables { members * regions::TABLE_LEN } else { 0 }
}

impl Segment {
    /// The region table of window rank `rank` (dynamic windows on the `SingleCopy` path).
    pub fn region_table(&self, rank: u32) -> &regions::Table {
        // SAFETY: the creator sized the header for one table per rank after the lock slots
        // (`header_len`); tables are 8-byte aligned and only accessed atomically.
        unsafe { &*self.mapping.as_ptr().add(self.members * LOCK_SLOT + rank as usize * regions::TABLE_LEN).cast::<regions::Table>() }
    }

    /// The lock word (MPI_Win_lock) of window rank `rank`.
    pub fn lock_word(&self, rank: u32) -> &lockword::Word {
        // SAFETY: the header holds one 64-byte slot per rank (the creator sized it so), the
        // mapping is page aligned, and these words are only ever accessed atomically.
        unsafe { &*self.mapping.as_ptr().add(rank as usize * LOCK_SLOT).cast::<lockword::Word>() }
    }

    /// The accumulate lock of window rank `rank`.
    pub fn accumulate_word(&self, rank: u32) -> &lockword::Word {
        // SAFETY: as in `lock_word`, the slot's second word.
        unsafe { &*self.mapping.as_ptr().add(rank as usize * LOCK_SLOT + 8).cast::<lockword::Word>() }
    }
}

/// Where a fetched result goes at the origin.
pub struct ResultBuffer {
    pub address: *mut u8,
    pub count: usize,
    pub datatype: DatatypeRef,
}

impl ResultBuffer {
    /// Unpacks `bytes` into the origin's buffer.
    ///
    /// # Safety
    /// The buffer must still be valid for the type map (MPI: it may not be touched until the
    /// operation completes).
    pub unsafe fn fill(&self, bytes: &[u8]) {
        // SAFETY: per the caller; `bytes` is the target's packed data of the same signature.
        unsafe { self.datatype.unpack_received(bytes.len(), bytes, self.address) };
    }
}

/// An answer this rank waits for.
struct Awaiting {
    target: u32,
    request: RequestId,
    buffer: Box<[u8]>,
    result: Option<ResultBuffer>,
    outcome: Option<Rc<Outcome>>,
}

/// An operation's data at the origin: packed into a buffer of its own, or the origin's memory
/// itself, lent until the operation completes.
pub enum Operand {
    Packed(Vec<u8>),
    /// Contiguous data of an operation that completes at a synchronisation call (MPI forbids
    /// changing the origin buffer until then): a send of it counts as outstanding to its
    /// target until the engine is done with it, so every synchronisation waits for it.
    Lent(&'static [u8]),
}

impl std::ops::Deref for Operand {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Operand::Packed(bytes) => bytes,
            Operand::Lent(bytes) => bytes,
        }
    }
}

/// A request received as a target, waiting for its body or its turn.
struct Incoming {
    origin: u32,
    header: Header,
    /// What followed the header in the request frame: the whole body, or the runs of one that
    /// follows (see [`Header::runs_in_frame`]).
    in_frame: Vec<u8>,
    /// The message that followed the request, unless it went straight into the window.
    apart: Vec<u8>,
    /// The receive of the message that follows the request.
    body_request: Option<RequestId>,
    /// A put whose data was received straight into this rank's window memory: nothing is left
    /// to apply.
    landed: bool,
}

/// A failure an origin learns from an answer, reported by the call that completes the operation.
#[derive(Debug, Clone)]
pub struct Failure {
    pub class: c_int,
    pub detail: String,
}

pub struct WinState {
    /// This rank in the window's group.
    pub rank: u32,
    /// The window's private point-to-point context.
    pub context: u32,
    pub targets: Vec<Target>,
    pub dynamic: bool,
    pub epochs: Epochs,
    pub segment: Option<Rc<Segment>>,
    /// A dynamic window's attached regions here (address, length).
    pub attached: Vec<(usize, usize)>,
    /// Targets locked with MPI_MODE_NOCHECK (no lock was taken).
    pub unchecked_locks: Vec<u32>,
    /// Origin side: answers outstanding per target, and the receives that wait for them.
    outstanding: Vec<u32>,
    awaiting: Vec<Awaiting>,
    next_sequence: u32,
    /// Sends not complete yet, with their bytes.
    sending: Vec<(RequestId, Vec<u8>)>,
    /// Sends of lent origin data, with their target (see [`Operand::Lent`]).
    lent: Vec<(RequestId, u32)>,
    pub failure: Option<Failure>,
    /// Target side: the posted receive of the next request.
    request_recv: Option<(RequestId, Box<[u8]>)>,
    incoming: VecDeque<Incoming>,
    pub lock: TargetLock,
    /// This rank's own lock request on itself was granted.
    pub self_granted: bool,
    /// PSCW: POST frames received per origin rank and COMPLETE frames per origin rank.
    pub posts: Vec<u32>,
    pub completes: Vec<u32>,
    pub freed: bool,
    /// Accumulate-like operations update 4- and 8-byte aligned elements with atomic instructions
    /// and no lock ([`atomics`]): every rank asked for it (`acc_single_intrinsic`) and maps the
    /// memory it updates (no `SingleCopy` target).
    pub lock_free_accumulates: bool,
}

/// Job ranks and memory of the window's members, as creation exchanged them.
pub struct Members {
    pub jobs: Vec<u32>,
    pub sizes: Vec<usize>,
    pub disp_units: Vec<usize>,
    pub pids: Vec<i32>,
    /// Each member's window memory in its own process.
    pub addresses: Vec<u64>,
}

impl WinState {
    /// The state of a new window; `bases[r]` is the memory of rank r mapped here, for the
    /// `Direct` targets (and this rank's own memory); with `single_copy` the others are
    /// `SingleCopy` targets, else `Messages` ones.
    pub fn new(rank: u32, context: u32, members: Members, bases: Vec<Option<*mut u8>>, dynamic: bool, segment: Option<Rc<Segment>>, single_copy: bool) -> WinState {
        let count = members.jobs.len();
        let targets = (0..count)
            .map(|r| Target {
                job: members.jobs[r],
                size: members.sizes[r],
                disp_unit: members.disp_units[r],
                path: match bases[r] {
                    Some(_) => Path::Direct,
                    None if single_copy => Path::SingleCopy,
                    None => Path::Messages,
                },
                base: bases[r].unwrap_or(std::ptr::null_mut()),
                pid: members.pids[r],
                address: members.addresses[r],
            })
            .collect();
        WinState {
            rank,
            context,
            targets,
            dynamic,
            epochs: Epochs::default(),
            segment,
            attached: Vec::new(),
            unchecked_locks: Vec::new(),
            outstanding: vec![0; count],
            awaiting: Vec::new(),
            next_sequence: 0,
            sending: Vec::new(),
            lent: Vec::new(),
            failure: None,
            request_recv: None,
            incoming: VecDeque::new(),
            lock: TargetLock::default(),
            self_granted: false,
            posts: vec![0; count],
            completes: vec![0; count],
            freed: false,
            lock_free_accumulates: false,
        }
    }

    pub fn outstanding_to(&self, target: u32) -> u32 {
        self.outstanding[target as usize]
    }

    pub fn outstanding_total(&self) -> u32 {
        self.outstanding.iter().sum()
    }

    /// Whether every send of this window has left (what free waits for).
    pub fn quiet(&self) -> bool {
        self.outstanding_total() == 0 && self.sending.is_empty() && self.incoming.is_empty()
    }

    /// Takes the failure an answer reported, if any.
    pub fn take_failure(&mut self) -> Option<Failure> {
        self.failure.take()
    }

    fn record_failure(&mut self, class: c_int, detail: String) {
        self.failure.get_or_insert(Failure { class, detail });
    }

    /// Sends `bytes` to job rank `job` under `tag`, keeping them until the send completes.
    fn send(&mut self, engine: &mut Engine, job: u32, tag: i32, bytes: Vec<u8>) -> Result<(), EngineError> {
        // SAFETY: the bytes stay in `sending` (a Vec's heap buffer does not move) until the
        // engine reports the send complete.
        let data: &'static [u8] = unsafe { std::slice::from_raw_parts(bytes.as_ptr(), bytes.len()) };
        if let Some(request) = engine.send_or_start(data, job, tag, self.context)? {
            self.sending.push((request, bytes));
        }
        Ok(())
    }

    /// Sends lent origin data to window rank `target`: outstanding to it until the send ends.
    fn send_lent(&mut self, engine: &mut Engine, target: u32, tag: i32, data: &'static [u8]) -> Result<(), EngineError> {
        let job = self.targets[target as usize].job;
        if let Some(request) = engine.send_or_start(data, job, tag, self.context)? {
            self.lent.push((request, target));
            self.outstanding[target as usize] += 1;
        }
        Ok(())
    }

    /// Sends a request to window rank `target` and posts the receive of its answer
    /// (`result_len` bytes after the error class).
    #[allow(clippy::too_many_arguments)]
    pub fn issue(
        &mut self,
        engine: &mut Engine,
        target: u32,
        mut header: Header,
        runs: &[(isize, usize)],
        data: Operand,
        compare: &[u8],
        result: Option<ResultBuffer>,
        outcome: Option<Rc<Outcome>>,
    ) -> Result<(), EngineError> {
        let sequence = self.next_sequence;
        self.next_sequence = self.next_sequence.wrapping_add(1);
        header.sequence = sequence;
        let job = self.targets[target as usize].job;
        let mut buffer = vec![0u8; wire::ANSWER_HEAD + header.result_len as usize].into_boxed_slice();
        // SAFETY: the buffer stays in `awaiting` (a boxed slice does not move) until the receive
        // completes.
        let lent: &'static mut [u8] = unsafe { std::slice::from_raw_parts_mut(buffer.as_mut_ptr(), buffer.len()) };
        let request = engine.irecv(lent, Source::Rank(job), TagSelector::Tag(wire::reply_tag(sequence)), self.context)?;
        self.awaiting.push(Awaiting { target, request, buffer, result, outcome });
        self.outstanding[target as usize] += 1;
        match data {
            Operand::Lent(lent) if header.runs_in_frame() && compare.is_empty() => {
                self.send(engine, job, wire::REQUEST_TAG, wire::request_frame(&header, runs))?;
                self.send_lent(engine, target, wire::body_tag(sequence), lent)
            }
            data => {
                let data = match data {
                    Operand::Packed(bytes) => Cow::Owned(bytes),
                    Operand::Lent(bytes) => Cow::Borrowed(bytes),
                };
                let (frame, body) = wire::encode(&header, runs, data, compare);
                self.send(engine, job, wire::REQUEST_TAG, frame)?;
                match body {
                    Some(body) => self.send(engine, job, wire::body_tag(sequence), body),
                    None => Ok(()),
                }
            }
        }
    }

    /// Reaps completed sends and answers: results are unpacked, failures recorded.
    fn reap(&mut self, engine: &mut Engine) -> bool {
        let before = self.sending.len() + self.lent.len() + self.awaiting.len();
        self.sending.retain(|(request, _)| engine.take_if_complete(*request).is_none());
        let outstanding = &mut self.outstanding;
        self.lent.retain(|&(request, target)| {
            let done = engine.take_if_complete(request).is_some();
            if done {
                outstanding[target as usize] -= 1;
            }
            !done
        });
        let mut index = 0;
        while index < self.awaiting.len() {
            let Some(status) = engine.take_if_complete(self.awaiting[index].request) else {
                index += 1;
                continue;
            };
            let done = self.awaiting.swap_remove(index);
            self.outstanding[done.target as usize] -= 1;
            let answer = &done.buffer[..status.count.min(done.buffer.len())];
            let class = wire::answer_class(answer);
            if class == MPI_SUCCESS {
                if let Some(result) = &done.result {
                    // SAFETY: MPI keeps the result buffer untouched until the operation completes,
                    // which is now.
                    unsafe { result.fill(&answer[wire::ANSWER_HEAD..]) };
                }
            } else {
                self.record_failure(class, format!("rank {} refused an operation (see its window's bounds and attached memory)", done.target));
            }
            if let Some(outcome) = done.outcome {
                outcome.finish(if class == MPI_SUCCESS { Ok(()) } else { Err(class) });
            }
        }
        before != self.sending.len() + self.lent.len() + self.awaiting.len()
    }

    /// Posts the receive of the next request from any origin.
    pub fn post_request_receive(&mut self, engine: &mut Engine) -> Result<(), EngineError> {
        let mut buffer = vec![0u8; wire::INLINE_MAX].into_boxed_slice();
        // SAFETY: the buffer stays in `request_recv` until the receive completes or is cancelled.
        let lent: &'static mut [u8] = unsafe { std::slice::from_raw_parts_mut(buffer.as_mut_ptr(), buffer.len()) };
        let request = engine.irecv(lent, Source::Any, TagSelector::Tag(wire::REQUEST_TAG), self.context)?;
        self.request_recv = Some((request, buffer));
        Ok(())
    }

    /// Withdraws the request receive (the window is being freed).
    pub fn cancel_request_receive(&mut self, engine: &mut Engine) {
        if let Some((request, buffer)) = self.request_recv.take() {
            engine.cancel(request);
            if engine.take_if_complete(request).is_none() {
                // Not withdrawn: keep the buffer alive until it completes (it cannot: every
                // member has stopped sending requests) by leaking it rather than risking a write.
                std::mem::forget(buffer);
            }
        }
    }

    /// The window rank of job rank `job`.
    fn rank_of_job(&self, job: u32) -> Option<u32> {
        self.targets.iter().position(|target| target.job == job).map(|rank| rank as u32)
    }

    /// Takes in arrived requests and serves them in order.
    fn serve(&mut self, engine: &mut Engine) -> Result<bool, EngineError> {
        let mut moved = false;
        while let Some((request, _)) = &self.request_recv {
            let Some(status) = engine.take_if_complete(*request) else { break };
            let (_, buffer) = self.request_recv.take().expect("checked above");
            let frame = &buffer[..status.count.min(buffer.len())];
            let origin = self.rank_of_job(status.source);
            match (origin, Header::decode(frame)) {
                (Some(origin), Ok(header)) => {
                    let in_frame = frame[wire::HEADER_LEN..].to_vec();
                    let mut incoming = Incoming { origin, header, in_frame, apart: Vec::new(), body_request: None, landed: false };
                    if !header.body_inline() {
                        let place = match self.landing_place(&incoming) {
                            Some(place) => {
                                incoming.landed = true;
                                place
                            }
                            None => {
                                incoming.apart = vec![0; header.apart_len()];
                                // SAFETY: the buffer stays in `incoming` (moved, never
                                // reallocated) until the receive completes.
                                unsafe { std::slice::from_raw_parts_mut(incoming.apart.as_mut_ptr(), incoming.apart.len()) }
                            }
                        };
                        incoming.body_request = Some(engine.irecv(place, Source::Rank(status.source), TagSelector::Tag(wire::body_tag(header.sequence)), self.context)?);
                    }
                    self.incoming.push_back(incoming);
                }
                (_, Err(detail)) => eprintln!("Braid: rank {}: a window request from rank {} is malformed ({detail}); it is dropped", self.rank, status.source),
                (None, _) => eprintln!("Braid: rank {}: a window request from rank {}, which is not in the window, is dropped", self.rank, status.source),
            }
            self.post_request_receive(engine)?;
            moved = true;
        }
        while let Some(front) = self.incoming.front_mut() {
            if let Some(request) = front.body_request {
                if engine.take_if_complete(request).is_none() {
                    break;
                }
                front.body_request = None;
            }
            let incoming = self.incoming.pop_front().expect("checked above");
            self.apply(engine, incoming)?;
            moved = true;
        }
        Ok(moved)
    }

    /// Where the data of a large put may be received straight into this rank's window memory:
    /// one run, sent with the request (so known before the data comes), within the window
    /// (a dynamic window's attached memory is checked when the put is applied, so it takes the
    /// buffered way). Puts are unordered in MPI, and memory that a put writes is not accessed by
    /// anyone else in its epoch, so the data may land before earlier requests are served.
    fn landing_place(&self, incoming: &Incoming) -> Option<&'static mut [u8]> {
        let header = &incoming.header;
        if header.kind != RequestKind::Put || !header.runs_in_frame() || header.runs != 1 || header.compare_len != 0 || self.dynamic {
            return None;
        }
        let runs = wire::decode_runs(&incoming.in_frame, 1).ok()?;
        let (offset, len) = runs[0];
        let me = &self.targets[self.rank as usize];
        if len as u64 != header.data_len || ops::check_range(&runs, me.size, self.rank).is_err() {
            return None;
        }
        // SAFETY: the run lies within this rank's window memory (checked above), which the
        // program keeps valid while the window exists, and which MPI lets no one else access
        // while an origin's put to it is outstanding; the receive completes before the window
        // is freed (freeing waits for every request served).
        Some(unsafe { std::slice::from_raw_parts_mut(me.base.wrapping_offset(offset), len) })
    }

    /// Sends the answer to request `sequence` of window rank `origin`.
    fn answer(&mut self, engine: &mut Engine, origin: u32, sequence: u32, class: c_int, result: &[u8]) -> Result<(), EngineError> {
        let job = self.targets[origin as usize].job;
        self.send(engine, job, wire::reply_tag(sequence), wire::answer(class, result))
    }

    /// Serves one request as its target.
    fn apply(&mut self, engine: &mut Engine, incoming: Incoming) -> Result<(), EngineError> {
        let Incoming { origin, header, in_frame, apart, landed, .. } = incoming;
        let sequence = header.sequence;
        let action = match header.kind {
            RequestKind::Put => Action::Put,
            RequestKind::Get => Action::Get,
            RequestKind::Accumulate => Action::Accumulate,
            RequestKind::GetAccumulate => Action::GetAccumulate,
            RequestKind::CompareAndSwap => Action::CompareAndSwap,
            RequestKind::Lock(kind) => {
                if self.lock.request(origin, sequence, kind) {
                    return self.answer(engine, origin, sequence, MPI_SUCCESS, &[]);
                }
                return Ok(());
            }
            RequestKind::Unlock(kind) => {
                let class = match self.release_lock(engine, kind) {
                    Ok(()) => MPI_SUCCESS,
                    Err(_) => MPI_ERR_RMA_SYNC,
                };
                return self.answer(engine, origin, sequence, class, &[]);
            }
            RequestKind::Post => {
                self.posts[origin as usize] += 1;
                return self.answer(engine, origin, sequence, MPI_SUCCESS, &[]);
            }
            RequestKind::Complete => {
                self.completes[origin as usize] += 1;
                return self.answer(engine, origin, sequence, MPI_SUCCESS, &[]);
            }
        };
        if landed {
            return self.answer(engine, origin, sequence, MPI_SUCCESS, &[]);
        }
        let decoded = wire::decode_body(&header, &in_frame, &apart).map_err(|detail| (MPI_ERR_INTERN, detail));
        // Under this rank's accumulate lock where single-copy origins accumulate too.
        let executed = decoded.and_then(|body| self.execute_mapped(self.rank, action, &body.runs, body.data, body.compare, header.op, header.basic));
        let (class, result) = match executed {
            Ok(result) => (MPI_SUCCESS, result),
            Err((class, detail)) => {
                if self.rank != origin {
                    eprintln!("Braid: rank {}: refused a window operation from rank {origin}: {detail}", self.rank);
                }
                (class, Vec::new())
            }
        };
        self.answer(engine, origin, sequence, class, &result)
    }

    /// Applies an operation on a target whose memory is mapped here (`Direct`, or this rank: a
    /// request served as target, or an origin's operation on itself) or reached by single copies
    /// (`SingleCopy`): accumulate-like actions under the target's accumulate lock when other
    /// processes reach the memory too, except the elements a window with lock-free accumulates
    /// updates atomically ([`atomics`]). Runs of a `SingleCopy` target were checked by the caller.
    #[allow(clippy::too_many_arguments)]
    pub fn execute_mapped(&self, target: u32, action: Action, runs: &[(isize, usize)], data: &[u8], compare: &[u8], op: MPI_Op, basic: MPI_Datatype) -> Result<Vec<u8>, (c_int, String)> {
        // No element: nothing to touch, and no operation to apply (MPI_SUM on MPI_BYTE is fine
        // for zero of them, as MPICH and Open MPI take it).
        if runs.iter().all(|&(_, len)| len == 0) {
            return Ok(Vec::new());
        }
        let mapped = &self.targets[target as usize];
        let single_copy = target != self.rank && mapped.path == Path::SingleCopy;
        let lock_free = (self.lock_free_accumulates && action.is_atomic() && !single_copy).then(|| crate::datatype::dense_predefined_size(basic).zip(atomics::Update::of(action, op, basic))).flatten();
        if let Some((size, update)) = lock_free {
            let base = self.mapped_base(target, runs)?;
            let _lock = self.segment.as_ref().filter(|_| !atomics::all_lock_free(base, runs, size)).map(|segment| lockword::AccumulateLock::take(segment.accumulate_word(target)));
            // SAFETY: the runs were checked against the target's memory mapped here, which stays
            // valid while the window exists; every updater of this window updates lock-free
            // elements atomically and the others under the accumulate lock, held here when there
            // are any (a window without a segment has one updater, its target).
            return unsafe { atomics::execute(action, update, base, runs, size, data, compare) };
        }
        let _lock = self.segment.as_ref().filter(|_| action.is_atomic()).map(|segment| lockword::AccumulateLock::take(segment.accumulate_word(target)));
        if single_copy {
            let remote = Remote { pid: mapped.pid, base: if self.dynamic { 0 } else { mapped.address } };
            return ops::apply(&remote, action, runs, data, compare, reduction_of(action, op, basic)?.as_ref());
        }
        let base = self.mapped_base(target, runs)?;
        let reduction = reduction_of(action, op, basic)?;
        // SAFETY: the runs were checked against the target's memory mapped here (its part of the
        // shared segment, or this rank's window memory or attached regions), which stays valid
        // while the window exists; atomic actions hold the target's accumulate lock, or are this
        // process's alone (its calls and its agent never run together).
        unsafe { ops::execute(action, base, runs, data, compare, reduction.as_ref()) }
    }

    /// What the runs of `target`'s memory mapped here are relative to, once they are checked
    /// against it (the window's size, or this rank's attached regions for a dynamic window; their
    /// addresses are absolute).
    fn mapped_base(&self, target: u32, runs: &[(isize, usize)]) -> Result<*mut u8, (c_int, String)> {
        let mapped = &self.targets[target as usize];
        let checked = if self.dynamic && target == self.rank { ops::check_attached(runs, &self.attached, self.rank) } else { ops::check_range(runs, mapped.size, target) };
        checked.map_err(|detail| (MPI_ERR_RMA_RANGE, detail))?;
        Ok(if self.dynamic { std::ptr::null_mut() } else { mapped.base })
    }

    /// Publishes this rank's attached regions to `SingleCopy` origins (dynamic windows with a
    /// segment).
    pub fn publish_regions(&self) {
        if let Some(segment) = self.segment.as_ref().filter(|_| self.dynamic) {
            segment.region_table(self.rank).publish(&self.attached);
        }
    }

    /// Whether every send this window started has completed.
    pub fn sends_done(&self) -> bool {
        self.sending.is_empty()
    }

    /// Releases one hold of this rank's lock (an UNLOCK, or this rank unlocking itself) and
    /// answers the waiters it grants.
    pub fn release_lock(&mut self, engine: &mut Engine, kind: LockKind) -> Result<(), EngineError> {
        let granted = match self.lock.release(kind) {
            Ok(granted) => granted,
            Err(detail) => {
                self.record_failure(MPI_ERR_RMA_SYNC, detail);
                return Ok(());
            }
        };
        for (origin, sequence) in granted {
            if origin == self.rank {
                self.self_granted = true;
            } else {
                self.answer(engine, origin, sequence, MPI_SUCCESS, &[])?;
            }
        }
        Ok(())
    }

    /// One progress step of the window: answers reaped, requests served.
    pub fn advance(&mut self, engine: &mut Engine) -> Result<bool, EngineError> {
        if self.freed {
            return Ok(false);
        }
        let reaped = self.reap(engine);
        let served = self.serve(engine)?;
        Ok(reaped || served)
    }
}

/// The reduction an accumulate-like request applies: None for MPI_NO_OP and the actions that
/// combine nothing.
fn reduction_of(action: Action, op: MPI_Op, basic: MPI_Datatype) -> Result<Option<crate::op::Reduction>, (c_int, String)> {
    match action {
        Action::Accumulate | Action::GetAccumulate if op != MPI_NO_OP => {
            crate::op::reduction(op, basic).map(Some).map_err(|class| (class, format!("operation {op} is not defined on datatype {basic}")))
        }
        _ => Ok(None),
    }
}
