//! Error handlers (MPI 3.1 §8.3): the predefined MPI_ERRORS_ARE_FATAL and MPI_ERRORS_RETURN, the
//! handlers a program makes for communicators, windows and files, and [`apply`], which runs the
//! handler that covers a failure.
//!
//! A user handler stays alive while its handle has references (its creation and every
//! MPI_*_get_errhandler) or while it is attached: to a communicator, or as the handler of
//! MPI_FILE_NULL (the default for file errors, MPI_ERRORS_RETURN at first). MPI_Errhandler_free
//! drops one reference; a slot is reused once neither holds. Windows carry their own handler
//! (MPI_ERRORS_ARE_FATAL at creation). Files exist only as MPI_FILE_NULL.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

use super::{codes, error, finish, raise, MpiResult};
use crate::consts::*;
use crate::runtime::{self, Runtime};

/// The objects a user handler can be made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Comm,
    Win,
    File,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Comm => "communicator",
            Kind::Win => "window",
            Kind::File => "file",
        }
    }
}

/// A user handler, `void handler(MPI_Comm *, int *, ...)`: window and file handlers have the same
/// shape, every handle being an int.
pub type ErrhandlerFunction = MPI_Comm_errhandler_function;

#[derive(Debug, Clone, Copy)]
struct UserErrhandler {
    kind: Kind,
    function: ErrhandlerFunction,
    /// Handles the program holds: one from the create call, one per get call.
    references: usize,
}

/// Handles of user handlers start here; the predefined ones are below.
const FIRST_USER_ERRHANDLER: c_int = 16;

/// The user handlers of this process and the handler of MPI_FILE_NULL.
#[derive(Debug)]
pub struct ErrhandlerTable {
    slots: Vec<Option<UserErrhandler>>,
    file_default: MPI_Errhandler,
}

impl Default for ErrhandlerTable {
    fn default() -> ErrhandlerTable {
        ErrhandlerTable::new()
    }
}

impl ErrhandlerTable {
    pub fn new() -> ErrhandlerTable {
        ErrhandlerTable { slots: Vec::new(), file_default: MPI_ERRORS_RETURN }
    }

    fn slot(handle: MPI_Errhandler) -> Option<usize> {
        usize::try_from(handle.checked_sub(FIRST_USER_ERRHANDLER)?).ok()
    }

    fn user(&self, handle: MPI_Errhandler) -> Option<&UserErrhandler> {
        self.slots.get(Self::slot(handle)?)?.as_ref()
    }

    /// Whether a user handler is alive; `on_comm` says whether a communicator has it attached.
    fn alive(&self, handle: MPI_Errhandler, on_comm: bool) -> bool {
        self.user(handle).is_some_and(|user| user.references > 0 || on_comm || self.file_default == handle)
    }

    /// Adds a handler holding one reference. `on_comm` says whether a communicator has a given
    /// handle attached: slots of handlers neither referenced nor attached are reused.
    pub fn insert(&mut self, kind: Kind, function: ErrhandlerFunction, on_comm: impl Fn(MPI_Errhandler) -> bool) -> MPI_Errhandler {
        let entry = UserErrhandler { kind, function, references: 1 };
        let handle_of = |index: usize| FIRST_USER_ERRHANDLER + index as c_int;
        let free = (0..self.slots.len()).find(|&index| self.slots[index].is_none() || !self.alive(handle_of(index), on_comm(handle_of(index))));
        match free {
            Some(index) => {
                self.slots[index] = Some(entry);
                handle_of(index)
            }
            None => {
                self.slots.push(Some(entry));
                handle_of(self.slots.len() - 1)
            }
        }
    }

    /// The function of a user handler; None for the predefined ones.
    pub fn function(&self, handle: MPI_Errhandler) -> Option<ErrhandlerFunction> {
        self.user(handle).map(|user| user.function)
    }

    /// Checks that `handle` can be attached to an object of `kind`: a predefined handler, or a live
    /// user handler made for `kind`. `on_comm` as for [`ErrhandlerTable::insert`].
    pub fn check_attachable(&self, handle: MPI_Errhandler, kind: Kind, on_comm: bool) -> Result<(), String> {
        if handle == MPI_ERRORS_ARE_FATAL || handle == MPI_ERRORS_RETURN {
            return Ok(());
        }
        if handle == MPI_ERRHANDLER_NULL {
            return Err("MPI_ERRHANDLER_NULL is not an error handler".to_string());
        }
        match self.user(handle) {
            Some(user) if self.alive(handle, on_comm) => {
                if user.kind == kind {
                    Ok(())
                } else {
                    Err(format!("error handler {handle} was made for a {}, not a {}", user.kind.name(), kind.name()))
                }
            }
            _ => Err(format!("{handle} is not an error handler")),
        }
    }

    /// Counts one more handle the program holds (MPI_*_get_errhandler); nothing for the
    /// predefined handlers.
    pub fn add_reference(&mut self, handle: MPI_Errhandler) {
        if let Some(Some(user)) = Self::slot(handle).and_then(|index| self.slots.get_mut(index)) {
            user.references += 1;
        }
    }

    /// MPI_Errhandler_free of a user handler: drops one reference. `on_comm` as for
    /// [`ErrhandlerTable::insert`].
    pub fn release(&mut self, handle: MPI_Errhandler, on_comm: bool) -> Result<(), String> {
        let attached = on_comm || self.file_default == handle;
        let Some(index) = Self::slot(handle).filter(|&index| matches!(self.slots.get(index), Some(Some(user)) if user.references > 0)) else {
            return Err(format!("{handle} is not an error handler (or was already freed)"));
        };
        let user = self.slots[index].as_mut().expect("checked above");
        user.references -= 1;
        if user.references == 0 && !attached {
            self.slots[index] = None;
        }
        Ok(())
    }

    /// The handler of MPI_FILE_NULL.
    pub fn file_default(&self) -> MPI_Errhandler {
        self.file_default
    }

    pub fn set_file_default(&mut self, handle: MPI_Errhandler) {
        self.file_default = handle;
    }
}

/// The object whose handler covers a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// A communicator; an invalid one means MPI_COMM_WORLD.
    Comm(MPI_Comm),
    /// A file; errors without a file use MPI_FILE_NULL's handler.
    File(MPI_File),
    /// A window; an invalid one means MPI_COMM_WORLD's handler.
    Win(MPI_Win),
}

/// MPI_COMM_WORLD's handler, kept outside the state for errors raised while the state is in use,
/// before MPI_Init and after MPI_Finalize.
static WORLD_ERRHANDLER: AtomicI32 = AtomicI32::new(MPI_ERRORS_ARE_FATAL);
/// The function of MPI_COMM_WORLD's handler when it is a user handler, else null.
static WORLD_ERRHANDLER_FUNCTION: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());

/// Records a predefined handler as MPI_COMM_WORLD's.
pub(crate) fn set_world_errhandler(errhandler: MPI_Errhandler) {
    remember_world(errhandler, None);
}

fn remember_world(errhandler: MPI_Errhandler, function: Option<ErrhandlerFunction>) {
    WORLD_ERRHANDLER_FUNCTION.store(function.map_or(std::ptr::null_mut(), |f| f as *mut ()), Ordering::Relaxed);
    WORLD_ERRHANDLER.store(errhandler, Ordering::Relaxed);
}

/// (MPI_COMM_WORLD, its handler, the handler's function) from the copies outside the state.
fn world_errhandler() -> (c_int, MPI_Errhandler, Option<ErrhandlerFunction>) {
    let pointer = WORLD_ERRHANDLER_FUNCTION.load(Ordering::Relaxed);
    // SAFETY: a non-null pointer here was stored by remember_world from an ErrhandlerFunction.
    let function = (!pointer.is_null()).then(|| unsafe { std::mem::transmute::<*mut (), ErrhandlerFunction>(pointer) });
    (MPI_COMM_WORLD, WORLD_ERRHANDLER.load(Ordering::Relaxed), function)
}

/// Applies the handler covering `target` to `code` and returns the code the failed call returns:
/// `code` under MPI_ERRORS_RETURN, what a user handler leaves in its code argument; under
/// MPI_ERRORS_ARE_FATAL prints `message` and ends the job (outside MPI_Init..MPI_Finalize it
/// prints and returns `code`).
pub(crate) fn apply(target: Target, code: c_int, message: impl FnOnce() -> String) -> c_int {
    let covering = runtime::try_with(|rt| match target {
        Target::Comm(comm) => {
            let comm = if rt.comms.get(comm).is_ok() { comm } else { MPI_COMM_WORLD };
            let handler = rt.comms.errhandler(comm);
            (comm, handler, rt.errhandlers.function(handler))
        }
        Target::File(file) => {
            let handler = rt.errhandlers.file_default();
            (file, handler, rt.errhandlers.function(handler))
        }
        Target::Win(win) => match rt.windows.errhandler(win) {
            Some(handler) => (win, handler, rt.errhandlers.function(handler)),
            None => {
                let handler = rt.comms.errhandler(MPI_COMM_WORLD);
                (MPI_COMM_WORLD, handler, rt.errhandlers.function(handler))
            }
        },
    });
    let (mut object, handler, function) = covering.unwrap_or_else(|| match target {
        Target::Comm(_) | Target::Win(_) => world_errhandler(),
        Target::File(file) => (file, MPI_ERRORS_RETURN, None),
    });
    if let Some(function) = function {
        let mut code = code;
        // SAFETY: a function the program registered through MPI_*_create_errhandler, called with
        // the arguments MPI defines; the state is not borrowed, so it may call MPI itself.
        unsafe { function(&mut object, &mut code) };
        return code;
    }
    if handler == MPI_ERRORS_RETURN {
        return code;
    }
    fatal(code, &message())
}

/// MPI_ERRORS_ARE_FATAL: prints `message` and ends the job with the class of `code` as exit code
/// (MPI_ERR_UNKNOWN when that is no exit status).
#[cold]
fn fatal(code: c_int, message: &str) -> c_int {
    eprintln!("{message}");
    if !runtime::is_running() {
        // Before MPI_Init and after MPI_Finalize there is no job to abort: report and return.
        return code;
    }
    let exit_code = codes::class_of(code).filter(|class| (1..=255).contains(class)).unwrap_or(MPI_ERR_UNKNOWN);
    runtime::abort_job(exit_code, message)
}

/// How a fatal message names `code`: its text, or its number and class.
fn describe(code: c_int) -> String {
    match (codes::text_of(code), codes::class_of(code)) {
        (Some(text), _) if !text.is_empty() => text,
        (_, Some(class)) => format!("error code {code} of class {class}"),
        _ => format!("error code {code}"),
    }
}

/// Whether a communicator or a window of `rt` has `handle` attached.
fn on_comm(rt: &Runtime, handle: MPI_Errhandler) -> bool {
    rt.comms.uses_errhandler(handle) || rt.windows.uses_errhandler(handle)
}

/// MPI_*_create_errhandler for `kind`.
///
/// # Safety
/// `errhandler` must be NULL or point to an MPI_Errhandler.
unsafe fn create(name: &str, kind: Kind, function: Option<ErrhandlerFunction>, errhandler: *mut MPI_Errhandler) -> c_int {
    let result = runtime::with(|rt| {
        let function = function.ok_or_else(|| error(MPI_COMM_WORLD, MPI_ERR_ARG, "the handler function must not be NULL"))?;
        if errhandler.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "errhandler must not be NULL"));
        }
        let Runtime { comms, windows, errhandlers, .. } = rt;
        let handle = errhandlers.insert(kind, function, |h| comms.uses_errhandler(h) || windows.uses_errhandler(h));
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *errhandler = handle };
        Ok(())
    });
    finish(name, result)
}

/// MPI_Comm_set_errhandler and MPI_Errhandler_set.
fn set_on_comm(name: &str, comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    let result = runtime::with(|rt| {
        rt.comms.get(comm)?;
        rt.errhandlers.check_attachable(errhandler, Kind::Comm, on_comm(rt, errhandler)).map_err(|detail| error(comm, MPI_ERR_ARG, detail))?;
        let function = rt.errhandlers.function(errhandler);
        rt.comms.get_mut(comm)?.errhandler = errhandler;
        if comm == MPI_COMM_WORLD {
            remember_world(errhandler, function);
        }
        Ok(())
    });
    finish(name, result)
}

/// MPI_Comm_get_errhandler and MPI_Errhandler_get: a new reference to `comm`'s handler.
///
/// # Safety
/// `errhandler` must be NULL or point to an MPI_Errhandler.
unsafe fn get_on_comm(name: &str, comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> c_int {
    let result = runtime::with(|rt| {
        let handler = rt.comms.get(comm)?.errhandler;
        if errhandler.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "errhandler must not be NULL"));
        }
        rt.errhandlers.add_reference(handler);
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *errhandler = handler };
        Ok(())
    });
    finish(name, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_errhandler(comm_errhandler_fn: Option<MPI_Comm_errhandler_function>, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: MPI requires a pointer to an MPI_Errhandler.
    unsafe { create("MPI_Comm_create_errhandler", Kind::Comm, comm_errhandler_fn, errhandler) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_create(function: Option<MPI_Handler_function>, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: MPI requires a pointer to an MPI_Errhandler.
    unsafe { create("MPI_Errhandler_create", Kind::Comm, function, errhandler) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_errhandler(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    set_on_comm("MPI_Comm_set_errhandler", comm, errhandler)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_set(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    set_on_comm("MPI_Errhandler_set", comm, errhandler)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_errhandler(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: MPI requires a pointer to an MPI_Errhandler.
    unsafe { get_on_comm("MPI_Comm_get_errhandler", comm, errhandler) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_get(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: MPI requires a pointer to an MPI_Errhandler.
    unsafe { get_on_comm("MPI_Errhandler_get", comm, errhandler) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_call_errhandler(comm: MPI_Comm, errorcode: c_int) -> c_int {
    if let Err(e) = runtime::with(|rt| rt.comms.get(comm).map(|_| ())) {
        return raise(e.comm, "MPI_Comm_call_errhandler", e.class, &e.detail);
    }
    apply(Target::Comm(comm), errorcode, || format!("Braid: MPI_Comm_call_errhandler: {}", describe(errorcode)));
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_free(errhandler: *mut MPI_Errhandler) -> c_int {
    if errhandler.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Errhandler_free", MPI_ERR_ARG, "errhandler must not be NULL");
    }
    // SAFETY: checked non-null; points to the caller's MPI_Errhandler.
    let handle = unsafe { *errhandler };
    // Predefined handlers stay usable: freeing only releases the caller's reference.
    let result = if handle == MPI_ERRORS_ARE_FATAL || handle == MPI_ERRORS_RETURN {
        Ok(())
    } else {
        runtime::with(|rt| {
            let attached = on_comm(rt, handle);
            rt.errhandlers.release(handle, attached).map_err(|detail| error(MPI_COMM_WORLD, MPI_ERR_ARG, detail))
        })
    };
    if result.is_ok() {
        // SAFETY: as above.
        unsafe { *errhandler = MPI_ERRHANDLER_NULL };
    }
    finish("MPI_Errhandler_free", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_errhandler(win_errhandler_fn: Option<MPI_Win_errhandler_function>, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: MPI requires a pointer to an MPI_Errhandler.
    unsafe { create("MPI_Win_create_errhandler", Kind::Win, win_errhandler_fn, errhandler) }
}

/// Reports a failed window call on the window's handler (MPI_COMM_WORLD's for an invalid one).
fn finish_on_win(name: &str, win: MPI_Win, result: MpiResult<()>) -> c_int {
    match result {
        Ok(()) => MPI_SUCCESS,
        Err(e) => apply(Target::Win(win), e.class, || format!("Braid: {name}: {}: {}", codes::class_text(e.class), e.detail)),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_errhandler(win: MPI_Win, errhandler: MPI_Errhandler) -> c_int {
    let result = runtime::with(|rt| {
        rt.windows.get(win)?;
        rt.errhandlers.check_attachable(errhandler, Kind::Win, on_comm(rt, errhandler)).map_err(|detail| error(MPI_COMM_WORLD, MPI_ERR_ARG, detail))?;
        rt.windows.get_mut(win)?.errhandler = errhandler;
        Ok(())
    });
    finish_on_win("MPI_Win_set_errhandler", win, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_errhandler(win: MPI_Win, errhandler: *mut MPI_Errhandler) -> c_int {
    let result = runtime::with(|rt| {
        let handler = rt.windows.get(win)?.errhandler;
        if errhandler.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "errhandler must not be NULL"));
        }
        rt.errhandlers.add_reference(handler);
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *errhandler = handler };
        Ok(())
    });
    finish_on_win("MPI_Win_get_errhandler", win, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_call_errhandler(win: MPI_Win, errorcode: c_int) -> c_int {
    if let Err(e) = runtime::with(|rt| rt.windows.get(win).map(|_| ())) {
        return finish_on_win("MPI_Win_call_errhandler", win, Err(e));
    }
    apply(Target::Win(win), errorcode, || format!("Braid: MPI_Win_call_errhandler: {}", describe(errorcode)));
    MPI_SUCCESS
}

/// Raises a failed file call on MPI_FILE_NULL's handler, as MPI does for errors without a file.
fn finish_on_file(name: &str, result: MpiResult<()>) -> c_int {
    match result {
        Ok(()) => MPI_SUCCESS,
        Err(e) => apply(Target::File(MPI_FILE_NULL), e.class, || format!("Braid: {name}: {}: {}", codes::class_text(e.class), e.detail)),
    }
}

/// Checks a file handle: only MPI_FILE_NULL exists (its handler is the default for file errors).
fn check_file(file: MPI_File) -> MpiResult<()> {
    if file == MPI_FILE_NULL {
        Ok(())
    } else {
        Err(error(MPI_COMM_WORLD, MPI_ERR_FILE, format!("{file} is not a file (only MPI_FILE_NULL exists)")))
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_create_errhandler(file_errhandler_fn: Option<MPI_File_errhandler_function>, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: MPI requires a pointer to an MPI_Errhandler.
    unsafe { create("MPI_File_create_errhandler", Kind::File, file_errhandler_fn, errhandler) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_errhandler(file: MPI_File, errhandler: MPI_Errhandler) -> c_int {
    let result = runtime::with(|rt| {
        check_file(file)?;
        rt.errhandlers.check_attachable(errhandler, Kind::File, on_comm(rt, errhandler)).map_err(|detail| error(MPI_COMM_WORLD, MPI_ERR_ARG, detail))?;
        rt.errhandlers.set_file_default(errhandler);
        Ok(())
    });
    finish_on_file("MPI_File_set_errhandler", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_errhandler(file: MPI_File, errhandler: *mut MPI_Errhandler) -> c_int {
    let result = runtime::with(|rt| {
        check_file(file)?;
        if errhandler.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "errhandler must not be NULL"));
        }
        let handler = rt.errhandlers.file_default();
        rt.errhandlers.add_reference(handler);
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *errhandler = handler };
        Ok(())
    });
    finish_on_file("MPI_File_get_errhandler", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_call_errhandler(fh: MPI_File, errorcode: c_int) -> c_int {
    let result = runtime::with(|_| check_file(fh));
    if result.is_err() {
        return finish_on_file("MPI_File_call_errhandler", result);
    }
    apply(Target::File(fh), errorcode, || format!("Braid: MPI_File_call_errhandler: {}", describe(errorcode)));
    MPI_SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn never_called(_: *mut c_int, _: *mut c_int) {}

    fn function() -> ErrhandlerFunction {
        // SAFETY: the tables in these tests only store and compare the pointer; it is never called.
        unsafe { std::mem::transmute::<extern "C" fn(*mut c_int, *mut c_int), ErrhandlerFunction>(never_called) }
    }

    #[test]
    fn handles_start_after_the_predefined_ones_and_slots_are_reused() {
        let mut table = ErrhandlerTable::new();
        let first = table.insert(Kind::Comm, function(), |_| false);
        let second = table.insert(Kind::File, function(), |_| false);
        assert_eq!((first, second), (FIRST_USER_ERRHANDLER, FIRST_USER_ERRHANDLER + 1));
        table.release(first, false).unwrap();
        assert!(table.function(first).is_none());
        assert_eq!(table.insert(Kind::Win, function(), |_| false), first);
    }

    #[test]
    fn a_handler_lives_while_attached_to_a_communicator() {
        let mut table = ErrhandlerTable::new();
        let handle = table.insert(Kind::Comm, function(), |_| false);
        table.release(handle, true).unwrap();
        // Still attached: usable and not reused.
        assert!(table.function(handle).is_some());
        assert!(table.check_attachable(handle, Kind::Comm, true).is_ok());
        assert_ne!(table.insert(Kind::Comm, function(), |h| h == handle), handle);
        // A second free of the same handle is an error.
        assert!(table.release(handle, true).is_err());
        // Once detached, the slot is free again.
        assert!(table.check_attachable(handle, Kind::Comm, false).is_err());
        assert_eq!(table.insert(Kind::Comm, function(), |_| false), handle);
    }

    #[test]
    fn references_from_get_calls_keep_a_handler() {
        let mut table = ErrhandlerTable::new();
        let handle = table.insert(Kind::Comm, function(), |_| false);
        table.add_reference(handle);
        table.release(handle, false).unwrap();
        assert!(table.check_attachable(handle, Kind::Comm, false).is_ok());
        table.release(handle, false).unwrap();
        assert!(table.check_attachable(handle, Kind::Comm, false).is_err());
        table.add_reference(MPI_ERRORS_RETURN);
    }

    #[test]
    fn the_file_default_keeps_its_handler() {
        let mut table = ErrhandlerTable::new();
        assert_eq!(table.file_default(), MPI_ERRORS_RETURN);
        let handle = table.insert(Kind::File, function(), |_| false);
        table.set_file_default(handle);
        table.release(handle, false).unwrap();
        assert!(table.function(handle).is_some());
        assert_ne!(table.insert(Kind::File, function(), |_| false), handle);
        table.set_file_default(MPI_ERRORS_ARE_FATAL);
        assert!(table.check_attachable(handle, Kind::File, false).is_err());
    }

    #[test]
    fn handlers_attach_only_to_their_kind() {
        let mut table = ErrhandlerTable::new();
        let window = table.insert(Kind::Win, function(), |_| false);
        assert!(table.check_attachable(window, Kind::Win, false).is_ok());
        assert!(table.check_attachable(window, Kind::Comm, false).unwrap_err().contains("window"));
        assert!(table.check_attachable(MPI_ERRORS_RETURN, Kind::File, false).is_ok());
        assert!(table.check_attachable(MPI_ERRORS_ARE_FATAL, Kind::Comm, false).is_ok());
        assert!(table.check_attachable(MPI_ERRHANDLER_NULL, Kind::Comm, false).is_err());
        assert!(table.check_attachable(99, Kind::Comm, false).is_err());
        assert!(table.release(MPI_ERRHANDLER_NULL, false).is_err());
    }

    #[test]
    fn fatal_messages_name_the_code() {
        assert_eq!(describe(MPI_ERR_TAG), "invalid tag");
        assert_eq!(describe(MPI_ERR_LASTCODE + 7), format!("error code {}", MPI_ERR_LASTCODE + 7));
    }
}
