//! The process-global MPI state and the environment calls (MPI_Init ... MPI_Finalize, MPI_Abort).
//!
//! Braid provides MPI_THREAD_SERIALIZED: any thread may call MPI, never two at once. The state is
//! therefore one `RefCell` in a static, without a lock; the `RefCell` flag only catches re-entry
//! (a bug), it never waits.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicU8, Ordering};
use std::thread::ThreadId;

use braid_config::Config;
use braid_engine::{Engine, EngineError};
use braid_pmi::client::{PmiClient, Singleton};
use braid_pmi::Bootstrap;

use crate::coll::CollTuning;
use crate::comm::CommTable;
use crate::consts::*;
use crate::error::{error, raise, MpiError, MpiResult};
use crate::group::GroupTable;
use crate::info::InfoTable;
use crate::request::RequestTable;

/// Everything an initialised process holds.
pub struct Runtime {
    pub engine: Engine,
    pub comms: CommTable,
    pub groups: GroupTable,
    pub requests: RequestTable,
    pub infos: InfoTable,
    pub tuning: CollTuning,
    /// The settings read at MPI_Init.
    pub config: Config,
    pub thread_level: c_int,
    main_thread: ThreadId,
}

struct RuntimeCell(RefCell<Option<Runtime>>);

// SAFETY: MPI_THREAD_SERIALIZED is the level Braid provides: the application guarantees that no two
// threads are inside MPI at the same time, and its own synchronisation between the calls orders
// every access to this cell. The RefCell's flag turns accidental re-entry into a panic.
unsafe impl Sync for RuntimeCell {}

static RUNTIME: RuntimeCell = RuntimeCell(RefCell::new(None));

const NOT_INITIALIZED: u8 = 0;
const RUNNING: u8 = 1;
const FINALIZED: u8 = 2;
static PHASE: AtomicU8 = AtomicU8::new(NOT_INITIALIZED);

/// Runs `f` on the state; an error if MPI is not running.
#[inline]
pub fn with<R>(f: impl FnOnce(&mut Runtime) -> MpiResult<R>) -> MpiResult<R> {
    let mut slot = RUNTIME.0.borrow_mut();
    match slot.as_mut() {
        Some(rt) => f(rt),
        None => Err(not_running()),
    }
}

/// Runs `f` on the state if MPI is running and the state is not in use (error paths).
pub fn try_with<R>(f: impl FnOnce(&mut Runtime) -> R) -> Option<R> {
    let mut slot = RUNTIME.0.try_borrow_mut().ok()?;
    slot.as_mut().map(f)
}

#[cold]
fn not_running() -> MpiError {
    let detail = if PHASE.load(Ordering::Acquire) == FINALIZED {
        "called after MPI_Finalize"
    } else {
        "called before MPI_Init"
    };
    error(MPI_COMM_WORLD, MPI_ERR_OTHER, detail)
}

/// Whether MPI_Init has run and MPI_Finalize has not.
pub fn is_running() -> bool {
    PHASE.load(Ordering::Acquire) == RUNNING
}

/// Ends the whole job with `code` (through the launcher when MPI is running).
#[cold]
pub fn abort_job(code: c_int, message: &str) -> ! {
    if let Ok(mut slot) = RUNTIME.0.try_borrow_mut() {
        if let Some(rt) = slot.as_mut() {
            rt.engine.abort(code, message);
        }
    }
    std::process::exit(code)
}

/// Maps an engine failure to an MPI error on `comm`.
#[cold]
pub fn engine_error(comm: MPI_Comm, failure: EngineError) -> MpiError {
    let class = match failure {
        EngineError::BadRequest => MPI_ERR_REQUEST,
        _ => MPI_ERR_OTHER,
    };
    error(comm, class, failure.to_string())
}

fn bootstrap() -> Result<Box<dyn Bootstrap>, String> {
    match PmiClient::from_env() {
        Ok(Some(client)) => Ok(Box::new(client)),
        Ok(None) => Ok(Box::new(Singleton::new())),
        Err(e) => Err(e.to_string()),
    }
}

fn initialize(required: c_int) -> MpiResult<c_int> {
    match PHASE.load(Ordering::Acquire) {
        RUNNING => return Err(error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI is already initialised")),
        FINALIZED => return Err(error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI cannot be initialised again after MPI_Finalize")),
        _ => {}
    }
    let config = Config::from_env().map_err(|e| error(MPI_COMM_WORLD, MPI_ERR_OTHER, format!("invalid setting: {e}")))?;
    let bootstrap = bootstrap().map_err(|e| error(MPI_COMM_WORLD, MPI_ERR_OTHER, format!("cannot reach the launcher: {e}")))?;
    let engine = Engine::new(&config, bootstrap).map_err(|e| error(MPI_COMM_WORLD, MPI_ERR_OTHER, e.to_string()))?;
    let comms = CommTable::new(engine.rank(), engine.size());
    let provided = required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_SERIALIZED);
    let runtime = Runtime {
        engine,
        comms,
        groups: GroupTable::new(),
        requests: RequestTable::new(),
        infos: InfoTable::new(),
        tuning: CollTuning::from_config(&config),
        config,
        thread_level: provided,
        main_thread: std::thread::current().id(),
    };
    *RUNTIME.0.borrow_mut() = Some(runtime);
    PHASE.store(RUNNING, Ordering::Release);
    Ok(provided)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let _ = (argc, argv);
    match initialize(MPI_THREAD_SINGLE) {
        Ok(_) => MPI_SUCCESS,
        Err(e) => raise(e.comm, "MPI_Init", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int) -> c_int {
    let _ = (argc, argv);
    if provided.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Init_thread", MPI_ERR_ARG, "provided must not be NULL");
    }
    if !(MPI_THREAD_SINGLE..=MPI_THREAD_MULTIPLE).contains(&required) {
        return raise(MPI_COMM_WORLD, "MPI_Init_thread", MPI_ERR_ARG, &format!("{required} is not a thread level"));
    }
    match initialize(required) {
        Ok(level) => {
            // SAFETY: checked non-null; points to the caller's int.
            unsafe { *provided = level };
            MPI_SUCCESS
        }
        Err(e) => raise(e.comm, "MPI_Init_thread", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Initialized(flag: *mut c_int) -> c_int {
    if flag.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Initialized", MPI_ERR_ARG, "flag must not be NULL");
    }
    // SAFETY: checked non-null; points to the caller's int.
    unsafe { *flag = c_int::from(PHASE.load(Ordering::Acquire) != NOT_INITIALIZED) };
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Finalized(flag: *mut c_int) -> c_int {
    if flag.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Finalized", MPI_ERR_ARG, "flag must not be NULL");
    }
    // SAFETY: checked non-null; points to the caller's int.
    unsafe { *flag = c_int::from(PHASE.load(Ordering::Acquire) == FINALIZED) };
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    let drained = with(|rt| {
        let Runtime { engine, requests, .. } = rt;
        requests.drain_detached(engine).map_err(|e| crate::runtime::engine_error(MPI_COMM_WORLD, e))
    });
    if let Err(e) = drained {
        return raise(e.comm, "MPI_Finalize", e.class, &e.detail);
    }
    let Some(runtime) = RUNTIME.0.borrow_mut().take() else {
        return raise(MPI_COMM_WORLD, "MPI_Finalize", MPI_ERR_OTHER, "MPI is not running");
    };
    PHASE.store(FINALIZED, Ordering::Release);
    crate::tools::keep_final_state(&runtime);
    let Runtime { engine, comms, .. } = runtime;
    drop(comms);
    match engine.finalize() {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise(MPI_COMM_WORLD, "MPI_Finalize", MPI_ERR_OTHER, &e.to_string()),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    if provided.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Query_thread", MPI_ERR_ARG, "provided must not be NULL");
    }
    match with(|rt| Ok(rt.thread_level)) {
        Ok(level) => {
            // SAFETY: checked non-null; points to the caller's int.
            unsafe { *provided = level };
            MPI_SUCCESS
        }
        Err(e) => raise(e.comm, "MPI_Query_thread", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Is_thread_main(flag: *mut c_int) -> c_int {
    if flag.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Is_thread_main", MPI_ERR_ARG, "flag must not be NULL");
    }
    match with(|rt| Ok(rt.main_thread == std::thread::current().id())) {
        Ok(main) => {
            // SAFETY: checked non-null; points to the caller's int.
            unsafe { *flag = c_int::from(main) };
            MPI_SUCCESS
        }
        Err(e) => raise(e.comm, "MPI_Is_thread_main", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    let _ = comm;
    let message = format!("MPI_Abort called with error code {errorcode}");
    eprintln!("Braid: {message}");
    abort_job(errorcode, &message)
}
