//! The process-global MPI state: the [`Runtime`] of every module's state, how calls enter it
//! ([`with`]), and its setting up and taking down. The environment calls (MPI_Init ...
//! MPI_Finalize, MPI_Abort) are in [`abi`].
//!
//! The state is one value in a static. Below MPI_THREAD_MULTIPLE no lock is taken (the application
//! keeps its threads' calls apart); at MPI_THREAD_MULTIPLE every call takes one lock, and blocking
//! calls wait without holding it.

pub mod abi;
pub(crate) mod sleepers;

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread::ThreadId;

use braid_config::Config;
use braid_engine::events::Event;
use braid_engine::Engine;
use braid_pmi::Bootstrap;

use crate::attr::AttributeStore;
use crate::bsend::BsendBuffers;
use crate::coll::CollTuning;
use crate::comm::CommTable;
use crate::consts::*;
use crate::error::codes::ErrorCodes;
use crate::error::handlers::ErrhandlerTable;
use crate::error::{error, MpiError, MpiResult};
use crate::group::GroupTable;
use crate::message::MessageTable;
use crate::progress_thread::ProgressThread;
use crate::request::RequestTable;

/// Everything an initialised process holds.
pub struct Runtime {
    pub engine: Engine,
    pub comms: CommTable,
    pub groups: GroupTable,
    pub requests: RequestTable,
    /// Messages matched by MPI_Mprobe/MPI_Improbe, not received yet.
    pub messages: MessageTable,
    /// The buffer attached for buffered sends.
    pub bsend: BsendBuffers,
    pub attributes: AttributeStore,
    pub errhandlers: ErrhandlerTable,
    /// One-sided communication windows.
    pub windows: crate::win::WinTable,
    /// Shares large one-sided copies with a helper thread on an idle CPU.
    pub copy_helper: crate::win::assist::CopyHelper,
    pub error_codes: ErrorCodes,
    pub tuning: CollTuning,
    /// What blocking collectives reuse between calls.
    pub coll_spare: crate::coll::drive::Spare,
    /// Open sessions (MPI_Session_init).
    pub sessions: crate::session::SessionTable,
    /// What partitioned sends and receives share.
    pub partitioned: std::rc::Rc<std::cell::RefCell<crate::partitioned::Registry>>,
    /// The settings read at MPI_Init.
    pub config: Config,
    pub thread_level: c_int,
    main_thread: ThreadId,
}

impl Runtime {
    /// Whether the calling thread is the one that initialised MPI.
    pub fn is_main_thread(&self) -> bool {
        self.main_thread == std::thread::current().id()
    }
}

/// The state, and what keeps two threads out of it. Below MPI_THREAD_MULTIPLE the application
/// guarantees that no two threads are inside MPI at once, so no lock is taken and the IN_USE bit
/// of [`ENTRY`] only catches re-entry (a bug: a callback calling MPI). At MPI_THREAD_MULTIPLE, or
/// with a progress thread, every access takes `lock` first.
struct RuntimeCell {
    lock: Mutex<()>,
    state: UnsafeCell<Option<Runtime>>,
}

// SAFETY: `state` is only reached through `enter`, which holds `lock` whenever more than one
// thread may call MPI (LOCKING), and otherwise relies on MPI_THREAD_SERIALIZED: the application's
// own synchronisation between its calls orders every access.
unsafe impl Sync for RuntimeCell {}

static RUNTIME: RuntimeCell = RuntimeCell { lock: Mutex::new(()), state: UnsafeCell::new(None) };

/// The world model's phase: MPI_Init and MPI_Finalize move it (MPI_Initialized, MPI_Finalized).
const NOT_INITIALIZED: u8 = 0;
const RUNNING: u8 = 1;
const FINALIZED: u8 = 2;
static PHASE: AtomicU8 = AtomicU8::new(NOT_INITIALIZED);

/// Whether the state is up: from the first of MPI_Init and MPI_Session_init to the last of
/// MPI_Finalize and MPI_Session_finalize. Once down it stays down: the launcher's connection is
/// made once per process.
const DOWN: u8 = 0;
const UP: u8 = 1;
const ENDED: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(DOWN);
/// Sessions open (MPI_Session_init without its MPI_Session_finalize yet).
static SESSIONS: AtomicU32 = AtomicU32::new(0);

/// The progress thread, when BRAID_PROGRESS_THREAD asks for one.
static PROGRESS_THREAD: Mutex<Option<ProgressThread>> = Mutex::new(None);

/// How calls enter the state, as bits: LOCKING (calls must take the lock: MPI_THREAD_MULTIPLE,
/// or a progress thread) and IN_USE (a call is inside). One byte, so that the common case
/// (neither) is one load and one store on the way in and one store on the way out. With
/// LOCKING set, the IN_USE bit only changes under the lock.
static ENTRY: AtomicU8 = AtomicU8::new(0);
const LOCKING: u8 = 1;
const IN_USE: u8 = 2;

/// Marks the state in use for as long as it lives.
struct Entered<'a> {
    lock: Option<MutexGuard<'a, ()>>,
    /// What [`ENTRY`] was on the way in.
    restore: u8,
    /// Under the lock: what tells on the way out whether this call changed anything that
    /// sleeping waiters wait for (see [`sleepers`]).
    mark: Option<u64>,
}

impl Drop for Entered<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.lock.is_some() {
            // SAFETY: the lock is still held, and the call's own reference to the state is gone.
            let engine = unsafe { (*RUNTIME.state.get()).as_ref() }.map(|rt| &rt.engine);
            sleepers::on_exit(engine, self.mark);
        }
        // Runs before the guard is dropped, so under LOCKING this store is still made under the lock.
        ENTRY.store(self.restore, Ordering::Relaxed);
    }
}

/// Enters the state: with the lock when LOCKING (waiting for it, or only if free when `wait` is
/// false); None when it is in use (re-entry) or the lock is busy and `wait` is false.
#[inline]
fn enter(wait: bool) -> Option<Entered<'static>> {
    if ENTRY.load(Ordering::Relaxed) == 0 {
        ENTRY.store(IN_USE, Ordering::Relaxed);
        return Some(Entered { lock: None, restore: 0, mark: None });
    }
    enter_locking(wait)
}

#[cold]
fn enter_locking(wait: bool) -> Option<Entered<'static>> {
    if ENTRY.load(Ordering::Relaxed) & LOCKING == 0 {
        return None;
    }
    let lock = if wait { RUNTIME.lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) } else { RUNTIME.lock.try_lock().ok()? };
    if ENTRY.load(Ordering::Relaxed) & IN_USE != 0 {
        return None;
    }
    ENTRY.store(LOCKING | IN_USE, Ordering::Relaxed);
    // SAFETY: the lock is held and no other reference to the state exists yet.
    let mark = sleepers::entry_mark(unsafe { (*RUNTIME.state.get()).as_ref() }.map(|rt| &rt.engine));
    Some(Entered { lock: Some(lock), restore: LOCKING, mark })
}

/// The state, while `_entered` is held.
///
/// # Safety
/// Only one `Entered` exists at a time (what `enter` ensures), and the result does not outlive it.
#[inline]
unsafe fn state<'a>(_entered: &'a mut Entered<'static>) -> &'a mut Option<Runtime> {
    // SAFETY: per the caller, this is the only reference to the state while `_entered` lives.
    unsafe { &mut *RUNTIME.state.get() }
}

/// Marks the state in use while LOCKING is clear, for as long as it lives: the common case of
/// [`with`], kept apart from [`Entered`] so that it holds no guard to test on the way out.
struct InUse;

impl Drop for InUse {
    /// Leaves the state; events the engine recorded meanwhile then go to the tools, with the
    /// state free for their callbacks' MPI calls.
    #[inline]
    fn drop(&mut self) {
        ENTRY.store(0, Ordering::Relaxed);
        if braid_engine::events::pending() {
            deliver_events();
        }
    }
}

/// Runs `f` on the state; an error if MPI is not running. Events the engine recorded meanwhile
/// for tools are delivered once the state is released (see [`InUse`] and `tools::events`).
#[inline]
pub fn with<R>(f: impl FnOnce(&mut Runtime) -> MpiResult<R>) -> MpiResult<R> {
    if ENTRY.load(Ordering::Relaxed) != 0 {
        return with_locking(f);
    }
    ENTRY.store(IN_USE, Ordering::Relaxed);
    let _in_use = InUse;
    // SAFETY: with LOCKING clear only one thread calls MPI at a time (MPI_THREAD_SERIALIZED at
    // most), and IN_USE keeps re-entry out, so this is the only reference to the state until
    // `_in_use` is dropped at the end of this call.
    match unsafe { &mut *RUNTIME.state.get() }.as_mut() {
        Some(rt) => f(rt),
        None => Err(not_running()),
    }
}

/// [`with`] when the state is in use or calls must take the lock.
#[inline(never)]
fn with_locking<R>(f: impl FnOnce(&mut Runtime) -> MpiResult<R>) -> MpiResult<R> {
    let result = {
        let Some(mut entered) = enter_locking(true) else { reentered() };
        // SAFETY: `entered` is the only one, and the reference dies with this block.
        match unsafe { state(&mut entered) }.as_mut() {
            Some(rt) => f(rt),
            None => Err(not_running()),
        }
    };
    if braid_engine::events::pending() {
        deliver_events();
    }
    result
}

/// Where the engine's events for tools go: set by the tool interface when a tool first
/// registers for an event (the runtime does not name the tools, which name it).
static EVENT_SINK: OnceLock<fn(Vec<Event>, u64)> = OnceLock::new();

/// Makes `sink` the receiver of the engine's events (the first call wins).
pub fn set_event_sink(sink: fn(Vec<Event>, u64)) {
    let _ = EVENT_SINK.set(sink);
}

/// Hands the engine's events to the sink, with the state released so that the tools' callbacks
/// may call MPI. Without a sink the events are just taken.
#[cold]
#[inline(never)]
fn deliver_events() {
    if let Some((events, dropped)) = try_with(|rt| rt.engine.take_events()) {
        if let Some(sink) = EVENT_SINK.get() {
            sink(events, dropped);
        }
    }
}

/// Runs `f` on the state if MPI is running and the state is not in use (error paths).
pub fn try_with<R>(f: impl FnOnce(&mut Runtime) -> R) -> Option<R> {
    let mut entered = enter(false)?;
    // SAFETY: as in `with`.
    unsafe { state(&mut entered) }.as_mut().map(f)
}

/// Sets or clears the state (MPI_Init, MPI_Finalize).
fn replace_state(runtime: Option<Runtime>) -> Option<Runtime> {
    let Some(mut entered) = enter(true) else { reentered() };
    // SAFETY: as in `with`.
    std::mem::replace(unsafe { state(&mut entered) }, runtime)
}

#[cold]
fn reentered() -> ! {
    panic!("Braid: an MPI function was called while another MPI call of this process was still running (from a callback, or from a second thread below MPI_THREAD_MULTIPLE)")
}

/// Whether several threads may be inside MPI at once (MPI_THREAD_MULTIPLE or a progress thread):
/// blocking calls then wait without holding the state.
#[inline]
pub fn is_locking() -> bool {
    ENTRY.load(Ordering::Relaxed) & LOCKING != 0
}

#[cold]
fn not_running() -> MpiError {
    let detail = if PHASE.load(Ordering::Acquire) == FINALIZED { "called after MPI_Finalize" } else { "called before MPI_Init" };
    error(MPI_COMM_WORLD, MPI_ERR_OTHER, detail)
}

/// Whether the state is up: MPI_Init has run and MPI_Finalize has not, or a session is open.
pub fn is_running() -> bool {
    STATE.load(Ordering::Acquire) == UP
}

/// Whether MPI_Init has run (MPI_Finalize may have run since).
pub fn was_initialized() -> bool {
    PHASE.load(Ordering::Acquire) != NOT_INITIALIZED
}

/// Whether MPI_Finalize has run.
pub fn is_finalized() -> bool {
    PHASE.load(Ordering::Acquire) == FINALIZED
}

/// Maps an engine failure to an MPI error on `comm` (its home is [`crate::error`]).
pub use crate::error::engine_error;

/// Ends the whole job with `code` (through the launcher when MPI is running).
#[cold]
pub fn abort_job(code: c_int, message: &str) -> ! {
    try_with(|rt| rt.engine.abort(code, message));
    std::process::exit(code)
}

fn bootstrap() -> Result<Box<dyn Bootstrap>, String> {
    braid_pmi::client::from_env_or_singleton().map_err(|e| e.to_string())
}

/// MPI_Init, MPI_Init_thread: starts the world model, and the state unless a session has; the
/// thread level provided.
pub(crate) fn initialize(required: c_int) -> MpiResult<c_int> {
    match PHASE.load(Ordering::Acquire) {
        RUNNING => return Err(error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI is already initialised")),
        FINALIZED => return Err(error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI cannot be initialised again after MPI_Finalize")),
        _ => {}
    }
    let provided = match STATE.load(Ordering::Acquire) {
        UP => with(|rt| Ok(rt.thread_level))?,
        _ => start(required)?,
    };
    PHASE.store(RUNNING, Ordering::Release);
    Ok(provided)
}

/// MPI_Session_init: opens a session, starting the state unless MPI_Init or another session has;
/// the thread level provided (the process's, once started).
pub(crate) fn open_session(required: c_int) -> MpiResult<c_int> {
    let provided = match STATE.load(Ordering::Acquire) {
        UP => with(|rt| Ok(rt.thread_level))?,
        _ => start(required)?,
    };
    SESSIONS.fetch_add(1, Ordering::AcqRel);
    Ok(provided)
}

/// Sets up the state; the thread level provided.
fn start(required: c_int) -> MpiResult<c_int> {
    if STATE.load(Ordering::Acquire) == ENDED {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI cannot start again in this process once every session and the world model have ended"));
    }
    let config = Config::from_env().map_err(|e| error(MPI_COMM_WORLD, MPI_ERR_OTHER, format!("invalid setting: {e}")))?;
    let progress_thread = config.progress_thread;
    let bootstrap = bootstrap().map_err(|e| error(MPI_COMM_WORLD, MPI_ERR_OTHER, format!("cannot reach the launcher: {e}")))?;
    let mut engine = Engine::new(&config, bootstrap).map_err(|e| error(MPI_COMM_WORLD, MPI_ERR_OTHER, e.to_string()))?;
    crate::coll::algorithms::shared_file::set_job(engine.bootstrap().job_id());
    // The launcher says how far the job may grow by spawning; without one, it is the job.
    let universe = engine.bootstrap().universe_size().ok().flatten().unwrap_or(0).max(engine.size());
    crate::attr::predefined::set_universe_size(universe);
    crate::attr::predefined::set_appnum(engine.bootstrap().appnum());
    let comms = CommTable::new(engine.rank(), engine.size());
    let provided = required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_MULTIPLE);
    let runtime = Runtime {
        engine,
        comms,
        groups: GroupTable::new(),
        requests: RequestTable::new(),
        messages: MessageTable::new(),
        bsend: BsendBuffers::new(),
        attributes: AttributeStore::new(),
        errhandlers: ErrhandlerTable::new(),
        windows: crate::win::WinTable::new(),
        copy_helper: crate::win::assist::CopyHelper::new(&config),
        error_codes: ErrorCodes::new(),
        tuning: CollTuning::from_config(&config),
        coll_spare: Default::default(),
        partitioned: Default::default(),
        sessions: Default::default(),
        config,
        thread_level: provided,
        main_thread: std::thread::current().id(),
    };
    sleepers::configure(&runtime.engine);
    if provided == MPI_THREAD_MULTIPLE {
        ENTRY.fetch_or(LOCKING, Ordering::Relaxed);
    }
    replace_state(Some(runtime));
    if progress_thread {
        ENTRY.fetch_or(LOCKING, Ordering::Relaxed);
        let thread = ProgressThread::start(advance_in_background).map_err(|e| error(MPI_COMM_WORLD, MPI_ERR_OTHER, format!("cannot start the progress thread: {e}")))?;
        *PROGRESS_THREAD.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(thread);
    }
    STATE.store(UP, Ordering::Release);
    Ok(provided)
}

/// One step of the progress thread: whether there was work in flight to advance.
fn advance_in_background() -> MpiResult<bool> {
    sleepers::waiting_step(|| with(|rt| if rt.engine.has_agents() { rt.engine.progress().map(|_| true).map_err(|e| engine_error(MPI_COMM_WORLD, e)) } else { Ok(false) }))
}

/// MPI_Finalize, once the attributes are deleted: ends the world model, and takes the state down
/// unless a session is open (then None).
pub(crate) fn finalize() -> MpiResult<Option<Runtime>> {
    if PHASE.load(Ordering::Acquire) != RUNNING {
        return Err(not_running());
    }
    PHASE.store(FINALIZED, Ordering::Release);
    if SESSIONS.load(Ordering::Acquire) > 0 {
        return Ok(None);
    }
    tear_down().map(Some)
}

/// MPI_Session_finalize: closes a session, and takes the state down if it was the last one and the
/// world model is not running (then Some).
pub(crate) fn close_session() -> MpiResult<Option<Runtime>> {
    if SESSIONS.fetch_sub(1, Ordering::AcqRel) > 1 || PHASE.load(Ordering::Acquire) == RUNNING {
        return Ok(None);
    }
    tear_down().map(Some)
}

/// Takes the state down: completes the freed requests and buffered sends still in flight, stops
/// the progress thread, and gives back the state, whose engine the caller finalizes.
fn tear_down() -> MpiResult<Runtime> {
    with(|rt| {
        let Runtime { engine, requests, bsend, .. } = rt;
        requests.drain_detached(engine).map_err(|e| engine_error(MPI_COMM_WORLD, e))?;
        // Buffered messages still in flight leave before the engine goes.
        bsend.drain(engine).map_err(|e| engine_error(MPI_COMM_WORLD, e))
    })?;
    let progress_thread = PROGRESS_THREAD.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
    if let Some(thread) = progress_thread {
        thread.stop();
    }
    let Some(runtime) = replace_state(None) else {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI is not running"));
    };
    STATE.store(ENDED, Ordering::Release);
    Ok(runtime)
}
