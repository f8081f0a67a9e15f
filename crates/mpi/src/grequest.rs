//! Generalized requests (MPI_Grequest_start, MPI_Grequest_complete): operations the application
//! carries out itself and completes with MPI_Grequest_complete, then waits for, tests, frees and
//! cancels like any other request.
//!
//! The application's callbacks may call MPI themselves, so none runs while the runtime is in use:
//! a completion call first asks every complete generalized request among its arguments for its
//! status (`query_fn`, [`answer_queries`]), then does its work, in which such a request is just a
//! finished one, and last calls the `free_fn` of those it freed ([`run_frees`]). MPI_Cancel calls
//! `cancel_fn` once it is done with the runtime. Under MPI_THREAD_SERIALIZED nothing can complete
//! a request while a completion call runs, which is what lets the status be asked for up front.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::consts::*;
use crate::error::{error, finish, raise, MpiResult};
use crate::request::{status_cancelled, status_count, write_status, Completion, Pending, Staging};
use crate::runtime;

/// Generalized requests whose free function has not run yet. While there are none (nearly every
/// program), the completion calls skip both passes after one load.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// A generalized request's callbacks and state.
pub struct Generalized {
    query: Option<MPI_Grequest_query_function>,
    free: Option<MPI_Grequest_free_function>,
    cancel: Option<MPI_Grequest_cancel_function>,
    extra_state: *mut c_void,
    /// MPI_Grequest_complete was called.
    pub(crate) complete: bool,
    /// MPI_Request_free was called before MPI_Grequest_complete: the request goes (and its
    /// free function runs) when that is called.
    pub(crate) released: bool,
}

/// A query function with its argument, to be called once the runtime is released.
#[derive(Clone, Copy)]
pub(crate) struct Query {
    function: Option<MPI_Grequest_query_function>,
    extra_state: *mut c_void,
}

impl Query {
    /// The status `query_fn` writes (starting from an empty one); its return code is the
    /// request's error.
    fn call(self) -> Completion {
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

/// A cancel function with its arguments, to be called once the runtime is released.
#[derive(Clone, Copy)]
pub(crate) struct Cancellation {
    function: Option<MPI_Grequest_cancel_function>,
    extra_state: *mut c_void,
    complete: bool,
}

impl Cancellation {
    /// Calls `cancel_fn`; its return code.
    pub(crate) fn call(self) -> c_int {
        match self.function {
            // SAFETY: the application's callback with the extra state it gave MPI_Grequest_start.
            Some(cancel) => unsafe { cancel(self.extra_state, c_int::from(self.complete)) },
            None => MPI_SUCCESS,
        }
    }
}

impl Generalized {
    pub(crate) fn new(
        query: Option<MPI_Grequest_query_function>,
        free: Option<MPI_Grequest_free_function>,
        cancel: Option<MPI_Grequest_cancel_function>,
        extra_state: *mut c_void,
    ) -> Generalized {
        Generalized { query, free, cancel, extra_state, complete: false, released: false }
    }

    pub(crate) fn query(&self) -> Query {
        Query { function: self.query, extra_state: self.extra_state }
    }

    pub(crate) fn cancellation(&self) -> Cancellation {
        Cancellation { function: self.cancel, extra_state: self.extra_state, complete: self.complete }
    }

    /// Calls `free_fn`; its return code.
    fn call_free(&self) -> c_int {
        match self.free {
            // SAFETY: the application's callback with the extra state it gave MPI_Grequest_start.
            Some(free) => unsafe { free(self.extra_state) },
            None => MPI_SUCCESS,
        }
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

/// Whether any generalized request exists (the completion calls' extra checks are needed only then).
#[inline]
pub(crate) fn any_live() -> bool {
    LIVE.load(Ordering::Relaxed) != 0
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts calls in the extra state and reports 5 ints, cancelled, with tag 9.
    unsafe extern "C" fn query(extra_state: *mut c_void, status: *mut MPI_Status) -> c_int {
        // SAFETY: the tests pass a `[c_int; 3]` as extra state and a real status.
        unsafe {
            (*extra_state.cast::<[c_int; 3]>())[0] += 1;
            crate::status::MPI_Status_set_elements(status, MPI_INT, 5);
            crate::status::MPI_Status_set_cancelled(status, 1);
            (*status).MPI_TAG = 9;
        }
        MPI_ERR_OTHER
    }

    unsafe extern "C" fn free(extra_state: *mut c_void) -> c_int {
        // SAFETY: as in `query`.
        unsafe { (*extra_state.cast::<[c_int; 3]>())[1] += 1 };
        MPI_SUCCESS
    }

    unsafe extern "C" fn cancel(extra_state: *mut c_void, complete: c_int) -> c_int {
        // SAFETY: as in `query`.
        unsafe { (*extra_state.cast::<[c_int; 3]>())[2] = 10 + complete };
        MPI_ERR_ARG
    }

    #[test]
    fn callbacks_get_the_extra_state_and_their_answers_become_the_completion() {
        let mut calls: [c_int; 3] = [0; 3];
        let mut generalized = Generalized::new(Some(query), Some(free), Some(cancel), (&mut calls as *mut [c_int; 3]).cast());
        let completion = generalized.query().call();
        assert_eq!(completion, Completion { source: MPI_ANY_SOURCE, tag: 9, count: 20, cancelled: true, error: MPI_ERR_OTHER });
        assert_eq!(generalized.cancellation().call(), MPI_ERR_ARG);
        generalized.complete = true;
        generalized.cancellation().call();
        assert_eq!(generalized.call_free(), MPI_SUCCESS);
        assert_eq!(calls, [1, 1, 11]);
    }

    #[test]
    fn missing_callbacks_succeed_with_an_empty_status() {
        let generalized = Generalized::new(None, None, None, std::ptr::null_mut());
        assert_eq!(generalized.query().call(), Completion::EMPTY);
        assert_eq!(generalized.cancellation().call(), MPI_SUCCESS);
        assert_eq!(generalized.call_free(), MPI_SUCCESS);
    }
}
