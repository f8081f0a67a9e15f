//! Requests: MPI_Request handles over engine requests, with what must happen on completion
//! (unpacking a staged receive, translating the source to a communicator rank), and the
//! MPI_Wait/MPI_Test families. A generalized request ([`crate::grequest`]) has no engine request:
//! the application completes it.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;
use std::rc::Rc;
use std::sync::Arc;

use braid_engine::{Engine, EngineError, RequestId, SendMode, Status};

use crate::coll::drive::Outcome;
use crate::comm::coming::ComingComm;
use crate::comm::CommShared;
use crate::consts::*;
use crate::datatype;
use crate::error::{error, finish, raise, MpiError, MpiResult};
use crate::grequest::{self, Generalized, Query};
use crate::group::store;
use crate::runtime::{self, engine_error, Runtime};

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

/// Writes `completion` into `status` unless it is MPI_STATUS_IGNORE.
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
        *status = MPI_Status { count_lo, count_hi_and_cancelled, MPI_SOURCE: completion.source, MPI_TAG: completion.tag, MPI_ERROR: completion.error };
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
}

/// A send's or receive's arguments.
#[derive(Debug, Clone, Copy)]
pub struct Operation {
    /// None for receives.
    pub send_mode: Option<SendMode>,
    pub buffer: *mut u8,
    pub count: c_int,
    pub datatype: MPI_Datatype,
    /// Destination or source (communicator rank, MPI_ANY_SOURCE or MPI_PROC_NULL).
    pub peer: c_int,
    pub tag: c_int,
    pub comm: MPI_Comm,
}

/// A persistent request's operation (MPI_Send_init, MPI_Recv_init, ...) with its datatype's
/// description, held because MPI lets the datatype handle be freed while the request lives.
pub struct Persistent {
    pub op: Operation,
    pub datatype: datatype::DatatypeRef,
}

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
    pub fn completed(comm: MPI_Comm, completion: Completion) -> Pending {
        Pending { comm, shared: None, engine: None, staging: Staging::None, done: Some(completion), persistent: None, generalized: None, coming: None }
    }

    /// A non-blocking collective in flight.
    pub fn collective(comm: MPI_Comm, outcome: Rc<Outcome>) -> Pending {
        Pending { comm, shared: None, engine: None, staging: Staging::Collective(outcome), done: None, persistent: None, generalized: None, coming: None }
    }

    /// MPI_Comm_idup's request: completing it puts `coming` in place.
    pub fn with_coming(self, coming: ComingComm) -> Pending {
        Pending { coming: Some(Box::new(coming)), ..self }
    }

    /// Whether the operation is still in flight (a persistent request between starts is not).
    fn is_active(&self) -> bool {
        self.engine.is_some() || self.done.is_some() || self.generalized.is_some() || matches!(self.staging, Staging::Collective(_))
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
        self.staging = Staging::None;
        let completion = Completion { error: result.err().unwrap_or(MPI_SUCCESS), ..Completion::EMPTY };
        self.done = Some(completion);
        completion
    }

    /// Progresses until a collective's schedule has finished.
    #[cold]
    fn wait_collective(&mut self, engine: &mut Engine) -> Result<(), EngineError> {
        if let Staging::Collective(outcome) = &self.staging {
            let outcome = outcome.clone();
            engine.wait_until(|_| outcome.result().is_some())?;
            let result = outcome.result().expect("the wait ends once the collective has");
            self.finish_collective(result);
        }
        Ok(())
    }

    /// A generalized request not completed with MPI_Grequest_complete: nothing can complete it
    /// while a call waits for it (MPI_THREAD_SERIALIZED), so a wait would never end.
    fn waits_forever(&self) -> bool {
        self.done.is_none() && self.generalized.as_ref().is_some_and(|generalized| !generalized.complete)
    }

    /// Turns the engine's status into the MPI completion, unpacking a staged receive.
    fn complete(&mut self, status: Status) -> Completion {
        self.engine = None;
        let source = match &self.shared {
            Some(shared) => shared.rank_of_job(status.source).map_or(MPI_UNDEFINED, |r| r as c_int),
            None => status.source as c_int,
        };
        let mut completion = Completion {
            source,
            tag: status.tag,
            count: status.count,
            cancelled: status.cancelled,
            error: if status.truncated { MPI_ERR_TRUNCATE } else { MPI_SUCCESS },
        };
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
    fn is_complete(&self, engine: &Engine) -> bool {
        if self.generalized.is_some() {
            return self.done.is_some();
        }
        match self.engine {
            Some(id) => engine.is_complete(id),
            None => !matches!(self.staging, Staging::Collective(_)) || self.collective_end().is_some(),
        }
    }

    /// Waits for the operation and takes its completion (an inactive request gives EMPTY).
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
        RequestTable {
            slots: Vec::new(),
            free: Vec::new(),
            detached: Vec::new(),
            freed_generalized: Vec::new(),
            completed_send: Pending::completed(MPI_COMM_WORLD, Completion::SENT),
        }
    }
}

impl RequestTable {
    pub fn new() -> RequestTable {
        RequestTable::default()
    }

    #[inline]
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

/// Reads a request handle through a C pointer.
///
/// # Safety
/// `request` must be NULL or point to a handle.
unsafe fn read_handle(request: *const MPI_Request, what: &str) -> MpiResult<MPI_Request> {
    if request.is_null() {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("{what} must not be NULL")));
    }
    // SAFETY: non-null, and the caller guarantees it points to a handle.
    Ok(unsafe { *request })
}

/// A C array of `count` requests.
///
/// # Safety
/// `requests` must point to `count` handles when `count > 0`.
unsafe fn request_array<'a>(count: c_int, requests: *mut MPI_Request) -> MpiResult<&'a mut [MPI_Request]> {
    if count < 0 {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_COUNT, format!("negative request count {count}")));
    }
    if count == 0 {
        return Ok(&mut []);
    }
    if requests.is_null() {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "the request array is NULL"));
    }
    // SAFETY: non-null, and the caller guarantees `count` handles.
    Ok(unsafe { std::slice::from_raw_parts_mut(requests, count as usize) })
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

/// Whether the handle refers to an operation that can complete (not null, not inactive).
#[inline]
fn is_active(rt: &mut Runtime, request: MPI_Request) -> MpiResult<bool> {
    if request == MPI_REQUEST_NULL {
        return Ok(false);
    }
    Ok(rt.requests.get_mut(request)?.is_active())
}

#[cold]
fn never_completes(request: MPI_Request) -> MpiError {
    let detail = format!("generalized request {request} is not complete, and no MPI_Grequest_complete can run while this call waits (MPI_THREAD_SERIALIZED)");
    error(MPI_COMM_WORLD, MPI_ERR_REQUEST, detail)
}

/// Waits for one active request; frees it (persistent: deactivates it).
fn wait_one(rt: &mut Runtime, request: MPI_Request) -> MpiResult<(Completion, MPI_Request, MPI_Comm)> {
    let Runtime { engine, requests, .. } = rt;
    let pending = requests.get_mut(request)?;
    if pending.waits_forever() {
        return Err(never_completes(request));
    }
    let comm = pending.comm;
    let completion = pending.wait(engine).map_err(|e| engine_error(comm, e))?;
    let (completion, handle, coming) = requests.retire(request, completion);
    if let Some(coming) = coming {
        coming.arrive(&mut rt.comms, &mut rt.attributes, completion.error == MPI_SUCCESS);
    }
    Ok((completion, handle, comm))
}

/// Tests one active request once; Some when it completed (then freed or deactivated).
fn test_one(rt: &mut Runtime, request: MPI_Request) -> MpiResult<Option<(Completion, MPI_Request, MPI_Comm)>> {
    let Runtime { engine, requests, .. } = rt;
    let pending = requests.get_mut(request)?;
    let comm = pending.comm;
    if !pending.poll(engine).map_err(|e| engine_error(comm, e))? {
        return Ok(None);
    }
    let completion = pending.done.take().unwrap_or(Completion::EMPTY);
    let (completion, handle, coming) = requests.retire(request, completion);
    if let Some(coming) = coming {
        coming.arrive(&mut rt.comms, &mut rt.attributes, completion.error == MPI_SUCCESS);
    }
    Ok(Some((completion, handle, comm)))
}

/// The error of a finished request, if it failed.
#[inline]
pub(crate) fn completion_error(function: &str, completion: &Completion, comm: MPI_Comm) -> c_int {
    if completion.error == MPI_SUCCESS {
        return MPI_SUCCESS;
    }
    failed_completion(function, completion, comm)
}

#[cold]
fn failed_completion(function: &str, completion: &Completion, comm: MPI_Comm) -> c_int {
    let detail = match completion.error {
        MPI_ERR_TRUNCATE => format!("the message was longer than the receive buffer ({} bytes fit)", completion.count),
        _ => "the operation failed".to_string(),
    };
    raise(comm, function, completion.error, &detail)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Wait's arguments, passed on.
        return unsafe { crate::threaded::wait(request, status) };
    }
    // SAFETY: `request` is NULL or the caller's handle.
    unsafe { grequest::around("MPI_Wait", request, 1, || wait(request, status)) }
}

/// MPI_Wait.
///
/// # Safety
/// MPI_Wait's arguments.
unsafe fn wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: `request` is the caller's handle pointer.
        let handle = unsafe { read_handle(request, "request")? };
        if !is_active(rt, handle)? {
            return Ok(None);
        }
        wait_one(rt, handle).map(Some)
    });
    match outcome {
        Ok(None) => {
            // SAFETY: the caller's status pointer.
            unsafe { write_status(status, &Completion::EMPTY) };
            MPI_SUCCESS
        }
        Ok(Some((completion, handle, comm))) => {
            // SAFETY: the caller's handle and status pointers (request checked non-null).
            unsafe {
                *request = handle;
                write_status(status, &completion);
            }
            completion_error("MPI_Wait", &completion, comm)
        }
        Err(e) => raise(e.comm, "MPI_Wait", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: `request` is NULL or the caller's handle.
    unsafe { grequest::around("MPI_Test", request, 1, || test(request, flag, status)) }
}

/// MPI_Test.
///
/// # Safety
/// MPI_Test's arguments.
unsafe fn test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: `request` is the caller's handle pointer.
        let handle = unsafe { read_handle(request, "request")? };
        if flag.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "flag must not be NULL"));
        }
        if !is_active(rt, handle)? {
            return Ok(Some((Completion::EMPTY, handle, MPI_COMM_WORLD)));
        }
        test_one(rt, handle)
    });
    match outcome {
        Ok(None) => {
            // SAFETY: checked non-null above.
            unsafe { *flag = 0 };
            MPI_SUCCESS
        }
        Ok(Some((completion, handle, comm))) => {
            // SAFETY: the caller's pointers, `request` and `flag` checked non-null.
            unsafe {
                *flag = 1;
                *request = handle;
                write_status(status, &completion);
            }
            completion_error("MPI_Test", &completion, comm)
        }
        Err(e) => raise(e.comm, "MPI_Test", e.class, &e.detail),
    }
}

/// The return code of a multiple-completion call whose statuses already carry each request's
/// error: MPI_ERR_IN_STATUS (through the error handler) when one failed.
fn report_many(function: &str, results: &[(usize, Completion, MPI_Comm)]) -> c_int {
    let failed = results.iter().find(|(_, c, _)| c.error != MPI_SUCCESS);
    let Some(&(_, first, comm)) = failed else { return MPI_SUCCESS };
    let detail = format!("a request failed with \"{}\"; see the statuses", crate::error::class_text(first.error));
    raise(comm, function, MPI_ERR_IN_STATUS, &detail)
}

/// Completes every active request of `requests` (waiting for each), writes each one's status
/// and returns the failures, for MPI_Waitall and MPI_Testall.
///
/// # Safety
/// `array_of_statuses` is MPI_STATUSES_IGNORE or holds a status per request.
unsafe fn complete_all(rt: &mut Runtime, requests: &mut [MPI_Request], array_of_statuses: *mut MPI_Status) -> MpiResult<Vec<(usize, Completion, MPI_Comm)>> {
    // Nothing is completed when one of them never can be (only generalized requests can't).
    if grequest::any_live() {
        for &handle in requests.iter() {
            if is_active(rt, handle)? && rt.requests.get_mut(handle)?.waits_forever() {
                return Err(never_completes(handle));
            }
        }
    }
    let mut results = Vec::new();
    for (index, handle) in requests.iter_mut().enumerate() {
        let completion = if *handle == COMPLETED_SEND {
            *handle = MPI_REQUEST_NULL;
            Completion::SENT
        } else if is_active(rt, *handle)? {
            let (completion, new_handle, comm) = wait_one(rt, *handle)?;
            *handle = new_handle;
            if completion.error != MPI_SUCCESS {
                results.push((index, completion, comm));
            }
            completion
        } else {
            Completion::EMPTY
        };
        // SAFETY: the caller's status array holds a status per request (or is ignored).
        unsafe { write_status(status_at(array_of_statuses, index), &completion) };
    }
    Ok(results)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(count: c_int, array_of_requests: *mut MPI_Request, array_of_statuses: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Waitall's arguments, passed on.
        return unsafe { crate::threaded::waitall(count, array_of_requests, array_of_statuses) };
    }
    // SAFETY: `array_of_requests` holds `count` handles.
    unsafe { grequest::around("MPI_Waitall", array_of_requests, count, || wait_all(count, array_of_requests, array_of_statuses)) }
}

/// MPI_Waitall.
///
/// # Safety
/// MPI_Waitall's arguments.
unsafe fn wait_all(count: c_int, array_of_requests: *mut MPI_Request, array_of_statuses: *mut MPI_Status) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: MPI requires `count` handles.
        let requests = unsafe { request_array(count, array_of_requests)? };
        // SAFETY: the caller's status array holds `count` statuses (or is ignored).
        unsafe { complete_all(rt, requests, array_of_statuses) }
    });
    match outcome {
        Ok(results) => report_many("MPI_Waitall", &results),
        Err(e) => raise(e.comm, "MPI_Waitall", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(count: c_int, array_of_requests: *mut MPI_Request, flag: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    // SAFETY: `array_of_requests` holds `count` handles.
    unsafe { grequest::around("MPI_Testall", array_of_requests, count, || test_all(count, array_of_requests, flag, array_of_statuses)) }
}

/// MPI_Testall.
///
/// # Safety
/// MPI_Testall's arguments.
unsafe fn test_all(count: c_int, array_of_requests: *mut MPI_Request, flag: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: MPI requires `count` handles.
        let requests = unsafe { request_array(count, array_of_requests)? };
        if flag.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "flag must not be NULL"));
        }
        let mut all_done = true;
        for &handle in requests.iter() {
            if is_active(rt, handle)? {
                let Runtime { engine, requests: table, .. } = &mut *rt;
                let pending = table.get_mut(handle)?;
                let comm = pending.comm;
                all_done &= pending.poll(engine).map_err(|e| engine_error(comm, e))?;
            }
        }
        if !all_done {
            // SAFETY: checked non-null.
            unsafe { *flag = 0 };
            return Ok(Vec::new());
        }
        // SAFETY: the caller's status array holds `count` statuses (or is ignored).
        let results = unsafe { complete_all(rt, requests, array_of_statuses)? };
        // SAFETY: checked non-null.
        unsafe { *flag = 1 };
        Ok(results)
    });
    match outcome {
        Ok(results) => report_many("MPI_Testall", &results),
        Err(e) => raise(e.comm, "MPI_Testall", e.class, &e.detail),
    }
}

/// The first complete active request in `requests` (after one progress pass), if any; None for
/// "no active request".
fn first_complete(rt: &mut Runtime, requests: &[MPI_Request]) -> MpiResult<Option<Option<usize>>> {
    let mut any_active = false;
    for (index, &handle) in requests.iter().enumerate() {
        if !is_active(rt, handle)? {
            continue;
        }
        any_active = true;
        let Runtime { engine, requests: table, .. } = &mut *rt;
        let pending = table.get_mut(handle)?;
        let comm = pending.comm;
        if pending.poll(engine).map_err(|e| engine_error(comm, e))? {
            return Ok(Some(Some(index)));
        }
    }
    Ok(if any_active { Some(None) } else { None })
}

/// Blocks until one of the active requests has completed in the engine.
fn block_until_any(rt: &mut Runtime, requests: &[MPI_Request]) -> MpiResult<()> {
    let mut can_complete = false;
    for &handle in requests {
        can_complete |= is_active(rt, handle)? && !rt.requests.get_mut(handle)?.waits_forever();
    }
    if !can_complete {
        let first = requests.iter().copied().find(|&handle| handle != MPI_REQUEST_NULL).unwrap_or(MPI_REQUEST_NULL);
        return Err(never_completes(first));
    }
    let Runtime { engine, requests: table, .. } = rt;
    let table = &*table;
    engine
        .wait_until(|engine| {
            requests.iter().any(|&handle| {
                handle != MPI_REQUEST_NULL
                    && usize::try_from(handle).ok().and_then(|h| h.checked_sub(1)).and_then(|i| table.slots.get(i)).and_then(|s| s.as_ref()).is_some_and(|p| p.is_active() && p.is_complete(engine))
            })
        })
        .map_err(|e| engine_error(MPI_COMM_WORLD, e))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(count: c_int, array_of_requests: *mut MPI_Request, index: *mut c_int, status: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Waitany's arguments, passed on.
        return unsafe { crate::threaded::waitany(count, array_of_requests, index, status) };
    }
    // SAFETY: `array_of_requests` holds `count` handles.
    unsafe { grequest::around("MPI_Waitany", array_of_requests, count, || any_completion("MPI_Waitany", count, array_of_requests, index, std::ptr::null_mut(), status, true)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(count: c_int, array_of_requests: *mut MPI_Request, index: *mut c_int, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    if flag.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Testany", MPI_ERR_ARG, "flag must not be NULL");
    }
    // SAFETY: `array_of_requests` holds `count` handles.
    unsafe { grequest::around("MPI_Testany", array_of_requests, count, || any_completion("MPI_Testany", count, array_of_requests, index, flag, status, false)) }
}

/// MPI_Waitany (blocking) and MPI_Testany.
unsafe fn any_completion(
    function: &str,
    count: c_int,
    array_of_requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
    blocking: bool,
) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: MPI requires `count` handles.
        let requests = unsafe { request_array(count, array_of_requests)? };
        if index.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "index must not be NULL"));
        }
        loop {
            match first_complete(rt, requests)? {
                None => return Ok(Some((MPI_UNDEFINED, Completion::EMPTY, MPI_COMM_WORLD))),
                Some(Some(found)) => {
                    let (completion, handle, comm) = wait_one(rt, requests[found])?;
                    requests[found] = handle;
                    return Ok(Some((found as c_int, completion, comm)));
                }
                Some(None) if blocking => block_until_any(rt, requests)?,
                Some(None) => return Ok(None),
            }
        }
    });
    match outcome {
        Ok(None) => {
            // SAFETY: `flag` is non-null for the test form (the only one that gets here).
            unsafe {
                *flag = 0;
                *index = MPI_UNDEFINED;
            }
            MPI_SUCCESS
        }
        Ok(Some((found, completion, comm))) => {
            // SAFETY: `index` checked non-null; `flag` is non-null when given; the caller's status.
            unsafe {
                *index = found;
                if !flag.is_null() {
                    *flag = 1;
                }
                write_status(status, &completion);
            }
            completion_error(function, &completion, comm)
        }
        Err(e) => raise(e.comm, function, e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitsome(incount: c_int, array_of_requests: *mut MPI_Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Waitsome's arguments, passed on.
        return unsafe { crate::threaded::waitsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses) };
    }
    let some = || some_completion("MPI_Waitsome", incount, array_of_requests, outcount, array_of_indices, array_of_statuses, true);
    // SAFETY: `array_of_requests` holds `incount` handles.
    unsafe { grequest::around("MPI_Waitsome", array_of_requests, incount, some) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testsome(incount: c_int, array_of_requests: *mut MPI_Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    let some = || some_completion("MPI_Testsome", incount, array_of_requests, outcount, array_of_indices, array_of_statuses, false);
    // SAFETY: `array_of_requests` holds `incount` handles.
    unsafe { grequest::around("MPI_Testsome", array_of_requests, incount, some) }
}

/// MPI_Waitsome (blocking) and MPI_Testsome.
unsafe fn some_completion(
    function: &str,
    incount: c_int,
    array_of_requests: *mut MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
    blocking: bool,
) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: MPI requires `incount` handles.
        let requests = unsafe { request_array(incount, array_of_requests)? };
        if outcount.is_null() || (incount > 0 && array_of_indices.is_null()) {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "outcount and array_of_indices must not be NULL"));
        }
        loop {
            if first_complete(rt, requests)?.is_none() {
                // SAFETY: checked non-null.
                unsafe { *outcount = MPI_UNDEFINED };
                return Ok(Vec::new());
            }
            let mut done = 0usize;
            let mut failures = Vec::new();
            for (index, request) in requests.iter_mut().enumerate() {
                if !is_active(rt, *request)? {
                    continue;
                }
                if let Some((completion, handle, comm)) = test_one(rt, *request)? {
                    *request = handle;
                    // SAFETY: the caller's arrays hold `incount` entries (statuses may be ignored).
                    unsafe {
                        *array_of_indices.add(done) = index as c_int;
                        write_status(status_at(array_of_statuses, done), &completion);
                    }
                    if completion.error != MPI_SUCCESS {
                        failures.push((done, completion, comm));
                    }
                    done += 1;
                }
            }
            if done > 0 || !blocking {
                // SAFETY: checked non-null.
                unsafe { *outcount = done as c_int };
                return Ok(failures);
            }
            block_until_any(rt, requests)?;
        }
    });
    match outcome {
        Ok(failures) => report_many(function, &failures),
        Err(e) => raise(e.comm, function, e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(request: *mut MPI_Request) -> c_int {
    let result = runtime::with(|rt| {
        // SAFETY: `request` is the caller's handle pointer.
        let handle = unsafe { read_handle(request, "request")? };
        if let Some(generalized) = rt.requests.get_mut(handle)?.generalized.as_mut() {
            // Its free function runs once it is both freed and complete.
            if generalized.complete {
                rt.requests.retire_released(handle);
            } else {
                generalized.released = true;
            }
            // SAFETY: checked non-null by read_handle.
            unsafe { *request = MPI_REQUEST_NULL };
            return Ok(());
        }
        if rt.requests.get_mut(handle)?.coming.is_some() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "the request of an MPI_Comm_idup cannot be freed: complete it, or its communicator is never made"));
        }
        let pending = rt.requests.remove(handle).expect("checked above");
        let comm = pending.comm;
        match (pending.engine, &pending.staging) {
            (Some(id), Staging::None) => rt.engine.release(id),
            (Some(_), _) => rt.requests.detach(&mut rt.engine, pending).map_err(|e| engine_error(comm, e))?,
            (None, _) => {}
        }
        // SAFETY: checked non-null by read_handle.
        unsafe { *request = MPI_REQUEST_NULL };
        Ok(())
    });
    grequest::run_frees("MPI_Request_free", finish("MPI_Request_free", result))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cancel(request: *mut MPI_Request) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: `request` is the caller's handle pointer.
        let handle = unsafe { read_handle(request, "request")? };
        let pending = rt.requests.get_mut(handle)?;
        if let Some(generalized) = &pending.generalized {
            return Ok(Some(generalized.cancellation()));
        }
        // The engine cancels what has not matched (a send may take the receiver's answer, which
        // a later progress step brings); the request then completes, cancelled or not.
        if let Some(id) = pending.engine {
            rt.engine.cancel(id);
        }
        Ok(None)
    });
    match outcome {
        Ok(None) => MPI_SUCCESS,
        Ok(Some(cancellation)) => match cancellation.call() {
            MPI_SUCCESS => MPI_SUCCESS,
            failed => raise(MPI_COMM_WORLD, "MPI_Cancel", failed, "the cancel function of the generalized request failed"),
        },
        Err(e) => raise(e.comm, "MPI_Cancel", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test_cancelled(status: *const MPI_Status, flag: *mut c_int) -> c_int {
    if !is_real_status(status) {
        return raise(MPI_COMM_WORLD, "MPI_Test_cancelled", MPI_ERR_ARG, "status must be a real status");
    }
    // SAFETY: a real status pointer from the caller; `flag` is checked by store.
    let result = unsafe { store(flag, c_int::from(status_cancelled(&*status)), "flag") };
    finish("MPI_Test_cancelled", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status(request: MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: one handle, on the stack.
    unsafe { grequest::around("MPI_Request_get_status", &request, 1, || request_status(request, flag, status)) }
}

/// MPI_Request_get_status.
///
/// # Safety
/// MPI_Request_get_status's arguments.
unsafe fn request_status(request: MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let outcome = runtime::with(|rt| {
        if flag.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "flag must not be NULL"));
        }
        if !is_active(rt, request)? {
            return Ok(Some(Completion::EMPTY));
        }
        let Runtime { engine, requests, .. } = rt;
        let pending = requests.get_mut(request)?;
        let comm = pending.comm;
        if pending.poll(engine).map_err(|e| engine_error(comm, e))? {
            Ok(pending.done)
        } else {
            Ok(None)
        }
    });
    match outcome {
        Ok(completion) => {
            // SAFETY: `flag` checked non-null; the caller's status.
            unsafe {
                *flag = c_int::from(completion.is_some());
                if let Some(completion) = completion {
                    write_status(status, &completion);
                }
            }
            MPI_SUCCESS
        }
        Err(e) => raise(e.comm, "MPI_Request_get_status", e.class, &e.detail),
    }
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
        let mut status = MPI_Status::default();
        // SAFETY: a real status on the stack.
        unsafe { write_status(&mut status, &completion) };
        assert_eq!((status.MPI_SOURCE, status.MPI_TAG, status_count(&status)), (3, 7, 12));
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
        pending.persistent = Some(Box::new(Persistent { op, datatype: datatype::lookup(MPI_INT).unwrap() }));
        let handle = table.insert(pending);
        let (completion, after, _) = table.retire(handle, Completion::PROC_NULL);
        assert_eq!((completion.source, after), (MPI_PROC_NULL, handle));
        assert!(!table.get_mut(handle).unwrap().is_active());
        let plain = table.insert(Pending::completed(MPI_COMM_WORLD, Completion::PROC_NULL));
        assert_eq!(table.retire(plain, Completion::PROC_NULL).1, MPI_REQUEST_NULL);
    }
}
