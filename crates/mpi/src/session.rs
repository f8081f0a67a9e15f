//! MPI 4's sessions: a program may start MPI without MPI_Init, once per library or component,
//! learn the process sets (`mpi://WORLD`, `mpi://SELF` and `braid://node`, the processes of its
//! node), make groups from them and communicators from the groups with MPI_Comm_create_from_group.
//! The runtime is shared with the world model: it starts with the first of MPI_Init and
//! MPI_Session_init and ends with the last of MPI_Finalize and MPI_Session_finalize.

pub mod abi;
pub(crate) mod psets;

use std::ffi::c_int;

use crate::consts::*;
use crate::error::{error, MpiResult};

pub use psets::{ProcessSet, PSET_NAMES};

/// One open session.
#[derive(Debug)]
pub struct Session {
    pub errhandler: MPI_Errhandler,
    /// The thread level the session was given (the process's).
    pub thread_level: c_int,
    /// The info keys the program passed to MPI_Session_init.
    pub hints: Vec<(String, String)>,
}

/// MPI_Session handles: handle = slot index + 1 (MPI_SESSION_NULL is 0).
#[derive(Default)]
pub struct SessionTable {
    slots: Vec<Option<Session>>,
}

impl SessionTable {
    pub fn insert(&mut self, session: Session) -> MPI_Session {
        match self.slots.iter().position(Option::is_none) {
            Some(free) => {
                self.slots[free] = Some(session);
                free as MPI_Session + 1
            }
            None => {
                self.slots.push(Some(session));
                self.slots.len() as MPI_Session
            }
        }
    }

    pub fn get(&self, session: MPI_Session) -> MpiResult<&Session> {
        self.slot(session).and_then(Option::as_ref).ok_or_else(|| invalid(session))
    }

    pub fn get_mut(&mut self, session: MPI_Session) -> MpiResult<&mut Session> {
        let index = usize::try_from(session).ok().and_then(|s| s.checked_sub(1));
        index.and_then(|i| self.slots.get_mut(i)).and_then(Option::as_mut).ok_or_else(|| invalid(session))
    }

    fn slot(&self, session: MPI_Session) -> Option<&Option<Session>> {
        self.slots.get(usize::try_from(session).ok()?.checked_sub(1)?)
    }

    pub fn remove(&mut self, session: MPI_Session) -> MpiResult<Session> {
        let index = usize::try_from(session).ok().and_then(|s| s.checked_sub(1));
        index.and_then(|i| self.slots.get_mut(i)).and_then(Option::take).ok_or_else(|| invalid(session))
    }

    /// The error handler of `session` (None for an invalid one).
    pub fn errhandler(&self, session: MPI_Session) -> Option<MPI_Errhandler> {
        self.get(session).ok().map(|s| s.errhandler)
    }

    /// Whether a session has `errhandler` attached (a user handler lives while it is).
    pub fn uses_errhandler(&self, errhandler: MPI_Errhandler) -> bool {
        self.slots.iter().flatten().any(|s| s.errhandler == errhandler)
    }

    pub fn is_empty(&self) -> bool {
        self.slots.iter().all(Option::is_none)
    }
}

#[cold]
fn invalid(session: MPI_Session) -> crate::error::MpiError {
    error(MPI_COMM_SELF, MPI_ERR_SESSION, format!("{session} is not an open session"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        Session { errhandler: MPI_ERRORS_RETURN, thread_level: MPI_THREAD_SINGLE, hints: Vec::new() }
    }

    #[test]
    fn handles_start_at_one_and_are_reused() {
        let mut table = SessionTable::default();
        assert!(table.is_empty());
        let (first, second) = (table.insert(session()), table.insert(session()));
        assert_eq!((first, second), (1, 2));
        assert_eq!(table.get(MPI_SESSION_NULL).unwrap_err().class, MPI_ERR_SESSION);
        assert!(table.remove(first).is_ok());
        assert_eq!(table.remove(first).unwrap_err().class, MPI_ERR_SESSION);
        assert_eq!(table.insert(session()), first);
        table.get_mut(second).unwrap().errhandler = MPI_ERRORS_ARE_FATAL;
        assert!(table.uses_errhandler(MPI_ERRORS_ARE_FATAL) && table.errhandler(second) == Some(MPI_ERRORS_ARE_FATAL));
        assert_eq!(table.errhandler(-3), None);
    }
}
