//! Blocking calls under MPI_THREAD_MULTIPLE: each is its non-blocking form followed by a wait that
//! tests in short steps, so that the state's lock is free between steps and the other threads'
//! calls (which the wait may depend on: a reply to another thread's message) go on meanwhile.
//! Below MPI_THREAD_MULTIPLE the blocking calls keep their direct paths; each checks
//! [`runtime::is_locking`] first.

// The safety contract of these functions is that of the MPI calls they stand for.
#![allow(clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{c_int, c_void};
use std::time::{Duration, Instant};

use crate::consts::*;
use crate::error::{MpiError, MpiResult};
use crate::message::abi::{MPI_Improbe, MPI_Imrecv};
use crate::p2p::{MPI_Iprobe, MPI_Irecv};
use crate::request::abi::{MPI_Test, MPI_Testall, MPI_Testany, MPI_Testsome};
use crate::runtime::sleepers::{self, Armed};
use crate::runtime::{self, Runtime};

/// A non-blocking send: MPI_Isend, MPI_Issend, MPI_Irsend or MPI_Ibsend.
pub type StartSend = unsafe extern "C" fn(*const c_void, c_int, MPI_Datatype, c_int, c_int, MPI_Comm, *mut MPI_Request) -> c_int;

/// Calls `test` (which sets its flag when done) until it is done or fails; `function` names the
/// blocking call in an error met between the tests.
fn until(function: &str, mut test: impl FnMut(&mut c_int) -> c_int) -> c_int {
    let mut backoff = Backoff::default();
    loop {
        let mut flag = 0;
        let code = sleepers::waiting_step(|| test(&mut flag));
        if code != MPI_SUCCESS || flag != 0 {
            return code;
        }
        if let Err(e) = backoff.pause() {
            return crate::error::raise(e.comm, function, e.class, &e.detail);
        }
    }
}

pub unsafe fn wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    // SAFETY: MPI_Wait's arguments, passed on.
    until("MPI_Wait", |flag| unsafe { MPI_Test(request, flag, status) })
}

pub unsafe fn waitall(count: c_int, requests: *mut MPI_Request, statuses: *mut MPI_Status) -> c_int {
    // SAFETY: MPI_Waitall's arguments, passed on.
    until("MPI_Waitall", |flag| unsafe { MPI_Testall(count, requests, flag, statuses) })
}

pub unsafe fn waitany(count: c_int, requests: *mut MPI_Request, index: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: MPI_Waitany's arguments, passed on.
    until("MPI_Waitany", |flag| unsafe { MPI_Testany(count, requests, index, flag, status) })
}

pub unsafe fn waitsome(count: c_int, requests: *mut MPI_Request, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MPI_Status) -> c_int {
    until("MPI_Waitsome", |flag| {
        // SAFETY: MPI_Waitsome's arguments, passed on.
        let code = unsafe { MPI_Testsome(count, requests, outcount, indices, statuses) };
        // SAFETY: Testsome has set `*outcount` (checked non-null there) when it succeeded.
        *flag = c_int::from(code == MPI_SUCCESS && unsafe { *outcount } != 0);
        code
    })
}

/// A blocking call as its non-blocking form: `start` stores the request it starts, which is then
/// waited for, its status written to `status`.
///
/// # Safety
/// `start` is the non-blocking call with the blocking call's arguments; `status` is the caller's.
pub unsafe fn start_and_wait(start: impl FnOnce(*mut MPI_Request) -> c_int, status: *mut MPI_Status) -> c_int {
    let mut request = MPI_REQUEST_NULL;
    let code = start(&mut request);
    if code != MPI_SUCCESS {
        return code;
    }
    // SAFETY: a request just started; the caller's status.
    unsafe { wait(&mut request, status) }
}

pub unsafe fn send(start: StartSend, buf: *const c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
    // SAFETY: the blocking send's arguments, passed on.
    unsafe { start_and_wait(|request| start(buf, count, datatype, dest, tag, comm, request), MPI_STATUS_IGNORE) }
}

pub unsafe fn recv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
    // SAFETY: MPI_Recv's arguments, passed on.
    unsafe { start_and_wait(|request| MPI_Irecv(buf, count, datatype, source, tag, comm, request), status) }
}

pub unsafe fn probe(source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
    // SAFETY: MPI_Probe's arguments, passed on.
    until("MPI_Probe", |flag| unsafe { MPI_Iprobe(source, tag, comm, flag, status) })
}

pub unsafe fn mprobe(source: c_int, tag: c_int, comm: MPI_Comm, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
    // SAFETY: MPI_Mprobe's arguments, passed on.
    until("MPI_Mprobe", |flag| unsafe { MPI_Improbe(source, tag, comm, flag, message, status) })
}

pub unsafe fn mrecv(buf: *mut c_void, count: c_int, datatype: MPI_Datatype, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
    // SAFETY: MPI_Mrecv's arguments, passed on.
    unsafe { start_and_wait(|request| MPI_Imrecv(buf, count, datatype, message, request), status) }
}

/// Runs `step` (which makes progress and says whether what it waits for is done) until it gives a
/// result, entering the state for each step only: between steps the lock is free, so that the
/// other threads' calls (which the wait may depend on) go on, and the thread sleeps once it has
/// waited a while (see [`sleepers`]).
#[cold]
pub fn wait_unlocked<R>(mut step: impl FnMut(&mut Runtime) -> MpiResult<Option<R>>) -> MpiResult<R> {
    let mut backoff = Backoff::default();
    loop {
        if let Some(result) = sleepers::waiting_step(|| runtime::with(&mut step))? {
            return Ok(result);
        }
        backoff.pause()?;
    }
}

/// Steps a waiting thread takes before it starts yielding its core between steps.
const SPIN_STEPS: u32 = 64;

/// The pause between two steps of a wait: none at first, then the core is yielded, then the
/// thread sleeps (see [`sleepers`]). A sleep is armed at one pause and slept at the next, so
/// that the step between them sees whatever came before the arming.
#[derive(Default)]
pub struct Backoff {
    idle_steps: u32,
    awake_since: Option<Instant>,
    armed: Option<Armed>,
}

impl Backoff {
    /// Called after each step that found the wait not over.
    pub fn pause(&mut self) -> MpiResult<()> {
        if let Some(armed) = self.armed.take() {
            let start = Instant::now();
            sleepers::sleep(&armed);
            disarm(armed, start.elapsed());
            self.idle_steps = SPIN_STEPS;
            return Ok(());
        }
        self.idle_steps = self.idle_steps.saturating_add(1);
        if self.idle_steps <= SPIN_STEPS {
            return Ok(());
        }
        let awake_since = *self.awake_since.get_or_insert_with(Instant::now);
        match sleepers::park_after() {
            Some(after) if awake_since.elapsed() >= after => {
                self.armed = sleepers::waiting_step(|| runtime::with(|rt| sleepers::arm(&mut rt.engine).map_err(|e| runtime::engine_error(MPI_COMM_WORLD, e))))?;
                if self.armed.is_none() {
                    std::thread::yield_now();
                }
            }
            _ => std::thread::yield_now(),
        }
        Ok(())
    }
}

impl Drop for Backoff {
    /// A wait that ended between arming and sleeping gives its sleep back.
    fn drop(&mut self) {
        if let Some(armed) = self.armed.take() {
            disarm(armed, Duration::ZERO);
        }
    }
}

fn disarm(armed: Armed, slept: Duration) {
    if sleepers::needs_engine(&armed) {
        let _: Result<(), MpiError> = sleepers::waiting_step(|| {
            runtime::with(|rt| {
                sleepers::disarm(armed, slept, Some(&mut rt.engine));
                Ok(())
            })
        });
    } else {
        sleepers::disarm(armed, slept, None);
    }
}

/// Whether blocking calls must take these forms.
#[inline]
pub fn active() -> bool {
    runtime::is_locking()
}
