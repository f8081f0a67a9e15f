//! The completion calls: the MPI_Wait and MPI_Test families, MPI_Request_free, MPI_Cancel,
//! MPI_Request_get_status and the persistent requests' MPI_Start(all).

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

mod status_queries;

use std::ffi::c_int;

use super::{is_real_status, status_cancelled, write_status, write_status_of_many, Completion, Staging, COMPLETED_SEND};
use crate::consts::*;
use crate::error::{engine_error, error, finish, raise, MpiError, MpiResult};
use crate::grequest;
use crate::group::store;
use crate::runtime::{self, Runtime};

/// Reads a request handle through a C pointer.
///
/// # Safety
/// `request` must be NULL or point to a handle.
unsafe fn read_handle(request: *const MPI_Request, what: &str) -> MpiResult<MPI_Request> {
    if request.is_null() {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("{what} must not be NULL")));
    }
    // SAFETY: non-null, and the caller guarantees it points to a handle.
    Ok(unsafe { *request })
}

/// A C array of `count` requests.
///
/// # Safety
/// `requests` must point to `count` handles when `count > 0`.
unsafe fn request_array<'a>(count: c_int, requests: *mut MPI_Request) -> MpiResult<&'a mut [MPI_Request]> {
    if count < 0 {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_COUNT, format!("negative request count {count}")));
    }
    if count == 0 {
        return Ok(&mut []);
    }
    if requests.is_null() {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "the request array is NULL"));
    }
    // SAFETY: non-null, and the caller guarantees `count` handles.
    Ok(unsafe { std::slice::from_raw_parts_mut(requests, count as usize) })
}

/// Whether the handle refers to an operation that can complete (not null, not inactive).
#[inline]
fn is_active(rt: &mut Runtime, request: MPI_Request) -> MpiResult<bool> {
    if request == MPI_REQUEST_NULL {
        return Ok(false);
    }
    Ok(rt.requests.get_mut(request)?.is_active())
}

#[cold]
fn never_completes(request: MPI_Request) -> MpiError {
    let detail = format!("generalized request {request} is not complete, and no MPI_Grequest_complete can run while this call waits (MPI_THREAD_SERIALIZED)");
    error(MPI_COMM_WORLD, MPI_ERR_REQUEST, detail)
}

/// Waits for one active request; frees it (persistent: deactivates it).
fn wait_one(rt: &mut Runtime, request: MPI_Request) -> MpiResult<(Completion, MPI_Request, MPI_Comm)> {
    let Runtime { engine, requests, .. } = rt;
    let pending = requests.get_mut(request)?;
    if pending.waits_forever() {
        return Err(never_completes(request));
    }
    let comm = pending.comm;
    let completion = pending.wait(engine).map_err(|e| engine_error(comm, e))?;
    let (completion, handle, coming) = requests.retire(request, completion);
    if let Some(coming) = coming {
        coming.arrive(&mut rt.comms, &mut rt.attributes, completion.error == MPI_SUCCESS);
    }
    Ok((completion, handle, comm))
}

/// Tests one active request once; Some when it completed (then freed or deactivated).
fn test_one(rt: &mut Runtime, request: MPI_Request) -> MpiResult<Option<(Completion, MPI_Request, MPI_Comm)>> {
    let Runtime { engine, requests, .. } = rt;
    let pending = requests.get_mut(request)?;
    let comm = pending.comm;
    if !pending.poll(engine).map_err(|e| engine_error(comm, e))? {
        return Ok(None);
    }
    let completion = pending.done.take().unwrap_or(Completion::EMPTY);
    let (completion, handle, coming) = requests.retire(request, completion);
    if let Some(coming) = coming {
        coming.arrive(&mut rt.comms, &mut rt.attributes, completion.error == MPI_SUCCESS);
    }
    Ok(Some((completion, handle, comm)))
}

/// The error of a finished request, if it failed.
#[inline]
pub(crate) fn completion_error(function: &str, completion: &Completion, comm: MPI_Comm) -> c_int {
    if completion.error == MPI_SUCCESS {
        return MPI_SUCCESS;
    }
    failed_completion(function, completion, comm)
}

#[cold]
fn failed_completion(function: &str, completion: &Completion, comm: MPI_Comm) -> c_int {
    let detail = match completion.error {
        MPI_ERR_TRUNCATE => format!("the message was longer than the receive buffer ({} bytes fit)", completion.count),
        _ => "the operation failed".to_string(),
    };
    raise(comm, function, completion.error, &detail)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Wait's arguments, passed on.
        return unsafe { crate::threaded::wait(request, status) };
    }
    // SAFETY: `request` is NULL or the caller's handle.
    unsafe { grequest::abi::around("MPI_Wait", request, 1, || wait(request, status)) }
}

/// MPI_Wait.
///
/// # Safety
/// MPI_Wait's arguments.
unsafe fn wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: `request` is the caller's handle pointer.
        let handle = unsafe { read_handle(request, "request")? };
        if !is_active(rt, handle)? {
            return Ok(None);
        }
        wait_one(rt, handle).map(Some)
    });
    match outcome {
        Ok(None) => {
            // SAFETY: the caller's status pointer.
            unsafe { write_status(status, &Completion::EMPTY) };
            MPI_SUCCESS
        }
        Ok(Some((completion, handle, comm))) => {
            // SAFETY: the caller's handle and status pointers (request checked non-null).
            unsafe {
                *request = handle;
                write_status(status, &completion);
            }
            completion_error("MPI_Wait", &completion, comm)
        }
        Err(e) => raise(e.comm, "MPI_Wait", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: `request` is NULL or the caller's handle.
    unsafe { grequest::abi::around("MPI_Test", request, 1, || test(request, flag, status)) }
}

/// MPI_Test.
///
/// # Safety
/// MPI_Test's arguments.
unsafe fn test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: `request` is the caller's handle pointer.
        let handle = unsafe { read_handle(request, "request")? };
        if flag.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "flag must not be NULL"));
        }
        if !is_active(rt, handle)? {
            return Ok(Some((Completion::EMPTY, handle, MPI_COMM_WORLD)));
        }
        test_one(rt, handle)
    });
    match outcome {
        Ok(None) => {
            // SAFETY: checked non-null above.
            unsafe { *flag = 0 };
            MPI_SUCCESS
        }
        Ok(Some((completion, handle, comm))) => {
            // SAFETY: the caller's pointers, `request` and `flag` checked non-null.
            unsafe {
                *flag = 1;
                *request = handle;
                write_status(status, &completion);
            }
            completion_error("MPI_Test", &completion, comm)
        }
        Err(e) => raise(e.comm, "MPI_Test", e.class, &e.detail),
    }
}

/// The return code of a multiple-completion call whose statuses already carry each request's
/// error: MPI_ERR_IN_STATUS (through the error handler) when one failed.
fn report_many(function: &str, results: &[(usize, Completion, MPI_Comm)]) -> c_int {
    let failed = results.iter().find(|(_, c, _)| c.error != MPI_SUCCESS);
    let Some(&(_, first, comm)) = failed else { return MPI_SUCCESS };
    let detail = format!("a request failed with \"{}\"; see the statuses", crate::error::class_text(first.error));
    raise(comm, function, MPI_ERR_IN_STATUS, &detail)
}

/// Completes every active request of `requests` (waiting for each), writes each one's status
/// and returns the failures, for MPI_Waitall and MPI_Testall.
///
/// # Safety
/// `array_of_statuses` is MPI_STATUSES_IGNORE or holds a status per request.
unsafe fn complete_all(rt: &mut Runtime, requests: &mut [MPI_Request], array_of_statuses: *mut MPI_Status) -> MpiResult<Vec<(usize, Completion, MPI_Comm)>> {
    // Nothing is completed when one of them never can be (only generalized requests can't).
    if grequest::any_live() {
        for &handle in requests.iter() {
            if is_active(rt, handle)? && rt.requests.get_mut(handle)?.waits_forever() {
                return Err(never_completes(handle));
            }
        }
    }
    let mut results = Vec::new();
    for (index, handle) in requests.iter_mut().enumerate() {
        let completion = if *handle == COMPLETED_SEND {
            *handle = MPI_REQUEST_NULL;
            Completion::SENT
        } else if is_active(rt, *handle)? {
            let (completion, new_handle, comm) = wait_one(rt, *handle)?;
            *handle = new_handle;
            if completion.error != MPI_SUCCESS {
                results.push((index, completion, comm));
            }
            completion
        } else {
            Completion::EMPTY
        };
        // SAFETY: the caller's status array holds a status per request (or is ignored).
        unsafe { write_status_of_many(array_of_statuses, index, &completion) };
    }
    Ok(results)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(count: c_int, array_of_requests: *mut MPI_Request, array_of_statuses: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Waitall's arguments, passed on.
        return unsafe { crate::threaded::waitall(count, array_of_requests, array_of_statuses) };
    }
    // SAFETY: `array_of_requests` holds `count` handles.
    unsafe { grequest::abi::around("MPI_Waitall", array_of_requests, count, || wait_all(count, array_of_requests, array_of_statuses)) }
}

/// MPI_Waitall.
///
/// # Safety
/// MPI_Waitall's arguments.
unsafe fn wait_all(count: c_int, array_of_requests: *mut MPI_Request, array_of_statuses: *mut MPI_Status) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: MPI requires `count` handles.
        let requests = unsafe { request_array(count, array_of_requests)? };
        // SAFETY: the caller's status array holds `count` statuses (or is ignored).
        unsafe { complete_all(rt, requests, array_of_statuses) }
    });
    match outcome {
        Ok(results) => report_many("MPI_Waitall", &results),
        Err(e) => raise(e.comm, "MPI_Waitall", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(count: c_int, array_of_requests: *mut MPI_Request, flag: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    // SAFETY: `array_of_requests` holds `count` handles.
    unsafe { grequest::abi::around("MPI_Testall", array_of_requests, count, || test_all(count, array_of_requests, flag, array_of_statuses)) }
}

/// MPI_Testall.
///
/// # Safety
/// MPI_Testall's arguments.
unsafe fn test_all(count: c_int, array_of_requests: *mut MPI_Request, flag: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: MPI requires `count` handles.
        let requests = unsafe { request_array(count, array_of_requests)? };
        if flag.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "flag must not be NULL"));
        }
        let mut all_done = true;
        for &handle in requests.iter() {
            if is_active(rt, handle)? {
                let Runtime { engine, requests: table, .. } = &mut *rt;
                let pending = table.get_mut(handle)?;
                let comm = pending.comm;
                all_done &= pending.poll(engine).map_err(|e| engine_error(comm, e))?;
            }
        }
        if !all_done {
            // SAFETY: checked non-null.
            unsafe { *flag = 0 };
            return Ok(Vec::new());
        }
        // SAFETY: the caller's status array holds `count` statuses (or is ignored).
        let results = unsafe { complete_all(rt, requests, array_of_statuses)? };
        // SAFETY: checked non-null.
        unsafe { *flag = 1 };
        Ok(results)
    });
    match outcome {
        Ok(results) => report_many("MPI_Testall", &results),
        Err(e) => raise(e.comm, "MPI_Testall", e.class, &e.detail),
    }
}

/// The first complete active request in `requests` (after one progress pass), if any; None for
/// "no active request".
fn first_complete(rt: &mut Runtime, requests: &[MPI_Request]) -> MpiResult<Option<Option<usize>>> {
    let mut any_active = false;
    for (index, &handle) in requests.iter().enumerate() {
        if !is_active(rt, handle)? {
            continue;
        }
        any_active = true;
        let Runtime { engine, requests: table, .. } = &mut *rt;
        let pending = table.get_mut(handle)?;
        let comm = pending.comm;
        if pending.poll(engine).map_err(|e| engine_error(comm, e))? {
            return Ok(Some(Some(index)));
        }
    }
    Ok(if any_active { Some(None) } else { None })
}

/// Blocks until one of the active requests has completed in the engine.
fn block_until_any(rt: &mut Runtime, requests: &[MPI_Request]) -> MpiResult<()> {
    let mut can_complete = false;
    for &handle in requests {
        can_complete |= is_active(rt, handle)? && !rt.requests.get_mut(handle)?.waits_forever();
    }
    if !can_complete {
        let first = requests.iter().copied().find(|&handle| handle != MPI_REQUEST_NULL).unwrap_or(MPI_REQUEST_NULL);
        return Err(never_completes(first));
    }
    let Runtime { engine, requests: table, .. } = rt;
    let table = &*table;
    engine
        .wait_until(|engine| {
            requests.iter().any(|&handle| {
                handle != MPI_REQUEST_NULL
                    && usize::try_from(handle).ok().and_then(|h| h.checked_sub(1)).and_then(|i| table.slots.get(i)).and_then(|s| s.as_ref()).is_some_and(|p| p.is_active() && p.is_complete(engine))
            })
        })
        .map_err(|e| engine_error(MPI_COMM_WORLD, e))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(count: c_int, array_of_requests: *mut MPI_Request, index: *mut c_int, status: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Waitany's arguments, passed on.
        return unsafe { crate::threaded::waitany(count, array_of_requests, index, status) };
    }
    // SAFETY: `array_of_requests` holds `count` handles.
    unsafe { grequest::abi::around("MPI_Waitany", array_of_requests, count, || any_completion("MPI_Waitany", count, array_of_requests, index, std::ptr::null_mut(), status, true)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(count: c_int, array_of_requests: *mut MPI_Request, index: *mut c_int, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    if flag.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Testany", MPI_ERR_ARG, "flag must not be NULL");
    }
    // SAFETY: `array_of_requests` holds `count` handles.
    unsafe { grequest::abi::around("MPI_Testany", array_of_requests, count, || any_completion("MPI_Testany", count, array_of_requests, index, flag, status, false)) }
}

/// MPI_Waitany (blocking) and MPI_Testany.
unsafe fn any_completion(function: &str, count: c_int, array_of_requests: *mut MPI_Request, index: *mut c_int, flag: *mut c_int, status: *mut MPI_Status, blocking: bool) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: MPI requires `count` handles.
        let requests = unsafe { request_array(count, array_of_requests)? };
        if index.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "index must not be NULL"));
        }
        loop {
            match first_complete(rt, requests)? {
                None => return Ok(Some((MPI_UNDEFINED, Completion::EMPTY, MPI_COMM_WORLD))),
                Some(Some(found)) => {
                    let (completion, handle, comm) = wait_one(rt, requests[found])?;
                    requests[found] = handle;
                    return Ok(Some((found as c_int, completion, comm)));
                }
                Some(None) if blocking => block_until_any(rt, requests)?,
                Some(None) => return Ok(None),
            }
        }
    });
    match outcome {
        Ok(None) => {
            // SAFETY: `flag` is non-null for the test form (the only one that gets here).
            unsafe {
                *flag = 0;
                *index = MPI_UNDEFINED;
            }
            MPI_SUCCESS
        }
        Ok(Some((found, completion, comm))) => {
            // SAFETY: `index` checked non-null; `flag` is non-null when given; the caller's status.
            unsafe {
                *index = found;
                if !flag.is_null() {
                    *flag = 1;
                }
                write_status(status, &completion);
            }
            completion_error(function, &completion, comm)
        }
        Err(e) => raise(e.comm, function, e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitsome(incount: c_int, array_of_requests: *mut MPI_Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    if crate::threaded::active() {
        // SAFETY: MPI_Waitsome's arguments, passed on.
        return unsafe { crate::threaded::waitsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses) };
    }
    let some = || some_completion("MPI_Waitsome", incount, array_of_requests, outcount, array_of_indices, array_of_statuses, true);
    // SAFETY: `array_of_requests` holds `incount` handles.
    unsafe { grequest::abi::around("MPI_Waitsome", array_of_requests, incount, some) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testsome(incount: c_int, array_of_requests: *mut MPI_Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    let some = || some_completion("MPI_Testsome", incount, array_of_requests, outcount, array_of_indices, array_of_statuses, false);
    // SAFETY: `array_of_requests` holds `incount` handles.
    unsafe { grequest::abi::around("MPI_Testsome", array_of_requests, incount, some) }
}

/// MPI_Waitsome (blocking) and MPI_Testsome.
unsafe fn some_completion(
    function: &str,
    incount: c_int,
    array_of_requests: *mut MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
    blocking: bool,
) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: MPI requires `incount` handles.
        let requests = unsafe { request_array(incount, array_of_requests)? };
        if outcount.is_null() || (incount > 0 && array_of_indices.is_null()) {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "outcount and array_of_indices must not be NULL"));
        }
        loop {
            if first_complete(rt, requests)?.is_none() {
                // SAFETY: checked non-null.
                unsafe { *outcount = MPI_UNDEFINED };
                return Ok(Vec::new());
            }
            let mut done = 0usize;
            let mut failures = Vec::new();
            for (index, request) in requests.iter_mut().enumerate() {
                if !is_active(rt, *request)? {
                    continue;
                }
                if let Some((completion, handle, comm)) = test_one(rt, *request)? {
                    *request = handle;
                    // SAFETY: the caller's arrays hold `incount` entries (statuses may be ignored).
                    unsafe {
                        *array_of_indices.add(done) = index as c_int;
                        write_status_of_many(array_of_statuses, done, &completion);
                    }
                    if completion.error != MPI_SUCCESS {
                        failures.push((done, completion, comm));
                    }
                    done += 1;
                }
            }
            if done > 0 || !blocking {
                // SAFETY: checked non-null.
                unsafe { *outcount = done as c_int };
                return Ok(failures);
            }
            block_until_any(rt, requests)?;
        }
    });
    match outcome {
        Ok(failures) => report_many(function, &failures),
        Err(e) => raise(e.comm, function, e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(request: *mut MPI_Request) -> c_int {
    let result = runtime::with(|rt| {
        // SAFETY: `request` is the caller's handle pointer.
        let handle = unsafe { read_handle(request, "request")? };
        if let Some(generalized) = rt.requests.get_mut(handle)?.generalized.as_mut() {
            // Its free function runs once it is both freed and complete.
            if generalized.complete {
                rt.requests.retire_released(handle);
            } else {
                generalized.released = true;
            }
            // SAFETY: checked non-null by read_handle.
            unsafe { *request = MPI_REQUEST_NULL };
            return Ok(());
        }
        if rt.requests.get_mut(handle)?.coming.is_some() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "the request of an MPI_Comm_idup cannot be freed: complete it, or its communicator is never made"));
        }
        let pending = rt.requests.remove(handle).expect("checked above");
        let comm = pending.comm;
        match (pending.engine, &pending.staging) {
            (Some(id), Staging::None) => rt.engine.release(id),
            (Some(_), _) | (None, Staging::Exchange(_)) => rt.requests.detach(&mut rt.engine, pending).map_err(|e| engine_error(comm, e))?,
            (None, _) => {}
        }
        // SAFETY: checked non-null by read_handle.
        unsafe { *request = MPI_REQUEST_NULL };
        Ok(())
    });
    grequest::abi::run_frees("MPI_Request_free", finish("MPI_Request_free", result))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cancel(request: *mut MPI_Request) -> c_int {
    let outcome = runtime::with(|rt| {
        // SAFETY: `request` is the caller's handle pointer.
        let handle = unsafe { read_handle(request, "request")? };
        let pending = rt.requests.get_mut(handle)?;
        if let Some(generalized) = &pending.generalized {
            return Ok(Some(generalized.cancellation()));
        }
        // The engine cancels what has not matched (a send may take the receiver's answer, which
        // a later progress step brings); the request then completes, cancelled or not.
        pending.cancel(&mut rt.engine);
        Ok(None)
    });
    match outcome {
        Ok(None) => MPI_SUCCESS,
        Ok(Some(cancellation)) => match cancellation.call() {
            MPI_SUCCESS => MPI_SUCCESS,
            failed => raise(MPI_COMM_WORLD, "MPI_Cancel", failed, "the cancel function of the generalized request failed"),
        },
        Err(e) => raise(e.comm, "MPI_Cancel", e.class, &e.detail),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test_cancelled(status: *const MPI_Status, flag: *mut c_int) -> c_int {
    if !is_real_status(status) {
        return raise(MPI_COMM_WORLD, "MPI_Test_cancelled", MPI_ERR_ARG, "status must be a real status");
    }
    // SAFETY: a real status pointer from the caller; `flag` is checked by store.
    let result = unsafe { store(flag, c_int::from(status_cancelled(&*status)), "flag") };
    finish("MPI_Test_cancelled", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status(request: MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: one handle, on the stack.
    unsafe { grequest::abi::around("MPI_Request_get_status", &request, 1, || request_status(request, flag, status)) }
}

/// MPI_Request_get_status.
///
/// # Safety
/// MPI_Request_get_status's arguments.
unsafe fn request_status(request: MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let outcome = runtime::with(|rt| {
        if flag.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "flag must not be NULL"));
        }
        if !is_active(rt, request)? {
            return Ok(Some(Completion::EMPTY));
        }
        let Runtime { engine, requests, .. } = rt;
        let pending = requests.get_mut(request)?;
        let comm = pending.comm;
        if pending.poll(engine).map_err(|e| engine_error(comm, e))? {
            Ok(pending.done)
        } else {
            Ok(None)
        }
    });
    match outcome {
        Ok(completion) => {
            // SAFETY: `flag` checked non-null; the caller's status.
            unsafe {
                *flag = c_int::from(completion.is_some());
                if let Some(completion) = completion {
                    write_status(status, &completion);
                }
            }
            MPI_SUCCESS
        }
        Err(e) => raise(e.comm, "MPI_Request_get_status", e.class, &e.detail),
    }
}
