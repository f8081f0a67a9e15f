//! Requests: MPI_Request handles over engine requests, with what must happen on completion
//! (unpacking a staged receive, translating the source to a communicator rank), and the
//! MPI_Wait/MPI_Test families. A generalized request ([`crate::grequest`]) has no engine request:
//! the application completes it.

pub mod abi;

use std::any::Any;
use std::ffi::c_int;
use std::rc::Rc;
use std::sync::Arc;

use braid_engine::{Engine, EngineError, RequestId, SendMode, Status};

use crate::coll::drive::Outcome;
use crate::comm::coming::ComingComm;
use crate::comm::CommShared;
use crate::consts::*;
use crate::datatype;
use crate::error::{error, MpiError, MpiResult};
use crate::grequest::{Generalized, Query};

/// What a completed operation reports, in MPI terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub source: c_int,
    pub tag: c_int,
    /// Bytes received (or sent).
    pub count: usize,
    pub cancelled: bool,
    pub error: c_int,
}

impl Completion {
    /// The status of a null or inactive request.
    pub const EMPTY: Completion = Completion { source: MPI_ANY_SOURCE, tag: MPI_ANY_TAG, count: 0, cancelled: false, error: MPI_SUCCESS };
    /// The status of a send that completed when it started: MPI leaves a send's source, tag
    /// and count undefined.
    pub const SENT: Completion = Completion::EMPTY;
    /// The status of a receive from MPI_PROC_NULL.
    pub const PROC_NULL: Completion = Completion { source: MPI_PROC_NULL, tag: MPI_ANY_TAG, count: 0, cancelled: false, error: MPI_SUCCESS };
}

/// Packs a byte count and the cancelled flag into a status's two count words.
pub fn pack_count(count: usize, cancelled: bool) -> (c_int, c_int) {
    let count = count as u64;
    let low = count as u32 as c_int;
    let high = (((count >> 32) as u32) << 1 | u32::from(cancelled)) as c_int;
    (low, high)
}

/// The byte count stored in a status.
pub fn status_count(status: &MPI_Status) -> usize {
    let high = (status.count_hi_and_cancelled as u32 >> 1) as u64;
    ((high << 32) | status.count_lo as u32 as u64) as usize
}

/// Whether a status reports a cancelled operation.
pub fn status_cancelled(status: &MPI_Status) -> bool {
    status.count_hi_and_cancelled & 1 != 0
}

/// Whether a status pointer is a real status (not NULL nor MPI_STATUS(ES)_IGNORE).
#[inline]
pub fn is_real_status(status: *const MPI_Status) -> bool {
    !status.is_null() && status != MPI_STATUS_IGNORE.cast_const()
}

/// Writes `completion` into `status` unless it is MPI_STATUS_IGNORE, for the calls that complete
/// one operation: MPI_ERROR is left as it was (MPI 3.1 §3.2.5: only the calls that return several
/// statuses set it; a single call's error is its return code).
///
/// # Safety
/// `status` must be NULL, MPI_STATUS_IGNORE, or valid for writes.
#[inline]
pub unsafe fn write_status(status: *mut MPI_Status, completion: &Completion) {
    if !is_real_status(status) {
        return;
    }
    let (count_lo, count_hi_and_cancelled) = pack_count(completion.count, completion.cancelled);
    // SAFETY: a real status pointer, valid for writes per the caller.
    unsafe {
        let status = &mut *status;
        status.count_lo = count_lo;
        status.count_hi_and_cancelled = count_hi_and_cancelled;
        status.MPI_SOURCE = completion.source;
        status.MPI_TAG = completion.tag;
    }
}

/// Writes `completion` into slot `index` of a status array (MPI_STATUSES_IGNORE: nothing), its
/// error included: what the calls that complete several operations report each one's outcome in.
///
/// # Safety
/// `statuses` must be NULL, MPI_STATUSES_IGNORE, or valid for writes at `index`.
#[inline]
pub unsafe fn write_status_of_many(statuses: *mut MPI_Status, index: usize, completion: &Completion) {
    let status = status_at(statuses, index);
    // SAFETY: per the caller; an ignored array gives the ignore marker, which is not written.
    unsafe { write_status(status, completion) };
    if is_real_status(status) {
        // SAFETY: as above.
        unsafe { (*status).MPI_ERROR = completion.error };
    }
}

/// The status slot `index` of a C status array (MPI_STATUSES_IGNORE gives the ignore marker).
#[inline]
fn status_at(statuses: *mut MPI_Status, index: usize) -> *mut MPI_Status {
    if is_real_status(statuses) {
        statuses.wrapping_add(index)
    } else {
        MPI_STATUS_IGNORE
    }
}

/// A receive that landed in a temporary because the datatype is not contiguous.
pub struct Unpack {
    pub staging: Vec<u8>,
    /// The type's description, held so that MPI_Type_free before completion (which MPI allows)
    /// cannot pull it away.
    pub datatype: datatype::DatatypeRef,
    pub count: usize,
    pub destination: *mut u8,
}

/// Temporary memory a request needs until it completes.
pub enum Staging {
    None,
    /// A packed copy of non-contiguous send data.
    Send(Vec<u8>),
    Recv(Box<Unpack>),
    /// A non-blocking collective: its schedule (which holds its buffers) runs in the engine's
    /// progress and fills this in when it ends.
    Collective(Rc<Outcome>),
    /// MPI_Isendrecv(_replace): its receive and its send, complete when both are; the status is
    /// the receive's.
    Exchange(Box<Exchange>),
}

/// The two halves of a non-blocking send-receive.
pub struct Exchange {
    pub receive: Pending,
    pub send: Pending,
}

impl Exchange {
    /// The pair's completion once both halves are done: the receive's status, with the send's
    /// error if the receive had none.
    fn completion(&self) -> Option<Completion> {
        let (received, sent) = (self.receive.done?, self.send.done?);
        Some(Completion { error: if received.error == MPI_SUCCESS { sent.error } else { received.error }, ..received })
    }
}

/// A send's or receive's arguments.
#[derive(Debug, Clone, Copy)]
pub struct Operation {
    /// None for receives.
    pub send_mode: Option<SendMode>,
    pub buffer: *mut u8,
    /// An int count, or a large count of the `_c` functions.
    pub count: MPI_Count,
    pub datatype: MPI_Datatype,
    /// Destination or source (communicator rank, MPI_ANY_SOURCE or MPI_PROC_NULL).
    pub peer: c_int,
    pub tag: c_int,
    pub comm: MPI_Comm,
}

/// What a persistent request does at each start.
pub enum Persistent {
    /// MPI_Send_init, MPI_Recv_init, ...: the operation with its datatype's description, held
    /// because MPI lets the datatype handle be freed while the request lives.
    Transfer { op: Operation, datatype: datatype::DatatypeRef },
    /// MPI_Bcast_init and the other persistent collectives: launches the collective again.
    Collective(CollectiveStart),
    /// MPI_Psend_init, MPI_Precv_init: starts a round; MPI_Pready and MPI_Parrived reach the
    /// channel (see `partitioned`).
    Partitioned { start: CollectiveStart, channel: Rc<dyn Any> },
}

/// Launches a persistent collective's schedule: its outcome fills in when it ends. It is handed
/// the runtime, which the request table (a part of it) does not name, as `Any`.
pub type CollectiveStart = Box<dyn Fn(&mut dyn Any) -> MpiResult<Rc<Outcome>>>;

/// One started operation.
pub struct Pending {
    /// Whose error handler applies.
    pub comm: MPI_Comm,
    /// Translates the job rank of a received message's source: receives on communicators whose
    /// ranks are not the job ranks only.
    pub shared: Option<Arc<CommShared>>,
    pub engine: Option<RequestId>,
    pub staging: Staging,
    /// Set once the operation is complete and its completion work is done.
    pub done: Option<Completion>,
    /// Boxed: rare, and it would double the size of every request.
    pub persistent: Option<Box<Persistent>>,
    /// A generalized request's callbacks (boxed: rare).
    pub generalized: Option<Box<Generalized>>,
    /// MPI_Comm_idup's communicator, put in place when the request completes.
    pub coming: Option<Box<ComingComm>>,
}

impl Pending {
    /// An operation that completed at once (MPI_PROC_NULL peers).
    #[inline]
    pub fn completed(comm: MPI_Comm, completion: Completion) -> Pending {
        Pending { comm, shared: None, engine: None, staging: Staging::None, done: Some(completion), persistent: None, generalized: None, coming: None }
    }

    /// An inactive persistent collective (MPI_Bcast_init and its kin).
    pub fn persistent_collective(comm: MPI_Comm, start: CollectiveStart) -> Pending {
        Pending { persistent: Some(Box::new(Persistent::Collective(start))), ..Pending::inactive(comm) }
    }

    /// An operation not started: a persistent request between its starts.
    pub fn inactive(comm: MPI_Comm) -> Pending {
        Pending { comm, shared: None, engine: None, staging: Staging::None, done: None, persistent: None, generalized: None, coming: None }
    }

    /// A non-blocking collective in flight.
    pub fn collective(comm: MPI_Comm, outcome: Rc<Outcome>) -> Pending {
        Pending { comm, shared: None, engine: None, staging: Staging::Collective(outcome), done: None, persistent: None, generalized: None, coming: None }
    }

    /// A non-blocking send-receive: `receive` and `send` started.
    pub fn exchange(comm: MPI_Comm, receive: Pending, send: Pending) -> Pending {
        Pending { staging: Staging::Exchange(Box::new(Exchange { receive, send })), ..Pending::inactive(comm) }
    }

    /// MPI_Comm_idup's request: completing it puts `coming` in place.
    pub fn with_coming(self, coming: ComingComm) -> Pending {
        Pending { coming: Some(Box::new(coming)), ..self }
    }

    /// Whether the operation is still in flight (a persistent request between starts is not).
    #[inline]
    pub(crate) fn is_active(&self) -> bool {
        self.engine.is_some() || self.done.is_some() || self.generalized.is_some() || matches!(self.staging, Staging::Collective(_) | Staging::Exchange(_))
    }

    /// A collective's end, once its schedule has finished.
    fn collective_end(&self) -> Option<Result<(), c_int>> {
        match &self.staging {
            Staging::Collective(outcome) => outcome.result(),
            _ => None,
        }
    }

    /// Records a finished collective's completion.
    #[cold]
    fn finish_collective(&mut self, result: Result<(), c_int>) -> Completion {
        let count = match &self.staging {
            Staging::Collective(outcome) => outcome.count(),
            _ => 0,
        };
        self.staging = Staging::None;
        let completion = Completion { error: result.err().unwrap_or(MPI_SUCCESS), count, ..Completion::EMPTY };
        self.done = Some(completion);
        completion
    }

    /// Progresses until a collective's schedule, or both halves of an exchange, have finished.
    #[cold]
    fn wait_collective(&mut self, engine: &mut Engine) -> Result<(), EngineError> {
        match &mut self.staging {
            Staging::Collective(outcome) => {
                let outcome = outcome.clone();
                engine.wait_until(|_| outcome.result().is_some())?;
                let result = outcome.result().expect("the wait ends once the collective has");
                self.finish_collective(result);
            }
            Staging::Exchange(exchange) => {
                for half in [&mut exchange.receive, &mut exchange.send] {
                    let completion = half.wait(engine)?;
                    half.done = Some(completion);
                }
                self.finish_exchange();
            }
            _ => {}
        }
        Ok(())
    }

    /// Records a finished exchange's completion, if both halves are done.
    #[cold]
    fn finish_exchange(&mut self) -> bool {
        let Staging::Exchange(exchange) = &self.staging else { return false };
        let Some(completion) = exchange.completion() else { return false };
        self.staging = Staging::None;
        self.done = Some(completion);
        true
    }

    /// Cancels what of the operation the engine has not matched.
    pub(crate) fn cancel(&self, engine: &mut Engine) {
        match (&self.engine, &self.staging) {
            (Some(id), _) => {
                engine.cancel(*id);
            }
            (None, Staging::Exchange(exchange)) => {
                exchange.receive.cancel(engine);
                exchange.send.cancel(engine);
            }
            _ => {}
        }
    }

    /// A generalized request not completed with MPI_Grequest_complete: nothing can complete it
    /// while a call waits for it (MPI_THREAD_SERIALIZED), so a wait would never end.
    #[inline]
    fn waits_forever(&self) -> bool {
        self.done.is_none() && self.generalized.as_ref().is_some_and(|generalized| !generalized.complete)
    }

    /// Turns the engine's status into the MPI completion, unpacking a staged receive.
    #[inline]
    fn complete(&mut self, status: Status) -> Completion {
        self.engine = None;
        let source = match &self.shared {
            Some(shared) => shared.rank_of_job(status.source).map_or(MPI_UNDEFINED, |r| r as c_int),
            None => status.source as c_int,
        };
        let mut completion = Completion { source, tag: status.tag, count: status.count, cancelled: status.cancelled, error: if status.truncated { MPI_ERR_TRUNCATE } else { MPI_SUCCESS } };
        if !matches!(self.staging, Staging::None) {
            self.release_staging(status.count, status.cancelled);
        }
        if status.cancelled {
            completion.count = 0;
        }
        self.done = Some(completion);
        completion
    }

    /// Drops the staging memory, unpacking a staged receive first.
    #[cold]
    fn release_staging(&mut self, count: usize, cancelled: bool) {
        if let Staging::Recv(unpack) = std::mem::replace(&mut self.staging, Staging::None) {
            if !cancelled {
                // SAFETY: `destination` is the user's receive buffer, valid for `unpack.count`
                // elements of `datatype` until this request completes (MPI's rule); the staging
                // holds their packed bytes, of which `count` arrived.
                unsafe { unpack.datatype.unpack_received(count, &unpack.staging, unpack.destination) };
            }
        }
    }

    /// Makes progress once; whether the operation is complete.
    #[inline]
    pub fn poll(&mut self, engine: &mut Engine) -> Result<bool, EngineError> {
        if self.done.is_some() {
            return Ok(true);
        }
        if self.generalized.is_some() {
            // Complete once its query function has answered (see `grequest`).
            return Ok(false);
        }
        let Some(id) = self.engine else { return self.poll_collective(engine) };
        match engine.test(id)? {
            Some(status) => {
                self.complete(status);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Makes progress once for a collective; whether it has finished (other requests without an
    /// engine request are complete).
    #[cold]
    fn poll_collective(&mut self, engine: &mut Engine) -> Result<bool, EngineError> {
        if let Staging::Exchange(exchange) = &mut self.staging {
            exchange.receive.poll(engine)?;
            exchange.send.poll(engine)?;
            return Ok(self.finish_exchange());
        }
        if !matches!(self.staging, Staging::Collective(_)) {
            return Ok(true);
        }
        if self.collective_end().is_none() {
            engine.progress()?;
        }
        match self.collective_end() {
            Some(result) => {
                self.finish_collective(result);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Whether the operation is complete, without making progress.
    #[inline]
    fn is_complete(&self, engine: &Engine) -> bool {
        if self.generalized.is_some() {
            return self.done.is_some();
        }
        match (self.engine, &self.staging) {
            (Some(id), _) => engine.is_complete(id),
            (None, Staging::Exchange(exchange)) => exchange.receive.is_complete(engine) && exchange.send.is_complete(engine),
            (None, _) => !matches!(self.staging, Staging::Collective(_)) || self.collective_end().is_some(),
        }
    }

    /// Waits for the operation and takes its completion (an inactive request gives EMPTY).
    #[inline]
    pub fn wait(&mut self, engine: &mut Engine) -> Result<Completion, EngineError> {
        if let Some(id) = self.engine {
            let status = engine.wait(id)?;
            self.complete(status);
        } else if self.done.is_none() {
            self.wait_collective(engine)?;
        }
        Ok(self.done.take().unwrap_or(Completion::EMPTY))
    }
}

/// The handle of every send that completed when it started (an eager send the transport took at
/// once): such a send needs no slot, as MPICH's lightweight requests need no object. Slot handles
/// never reach it.
pub const COMPLETED_SEND: MPI_Request = MPI_Request::MAX;

/// MPI_Request handles: handle = slot index + 1, or [`COMPLETED_SEND`].
pub struct RequestTable {
    slots: Vec<Option<Pending>>,
    free: Vec<u32>,
    /// Requests freed by MPI_Request_free whose staging must outlive them.
    detached: Vec<Pending>,
    /// Generalized requests gone from the table whose free functions are still to run.
    freed_generalized: Vec<Generalized>,
    /// What [`COMPLETED_SEND`] refers to, renewed on each lookup.
    completed_send: Pending,
}

impl Default for RequestTable {
    fn default() -> RequestTable {
        RequestTable { slots: Vec::new(), free: Vec::new(), detached: Vec::new(), freed_generalized: Vec::new(), completed_send: Pending::completed(MPI_COMM_WORLD, Completion::SENT) }
    }
}

impl RequestTable {
    pub fn new() -> RequestTable {
        RequestTable::default()
    }

    #[inline(always)]
    pub fn insert(&mut self, pending: Pending) -> MPI_Request {
        match self.free.pop() {
            Some(index) => {
                self.slots[index as usize] = Some(pending);
                index as MPI_Request + 1
            }
            None => {
                self.slots.push(Some(pending));
                self.slots.len() as MPI_Request
            }
        }
    }

    #[inline]
    pub fn get_mut(&mut self, request: MPI_Request) -> MpiResult<&mut Pending> {
        if request == COMPLETED_SEND {
            self.completed_send = Pending::completed(MPI_COMM_WORLD, Completion::SENT);
            return Ok(&mut self.completed_send);
        }
        self.slot_mut(request).ok_or_else(|| invalid_request(request))
    }

    /// The live request in `request`'s slot.
    #[inline]
    fn slot_mut(&mut self, request: MPI_Request) -> Option<&mut Pending> {
        self.slots.get_mut(slot_index(request)?)?.as_mut()
    }

    #[inline]
    pub fn remove(&mut self, request: MPI_Request) -> Option<Pending> {
        if request == COMPLETED_SEND {
            return Some(Pending::completed(MPI_COMM_WORLD, Completion::SENT));
        }
        let index = slot_index(request)?;
        let taken = self.slots.get_mut(index)?.take();
        if taken.is_some() {
            self.free.push(index as u32);
        }
        taken
    }

    /// Completes `request`'s work after a wait or a successful test: frees a normal request, keeps
    /// a persistent one (inactive). Returns the completion, the handle's new value, and the
    /// communicator an MPI_Comm_idup request completes.
    #[inline(always)]
    fn retire(&mut self, request: MPI_Request, completion: Completion) -> (Completion, MPI_Request, Option<Box<ComingComm>>) {
        let Some(index) = slot_index(request) else { return (completion, MPI_REQUEST_NULL, None) };
        if let Some(Some(pending)) = self.slots.get_mut(index) {
            if pending.persistent.is_some() {
                pending.done = None;
                return (completion, request, None);
            }
        }
        (completion, MPI_REQUEST_NULL, self.release(index))
    }

    /// Frees `request`; a generalized request's free function is then due (see
    /// [`RequestTable::take_freed_generalized`]). Returns MPI_Comm_idup's communicator.
    pub(crate) fn retire_released(&mut self, request: MPI_Request) -> Option<Box<ComingComm>> {
        self.release(slot_index(request)?)
    }

    /// [`RequestTable::retire_released`] of the request in slot `index`.
    #[inline]
    fn release(&mut self, index: usize) -> Option<Box<ComingComm>> {
        let slot = self.slots.get_mut(index)?;
        let pending = slot.as_mut()?;
        // The rare parts are taken out in place; the request itself is dropped where it lies.
        let (generalized, coming) = (pending.generalized.take(), pending.coming.take());
        *slot = None;
        self.free.push(index as u32);
        if let Some(generalized) = generalized {
            self.freed_generalized.push(*generalized);
        }
        coming
    }

    /// The query functions to call before a completion call on `handles`: those of the complete
    /// generalized requests among them.
    pub(crate) fn queries_due(&mut self, handles: &[MPI_Request]) -> Vec<(MPI_Request, Query)> {
        let mut due = Vec::new();
        for &handle in handles {
            let Some(pending) = self.slot_mut(handle) else { continue };
            if let Some(generalized) = pending.generalized.as_deref().filter(|generalized| generalized.complete && !generalized.released) {
                due.push((handle, generalized.query()));
            }
        }
        due
    }

    /// A generalized request's query function answered: that is its completion.
    pub(crate) fn answer(&mut self, handle: MPI_Request, completion: Completion) {
        if let Some(pending) = self.slot_mut(handle).filter(|pending| pending.generalized.is_some()) {
            pending.done = Some(completion);
        }
    }

    /// The generalized requests freed since the last call, whose free functions are due.
    pub(crate) fn take_freed_generalized(&mut self) -> Vec<Generalized> {
        std::mem::take(&mut self.freed_generalized)
    }

    /// Keeps a freed request's staging until the engine is done with it.
    fn detach(&mut self, engine: &mut Engine, pending: Pending) -> Result<(), EngineError> {
        self.detached.push(pending);
        let mut index = 0;
        while index < self.detached.len() {
            if self.detached[index].poll(engine)? {
                self.detached.swap_remove(index);
            } else {
                index += 1;
            }
        }
        Ok(())
    }

    /// Completes every freed request still in flight (MPI_Finalize).
    pub fn drain_detached(&mut self, engine: &mut Engine) -> Result<(), EngineError> {
        for mut pending in self.detached.drain(..) {
            pending.wait(engine)?;
        }
        Ok(())
    }
}

/// The slot of handle `request` (handle = slot index + 1); [`COMPLETED_SEND`] names a slot that
/// never exists.
#[inline]
fn slot_index(request: MPI_Request) -> Option<usize> {
    usize::try_from(request).ok()?.checked_sub(1)
}

#[cold]
fn invalid_request(request: MPI_Request) -> MpiError {
    error(MPI_COMM_WORLD, MPI_ERR_REQUEST, format!("{request} is not a valid request"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_counts_round_trip_with_the_cancelled_bit() {
        for &(count, cancelled) in &[(0usize, false), (17, true), (u32::MAX as usize, false), ((5usize << 32) + 9, true), ((1usize << 62) + 3, false)] {
            let (count_lo, count_hi_and_cancelled) = pack_count(count, cancelled);
            let status = MPI_Status { count_lo, count_hi_and_cancelled, ..MPI_Status::default() };
            assert_eq!(status_count(&status), count);
            assert_eq!(status_cancelled(&status), cancelled);
        }
    }

    #[test]
    fn ignored_statuses_are_not_written() {
        let completion = Completion { source: 3, tag: 7, count: 12, cancelled: false, error: MPI_SUCCESS };
        // SAFETY: NULL and MPI_STATUS_IGNORE are never dereferenced.
        unsafe {
            write_status(MPI_STATUS_IGNORE, &completion);
            write_status(std::ptr::null_mut(), &completion);
        }
        let mut status = MPI_Status { MPI_ERROR: 4242, ..MPI_Status::default() };
        // SAFETY: a real status on the stack.
        unsafe { write_status(&mut status, &completion) };
        assert_eq!((status.MPI_SOURCE, status.MPI_TAG, status_count(&status)), (3, 7, 12));
        assert_eq!(status.MPI_ERROR, 4242, "a single completion leaves MPI_ERROR alone");
        let failed = Completion { error: MPI_ERR_TRUNCATE, ..completion };
        // SAFETY: a one-status array on the stack.
        unsafe { write_status_of_many(&mut status, 0, &failed) };
        assert_eq!(status.MPI_ERROR, MPI_ERR_TRUNCATE, "a status of many carries its error");
        assert_eq!(status_at(MPI_STATUSES_IGNORE, 5), MPI_STATUS_IGNORE);
        assert_eq!(status_at(&mut status, 0), &mut status as *mut MPI_Status);
    }

    #[test]
    fn the_table_reuses_handles_and_rejects_bad_ones() {
        let mut table = RequestTable::new();
        let first = table.insert(Pending::completed(MPI_COMM_WORLD, Completion::PROC_NULL));
        let second = table.insert(Pending::completed(MPI_COMM_WORLD, Completion::PROC_NULL));
        assert_eq!((first, second), (1, 2));
        assert!(table.remove(first).is_some());
        assert!(table.remove(first).is_none());
        assert_eq!(table.get_mut(first).err().unwrap().class, MPI_ERR_REQUEST);
        assert_eq!(table.get_mut(MPI_REQUEST_NULL).err().unwrap().class, MPI_ERR_REQUEST);
        assert_eq!(table.get_mut(-4).err().unwrap().class, MPI_ERR_REQUEST);
        assert_eq!(table.insert(Pending::completed(MPI_COMM_WORLD, Completion::EMPTY)), first);
    }

    #[test]
    fn the_completed_send_handle_needs_no_slot_and_can_be_retired_any_number_of_times() {
        let mut table = RequestTable::new();
        for _ in 0..3 {
            let pending = table.get_mut(COMPLETED_SEND).unwrap();
            assert!(pending.is_active() && pending.engine.is_none());
            assert_eq!(table.retire(COMPLETED_SEND, Completion::SENT).1, MPI_REQUEST_NULL);
            assert!(table.remove(COMPLETED_SEND).is_some());
        }
        assert!(table.slots.is_empty() && table.free.is_empty());
        assert_eq!(table.insert(Pending::completed(MPI_COMM_WORLD, Completion::EMPTY)), 1);
    }

    #[test]
    fn generalized_requests_are_queried_once_complete_and_freed_when_retired() {
        let mut table = RequestTable::new();
        let generalized = || Pending {
            comm: MPI_COMM_WORLD,
            shared: None,
            engine: None,
            staging: Staging::None,
            done: None,
            persistent: None,
            generalized: Some(Box::new(Generalized::new(None, None, None, std::ptr::null_mut()))),
            coming: None,
        };
        let (first, second) = (table.insert(generalized()), table.insert(generalized()));
        let plain = table.insert(Pending::completed(MPI_COMM_WORLD, Completion::PROC_NULL));
        for handle in [first, second] {
            let pending = table.get_mut(handle).unwrap();
            assert!(pending.is_active() && pending.waits_forever());
        }
        assert!(table.queries_due(&[first, second, plain, MPI_REQUEST_NULL]).is_empty());
        table.get_mut(second).unwrap().generalized.as_mut().unwrap().complete = true;
        let due: Vec<MPI_Request> = table.queries_due(&[first, second, plain]).into_iter().map(|(handle, _)| handle).collect();
        assert_eq!(due, [second]);
        let answered = Completion { tag: 4, ..Completion::EMPTY };
        table.answer(second, answered);
        table.answer(plain, answered);
        assert_eq!(table.get_mut(plain).unwrap().done, Some(Completion::PROC_NULL));
        let pending = table.get_mut(second).unwrap();
        assert!(!pending.waits_forever() && pending.done == Some(answered));
        let (completion, after, coming) = table.retire(second, answered);
        assert_eq!((completion, after), (answered, MPI_REQUEST_NULL));
        assert!(coming.is_none());
        assert!(table.get_mut(second).is_err());
        assert_eq!(table.take_freed_generalized().len(), 1);
        assert!(table.take_freed_generalized().is_empty());
        // Freed by the application before completion: the slot stays until it is complete.
        table.get_mut(first).unwrap().generalized.as_mut().unwrap().released = true;
        table.get_mut(first).unwrap().generalized.as_mut().unwrap().complete = true;
        assert!(table.queries_due(&[first]).is_empty());
        table.retire_released(first);
        assert_eq!(table.take_freed_generalized().len(), 1);
    }

    #[test]
    fn persistent_requests_stay_after_retiring() {
        let mut table = RequestTable::new();
        let mut pending = Pending::completed(MPI_COMM_WORLD, Completion::PROC_NULL);
        let op = Operation { send_mode: None, buffer: std::ptr::null_mut(), count: 0, datatype: MPI_INT, peer: MPI_PROC_NULL, tag: 0, comm: MPI_COMM_WORLD };
        pending.persistent = Some(Box::new(Persistent::Transfer { op, datatype: datatype::lookup(MPI_INT).unwrap() }));
        let handle = table.insert(pending);
        let (completion, after, _) = table.retire(handle, Completion::PROC_NULL);
        assert_eq!((completion.source, after), (MPI_PROC_NULL, handle));
        assert!(!table.get_mut(handle).unwrap().is_active());
        let plain = table.insert(Pending::completed(MPI_COMM_WORLD, Completion::PROC_NULL));
        assert_eq!(table.retire(plain, Completion::PROC_NULL).1, MPI_REQUEST_NULL);
    }
}
