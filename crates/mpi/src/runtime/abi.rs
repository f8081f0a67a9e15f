//! The environment calls: MPI_Init ... MPI_Finalize, the thread level queries, MPI_Abort.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int};

use crate::consts::*;
use crate::error::{error, raise, MpiError};
use crate::runtime::{self, Runtime};

/// Reports a failed MPI_Init or MPI_Init_thread. The first initialisation fails under
/// MPI_ERRORS_ARE_FATAL (nothing can change MPI_COMM_WORLD's handler before it), and with no job
/// to abort yet the process ends here, with the error class as exit code: the program must not
/// go on as if MPI were running.
#[cold]
fn init_failed(function: &str, first_init: bool, e: MpiError) -> c_int {
    let class = raise(e.comm, function, e.class, &e.detail);
    if first_init {
        std::process::exit(class);
    }
    class
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let _ = (argc, argv);
    let first_init = !runtime::was_initialized();
    match runtime::initialize(MPI_THREAD_SINGLE).and_then(|_| crate::dynamic::connect_to_parents()) {
        Ok(()) => {
            warn_if_profiler_absent();
            MPI_SUCCESS
        }
        Err(e) => init_failed("MPI_Init", first_init, e),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int) -> c_int {
    let _ = (argc, argv);
    let first_init = !runtime::was_initialized();
    if provided.is_null() {
        return init_failed("MPI_Init_thread", first_init, error(MPI_COMM_WORLD, MPI_ERR_ARG, "provided must not be NULL"));
    }
    if !(MPI_THREAD_SINGLE..=MPI_THREAD_MULTIPLE).contains(&required) {
        return init_failed("MPI_Init_thread", first_init, error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("{required} is not a thread level")));
    }
    match runtime::initialize(required).and_then(|level| crate::dynamic::connect_to_parents().map(|()| level)) {
        Ok(level) => {
            // SAFETY: checked non-null; points to the caller's int.
            unsafe { *provided = level };
            warn_if_profiler_absent();
            MPI_SUCCESS
        }
        Err(e) => init_failed("MPI_Init_thread", first_init, e),
    }
}

/// BRAID_PROFILE names where the job profiler writes, but the profiler is a library preloaded in
/// front of this one (`braid run --profile` does it): without it nothing would be written, so
/// rank 0 says so.
#[cold]
fn warn_if_profiler_absent() {
    if std::env::var_os("BRAID_PROFILE").is_none_or(|dir| dir.is_empty()) {
        return;
    }
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks the symbol up.
    let loaded = !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"braid_profiler_loaded".as_ptr()) }.is_null();
    let rank = runtime::try_with(|rt| rt.engine.rank()).unwrap_or(0);
    if !loaded && rank == 0 {
        eprintln!("Braid: BRAID_PROFILE is set but the job profiler is not loaded, so no profile will be written: start the job with `braid run --profile DIR`, or preload libbraidprof.so (beside the braid launcher) with LD_PRELOAD");
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Initialized(flag: *mut c_int) -> c_int {
    if flag.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Initialized", MPI_ERR_ARG, "flag must not be NULL");
    }
    // SAFETY: checked non-null; points to the caller's int.
    unsafe { *flag = c_int::from(runtime::was_initialized()) };
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Finalized(flag: *mut c_int) -> c_int {
    if flag.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Finalized", MPI_ERR_ARG, "flag must not be NULL");
    }
    // SAFETY: checked non-null; points to the caller's int.
    unsafe { *flag = c_int::from(runtime::is_finalized()) };
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    if let Err(e) = crate::attr::access::delete_at_finalize() {
        return raise(e.comm, "MPI_Finalize", e.class, &e.detail);
    }
    match runtime::finalize() {
        Ok(Some(runtime)) => shut_down("MPI_Finalize", runtime),
        // Sessions are open: the state lives on for them.
        Ok(None) => MPI_SUCCESS,
        Err(e) => raise(e.comm, "MPI_Finalize", e.class, &e.detail),
    }
}

/// Ends the engine of a state taken down by the last of MPI_Finalize and MPI_Session_finalize.
pub(crate) fn shut_down(function: &str, runtime: Runtime) -> c_int {
    crate::tools::keep_final_state(&runtime);
    let Runtime { engine, comms, .. } = runtime;
    drop(comms);
    match engine.finalize() {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise(MPI_COMM_WORLD, function, MPI_ERR_OTHER, &e.to_string()),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    if provided.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Query_thread", MPI_ERR_ARG, "provided must not be NULL");
    }
    match runtime::with(|rt| Ok(rt.thread_level)) {
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
    match runtime::with(|rt| Ok(rt.is_main_thread())) {
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
    runtime::abort_job(errorcode, &message)
}
