//! The MPI_T entry points as a C tool calls them, before MPI_Init (no traffic yet; settings from
//! the environment). One test: MPI_T's state is process-wide.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr::null_mut;

use braid_config::Config;

use super::categories::*;
use super::cvars::*;
use super::enums::*;
use super::pvars::*;
use super::sessions::*;
use super::*;

fn text(buffer: &[c_char]) -> String {
    // SAFETY: the buffers below are NUL-terminated by the calls that filled them.
    unsafe { CStr::from_ptr(buffer.as_ptr()) }.to_str().unwrap().to_string()
}

#[test]
fn a_tool_initialises_enumerates_reads_and_finalises() {
    // SAFETY: the scenario passes pointers to live locals and buffers with their true sizes.
    unsafe { tool_scenario() }
}

/// What a tool does, call by call.
///
/// # Safety
/// None needed by the caller: every pointer passed is to a live local of the right size.
unsafe fn tool_scenario() {
    let mut count: c_int = -1;
    assert_eq!(MPI_T_cvar_get_num(&mut count), MPI_T_ERR_NOT_INITIALIZED);
    assert_eq!(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
    let mut provided: c_int = -1;
    assert_eq!(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &mut provided), MPI_SUCCESS);
    assert_eq!(provided, MPI_THREAD_SERIALIZED);
    assert_eq!(MPI_T_init_thread(7, &mut provided), MPI_T_ERR_INVALID);

    // Control variables: the settings the environment gives before MPI_Init.
    assert_eq!(MPI_T_cvar_get_num(&mut count), MPI_SUCCESS);
    assert_eq!(count as usize, CVARS.len());
    let mut name = [0 as c_char; 64];
    let mut name_len = name.len() as c_int;
    let (mut datatype, mut enumtype, mut scope) = (0, MPI_T_ENUM_NULL, 0);
    let null = null_mut();
    assert_eq!(MPI_T_cvar_get_info(0, name.as_mut_ptr(), &mut name_len, null, &mut datatype, &mut enumtype, null_mut(), null, null, &mut scope), MPI_SUCCESS);
    assert_eq!((text(&name).as_str(), name_len, datatype, scope), ("BRAID_WAIT", 11, MPI_INT, MPI_T_SCOPE_READONLY));
    let (mut items, mut item_value) = (0, -1);
    name_len = name.len() as c_int;
    assert_eq!(MPI_T_enum_get_info(enumtype, &mut items, name.as_mut_ptr(), &mut name_len), MPI_SUCCESS);
    assert_eq!((items, text(&name).as_str()), (3, "braid_wait_mode"));
    name_len = name.len() as c_int;
    assert_eq!(MPI_T_enum_get_item(enumtype, 2, &mut item_value, name.as_mut_ptr(), &mut name_len), MPI_SUCCESS);
    assert_eq!((item_value, text(&name).as_str()), (2, "block"));
    assert_eq!(MPI_T_enum_get_item(enumtype, 3, &mut item_value, null_mut(), null), MPI_T_ERR_INVALID_ITEM);
    assert_eq!(MPI_T_cvar_get_info(count, null_mut(), null, null, null_mut(), null_mut(), null_mut(), null, null, null), MPI_T_ERR_INVALID_INDEX);

    let mut index: c_int = -1;
    assert_eq!(MPI_T_cvar_get_index(c"BRAID_EAGER_MAX".as_ptr(), &mut index), MPI_SUCCESS);
    assert_eq!(MPI_T_cvar_get_index(c"BRAID_NOTHING".as_ptr(), &mut index), MPI_T_ERR_INVALID_NAME);
    assert_eq!(MPI_T_cvar_get_index(c"BRAID_EAGER_MAX".as_ptr(), &mut index), MPI_SUCCESS);
    let mut handle: MPI_T_cvar_handle = null_mut();
    assert_eq!(MPI_T_cvar_handle_alloc(index, null_mut(), &mut handle, &mut count), MPI_SUCCESS);
    let mut eager_max: u64 = 0;
    assert_eq!(MPI_T_cvar_read(handle, (&mut eager_max as *mut u64).cast()), MPI_SUCCESS);
    assert_eq!((count, eager_max), (1, Config::from_env().unwrap().eager_max as u64));
    assert_eq!(MPI_T_cvar_write(handle, (&eager_max as *const u64).cast()), MPI_T_ERR_CVAR_SET_NEVER);
    let stale = handle;
    assert_eq!(MPI_T_cvar_handle_free(&mut handle), MPI_SUCCESS);
    assert!(handle.is_null());
    assert_eq!(MPI_T_cvar_read(stale, (&mut eager_max as *mut u64).cast()), MPI_T_ERR_INVALID_HANDLE);
    assert_eq!(MPI_T_cvar_get_index(c"BRAID_COLL_BCAST_SPLIT_MIN".as_ptr(), &mut index), MPI_SUCCESS);
    assert_eq!(MPI_T_cvar_handle_alloc(index, null_mut(), &mut handle, &mut count), MPI_SUCCESS);
    assert_eq!(MPI_T_cvar_write(handle, (&eager_max as *const u64).cast()), MPI_T_ERR_CVAR_SET_NOT_NOW, "no process runs to take it");

    // Performance variables: per-peer arrays are empty before MPI_Init; scalars count from 0.
    let mut session: MPI_T_pvar_session = null_mut();
    assert_eq!(MPI_T_pvar_session_create(&mut session), MPI_SUCCESS);
    let pvar = |name: &CStr, class: c_int| {
        let mut index = -1;
        assert_eq!(MPI_T_pvar_get_index(name.as_ptr(), class, &mut index), MPI_SUCCESS, "{name:?}");
        let (mut handle, mut count): (MPI_T_pvar_handle, c_int) = (null_mut(), -1);
        assert_eq!(MPI_T_pvar_handle_alloc(session, index, null_mut(), &mut handle, &mut count), MPI_SUCCESS);
        (handle, count)
    };
    let (_, peers) = pvar(c"braid_messages_sent", MPI_T_PVAR_CLASS_COUNTER);
    let (sends, one) = pvar(c"braid_eager_sends", MPI_T_PVAR_CLASS_COUNTER);
    let (level, _) = pvar(c"braid_unexpected_queue_length", MPI_T_PVAR_CLASS_LEVEL);
    let (names, name_count) = pvar(c"braid_transport_names", MPI_T_PVAR_CLASS_GENERIC);
    let (blocked, _) = pvar(c"braid_wait_blocked_time", MPI_T_PVAR_CLASS_TIMER);
    assert_eq!((peers, one, name_count), (0, 1, 1));
    let mut value: u64 = 99;
    let value_ptr = (&mut value as *mut u64).cast::<c_void>();
    assert_eq!(MPI_T_pvar_read(session, sends, value_ptr), MPI_SUCCESS);
    assert_eq!(value, 0);
    assert_eq!(MPI_T_pvar_start(session, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS, "continuous variables are passed over");
    assert_eq!(MPI_T_pvar_start(session, level), MPI_T_ERR_PVAR_NO_STARTSTOP);
    value = 5;
    assert_eq!(MPI_T_pvar_write(session, sends, value_ptr), MPI_SUCCESS);
    assert_eq!(MPI_T_pvar_readreset(session, sends, value_ptr), MPI_SUCCESS);
    assert_eq!(value, 5);
    assert_eq!(MPI_T_pvar_read(session, sends, value_ptr), MPI_SUCCESS);
    assert_eq!(value, 0);
    assert_eq!(MPI_T_pvar_write(session, level, value_ptr), MPI_T_ERR_PVAR_NO_WRITE);
    assert_eq!(MPI_T_pvar_read(session, MPI_T_PVAR_ALL_HANDLES, value_ptr), MPI_T_ERR_INVALID_HANDLE);
    assert_eq!(MPI_T_pvar_reset(session, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS, "read-only variables are passed over");
    let seconds = [1.5f64];
    assert_eq!(MPI_T_pvar_write(session, blocked, seconds.as_ptr().cast()), MPI_SUCCESS);
    let mut read_back = [0f64];
    assert_eq!(MPI_T_pvar_read(session, blocked, read_back.as_mut_ptr().cast()), MPI_SUCCESS);
    assert_eq!(read_back, [1.5]);
    let mut empty = [0x55 as c_char; 1];
    assert_eq!(MPI_T_pvar_read(session, names, empty.as_mut_ptr().cast()), MPI_SUCCESS);
    assert_eq!(empty, [0], "no transports before MPI_Init");

    let mut other: MPI_T_pvar_session = null_mut();
    assert_eq!(MPI_T_pvar_session_create(&mut other), MPI_SUCCESS);
    assert_eq!(MPI_T_pvar_read(other, sends, value_ptr), MPI_T_ERR_INVALID_HANDLE);
    assert_eq!(MPI_T_pvar_session_free(&mut other), MPI_SUCCESS);
    assert_eq!(MPI_T_pvar_session_free(&mut other), MPI_T_ERR_INVALID_SESSION);
    assert_eq!(MPI_T_pvar_get_info(PVARS.len() as c_int, null_mut(), null, null, null, null_mut(), null_mut(), null_mut(), null, null, null, null, null), MPI_T_ERR_INVALID_INDEX);

    // Categories.
    assert_eq!(MPI_T_category_get_num(&mut count), MPI_SUCCESS);
    assert_eq!(count as usize, CATEGORIES.len());
    let (mut cvars, mut pvars, mut subcategories) = (-1, -1, -1);
    assert_eq!(MPI_T_category_get_info(0, null_mut(), null, null_mut(), null, &mut cvars, &mut pvars, &mut subcategories), MPI_SUCCESS);
    assert_eq!((cvars, pvars), (0, 0));
    let mut children = vec![-1; subcategories as usize];
    assert_eq!(MPI_T_category_get_categories(0, subcategories, children.as_mut_ptr()), MPI_SUCCESS);
    assert_eq!(children, (1..CATEGORIES.len() as c_int).collect::<Vec<_>>());
    assert_eq!(MPI_T_category_get_index(c"braid_waiting".as_ptr(), &mut index), MPI_SUCCESS);
    assert_eq!(MPI_T_category_get_info(index, null_mut(), null, null_mut(), null, &mut cvars, &mut pvars, null), MPI_SUCCESS);
    let mut waiting = vec![-1; cvars as usize];
    assert_eq!(MPI_T_category_get_cvars(index, cvars, waiting.as_mut_ptr()), MPI_SUCCESS);
    assert_eq!(waiting, [0, 1, 2, 3, 4, 5, 6], "BRAID_WAIT and its companions");
    let (mut stamp, mut again) = (-1, -2);
    assert_eq!(MPI_T_category_changed(&mut stamp), MPI_SUCCESS);
    assert_eq!(MPI_T_category_changed(&mut again), MPI_SUCCESS);
    assert_eq!(stamp, again);

    // The last MPI_T_finalize frees every handle and session.
    assert_eq!(MPI_T_init_thread(MPI_THREAD_SINGLE, &mut provided), MPI_SUCCESS);
    assert_eq!(MPI_T_finalize(), MPI_SUCCESS);
    assert_eq!(MPI_T_pvar_read(session, sends, value_ptr), MPI_SUCCESS, "still initialised once");
    assert_eq!(MPI_T_finalize(), MPI_SUCCESS);
    assert_eq!(MPI_T_pvar_read(session, sends, value_ptr), MPI_T_ERR_NOT_INITIALIZED);
    assert_eq!(MPI_T_init_thread(MPI_THREAD_SINGLE, &mut provided), MPI_SUCCESS);
    assert_eq!(MPI_T_pvar_read(session, sends, value_ptr), MPI_T_ERR_INVALID_SESSION);
    assert_eq!(MPI_T_cvar_read(handle, value_ptr), MPI_T_ERR_INVALID_HANDLE);
    assert_eq!(MPI_T_finalize(), MPI_SUCCESS);
}
