//! The error handler calls: MPI_{Comm,Win,File}_{create,set,get,call}_errhandler, their MPI-1
//! names and MPI_Errhandler_free, over [`super::ErrhandlerTable`].

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use super::{remember_world, ErrhandlerFunction, Kind};
use crate::consts::*;
use crate::error::codes;
use crate::error::report::{apply, describe, Target};
use crate::error::{error, finish, raise, MpiResult};
use crate::runtime::{self, Runtime};

/// Whether a communicator, a window or a session of `rt` has `handle` attached.
fn on_comm(rt: &Runtime, handle: MPI_Errhandler) -> bool {
    rt.comms.uses_errhandler(handle) || rt.windows.uses_errhandler(handle) || rt.sessions.uses_errhandler(handle)
}

/// [`on_comm`], for the session calls.
pub(crate) fn is_attached(rt: &Runtime, handle: MPI_Errhandler) -> bool {
    on_comm(rt, handle)
}

/// MPI_*_create_errhandler for `kind`.
///
/// # Safety
/// `errhandler` must be NULL or point to an MPI_Errhandler.
pub(crate) unsafe fn create(name: &str, kind: Kind, function: Option<ErrhandlerFunction>, errhandler: *mut MPI_Errhandler) -> c_int {
    let result = runtime::with(|rt| {
        let function = function.ok_or_else(|| error(MPI_COMM_WORLD, MPI_ERR_ARG, "the handler function must not be NULL"))?;
        if errhandler.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "errhandler must not be NULL"));
        }
        let Runtime { comms, windows, sessions, errhandlers, .. } = rt;
        let handle = errhandlers.insert(kind, function, |h| comms.uses_errhandler(h) || windows.uses_errhandler(h) || sessions.uses_errhandler(h));
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *errhandler = handle };
        Ok(())
    });
    finish(name, result)
}

/// MPI_Comm_set_errhandler and MPI_Errhandler_set.
fn set_on_comm(name: &str, comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    let result = runtime::with(|rt| {
        if !rt.comms.is_coming(comm) {
            rt.comms.get(comm)?;
        }
        rt.errhandlers.check_attachable(errhandler, Kind::Comm, on_comm(rt, errhandler)).map_err(|detail| error(comm, MPI_ERR_ARG, detail))?;
        // A handle MPI_Comm_idup has not completed: the communicator gets the handler when it does.
        if rt.comms.set_coming_errhandler(comm, errhandler) {
            return Ok(());
        }
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
        let handler = match rt.comms.coming_errhandler(comm) {
            Some(handler) => handler,
            None => rt.comms.get(comm)?.errhandler,
        };
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
    let result = if super::is_predefined(handle) {
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

/// Checks a file handle: MPI_FILE_NULL (whose handler is the default for file errors) or an
/// open file.
fn check_file(file: MPI_File) -> MpiResult<()> {
    if file == MPI_FILE_NULL || crate::io::is_open(file) {
        Ok(())
    } else {
        Err(error(MPI_COMM_WORLD, MPI_ERR_FILE, format!("{file} is not an open file nor MPI_FILE_NULL")))
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
        if file == MPI_FILE_NULL {
            rt.errhandlers.set_file_default(errhandler);
        } else {
            rt.errhandlers.add_reference(errhandler);
            if let Some(replaced) = crate::io::set_errhandler(file, errhandler) {
                let _ = rt.errhandlers.release(replaced, false);
            }
        }
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
        let handler = crate::io::errhandler(file).unwrap_or_else(|| rt.errhandlers.file_default());
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
