//! Error handlers (MPI 3.1 §8.3): the predefined MPI_ERRORS_ARE_FATAL and MPI_ERRORS_RETURN, the
//! handlers a program makes for communicators, windows and files, and [`apply`], which runs the
//! handler that covers a failure.
//!
//! A user handler stays alive while its handle has references (its creation and every
//! MPI_*_get_errhandler) or while it is attached: to a communicator, or as the handler of
//! MPI_FILE_NULL (the default for file errors, MPI_ERRORS_RETURN at first). MPI_Errhandler_free
//! drops one reference; a slot is reused once neither holds. Windows carry their own handler
//! (MPI_ERRORS_ARE_FATAL at creation). Files exist only as MPI_FILE_NULL.

pub mod abi;

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

use crate::consts::*;

/// The objects a user handler can be made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Comm,
    Win,
    File,
    Session,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Comm => "communicator",
            Kind::Win => "window",
            Kind::File => "file",
            Kind::Session => "session",
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

/// Whether `handle` is one of the predefined handlers (MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN,
/// MPI_ERRORS_ABORT), which stay usable whatever is freed.
pub fn is_predefined(handle: MPI_Errhandler) -> bool {
    matches!(handle, MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT)
}

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
        if is_predefined(handle) {
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

/// MPI_COMM_WORLD's handler, kept outside the state for errors raised while the state is in use,
/// before MPI_Init and after MPI_Finalize.
static WORLD_ERRHANDLER: AtomicI32 = AtomicI32::new(MPI_ERRORS_ARE_FATAL);
/// The function of MPI_COMM_WORLD's handler when it is a user handler, else null.
static WORLD_ERRHANDLER_FUNCTION: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());

/// Records a predefined handler as MPI_COMM_WORLD's.
pub(crate) fn set_world_errhandler(errhandler: MPI_Errhandler) {
    remember_world(errhandler, None);
}

pub(crate) fn remember_world(errhandler: MPI_Errhandler, function: Option<ErrhandlerFunction>) {
    WORLD_ERRHANDLER_FUNCTION.store(function.map_or(std::ptr::null_mut(), |f| f as *mut ()), Ordering::Relaxed);
    WORLD_ERRHANDLER.store(errhandler, Ordering::Relaxed);
}

/// (MPI_COMM_WORLD, its handler, the handler's function) from the copies outside the state.
pub(crate) fn world_errhandler() -> (c_int, MPI_Errhandler, Option<ErrhandlerFunction>) {
    let pointer = WORLD_ERRHANDLER_FUNCTION.load(Ordering::Relaxed);
    // SAFETY: a non-null pointer here was stored by remember_world from an ErrhandlerFunction.
    let function = (!pointer.is_null()).then(|| unsafe { std::mem::transmute::<*mut (), ErrhandlerFunction>(pointer) });
    (MPI_COMM_WORLD, WORLD_ERRHANDLER.load(Ordering::Relaxed), function)
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
}
