//! The communicator calls that query or free one: MPI_Comm_size, _rank, _compare, _free, _group,
//! _test_inter, _set/_get_name, _set/_get_info.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, CStr};

use super::{compare, merge_hints, Hints};
use crate::attr::{self, Object};
use crate::consts::*;
use crate::error::{error, finish, MpiResult};
use crate::group::store;
use crate::runtime;

/// Frees a communicator: deletes its attributes (their callbacks may still use it), then the
/// handle. A failing delete callback leaves the communicator in place.
pub(crate) fn free(comm: MPI_Comm) -> MpiResult<()> {
    runtime::with(|rt| rt.comms.check_freeable(comm))?;
    attr::access::delete_all(Object::Comm(comm))?;
    // Its buffer's messages leave, and the buffer is detached, before the handle can be reused.
    runtime::with(|rt| rt.bsend.release(crate::bsend::Scope::Comm(comm), &mut rt.engine).map_err(|e| crate::error::engine_error(comm, e)))?;
    runtime::with(|rt| rt.comms.remove(comm).map(drop))?;
    crate::dynamic::forget_parent(comm);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        let value = rt.comms.get(comm)?.shared.size() as c_int;
        // SAFETY: `size` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(size, value, "size") }
    });
    finish("MPI_Comm_size", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        let value = rt.comms.get(comm)?.shared.rank as c_int;
        // SAFETY: `rank` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(rank, value, "rank") }
    });
    finish("MPI_Comm_rank", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_compare(comm1: MPI_Comm, comm2: MPI_Comm, result: *mut c_int) -> c_int {
    let outcome = runtime::with(|rt| {
        let first = rt.comms.get(comm1)?;
        let second = rt.comms.get(comm2)?;
        let value = if comm1 == comm2 { MPI_IDENT } else { compare(&first.shared, &second.shared) };
        // SAFETY: `result` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(result, value, "result") }
    });
    finish("MPI_Comm_compare", outcome)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        if comm.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "comm must not be NULL"));
        }
        // SAFETY: non-null; points to the caller's handle.
        free(unsafe { *comm })?;
        // SAFETY: as above.
        unsafe { *comm = MPI_COMM_NULL };
        Ok(())
    })();
    finish("MPI_Comm_free", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_group(comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    let result = runtime::with(|rt| {
        let entry = rt.comms.get(comm)?;
        let (members, session) = (entry.shared.members.clone(), entry.session);
        // A communicator made from a session's group gives groups of that session.
        let handle = match session {
            Some(session) => rt.groups.insert_from_session(members, session),
            None => rt.groups.insert(members),
        };
        // SAFETY: `group` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(group, handle, "group") }
    });
    finish("MPI_Comm_group", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_test_inter(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        let inter = rt.comms.get(comm)?.shared.is_inter();
        // SAFETY: `flag` is the caller's out-pointer (NULL is rejected by store).
        unsafe { store(flag, c_int::from(inter), "flag") }
    });
    finish("MPI_Comm_test_inter", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_name(comm: MPI_Comm, comm_name: *const c_char) -> c_int {
    let result = runtime::with(|rt| {
        let entry = rt.comms.get_mut(comm)?;
        if comm_name.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "comm_name must not be NULL"));
        }
        // SAFETY: non-null; MPI requires a NUL-terminated string.
        let name = unsafe { CStr::from_ptr(comm_name) }.to_string_lossy();
        let mut end = name.len().min(MPI_MAX_OBJECT_NAME as usize - 1);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        entry.name = name[..end].to_string();
        Ok(())
    });
    finish("MPI_Comm_set_name", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_name(comm: MPI_Comm, comm_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        // MPI 4.1: the null handle is named after itself.
        let name = if comm == MPI_COMM_NULL { "MPI_COMM_NULL".to_string() } else { rt.comms.get(comm)?.name.clone() };
        if comm_name.is_null() || resultlen.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "comm_name and resultlen must not be NULL"));
        }
        // SAFETY: MPI requires `comm_name` to hold MPI_MAX_OBJECT_NAME characters; both non-null.
        unsafe { *resultlen = crate::error::write_c_string(&name, comm_name, MPI_MAX_OBJECT_NAME as usize) };
        Ok(())
    });
    finish("MPI_Comm_get_name", result)
}

/// The hints of info object `info` (none for MPI_INFO_NULL), errors reported on `comm`.
pub(crate) fn hints_of(comm: MPI_Comm, info: MPI_Info) -> MpiResult<Hints> {
    crate::info::entries(info).map_err(|e| error(comm, e.class, e.detail))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_info(comm: MPI_Comm, info: MPI_Info) -> c_int {
    let result = runtime::with(|rt| {
        rt.comms.get(comm)?;
        let update = hints_of(comm, info)?;
        let entry = rt.comms.get_mut(comm)?;
        entry.hints = merge_hints(std::mem::take(&mut entry.hints), update);
        Ok(())
    });
    finish("MPI_Comm_set_info", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_info(comm: MPI_Comm, info_used: *mut MPI_Info) -> c_int {
    let result = runtime::with(|rt| {
        let hints = rt.comms.get(comm)?.hints.clone();
        if info_used.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "info_used must not be NULL"));
        }
        let handle = crate::info::create(hints)?;
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *info_used = handle };
        Ok(())
    });
    finish("MPI_Comm_get_info", result)
}
