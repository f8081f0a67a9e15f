//! The tool information interface, MPI_T (MPI 3.1 §14.3).
//!
//! Braid exports no control variables, no performance variables and no categories, which the
//! standard allows: the counts are 0, every index and name is unknown, no enumeration exists and
//! no variable handle can be allocated. What does exist is the interface's own state: its
//! reference-counted initialisation (usable before MPI_Init and after MPI_Finalize, from any
//! thread) and performance-variable sessions. MPI_T functions return their error codes and never
//! call an error handler.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Mutex;

use crate::consts::*;

/// The interface's state: how many MPI_T_init_thread calls are not finalized yet, and the live
/// performance-variable sessions.
#[derive(Debug)]
pub struct ToolState {
    initializations: usize,
    sessions: BTreeSet<MPI_T_pvar_session>,
    next_session: MPI_T_pvar_session,
}

type ToolResult<T> = Result<T, c_int>;

impl ToolState {
    pub const fn new() -> ToolState {
        // Session handles start above MPI_T_PVAR_SESSION_NULL.
        ToolState { initializations: 0, sessions: BTreeSet::new(), next_session: MPI_T_PVAR_SESSION_NULL + 1 }
    }

    /// MPI_T_init_thread: the level provided is the one required (the interface is thread-safe).
    pub fn initialize(&mut self, required: c_int) -> ToolResult<c_int> {
        if !(MPI_THREAD_SINGLE..=MPI_THREAD_MULTIPLE).contains(&required) {
            return Err(MPI_T_ERR_INVALID);
        }
        self.initializations += 1;
        Ok(required)
    }

    /// MPI_T_finalize: the last one frees every session.
    pub fn finalize(&mut self) -> ToolResult<()> {
        self.check_initialized()?;
        self.initializations -= 1;
        if self.initializations == 0 {
            self.sessions.clear();
        }
        Ok(())
    }

    pub fn check_initialized(&self) -> ToolResult<()> {
        if self.initializations == 0 {
            Err(MPI_T_ERR_NOT_INITIALIZED)
        } else {
            Ok(())
        }
    }

    pub fn create_session(&mut self) -> ToolResult<MPI_T_pvar_session> {
        self.check_initialized()?;
        let session = self.next_session;
        self.next_session = self.next_session.checked_add(1).ok_or(MPI_T_ERR_OUT_OF_SESSIONS)?;
        self.sessions.insert(session);
        Ok(session)
    }

    pub fn free_session(&mut self, session: MPI_T_pvar_session) -> ToolResult<()> {
        self.check_session(session)?;
        self.sessions.remove(&session);
        Ok(())
    }

    pub fn check_session(&self, session: MPI_T_pvar_session) -> ToolResult<()> {
        self.check_initialized()?;
        if self.sessions.contains(&session) {
            Ok(())
        } else {
            Err(MPI_T_ERR_INVALID_SESSION)
        }
    }

    /// A performance-variable handle of `session` for an operation that accepts
    /// MPI_T_PVAR_ALL_HANDLES when `all_allowed` (start, stop, reset). No handle can be allocated,
    /// so only "all handles" (of which the session has none) is valid.
    pub fn check_pvar_handle(&self, session: MPI_T_pvar_session, handle: MPI_T_pvar_handle, all_allowed: bool) -> ToolResult<()> {
        self.check_session(session)?;
        if all_allowed && handle == MPI_T_PVAR_ALL_HANDLES {
            Ok(())
        } else {
            Err(MPI_T_ERR_INVALID_HANDLE)
        }
    }
}

impl Default for ToolState {
    fn default() -> ToolState {
        ToolState::new()
    }
}

static STATE: Mutex<ToolState> = Mutex::new(ToolState::new());

/// Runs `f` on the interface's state and turns its result into a return code.
fn with_state(f: impl FnOnce(&mut ToolState) -> ToolResult<()>) -> c_int {
    let mut state = STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match f(&mut state) {
        Ok(()) => MPI_SUCCESS,
        Err(code) => code,
    }
}

/// Runs `f` once the interface is initialized.
fn when_initialized(f: impl FnOnce(&mut ToolState) -> ToolResult<()>) -> c_int {
    with_state(|state| {
        state.check_initialized()?;
        f(state)
    })
}

/// The caller's output variable, or MPI_T_ERR_INVALID when it is null.
///
/// # Safety
/// `pointer` is null or valid for writes of a `T`.
unsafe fn output<'a, T>(pointer: *mut T) -> ToolResult<&'a mut T> {
    // SAFETY: forwarded from this function's contract.
    unsafe { pointer.as_mut() }.ok_or(MPI_T_ERR_INVALID)
}

/// Writes 0 to the caller's count variable: there are no variables or categories of any kind.
///
/// # Safety
/// `count` is null or valid for writes.
unsafe fn none_exist(count: *mut c_int) -> c_int {
    when_initialized(|_| {
        // SAFETY: forwarded from this function's contract.
        *unsafe { output(count) }? = 0;
        Ok(())
    })
}

/// The answer to a look-up by name: MPI_T_ERR_INVALID_NAME, since nothing has a name.
fn unknown_name(name: *const c_char) -> c_int {
    when_initialized(|_| if name.is_null() { Err(MPI_T_ERR_INVALID) } else { Err(MPI_T_ERR_INVALID_NAME) })
}

/// The answer to a query by index: MPI_T_ERR_INVALID_INDEX, since no index is valid.
fn unknown_index() -> c_int {
    when_initialized(|_| Err(MPI_T_ERR_INVALID_INDEX))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_init_thread(required: c_int, provided: *mut c_int) -> c_int {
    with_state(|state| {
        // SAFETY: the caller's output variable, or null.
        let provided = unsafe { output(provided) }?;
        *provided = state.initialize(required)?;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn MPI_T_finalize() -> c_int {
    with_state(ToolState::finalize)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_enum_get_info(enumtype: MPI_T_enum, num: *mut c_int, name: *mut c_char, name_len: *mut c_int) -> c_int {
    let _ = (enumtype, num, name, name_len);
    when_initialized(|_| Err(MPI_T_ERR_INVALID_HANDLE))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_enum_get_item(enumtype: MPI_T_enum, index: c_int, value: *mut c_int, name: *mut c_char, name_len: *mut c_int) -> c_int {
    let _ = (enumtype, index, value, name, name_len);
    when_initialized(|_| Err(MPI_T_ERR_INVALID_HANDLE))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_num(num_cvar: *mut c_int) -> c_int {
    // SAFETY: the caller's output variable, or null.
    unsafe { none_exist(num_cvar) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_info(
    cvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    datatype: *mut MPI_Datatype,
    enumtype: *mut MPI_T_enum,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    scope: *mut c_int,
) -> c_int {
    let _ = (cvar_index, name, name_len, verbosity, datatype, enumtype, desc, desc_len, bind, scope);
    unknown_index()
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_get_index(name: *const c_char, cvar_index: *mut c_int) -> c_int {
    let _ = cvar_index;
    unknown_name(name)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_handle_alloc(cvar_index: c_int, obj_handle: *mut c_void, handle: *mut MPI_T_cvar_handle, count: *mut c_int) -> c_int {
    let _ = (cvar_index, obj_handle, handle, count);
    unknown_index()
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_handle_free(handle: *mut MPI_T_cvar_handle) -> c_int {
    when_initialized(|_| if handle.is_null() { Err(MPI_T_ERR_INVALID) } else { Err(MPI_T_ERR_INVALID_HANDLE) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_read(handle: MPI_T_cvar_handle, buf: *mut c_void) -> c_int {
    let _ = (handle, buf);
    when_initialized(|_| Err(MPI_T_ERR_INVALID_HANDLE))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_cvar_write(handle: MPI_T_cvar_handle, buf: *const c_void) -> c_int {
    let _ = (handle, buf);
    when_initialized(|_| Err(MPI_T_ERR_INVALID_HANDLE))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_num(num_pvar: *mut c_int) -> c_int {
    // SAFETY: the caller's output variable, or null.
    unsafe { none_exist(num_pvar) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_info(
    pvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    var_class: *mut c_int,
    datatype: *mut MPI_Datatype,
    enumtype: *mut MPI_T_enum,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    readonly: *mut c_int,
    continuous: *mut c_int,
    atomic: *mut c_int,
) -> c_int {
    let _ = (pvar_index, name, name_len, verbosity, var_class, datatype, enumtype, desc, desc_len, bind, readonly, continuous, atomic);
    unknown_index()
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_get_index(name: *const c_char, var_class: c_int, pvar_index: *mut c_int) -> c_int {
    let _ = (var_class, pvar_index);
    unknown_name(name)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_session_create(session: *mut MPI_T_pvar_session) -> c_int {
    when_initialized(|state| {
        // SAFETY: the caller's output variable, or null.
        let session = unsafe { output(session) }?;
        *session = state.create_session()?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_session_free(session: *mut MPI_T_pvar_session) -> c_int {
    when_initialized(|state| {
        // SAFETY: the caller's session variable, or null.
        let session = unsafe { output(session) }?;
        state.free_session(*session)?;
        *session = MPI_T_PVAR_SESSION_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_handle_alloc(
    session: MPI_T_pvar_session,
    pvar_index: c_int,
    obj_handle: *mut c_void,
    handle: *mut MPI_T_pvar_handle,
    count: *mut c_int,
) -> c_int {
    let _ = (pvar_index, obj_handle, handle, count);
    when_initialized(|state| {
        state.check_session(session)?;
        Err(MPI_T_ERR_INVALID_INDEX)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_handle_free(session: MPI_T_pvar_session, handle: *mut MPI_T_pvar_handle) -> c_int {
    when_initialized(|state| {
        state.check_session(session)?;
        if handle.is_null() {
            Err(MPI_T_ERR_INVALID)
        } else {
            Err(MPI_T_ERR_INVALID_HANDLE)
        }
    })
}

#[no_mangle]
pub extern "C" fn MPI_T_pvar_start(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) -> c_int {
    when_initialized(|state| state.check_pvar_handle(session, handle, true))
}

#[no_mangle]
pub extern "C" fn MPI_T_pvar_stop(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) -> c_int {
    when_initialized(|state| state.check_pvar_handle(session, handle, true))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_read(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle, buf: *mut c_void) -> c_int {
    let _ = buf;
    when_initialized(|state| state.check_pvar_handle(session, handle, false))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_write(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle, buf: *const c_void) -> c_int {
    let _ = buf;
    when_initialized(|state| state.check_pvar_handle(session, handle, false))
}

#[no_mangle]
pub extern "C" fn MPI_T_pvar_reset(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) -> c_int {
    when_initialized(|state| state.check_pvar_handle(session, handle, true))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_readreset(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle, buf: *mut c_void) -> c_int {
    let _ = buf;
    when_initialized(|state| state.check_pvar_handle(session, handle, false))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_num(num_cat: *mut c_int) -> c_int {
    // SAFETY: the caller's output variable, or null.
    unsafe { none_exist(num_cat) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_info(
    cat_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    num_cvars: *mut c_int,
    num_pvars: *mut c_int,
    num_categories: *mut c_int,
) -> c_int {
    let _ = (cat_index, name, name_len, desc, desc_len, num_cvars, num_pvars, num_categories);
    unknown_index()
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_index(name: *const c_char, cat_index: *mut c_int) -> c_int {
    let _ = cat_index;
    unknown_name(name)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    let _ = (cat_index, len, indices);
    unknown_index()
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    let _ = (cat_index, len, indices);
    unknown_index()
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_get_categories(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    let _ = (cat_index, len, indices);
    unknown_index()
}

/// The categories never change, so the stamp is always 0.
#[no_mangle]
pub unsafe extern "C" fn MPI_T_category_changed(stamp: *mut c_int) -> c_int {
    // SAFETY: the caller's output variable, or null.
    unsafe { none_exist(stamp) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialisation_is_counted() {
        let mut state = ToolState::new();
        assert_eq!(state.check_initialized(), Err(MPI_T_ERR_NOT_INITIALIZED));
        assert_eq!(state.finalize(), Err(MPI_T_ERR_NOT_INITIALIZED));
        assert_eq!(state.initialize(MPI_THREAD_MULTIPLE), Ok(MPI_THREAD_MULTIPLE));
        assert_eq!(state.initialize(MPI_THREAD_SINGLE), Ok(MPI_THREAD_SINGLE));
        assert_eq!(state.finalize(), Ok(()));
        assert_eq!(state.check_initialized(), Ok(()));
        assert_eq!(state.finalize(), Ok(()));
        assert_eq!(state.check_initialized(), Err(MPI_T_ERR_NOT_INITIALIZED));
        assert_eq!(state.initialize(MPI_THREAD_MULTIPLE + 1), Err(MPI_T_ERR_INVALID));
        assert_eq!(state.initialize(-1), Err(MPI_T_ERR_INVALID));
    }

    #[test]
    fn sessions_live_until_freed_or_the_last_finalize() {
        let mut state = ToolState::new();
        assert_eq!(state.create_session(), Err(MPI_T_ERR_NOT_INITIALIZED));
        state.initialize(MPI_THREAD_SINGLE).unwrap();
        let first = state.create_session().unwrap();
        let second = state.create_session().unwrap();
        assert_ne!(first, second);
        assert_ne!(first, MPI_T_PVAR_SESSION_NULL);
        assert_eq!(state.check_pvar_handle(first, MPI_T_PVAR_ALL_HANDLES, true), Ok(()));
        assert_eq!(state.check_pvar_handle(first, MPI_T_PVAR_ALL_HANDLES, false), Err(MPI_T_ERR_INVALID_HANDLE));
        assert_eq!(state.check_pvar_handle(first, MPI_T_PVAR_HANDLE_NULL, true), Err(MPI_T_ERR_INVALID_HANDLE));
        assert_eq!(state.free_session(first), Ok(()));
        assert_eq!(state.free_session(first), Err(MPI_T_ERR_INVALID_SESSION));
        assert_eq!(state.check_pvar_handle(first, MPI_T_PVAR_ALL_HANDLES, true), Err(MPI_T_ERR_INVALID_SESSION));
        assert_eq!(state.check_session(MPI_T_PVAR_SESSION_NULL), Err(MPI_T_ERR_INVALID_SESSION));
        state.finalize().unwrap();
        state.initialize(MPI_THREAD_SINGLE).unwrap();
        assert_eq!(state.check_session(second), Err(MPI_T_ERR_INVALID_SESSION));
    }
}
