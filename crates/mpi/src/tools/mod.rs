//! The MPI tool information interface (MPI 3.1 §14.3, MPI_T): Braid's settings as control
//! variables, the engine's traffic counters as performance variables, grouped in categories.
//!
//! MPI_T lives beside MPI proper: it is initialised and finalised on its own (reference counted),
//! may be used before MPI_Init and after MPI_Finalize, and its functions return MPI_T_ERR_* codes
//! without calling error handlers (the code is the whole report: MPI_T has no error string).
//! Its state is one mutex-protected table of the handles and sessions handed out. Handles are
//! opaque pointers carrying a number that is never reused, so a freed handle is told apart from
//! a live one.
//!
//! The values come from the running process (its settings and engine counters); before
//! MPI_Init, from the environment (the settings MPI_Init would read; no traffic yet); after
//! MPI_Finalize, from what the process held when it finalised.

// The safety contract of the MPI_T_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

mod categories;
mod cvars;
mod enums;
mod events;
mod monitoring;
mod pvars;
mod sessions;
#[cfg(test)]
mod tool_scenario;

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, CStr};
use std::sync::{Mutex, MutexGuard};

use braid_config::Config;
use braid_engine::CounterValues;

use crate::coll::CollTuning;
use crate::consts::*;
use crate::runtime::{self, Runtime};

use sessions::Session;

/// An MPI_T failure: one of the MPI_T_ERR_* codes.
pub(crate) type ToolResult<T> = Result<T, c_int>;

/// Everything MPI_T has handed out.
struct Tools {
    /// MPI_T_init_thread calls not yet matched by MPI_T_finalize.
    users: u32,
    /// The number the next handle or session carries (never 0, never reused).
    next_id: u64,
    /// Control-variable handles: their variable's index and the elements they were allocated for.
    cvar_handles: BTreeMap<u64, (usize, usize)>,
    sessions: BTreeMap<u64, Session>,
    /// Open MPI's monitoring variables' reset point and flush file.
    monitoring: monitoring::Monitoring,
    /// Event registrations (MPI_T_event_handle_alloc).
    event_registrations: events::Registrations,
}

impl Tools {
    fn new_id(&mut self) -> ToolResult<u64> {
        let id = self.next_id;
        // The all-ones pattern is MPI_T_PVAR_ALL_HANDLES.
        if id >= usize::MAX as u64 {
            return Err(MPI_T_ERR_OUT_OF_HANDLES);
        }
        self.next_id += 1;
        Ok(id)
    }
}

static TOOLS: Mutex<Tools> =
    Mutex::new(Tools { users: 0, next_id: 1, cvar_handles: BTreeMap::new(), sessions: BTreeMap::new(), monitoring: monitoring::Monitoring::new(), event_registrations: BTreeMap::new() });

/// What the process held when it finalised MPI, for MPI_T calls after MPI_Finalize.
struct FinalState {
    config: Config,
    tuning: CollTuning,
    counters: CounterValues,
    job_rank: u32,
}

static FINAL_STATE: Mutex<Option<FinalState>> = Mutex::new(None);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while locked leaves tables that are still consistent: every update is one step.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Called by MPI_Finalize while it still holds the runtime: settings and counters stay readable.
pub(crate) fn keep_final_state(runtime: &Runtime) {
    let state = FinalState { config: runtime.config.clone(), tuning: runtime.tuning, counters: runtime.engine.counter_values(), job_rank: runtime.engine.rank() };
    *lock(&FINAL_STATE) = Some(state);
}

/// Runs `f` on the state when MPI_T is initialised; the MPI_T return code.
fn call(f: impl FnOnce(&mut Tools) -> ToolResult<()>) -> c_int {
    let mut tools = lock(&TOOLS);
    if tools.users == 0 {
        return MPI_T_ERR_NOT_INITIALIZED;
    }
    match f(&mut tools) {
        Ok(()) => MPI_SUCCESS,
        Err(code) => code,
    }
}

/// Runs `f` on the running process's state, if MPI is running.
fn with_runtime<R>(f: impl FnOnce(&mut Runtime) -> R) -> ToolResult<Option<R>> {
    if !runtime::is_running() {
        return Ok(None);
    }
    // Busy only when MPI_T is called from inside an MPI call (a callback), which MPI forbids.
    runtime::try_with(f).map(Some).ok_or(MPI_T_ERR_INVALID)
}

/// The settings in effect: the running process's (collective tuning as last written), those it
/// finalised with, or before MPI_Init those the environment gives.
fn settings() -> ToolResult<(Config, CollTuning)> {
    if let Some(settings) = with_runtime(|rt| (rt.config.clone(), rt.tuning))? {
        return Ok(settings);
    }
    if let Some(state) = lock(&FINAL_STATE).as_ref() {
        return Ok((state.config.clone(), state.tuning));
    }
    let config = Config::from_env().map_err(|_| MPI_T_ERR_INVALID)?;
    let tuning = CollTuning::from_config(&config);
    Ok((config, tuning))
}

/// The engine's counters now (after MPI_Finalize: their final values; before MPI_Init: none).
fn counter_values() -> ToolResult<CounterValues> {
    if let Some(values) = with_runtime(|rt| rt.engine.counter_values())? {
        return Ok(values);
    }
    Ok(lock(&FINAL_STATE).as_ref().map(|state| state.counters.clone()).unwrap_or_default())
}

/// This process's rank in the job (0 before MPI_Init).
fn job_rank() -> ToolResult<u32> {
    if let Some(rank) = with_runtime(|rt| rt.engine.rank())? {
        return Ok(rank);
    }
    Ok(lock(&FINAL_STATE).as_ref().map_or(0, |state| state.job_rank))
}

/// Starts a new interval of the unexpected queue's high watermark wherever the counters live.
fn restart_unexpected_high_watermark() -> ToolResult<()> {
    if with_runtime(|rt| rt.engine.restart_unexpected_high_watermark())?.is_none() {
        if let Some(state) = lock(&FINAL_STATE).as_mut() {
            state.counters.restart_unexpected_high_watermark();
        }
    }
    Ok(())
}

/// `pointer` as a reference, or MPI_T_ERR_INVALID when it is NULL.
///
/// # Safety
/// A non-null `pointer` must be valid for reads and writes of a `T` for the caller's use.
unsafe fn required<'a, T>(pointer: *mut T) -> ToolResult<&'a mut T> {
    // SAFETY: the caller guarantees a non-null pointer is valid; NULL is rejected.
    unsafe { pointer.as_mut() }.ok_or(MPI_T_ERR_INVALID)
}

/// Writes `value` through an optional out-argument (MPI_T ignores those passed as NULL).
///
/// # Safety
/// A non-null `pointer` must be valid for a write of a `T`.
unsafe fn put<T>(pointer: *mut T, value: T) {
    if !pointer.is_null() {
        // SAFETY: non-null, and valid for a write by the caller's guarantee.
        unsafe { pointer.write(value) };
    }
}

/// Returns `text` by MPI_T's convention for strings (§14.3.3): on input `*length` is the size of
/// `buffer`; the string is copied (truncated to fit, NUL-terminated) and `*length` set to the
/// bytes written including the NUL. With a NULL `buffer` or a zero `*length` only the size the
/// whole string needs, NUL included, is returned. A NULL `length` returns nothing.
///
/// # Safety
/// A non-null `length` must be valid for reads and writes; `buffer`, when used, must be valid
/// for `*length` bytes of writes.
unsafe fn put_string(text: &str, buffer: *mut c_char, length: *mut c_int) {
    if length.is_null() {
        return;
    }
    // SAFETY: non-null, valid by the caller's guarantee.
    let capacity = unsafe { *length };
    let needed = c_int::try_from(text.len() + 1).unwrap_or(c_int::MAX);
    if buffer.is_null() || capacity <= 0 {
        // SAFETY: as above.
        unsafe { *length = needed };
        return;
    }
    // SAFETY: `buffer` holds `capacity` bytes by the caller's guarantee.
    let written = unsafe { crate::error::write_c_string(text, buffer, capacity as usize) };
    // SAFETY: as above.
    unsafe { *length = written + 1 };
}

/// The name a C caller passed, or MPI_T_ERR_INVALID for NULL or text that is not UTF-8.
///
/// # Safety
/// A non-null `name` must point to a NUL-terminated string.
unsafe fn name_argument<'a>(name: *const c_char) -> ToolResult<&'a str> {
    if name.is_null() {
        return Err(MPI_T_ERR_INVALID);
    }
    // SAFETY: non-null and NUL-terminated by the caller's guarantee.
    unsafe { CStr::from_ptr(name) }.to_str().map_err(|_| MPI_T_ERR_INVALID)
}

/// A variable or category index from C, checked against `count`.
fn index_argument(index: c_int, count: usize) -> ToolResult<usize> {
    usize::try_from(index).ok().filter(|&index| index < count).ok_or(MPI_T_ERR_INVALID_INDEX)
}

/// A count for C.
fn c_count(count: usize) -> c_int {
    c_int::try_from(count).unwrap_or(c_int::MAX)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_init_thread(required_level: c_int, provided: *mut c_int) -> c_int {
    if !(MPI_THREAD_SINGLE..=MPI_THREAD_MULTIPLE).contains(&required_level) || provided.is_null() {
        return MPI_T_ERR_INVALID;
    }
    let mut tools = lock(&TOOLS);
    tools.users += 1;
    // Like MPI itself, MPI_T serves one thread at a time (MPI_THREAD_SERIALIZED at most).
    // SAFETY: checked non-null; points to the caller's int.
    unsafe { *provided = required_level.clamp(MPI_THREAD_SINGLE, MPI_THREAD_SERIALIZED) };
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_finalize() -> c_int {
    call(|tools| {
        tools.users -= 1;
        if tools.users == 0 {
            // The last user is gone: every handle and session it held goes with it.
            tools.cvar_handles.clear();
            tools.sessions.clear();
            tools.event_registrations.clear();
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_follow_the_mpi_t_convention() {
        let mut buffer = [0x55 as c_char; 8];
        let mut length: c_int = 0;
        // SAFETY: valid pointers; the buffer's size is passed in `length`.
        unsafe { put_string("braid_bytes_sent", buffer.as_mut_ptr(), &mut length) };
        assert_eq!(length, 17, "a zero length asks for the size needed");
        length = buffer.len() as c_int;
        // SAFETY: as above.
        unsafe { put_string("braid_bytes_sent", buffer.as_mut_ptr(), &mut length) };
        assert_eq!(length, 8);
        // SAFETY: the buffer was NUL-terminated by put_string.
        assert_eq!(unsafe { CStr::from_ptr(buffer.as_ptr()) }.to_str(), Ok("braid_b"));
        length = 5;
        // SAFETY: a NULL buffer only asks for the size.
        unsafe { put_string("abc", std::ptr::null_mut(), &mut length) };
        assert_eq!(length, 4);
        // SAFETY: a NULL length returns nothing.
        unsafe { put_string("abc", buffer.as_mut_ptr(), std::ptr::null_mut()) };
    }

    #[test]
    fn indices_are_checked() {
        assert_eq!(index_argument(0, 1), Ok(0));
        assert_eq!(index_argument(1, 1), Err(MPI_T_ERR_INVALID_INDEX));
        assert_eq!(index_argument(-1, 1), Err(MPI_T_ERR_INVALID_INDEX));
    }
}
