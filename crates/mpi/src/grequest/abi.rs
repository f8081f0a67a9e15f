//! The generalized request calls (MPI_Grequest_start, MPI_Grequest_complete) and the passes
//! around every completion call that run the application's query and free functions outside the
//! runtime.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;

use super::{Generalized, Query, LIVE};
use crate::consts::*;
use crate::error::{error, finish, raise, MpiResult};
use crate::request::{status_cancelled, status_count, write_status, Completion, Pending, Staging};
use crate::runtime;

impl Query {
    /// The status `query_fn` writes (starting from an empty one); its return code is the
    /// request's error.
    pub(crate) fn call(self) -> Completion {
        let mut status = MPI_Status::default();
        // SAFETY: a real status on the stack.
        unsafe { write_status(&mut status, &Completion::EMPTY) };
        let code = match self.function {
            // SAFETY: the application's callback, called as MPI_Grequest_start was told, with the
            // extra state it was given and a valid status.
            Some(query) => unsafe { query(self.extra_state, &mut status) },
            None => MPI_SUCCESS,
        };
        Completion { source: status.MPI_SOURCE, tag: status.MPI_TAG, count: status_count(&status), cancelled: status_cancelled(&status), error: code }
    }
}

/// Before a completion call on `handles`: the status of each complete generalized request
/// among them, from its query function, becomes its completion.
fn answer_queries(handles: &[MPI_Request]) -> MpiResult<()> {
    let queries = runtime::with(|rt| Ok(rt.requests.queries_due(handles)))?;
    if queries.is_empty() {
        return Ok(());
    }
    let answers: Vec<(MPI_Request, Completion)> = queries.into_iter().map(|(handle, query)| (handle, query.call())).collect();
    runtime::with(|rt| {
        for (handle, completion) in answers {
            rt.requests.answer(handle, completion);
        }
        Ok(())
    })
}

/// After a call that returned `code`: runs the free functions of the generalized requests it
/// freed. A failed free function becomes the call's error if it had none.
#[inline]
pub(crate) fn run_frees(function: &str, code: c_int) -> c_int {
    if LIVE.load(Ordering::Relaxed) == 0 {
        return code;
    }
    run_due_frees(function, code)
}

#[cold]
fn run_due_frees(function: &str, code: c_int) -> c_int {
    let freed = runtime::try_with(|rt| rt.requests.take_freed_generalized()).unwrap_or_default();
    let mut failed = MPI_SUCCESS;
    for generalized in freed {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        let result = generalized.call_free();
        if failed == MPI_SUCCESS {
            failed = result;
        }
    }
    if code != MPI_SUCCESS || failed == MPI_SUCCESS {
        return code;
    }
    raise(MPI_COMM_WORLD, function, failed, "the free function of a generalized request failed")
}

/// Runs `call`, a completion call on the `count` handles at `requests`, between
/// [`answer_queries`] and [`run_frees`].
///
/// # Safety
/// `requests` must be NULL or point to `count` handles (none are read when `count` < 1).
#[inline]
pub(crate) unsafe fn around(function: &str, requests: *const MPI_Request, count: c_int, call: impl FnOnce() -> c_int) -> c_int {
    if LIVE.load(Ordering::Relaxed) != 0 {
        let handles = match usize::try_from(count) {
            // SAFETY: per the caller; copied, so that `call` may take the array mutably.
            Ok(count) if count > 0 && !requests.is_null() => unsafe { std::slice::from_raw_parts(requests, count) }.to_vec(),
            _ => Vec::new(),
        };
        if let Err(e) = answer_queries(&handles) {
            return raise(e.comm, function, e.class, &e.detail);
        }
    }
    let code = call();
    run_frees(function, code)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Grequest_start(
    query_fn: Option<MPI_Grequest_query_function>,
    free_fn: Option<MPI_Grequest_free_function>,
    cancel_fn: Option<MPI_Grequest_cancel_function>,
    extra_state: *mut c_void,
    request: *mut MPI_Request,
) -> c_int {
    let result = runtime::with(|rt| {
        if request.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "request must not be NULL"));
        }
        let generalized = Generalized::new(query_fn, free_fn, cancel_fn, extra_state);
        let pending = Pending { comm: MPI_COMM_WORLD, shared: None, engine: None, staging: Staging::None, done: None, persistent: None, generalized: Some(Box::new(generalized)), coming: None };
        let handle = rt.requests.insert(pending);
        LIVE.fetch_add(1, Ordering::Relaxed);
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *request = handle };
        Ok(())
    });
    finish("MPI_Grequest_start", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Grequest_complete(request: MPI_Request) -> c_int {
    let result = runtime::with(|rt| {
        let pending = rt.requests.get_mut(request)?;
        let Some(generalized) = pending.generalized.as_mut() else {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_REQUEST, format!("request {request} is not a generalized request")));
        };
        if generalized.complete {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_REQUEST, format!("generalized request {request} is already complete")));
        }
        generalized.complete = true;
        if generalized.released {
            rt.requests.retire_released(request);
        }
        Ok(())
    });
    run_frees("MPI_Grequest_complete", finish("MPI_Grequest_complete", result))
}
