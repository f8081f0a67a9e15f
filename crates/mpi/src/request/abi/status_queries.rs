//! MPI 4.1's MPI_Request_get_status_all, _any and _some: like MPI_Testall, MPI_Testany and
//! MPI_Testsome, with progress, but the completed requests stay as they are (not freed, not
//! deactivated), as MPI_Request_get_status leaves its one.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use super::{is_active, report_many, request_array};
use crate::consts::*;
use crate::error::{engine_error, error, raise, MpiResult};
use crate::grequest;
use crate::request::{write_status, write_status_of_many, Completion};
use crate::runtime::{self, Runtime};

/// Each request's completion after one progress pass: Some for a complete active one, None for
/// one still in flight; inactive and null requests count as complete with an empty status.
fn completions(rt: &mut Runtime, requests: &[MPI_Request]) -> MpiResult<Vec<(bool, Option<Completion>, MPI_Comm)>> {
    let mut found = Vec::with_capacity(requests.len());
    for &handle in requests {
        if !is_active(rt, handle)? {
            found.push((false, Some(Completion::EMPTY), MPI_COMM_WORLD));
            continue;
        }
        let Runtime { engine, requests: table, .. } = &mut *rt;
        let pending = table.get_mut(handle)?;
        let comm = pending.comm;
        let done = pending.poll(engine).map_err(|e| engine_error(comm, e))?;
        found.push((true, if done { pending.done } else { None }, comm));
    }
    Ok(found)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status_all(count: c_int, array_of_requests: *const MPI_Request, flag: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    let query = || {
        let outcome = runtime::with(|rt| {
            // SAFETY: MPI requires `count` handles; they are only read.
            let requests = unsafe { request_array(count, array_of_requests.cast_mut())? };
            if flag.is_null() {
                return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "flag must not be NULL"));
            }
            let found = completions(rt, requests)?;
            let all = found.iter().all(|(_, completion, _)| completion.is_some());
            // SAFETY: checked non-null.
            unsafe { *flag = c_int::from(all) };
            if !all {
                return Ok(Vec::new());
            }
            let mut failures = Vec::new();
            for (index, (_, completion, comm)) in found.into_iter().enumerate() {
                let completion = completion.expect("all are complete");
                // SAFETY: the caller's array holds `count` statuses (or is ignored).
                unsafe { write_status_of_many(array_of_statuses, index, &completion) };
                if completion.error != MPI_SUCCESS {
                    failures.push((index, completion, comm));
                }
            }
            Ok(failures)
        });
        match outcome {
            Ok(failures) => report_many("MPI_Request_get_status_all", &failures),
            Err(e) => raise(e.comm, "MPI_Request_get_status_all", e.class, &e.detail),
        }
    };
    // SAFETY: `array_of_requests` holds `count` handles.
    unsafe { grequest::abi::around("MPI_Request_get_status_all", array_of_requests, count, query) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status_any(count: c_int, array_of_requests: *const MPI_Request, index: *mut c_int, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let query = || {
        let outcome = runtime::with(|rt| {
            // SAFETY: MPI requires `count` handles; they are only read.
            let requests = unsafe { request_array(count, array_of_requests.cast_mut())? };
            if flag.is_null() || index.is_null() {
                return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "index and flag must not be NULL"));
            }
            let found = completions(rt, requests)?;
            if !found.iter().any(|(active, _, _)| *active) {
                return Ok(Some((MPI_UNDEFINED, Completion::EMPTY)));
            }
            Ok(found.iter().position(|(active, completion, _)| *active && completion.is_some()).map(|at| (at as c_int, found[at].1.expect("complete"))))
        });
        match outcome {
            Ok(answer) => {
                // SAFETY: both checked non-null; the caller's status.
                unsafe {
                    *flag = c_int::from(answer.is_some());
                    if let Some((at, completion)) = answer {
                        *index = at;
                        write_status(status, &completion);
                        // No active request: the empty status, whose error is MPI_SUCCESS.
                        if at == MPI_UNDEFINED && crate::request::is_real_status(status) {
                            (*status).MPI_ERROR = MPI_SUCCESS;
                        }
                    }
                }
                MPI_SUCCESS
            }
            Err(e) => raise(e.comm, "MPI_Request_get_status_any", e.class, &e.detail),
        }
    };
    // SAFETY: `array_of_requests` holds `count` handles.
    unsafe { grequest::abi::around("MPI_Request_get_status_any", array_of_requests, count, query) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status_some(
    incount: c_int,
    array_of_requests: *const MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    let query = || {
        let outcome = runtime::with(|rt| {
            // SAFETY: MPI requires `incount` handles; they are only read.
            let requests = unsafe { request_array(incount, array_of_requests.cast_mut())? };
            if outcount.is_null() || (incount > 0 && array_of_indices.is_null()) {
                return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "outcount and array_of_indices must not be NULL"));
            }
            let found = completions(rt, requests)?;
            if !found.iter().any(|(active, _, _)| *active) {
                // SAFETY: checked non-null.
                unsafe { *outcount = MPI_UNDEFINED };
                return Ok(Vec::new());
            }
            let mut failures = Vec::new();
            let mut reported = 0;
            for (at, (active, completion, comm)) in found.into_iter().enumerate() {
                let (true, Some(completion)) = (active, completion) else { continue };
                // SAFETY: the caller's arrays hold `incount` entries (statuses may be ignored).
                unsafe {
                    *array_of_indices.add(reported) = at as c_int;
                    write_status_of_many(array_of_statuses, reported, &completion);
                }
                if completion.error != MPI_SUCCESS {
                    failures.push((reported, completion, comm));
                }
                reported += 1;
            }
            // SAFETY: checked non-null.
            unsafe { *outcount = reported as c_int };
            Ok(failures)
        });
        match outcome {
            Ok(failures) => report_many("MPI_Request_get_status_some", &failures),
            Err(e) => raise(e.comm, "MPI_Request_get_status_some", e.class, &e.detail),
        }
    };
    // SAFETY: `array_of_requests` holds `incount` handles.
    unsafe { grequest::abi::around("MPI_Request_get_status_some", array_of_requests, incount, query) }
}
