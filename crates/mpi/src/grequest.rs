//! Generalized requests (MPI_Grequest_start, MPI_Grequest_complete): operations the application
//! carries out itself and completes with MPI_Grequest_complete, then waits for, tests, frees and
//! cancels like any other request.
//!
//! The application's callbacks may call MPI themselves, so none runs while the runtime is in use:
//! a completion call first asks every complete generalized request among its arguments for its
//! status (`query_fn`, [`abi::around`]), then does its work, in which such a request is just a
//! finished one, and last calls the `free_fn` of those it freed ([`abi::run_frees`]). MPI_Cancel calls
//! `cancel_fn` once it is done with the runtime. Under MPI_THREAD_SERIALIZED nothing can complete
//! a request while a completion call runs, which is what lets the status be asked for up front.

pub mod abi;

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::consts::*;

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
    pub(crate) fn new(query: Option<MPI_Grequest_query_function>, free: Option<MPI_Grequest_free_function>, cancel: Option<MPI_Grequest_cancel_function>, extra_state: *mut c_void) -> Generalized {
        Generalized { query, free, cancel, extra_state, complete: false, released: false }
    }

    pub(crate) fn query(&self) -> Query {
        Query { function: self.query, extra_state: self.extra_state }
    }

    pub(crate) fn cancellation(&self) -> Cancellation {
        Cancellation { function: self.cancel, extra_state: self.extra_state, complete: self.complete }
    }

    /// Calls `free_fn`; its return code.
    pub(crate) fn call_free(&self) -> c_int {
        match self.free {
            // SAFETY: the application's callback with the extra state it gave MPI_Grequest_start.
            Some(free) => unsafe { free(self.extra_state) },
            None => MPI_SUCCESS,
        }
    }
}

/// Whether any generalized request exists (the completion calls' extra checks are needed only then).
#[inline]
pub(crate) fn any_live() -> bool {
    LIVE.load(Ordering::Relaxed) != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Completion;

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
