//! Reporting a failure: [`raise`] and [`finish`] hand an error to the handler that covers it
//! ([`apply`]), which returns, calls the program's handler, or ends the job.

use std::ffi::c_int;

use super::handlers::world_errhandler;
use super::{class_text, codes, MpiResult};
use crate::consts::*;
use crate::runtime;

/// Applies `comm`'s error handler to an error of `class` in `function`. Returns `class` under
/// MPI_ERRORS_RETURN, and what a user handler leaves in its code argument; under
/// MPI_ERRORS_ARE_FATAL prints `Braid: <function>: <class text>: <detail>` and ends the job with
/// exit code `class` (outside MPI_Init..MPI_Finalize it prints and returns). Unknown or null
/// communicators use MPI_COMM_WORLD's handler.
#[cold]
#[inline(never)]
pub fn raise(comm: MPI_Comm, function: &str, class: c_int, detail: &str) -> c_int {
    if class == MPI_SUCCESS {
        return MPI_SUCCESS;
    }
    apply(Target::Comm(comm), class, || format!("Braid: {function}: {}: {detail}", class_text(class)))
}

/// Turns a call's result into its return code, raising the error if there is one.
pub fn finish(function: &str, result: MpiResult<()>) -> c_int {
    match result {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise(e.comm, function, e.class, &e.detail),
    }
}

/// The object whose handler covers a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// A communicator; an invalid one means MPI_COMM_WORLD.
    Comm(MPI_Comm),
    /// A file; errors without an open file use MPI_FILE_NULL's handler.
    File(MPI_File),
    /// A window; an invalid one means MPI_COMM_WORLD's handler.
    Win(MPI_Win),
    /// A session; an invalid one means MPI_COMM_WORLD's handler.
    Session(MPI_Session),
    /// A handler given as an argument (MPI_Session_init, MPI_Comm_create_from_group): the call
    /// has no object yet.
    Handler(MPI_Errhandler),
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
            let handler = crate::io::errhandler(file).unwrap_or_else(|| rt.errhandlers.file_default());
            (file, handler, rt.errhandlers.function(handler))
        }
        Target::Session(session) => match rt.sessions.errhandler(session) {
            Some(handler) => (session, handler, rt.errhandlers.function(handler)),
            None => {
                let handler = rt.comms.errhandler(MPI_COMM_WORLD);
                (MPI_COMM_WORLD, handler, rt.errhandlers.function(handler))
            }
        },
        Target::Handler(handler) => (MPI_SESSION_NULL, handler, rt.errhandlers.function(handler)),
        Target::Win(win) => match rt.windows.errhandler(win) {
            Some(handler) => (win, handler, rt.errhandlers.function(handler)),
            None => {
                let handler = rt.comms.errhandler(MPI_COMM_WORLD);
                (MPI_COMM_WORLD, handler, rt.errhandlers.function(handler))
            }
        },
    });
    let (mut object, handler, function) = covering.unwrap_or_else(|| match target {
        Target::Comm(_) | Target::Win(_) | Target::Session(_) => world_errhandler(),
        Target::File(file) => (file, MPI_ERRORS_RETURN, None),
        // Before the state is up, only the predefined handlers can have been made.
        Target::Handler(handler) => (MPI_SESSION_NULL, handler, None),
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
    // MPI_ERRORS_ABORT ends the communicator's group as MPI_Abort on it would: the whole job.
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
    let exit_code = codes::abi::class_of(code).filter(|class| (1..=255).contains(class)).unwrap_or(MPI_ERR_UNKNOWN);
    runtime::abort_job(exit_code, message)
}

/// How a fatal message names `code`: its text, or its number and class.
pub(crate) fn describe(code: c_int) -> String {
    match (codes::abi::text_of(code), codes::abi::class_of(code)) {
        (Some(text), _) if !text.is_empty() => text,
        (_, Some(class)) => format!("error code {code} of class {class}"),
        _ => format!("error code {code}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fatal_messages_name_the_code() {
        assert_eq!(describe(MPI_ERR_TAG), "invalid tag");
        assert_eq!(describe(MPI_ERR_LASTCODE + 7), format!("error code {}", MPI_ERR_LASTCODE + 7));
    }
}
