//! The MPI_Session_* calls, MPI_Group_from_session_pset, and the communicators made from groups
//! without a parent: MPI_Comm_create_from_group and MPI_Intercomm_create_from_groups.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int};

use super::{ProcessSet, Session, PSET_NAMES};
use crate::comm::construct::create_group_of;
use crate::comm::intercomm::intercomm_create;
use crate::consts::*;
use crate::error::codes::class_text;
use crate::error::handlers::Kind;
use crate::error::report::{apply, describe, Target};
use crate::error::{error, write_c_string, MpiResult};
use crate::group::store;
use crate::info::abi::c_text;
use crate::runtime::{self, Runtime};

/// Reports a failed session call on the session's handler (MPI_COMM_WORLD's for an invalid one).
pub(crate) fn finish_on_session(function: &str, session: MPI_Session, result: MpiResult<()>) -> c_int {
    match result {
        Ok(()) => MPI_SUCCESS,
        Err(e) => apply(Target::Session(session), e.class, || format!("Braid: {function}: {}: {}", class_text(e.class), e.detail)),
    }
}

/// Reports a failed call on the handler it was given (it has no object yet).
fn finish_on_handler(function: &str, errhandler: MPI_Errhandler, result: MpiResult<()>) -> c_int {
    match result {
        Ok(()) => MPI_SUCCESS,
        Err(e) => apply(Target::Handler(errhandler), e.class, || format!("Braid: {function}: {}: {}", class_text(e.class), e.detail)),
    }
}

const THREAD_LEVELS: [(&str, c_int); 4] =
    [("MPI_THREAD_SINGLE", MPI_THREAD_SINGLE), ("MPI_THREAD_FUNNELED", MPI_THREAD_FUNNELED), ("MPI_THREAD_SERIALIZED", MPI_THREAD_SERIALIZED), ("MPI_THREAD_MULTIPLE", MPI_THREAD_MULTIPLE)];

/// The thread level an info's `thread_level` names (MPI_THREAD_SINGLE without one).
fn thread_level_of(hints: &[(String, String)]) -> MpiResult<c_int> {
    let Some((_, value)) = hints.iter().find(|(key, _)| key == "thread_level") else { return Ok(MPI_THREAD_SINGLE) };
    THREAD_LEVELS.iter().find(|(name, _)| name.eq_ignore_ascii_case(value.trim())).map(|&(_, level)| level).ok_or_else(|| {
        let names: Vec<&str> = THREAD_LEVELS.iter().map(|(name, _)| *name).collect();
        error(MPI_COMM_SELF, MPI_ERR_INFO_VALUE, format!("thread_level {value:?} is not one of {}", names.join(", ")))
    })
}

fn thread_level_name(level: c_int) -> &'static str {
    THREAD_LEVELS.iter().find(|(_, l)| *l == level).map_or("MPI_THREAD_SINGLE", |(name, _)| name)
}

/// Checks that `errhandler` can be attached to an object of `kind`.
fn check_errhandler(rt: &Runtime, errhandler: MPI_Errhandler, kind: Kind) -> MpiResult<()> {
    rt.errhandlers.check_attachable(errhandler, kind, crate::error::handlers::abi::is_attached(rt, errhandler)).map_err(|detail| error(MPI_COMM_SELF, MPI_ERR_ARG, detail))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_init(info: MPI_Info, errhandler: MPI_Errhandler, session: *mut MPI_Session) -> c_int {
    let result = (|| {
        if session.is_null() {
            return Err(error(MPI_COMM_SELF, MPI_ERR_ARG, "session must not be NULL"));
        }
        let hints = crate::info::entries(info)?;
        let required = thread_level_of(&hints)?;
        let provided = runtime::open_session(required)?;
        let opened = runtime::with(|rt| {
            check_errhandler(rt, errhandler, Kind::Session)?;
            Ok(rt.sessions.insert(Session { errhandler, thread_level: provided, hints }))
        });
        let handle = match opened {
            Ok(handle) => handle,
            Err(failure) => {
                if let Ok(Some(runtime)) = runtime::close_session() {
                    crate::runtime::abi::shut_down("MPI_Session_init", runtime);
                }
                return Err(failure);
            }
        };
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *session = handle };
        Ok(())
    })();
    finish_on_handler("MPI_Session_init", errhandler, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_finalize(session: *mut MPI_Session) -> c_int {
    // SAFETY: checked non-null; the caller's handle.
    let handle = if session.is_null() { MPI_SESSION_NULL } else { unsafe { *session } };
    let result = runtime::with(|rt| {
        if session.is_null() {
            return Err(error(MPI_COMM_SELF, MPI_ERR_ARG, "session must not be NULL"));
        }
        rt.sessions.get(handle)?;
        Ok(())
    });
    if let Err(e) = result {
        return finish_on_session("MPI_Session_finalize", handle, Err(e));
    }
    let closed = runtime::with(|rt| {
        // Its buffer's messages leave, and the buffer is detached, before the handle can be reused.
        rt.bsend.release(crate::bsend::Scope::Session(handle), &mut rt.engine).map_err(|e| crate::error::engine_error(MPI_COMM_SELF, e))?;
        rt.sessions.remove(handle).map(drop)
    });
    // SAFETY: checked non-null above; the caller's handle.
    unsafe { *session = MPI_SESSION_NULL };
    if let Err(e) = closed {
        return finish_on_session("MPI_Session_finalize", handle, Err(e));
    }
    match runtime::close_session() {
        Ok(Some(runtime)) => crate::runtime::abi::shut_down("MPI_Session_finalize", runtime),
        Ok(None) => MPI_SUCCESS,
        Err(e) => finish_on_session("MPI_Session_finalize", MPI_SESSION_NULL, Err(e)),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_num_psets(session: MPI_Session, info: MPI_Info, npset_names: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        rt.sessions.get(session)?;
        crate::info::entries(info)?;
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(npset_names, PSET_NAMES.len() as c_int, "npset_names") }
    });
    finish_on_session("MPI_Session_get_num_psets", session, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_nth_pset(session: MPI_Session, info: MPI_Info, n: c_int, pset_len: *mut c_int, pset_name: *mut c_char) -> c_int {
    let result = runtime::with(|rt| {
        rt.sessions.get(session)?;
        crate::info::entries(info)?;
        let name = usize::try_from(n).ok().and_then(|n| PSET_NAMES.get(n)).ok_or_else(|| error(MPI_COMM_SELF, MPI_ERR_ARG, format!("n {n} is not in 0..{}", PSET_NAMES.len())))?;
        if pset_len.is_null() {
            return Err(error(MPI_COMM_SELF, MPI_ERR_ARG, "pset_len must not be NULL"));
        }
        // SAFETY: checked non-null; the caller's length, in and out.
        let capacity = unsafe { *pset_len };
        // A length of 0 asks for the length alone (with the terminating NUL, as MPI counts it).
        if capacity > 0 {
            // SAFETY: MPI's rule: `pset_name` holds `pset_len` characters.
            unsafe { write_c_string(name, pset_name, capacity as usize) };
        }
        // SAFETY: as above.
        unsafe { *pset_len = name.len() as c_int + 1 };
        Ok(())
    });
    finish_on_session("MPI_Session_get_nth_pset", session, result)
}

/// The process set named `name`, checked.
///
/// # Safety
/// `name` must be NULL or NUL-terminated.
unsafe fn process_set(name: *const c_char) -> MpiResult<ProcessSet> {
    // SAFETY: per the caller.
    let name = unsafe { c_text(name, "pset_name")? };
    ProcessSet::named(&name).ok_or_else(|| error(MPI_COMM_SELF, MPI_ERR_ARG, format!("{name:?} is not a process set: they are {}", PSET_NAMES.join(", "))))
}

/// The job ranks of `set` for the calling process.
fn members_of(rt: &Runtime, set: ProcessSet) -> Vec<u32> {
    set.members(rt.engine.rank(), rt.engine.size(), rt.engine.node_ranks())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_pset_info(session: MPI_Session, pset_name: *const c_char, info: *mut MPI_Info) -> c_int {
    let result = runtime::with(|rt| {
        rt.sessions.get(session)?;
        // SAFETY: MPI requires a NUL-terminated name.
        let set = unsafe { process_set(pset_name)? };
        let size = members_of(rt, set).len();
        let handle = crate::info::create(vec![("mpi_size".to_string(), size.to_string())])?;
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(info, handle, "info") }
    });
    finish_on_session("MPI_Session_get_pset_info", session, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_info(session: MPI_Session, info_used: *mut MPI_Info) -> c_int {
    let result = runtime::with(|rt| {
        let open = rt.sessions.get(session)?;
        let mut entries: Vec<(String, String)> = open.hints.iter().filter(|(key, _)| key != "thread_level").cloned().collect();
        entries.insert(0, ("thread_level".to_string(), thread_level_name(open.thread_level).to_string()));
        let handle = crate::info::create(entries)?;
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(info_used, handle, "info_used") }
    });
    finish_on_session("MPI_Session_get_info", session, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_from_session_pset(session: MPI_Session, pset_name: *const c_char, newgroup: *mut MPI_Group) -> c_int {
    let result = runtime::with(|rt| {
        rt.sessions.get(session)?;
        // SAFETY: MPI requires a NUL-terminated name.
        let set = unsafe { process_set(pset_name)? };
        let members = members_of(rt, set);
        let handle = rt.groups.insert_from_session(members.into(), session);
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(newgroup, handle, "newgroup") }
    });
    finish_on_session("MPI_Group_from_session_pset", session, result)
}

/// The tag under which the members of a group agree on a communicator made with `stringtag`: a
/// hash of it (FNV-1a), so that every member derives the same one.
fn agreement_tag_of(stringtag: &str) -> c_int {
    let hash = stringtag.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3));
    ((hash ^ (hash >> 32)) as u32 & 0x7FFF_FFFF) as c_int
}

/// Checks a string tag (at most MPI_MAX_STRINGTAG_LEN characters).
///
/// # Safety
/// `stringtag` must be NULL or NUL-terminated.
unsafe fn string_tag(stringtag: *const c_char) -> MpiResult<String> {
    // SAFETY: per the caller.
    let tag = unsafe { c_text(stringtag, "stringtag")? }.into_owned();
    if tag.len() > MPI_MAX_STRINGTAG_LEN as usize {
        return Err(error(MPI_COMM_SELF, MPI_ERR_ARG, format!("stringtag is longer than MPI_MAX_STRINGTAG_LEN ({MPI_MAX_STRINGTAG_LEN})")));
    }
    Ok(tag)
}

/// Gives the communicator `made` the handler `errhandler`, and the session `group` comes from
/// (whose buffer its buffered sends may use).
fn attach(made: MPI_Comm, errhandler: MPI_Errhandler, group: MPI_Group) -> MpiResult<()> {
    runtime::with(|rt| {
        let session = rt.groups.session_of(group);
        let comm = rt.comms.get_mut(made)?;
        comm.errhandler = errhandler;
        comm.session = session;
        Ok(())
    })
}

/// Checks the handler and info of a communicator made from groups.
fn check_creation(errhandler: MPI_Errhandler, info: MPI_Info) -> MpiResult<()> {
    runtime::with(|rt| check_errhandler(rt, errhandler, Kind::Comm))?;
    crate::info::entries(info).map(drop)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_from_group(group: MPI_Group, stringtag: *const c_char, info: MPI_Info, errhandler: MPI_Errhandler, newcomm: *mut MPI_Comm) -> c_int {
    let result = (|| {
        if newcomm.is_null() {
            return Err(error(MPI_COMM_SELF, MPI_ERR_ARG, "newcomm must not be NULL"));
        }
        // SAFETY: MPI requires a NUL-terminated tag.
        let tag = unsafe { string_tag(stringtag)? };
        check_creation(errhandler, info)?;
        let members = runtime::with(|rt| Ok(rt.groups.get(group)?.to_vec()))?;
        let me = runtime::with(|rt| Ok(rt.comms.job_rank()))?;
        if !members.contains(&me) {
            return Err(error(MPI_COMM_SELF, MPI_ERR_GROUP, "the calling process is not in the group"));
        }
        let made = create_group_of(members, agreement_tag_of(&tag))?;
        attach(made, errhandler, group)?;
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *newcomm = made };
        Ok(())
    })();
    finish_on_handler("MPI_Comm_create_from_group", errhandler, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_create_from_groups(
    local_group: MPI_Group,
    local_leader: c_int,
    remote_group: MPI_Group,
    remote_leader: c_int,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    newintercomm: *mut MPI_Comm,
) -> c_int {
    let result = (|| {
        if newintercomm.is_null() {
            return Err(error(MPI_COMM_SELF, MPI_ERR_ARG, "newintercomm must not be NULL"));
        }
        // SAFETY: MPI requires a NUL-terminated tag.
        let tag = unsafe { string_tag(stringtag)? };
        check_creation(errhandler, info)?;
        let (local, remote, me) = runtime::with(|rt| Ok((rt.groups.get(local_group)?.to_vec(), rt.groups.get(remote_group)?.to_vec(), rt.comms.job_rank())))?;
        if !local.contains(&me) {
            return Err(error(MPI_COMM_SELF, MPI_ERR_GROUP, "the calling process is not in local_group"));
        }
        let Some(&remote_job_rank) = usize::try_from(remote_leader).ok().and_then(|r| remote.get(r)) else {
            return Err(error(MPI_COMM_SELF, MPI_ERR_RANK, format!("remote_leader {remote_leader} is not a rank of remote_group (size {})", remote.len())));
        };
        let tag = agreement_tag_of(&tag);
        let local_comm = create_group_of(local, tag)?;
        // The leaders meet on MPI_COMM_WORLD, whose ranks are job ranks.
        let made = intercomm_create(local_comm, local_leader, MPI_COMM_WORLD, remote_job_rank as c_int, tag);
        crate::comm::abi::free(local_comm)?;
        let made = made?;
        attach(made, errhandler, local_group)?;
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *newintercomm = made };
        Ok(())
    })();
    finish_on_handler("MPI_Intercomm_create_from_groups", errhandler, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_create_errhandler(session_errhandler_fn: Option<MPI_Session_errhandler_function>, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: MPI requires a pointer to an MPI_Errhandler.
    unsafe { crate::error::handlers::abi::create("MPI_Session_create_errhandler", Kind::Session, session_errhandler_fn, errhandler) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_set_errhandler(session: MPI_Session, errhandler: MPI_Errhandler) -> c_int {
    let result = runtime::with(|rt| {
        rt.sessions.get(session)?;
        check_errhandler(rt, errhandler, Kind::Session)?;
        rt.sessions.get_mut(session)?.errhandler = errhandler;
        Ok(())
    });
    finish_on_session("MPI_Session_set_errhandler", session, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_errhandler(session: MPI_Session, errhandler: *mut MPI_Errhandler) -> c_int {
    let result = runtime::with(|rt| {
        let handler = rt.sessions.get(session)?.errhandler;
        rt.errhandlers.add_reference(handler);
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(errhandler, handler, "errhandler") }
    });
    finish_on_session("MPI_Session_get_errhandler", session, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_call_errhandler(session: MPI_Session, errorcode: c_int) -> c_int {
    if let Err(e) = runtime::with(|rt| rt.sessions.get(session).map(drop)) {
        return finish_on_session("MPI_Session_call_errhandler", session, Err(e));
    }
    apply(Target::Session(session), errorcode, || format!("Braid: MPI_Session_call_errhandler: {}", describe(errorcode)));
    MPI_SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_levels_are_read_by_name() {
        let hints = |value: &str| vec![("thread_level".to_string(), value.to_string())];
        assert_eq!(thread_level_of(&[]).unwrap(), MPI_THREAD_SINGLE);
        assert_eq!(thread_level_of(&hints("MPI_THREAD_MULTIPLE")).unwrap(), MPI_THREAD_MULTIPLE);
        assert_eq!(thread_level_of(&hints("mpi_thread_funneled")).unwrap(), MPI_THREAD_FUNNELED);
        let bad = thread_level_of(&hints("lots")).unwrap_err();
        assert!(bad.class == MPI_ERR_INFO_VALUE && bad.detail.contains("MPI_THREAD_SERIALIZED"));
        assert_eq!(thread_level_name(MPI_THREAD_SERIALIZED), "MPI_THREAD_SERIALIZED");
    }

    #[test]
    fn string_tags_hash_to_valid_tags() {
        for tag in ["", "a", "org.example.solver", &"x".repeat(256)] {
            assert!(agreement_tag_of(tag) >= 0);
        }
        assert_eq!(agreement_tag_of("org.example.solver"), agreement_tag_of("org.example.solver"));
        assert_ne!(agreement_tag_of("org.example.solver"), agreement_tag_of("org.example.solves"));
    }
}
