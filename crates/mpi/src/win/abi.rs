//! The MPI_Win_* entry points and the RMA operations (the synchronisation calls are in
//! `synchronisation`). Creation reports on its communicator; every other call on its window's
//! error handler. The collective steps (duplicating the communicator,
//! exchanging sizes, barriers) go through the MPI calls themselves, with the state released.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::rc::Rc;

use braid_engine::Engine;
use braid_sys::shm::SharedMapping;

use super::agent::WinAgent;
use super::assist::CopyHelper;
use super::atomics;
use super::lockword;
use super::ops::{self, Action, Memory};
use super::single_copy;
use super::state::{header_len, Members, Operand, Path, ResultBuffer, Segment, WinState};
use super::table::{AttributeValues, Window};
use super::wire::{Header, RequestKind};
use crate::coll::algorithms::shared_file::make_shared;
use crate::coll::drive::Outcome;
use crate::comm::channel::Agreement;
use crate::consts::*;
use crate::datatype::{self, Uniform};
use crate::error::report::{apply, Target};
use crate::error::{class_text, error, MpiError, MpiResult};
use crate::group::store;
use crate::large_count::Count;
use crate::request::{Completion, Pending};
use crate::runtime::{self, engine_error, Runtime};

mod large;
mod operations;
pub mod shared_create;
pub mod synchronisation;

use synchronisation::{wait_until_state, with_state};

/// Reports a window call's failure on the window's error handler.
#[inline]
fn finish_on(function: &str, win: MPI_Win, result: MpiResult<()>) -> c_int {
    match result {
        Ok(()) => MPI_SUCCESS,
        Err(e) => report_on(function, win, e),
    }
}

#[cold]
#[inline(never)]
fn report_on(function: &str, win: MPI_Win, e: MpiError) -> c_int {
    if e.comm != MPI_COMM_WORLD {
        return crate::error::raise(e.comm, function, e.class, &e.detail);
    }
    apply(Target::Win(win), e.class, || format!("Braid: {function}: {}: {}", class_text(e.class), e.detail))
}

fn win_error(class: c_int, detail: impl Into<String>) -> MpiError {
    error(MPI_COMM_WORLD, class, detail)
}

fn sync_error(detail: String) -> MpiError {
    win_error(MPI_ERR_RMA_SYNC, detail)
}

/// Whether the info hint `key` is set to "true".
fn hint_is_true(hints: &[(String, String)], key: &str) -> bool {
    hints.iter().any(|(k, value)| k == key && value == "true")
}

/// Whether every member of `dup` says `mine` (an allreduce; `what` names the step in an error).
fn everyone(dup: MPI_Comm, mine: bool, what: &str) -> MpiResult<bool> {
    let mut mine = c_int::from(mine);
    let mut all: c_int = 0;
    // SAFETY: one int each way, over the window's communicator.
    check_call(dup, unsafe { crate::coll::abi::MPI_Allreduce((&mut mine as *mut c_int).cast(), (&mut all as *mut c_int).cast(), 1, MPI_INT, MPI_MIN, dup) }, what)?;
    Ok(all == 1)
}

/// An MPI call made from inside a window call, with the state released: its failure as an error.
fn check_call(comm: MPI_Comm, code: c_int, what: &str) -> MpiResult<()> {
    if code == MPI_SUCCESS {
        return Ok(());
    }
    let mut class = code;
    // SAFETY: a valid out-pointer.
    unsafe { crate::error::codes::abi::MPI_Error_class(code, &mut class) };
    Err(error(comm, class, format!("{what} failed")))
}

// ---- Creation and freeing ----

#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavor {
    Create,
    Allocate,
    Dynamic,
    Shared,
}

impl Flavor {
    fn code(self) -> c_int {
        match self {
            Flavor::Create => MPI_WIN_FLAVOR_CREATE,
            Flavor::Allocate => MPI_WIN_FLAVOR_ALLOCATE,
            Flavor::Dynamic => MPI_WIN_FLAVOR_DYNAMIC,
            Flavor::Shared => MPI_WIN_FLAVOR_SHARED,
        }
    }
}

/// Bytes of a page: where the segment's data starts, and how `alloc_shared_noncontig` pads.
const PAGE: usize = 4096;

/// The shared segment of a window whose members share a node: rank 0 makes it, the others map
/// it, and it is unlinked once every member has it ([`make_shared`]). `header` bytes come first
/// (see `header_len`), then the members' `sizes`. Returns the mapping and each member's offset.
fn shared_segment(dup: MPI_Comm, sizes: &[usize], noncontig: bool, header: usize) -> MpiResult<(SharedMapping, Vec<usize>)> {
    let header = header.next_multiple_of(PAGE);
    let mut offsets = Vec::with_capacity(sizes.len());
    let mut end = header;
    for &size in sizes {
        offsets.push(end);
        end = end.checked_add(if noncontig { size.next_multiple_of(PAGE) } else { size }).ok_or_else(|| error(dup, MPI_ERR_NO_MEM, "the window is larger than the address space"))?;
    }
    let agreement = runtime::with(|rt| Ok(Agreement::new(rt.comms.get(dup)?.shared.clone(), rt.tuning)))?;
    let made = RefCell::new(None);
    let made_ref = &made;
    agreement.run_for(dup, "the window's members could not agree on its shared segment", |port| async move {
        let create = |name: &str| SharedMapping::create(name, end).inspect_err(|e| eprintln!("Braid: rank 0 of a window cannot make its shared segment of {end} bytes: {e}"));
        *made_ref.borrow_mut() = make_shared(&port, "braid-win", create, SharedMapping::open).await?;
        Ok(())
    })?;
    match made.into_inner() {
        Some(mapping) => Ok((mapping, offsets)),
        None => Err(error(dup, MPI_ERR_NO_MEM, format!("the window's shared segment of {end} bytes could not be made or mapped by every member"))),
    }
}

/// What creation checks before anything collective: the communicator's members and the info hints.
fn check_creation(comm: MPI_Comm, size: MPI_Aint, disp_unit: c_int, info: MPI_Info, win: *mut MPI_Win) -> MpiResult<crate::comm::Hints> {
    runtime::with(|rt| {
        rt.comms.get_intra(comm)?;
        if size < 0 {
            return Err(error(comm, MPI_ERR_SIZE, format!("the window size {size} is negative")));
        }
        if disp_unit <= 0 {
            return Err(error(comm, MPI_ERR_DISP, format!("the displacement unit {disp_unit} is not positive")));
        }
        if win.is_null() {
            return Err(error(comm, MPI_ERR_ARG, "win must not be NULL"));
        }
        crate::comm::abi::hints_of(comm, info)
    })
}

/// Every creation call: checks, duplicates the communicator, exchanges sizes, sets the memory up
/// (the caller's, allocated, a shared segment, none), and registers the window and its agent.
fn create(flavor: Flavor, user_base: *mut c_void, size: MPI_Aint, disp_unit: c_int, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> MpiResult<*mut c_void> {
    let hints = check_creation(comm, size, disp_unit, info, win)?;
    let noncontig = hint_is_true(&hints, "alloc_shared_noncontig");
    let mut dup: MPI_Comm = MPI_COMM_NULL;
    // SAFETY: a valid out-pointer.
    check_call(comm, unsafe { crate::comm::construct::MPI_Comm_dup(comm, &mut dup) }, "duplicating the communicator")?;
    let built = build(flavor, user_base, size as usize, disp_unit as usize, dup, noncontig, hints);
    match built {
        Ok((handle, base)) => {
            // SAFETY: checked non-null by check_creation.
            unsafe { *win = handle };
            Ok(base)
        }
        Err(e) => {
            // SAFETY: the duplicate made above.
            unsafe { crate::comm::abi::MPI_Comm_free(&mut dup) };
            Err(MpiError { comm, ..e })
        }
    }
}

fn build(flavor: Flavor, user_base: *mut c_void, size: usize, disp_unit: usize, dup: MPI_Comm, noncontig: bool, hints: crate::comm::Hints) -> MpiResult<(MPI_Win, *mut c_void)> {
    // SAFETY: MPI_COMM_WORLD's predefined handler, on the window's private communicator.
    check_call(dup, unsafe { crate::error::handlers::abi::MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN) }, "setting the window communicator's handler")?;
    let (members, rank, context, same_node, cma, share_created, debug) = runtime::with(|rt| {
        let shared = rt.comms.get(dup)?.shared.clone();
        let node = |job: u32| rt.engine.node_id(job);
        let same_node = shared.members.iter().all(|&job| node(job) == node(shared.members[0]));
        Ok((shared.members.clone(), shared.rank as usize, shared.p2p_context, same_node, rt.config.cma != braid_config::CmaMode::Off, rt.config.win_create_share, rt.config.debug))
    })?;
    // Size, displacement unit, pid, memory address, probe word and lock-free accumulates asked
    // for (the `acc_single_intrinsic` hint) of every member.
    const EXCHANGED: usize = 6;
    let single_intrinsic = hint_is_true(&hints, "acc_single_intrinsic");
    let mine: [u64; EXCHANGED] = [size as u64, disp_unit as u64, u64::from(std::process::id()), user_base as u64, single_copy::probe_address(), u64::from(single_intrinsic)];
    let mut all = vec![0u64; EXCHANGED * members.len()];
    // SAFETY: EXCHANGED u64s from each member into a buffer of EXCHANGED * size.
    check_call(
        dup,
        unsafe { crate::coll::abi::MPI_Allgather(mine.as_ptr().cast(), EXCHANGED as c_int, MPI_UINT64_T, all.as_mut_ptr().cast(), EXCHANGED as c_int, MPI_UINT64_T, dup) },
        "exchanging the window sizes",
    )?;
    let column = |index: usize| all.chunks(EXCHANGED).map(move |member| member[index]);
    let sizes: Vec<usize> = column(0).map(|value| value as usize).collect();
    let disp_units: Vec<usize> = column(1).map(|value| value as usize).collect();
    let pids: Vec<i32> = column(2).map(|value| value as i32).collect();
    let addresses: Vec<u64> = column(3).collect();
    let probes: Vec<u64> = column(4).collect();
    let lock_free_asked = column(5).all(|asked| asked == 1);
    if flavor == Flavor::Shared && !same_node {
        return Err(error(dup, MPI_ERR_RMA_SHARED, "MPI_Win_allocate_shared needs a communicator whose ranks share a node"));
    }
    let count = members.len();
    let mut bases: Vec<Option<*mut u8>> = vec![None; count];
    let mut segment = None;
    let mut owned = None;
    // Created windows on one node whose memory can be shared in place are reached directly.
    let mut shared_created = None;
    if flavor == Flavor::Create && same_node && count > 1 && share_created {
        if let Some((memory, shared_bases)) = shared_create::share(dup, rank, context, user_base, size, &pids, &addresses, &sizes)? {
            bases = shared_bases;
            shared_created = Some(memory);
            if debug {
                eprintln!("Braid: rank {rank} of a created window: its {size} bytes at {user_base:?} are shared in place; every target is reached directly");
            }
            let (mapping, _) = shared_segment(dup, &vec![0; count], false, header_len(count, false))?;
            segment = Some(Rc::new(Segment { mapping, members: count }));
        }
    }
    // Create and dynamic windows on one node reach their targets with single copies when every
    // member may read every other one; the segment then holds only the lock words (and region
    // tables).
    let mut single_copy = false;
    if matches!(flavor, Flavor::Create | Flavor::Dynamic) && same_node && count > 1 && cma && shared_created.is_none() {
        let reachable = (0..count).filter(|&r| r != rank).all(|r| single_copy::reachable(pids[r], probes[r]));
        if everyone(dup, reachable, "agreeing on single copies")? {
            let (mapping, _) = shared_segment(dup, &vec![0; count], false, header_len(count, flavor == Flavor::Dynamic))?;
            segment = Some(Rc::new(Segment { mapping, members: count }));
            single_copy = true;
        }
    }
    let base: *mut c_void = match flavor {
        Flavor::Shared | Flavor::Allocate if same_node => {
            let (mapping, offsets) = shared_segment(dup, &sizes, noncontig || flavor == Flavor::Allocate, header_len(count, false))?;
            for (r, offset) in offsets.iter().enumerate() {
                bases[r] = Some(mapping.as_ptr().wrapping_add(*offset));
            }
            segment = Some(Rc::new(Segment { mapping, members: count }));
            bases[rank].expect("set above").cast()
        }
        Flavor::Allocate => {
            let memory: &mut Vec<u128> = owned.insert(vec![0u128; size.div_ceil(16).max(1)]);
            let base = memory.as_mut_ptr().cast::<u8>();
            bases[rank] = Some(base);
            base.cast()
        }
        Flavor::Create | Flavor::Shared => {
            bases[rank] = Some(user_base.cast());
            user_base
        }
        Flavor::Dynamic => {
            bases[rank] = Some(std::ptr::null_mut());
            std::ptr::null_mut()
        }
    };
    let jobs = members.to_vec();
    let mut state = WinState::new(rank as u32, context, Members { jobs, sizes, disp_units, pids, addresses }, bases, flavor == Flavor::Dynamic, segment, single_copy);
    state.lock_free_accumulates = lock_free_asked && !single_copy;
    let state = Rc::new(RefCell::new(state));
    // The handle is moved in, so that its last reference here is dropped under the runtime too.
    let handle = runtime::with(move |rt| {
        state.borrow_mut().post_request_receive(&mut rt.engine).map_err(|e| engine_error(dup, e))?;
        rt.engine.attach_agent(Box::new(WinAgent { state: state.clone() }));
        let attributes = Box::new(AttributeValues { size: size as MPI_Aint, disp_unit: disp_unit as c_int, flavor: flavor.code(), model: MPI_WIN_UNIFIED });
        Ok(rt.windows.insert(Window { state: state.clone(), comm: dup, members, base, attributes, name: String::new(), hints, errhandler: MPI_ERRORS_ARE_FATAL, owned, shared_created }))
    })?;
    Ok((handle, base))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create(base: *mut c_void, size: MPI_Aint, disp_unit: c_int, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
    crate::error::finish("MPI_Win_create", create(Flavor::Create, base, size, disp_unit, info, comm, win).map(|_| ()))
}

/// MPI_Win_allocate and MPI_Win_allocate_shared: `baseptr` is really a `void **`.
#[allow(clippy::too_many_arguments)]
unsafe fn allocate(function: &str, flavor: Flavor, size: MPI_Aint, disp_unit: c_int, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
    let result = if baseptr.is_null() {
        Err(error(comm, MPI_ERR_ARG, "baseptr must not be NULL"))
    } else {
        create(flavor, std::ptr::null_mut(), size, disp_unit, info, comm, win).map(|base| {
            // SAFETY: checked non-null; MPI passes a `void **`.
            unsafe { *baseptr.cast::<*mut c_void>() = base };
        })
    };
    crate::error::finish(function, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate(size: MPI_Aint, disp_unit: c_int, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
    // SAFETY: the caller's arguments.
    unsafe { allocate("MPI_Win_allocate", Flavor::Allocate, size, disp_unit, info, comm, baseptr, win) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_shared(size: MPI_Aint, disp_unit: c_int, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
    // SAFETY: the caller's arguments.
    unsafe { allocate("MPI_Win_allocate_shared", Flavor::Shared, size, disp_unit, info, comm, baseptr, win) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_dynamic(info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
    crate::error::finish("MPI_Win_create_dynamic", create(Flavor::Dynamic, std::ptr::null_mut(), 0, 1, info, comm, win).map(|_| ()))
}

fn free(win: *mut MPI_Win) -> MpiResult<MPI_Win> {
    if win.is_null() {
        return Err(win_error(MPI_ERR_ARG, "win must not be NULL"));
    }
    // SAFETY: checked non-null.
    let handle = unsafe { *win };
    let comm = with_state(handle, |rt, state| {
        state.borrow().epochs.check_free().map_err(sync_error)?;
        Ok(rt.windows.get(handle)?.comm)
    })?;
    crate::attr::access::delete_all(crate::attr::Object::Win(handle))?;
    wait_until_state(handle, WinState::quiet)?;
    // SAFETY: the window's own communicator.
    check_call(MPI_COMM_WORLD, unsafe { crate::coll::abi::MPI_Barrier(comm) }, "the barrier of MPI_Win_free")?;
    wait_until_state(handle, WinState::sends_done)?;
    with_state(handle, |rt, state| {
        let mut state = state.borrow_mut();
        state.cancel_request_receive(&mut rt.engine);
        state.freed = true;
        drop(state);
        rt.windows.remove(handle)?;
        Ok(())
    })?;
    let mut comm = comm;
    // SAFETY: the window's own communicator, no longer used.
    check_call(MPI_COMM_WORLD, unsafe { crate::comm::abi::MPI_Comm_free(&mut comm) }, "freeing the window's communicator")?;
    // SAFETY: checked non-null.
    unsafe { *win = MPI_WIN_NULL };
    Ok(handle)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free(win: *mut MPI_Win) -> c_int {
    let handle = if win.is_null() {
        MPI_WIN_NULL
    } else {
        // SAFETY: checked non-null.
        unsafe { *win }
    };
    finish_on("MPI_Win_free", handle, free(win).map(|_| ()))
}

// ---- Window information ----

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_group(win: MPI_Win, group: *mut MPI_Group) -> c_int {
    let result = runtime::with(|rt| {
        let members = rt.windows.get(win)?.members.clone();
        if group.is_null() {
            return Err(win_error(MPI_ERR_ARG, "group must not be NULL"));
        }
        let handle = rt.groups.insert(members);
        // SAFETY: checked non-null.
        unsafe { store(group, handle, "group") }
    });
    finish_on("MPI_Win_get_group", win, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_name(win: MPI_Win, win_name: *const c_char) -> c_int {
    let result = runtime::with(|rt| {
        let window = rt.windows.get_mut(win)?;
        if win_name.is_null() {
            return Err(win_error(MPI_ERR_ARG, "win_name must not be NULL"));
        }
        // SAFETY: non-null; MPI requires a NUL-terminated string.
        let name = unsafe { CStr::from_ptr(win_name) }.to_string_lossy();
        let mut end = name.len().min(MPI_MAX_OBJECT_NAME as usize - 1);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        window.name = name[..end].to_string();
        Ok(())
    });
    finish_on("MPI_Win_set_name", win, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_name(win: MPI_Win, win_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        // MPI 4.1: the null handle is named after itself.
        let name = if win == MPI_WIN_NULL { "MPI_WIN_NULL".to_string() } else { rt.windows.get(win)?.name.clone() };
        if win_name.is_null() || resultlen.is_null() {
            return Err(win_error(MPI_ERR_ARG, "win_name and resultlen must not be NULL"));
        }
        // SAFETY: MPI requires MPI_MAX_OBJECT_NAME characters at `win_name`; both non-null.
        unsafe { *resultlen = crate::error::write_c_string(&name, win_name, MPI_MAX_OBJECT_NAME as usize) };
        Ok(())
    });
    finish_on("MPI_Win_get_name", win, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_info(win: MPI_Win, info: MPI_Info) -> c_int {
    let result = runtime::with(|rt| {
        rt.windows.get(win)?;
        let update = crate::comm::abi::hints_of(MPI_COMM_WORLD, info)?;
        let window = rt.windows.get_mut(win)?;
        for (key, value) in update {
            match window.hints.iter_mut().find(|(known, _)| *known == key) {
                Some(entry) => entry.1 = value,
                None => window.hints.push((key, value)),
            }
        }
        Ok(())
    });
    finish_on("MPI_Win_set_info", win, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_info(win: MPI_Win, info_used: *mut MPI_Info) -> c_int {
    let result = runtime::with(|rt| {
        let hints = rt.windows.get(win)?.hints.clone();
        if info_used.is_null() {
            return Err(win_error(MPI_ERR_ARG, "info_used must not be NULL"));
        }
        let handle = crate::info::create(hints)?;
        // SAFETY: checked non-null.
        unsafe { *info_used = handle };
        Ok(())
    });
    finish_on("MPI_Win_get_info", win, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_shared_query(win: MPI_Win, rank: c_int, size: *mut MPI_Aint, disp_unit: *mut c_int, baseptr: *mut c_void) -> c_int {
    let result = runtime::with(|rt| {
        let window = rt.windows.get(win)?;
        if window.attributes.flavor == MPI_WIN_FLAVOR_DYNAMIC {
            return Err(win_error(MPI_ERR_RMA_FLAVOR, "MPI_Win_shared_query has no memory to name in a dynamic window"));
        }
        if size.is_null() || disp_unit.is_null() || baseptr.is_null() {
            return Err(win_error(MPI_ERR_ARG, "size, disp_unit and baseptr must not be NULL"));
        }
        if window.attributes.flavor != MPI_WIN_FLAVOR_SHARED {
            // MPI 4.1: any window may be asked; memory that is not shared is size 0 at NULL.
            // SAFETY: all three checked non-null; `baseptr` is really a `void **`.
            unsafe {
                *size = 0;
                *disp_unit = 1;
                *baseptr.cast::<*mut c_void>() = std::ptr::null_mut();
            }
            return Ok(());
        }
        let state = window.state.borrow();
        let count = state.targets.len();
        let chosen = if rank == MPI_PROC_NULL {
            state.targets.iter().position(|target| target.size > 0).unwrap_or(0)
        } else if rank >= 0 && (rank as usize) < count {
            rank as usize
        } else {
            return Err(win_error(MPI_ERR_RANK, format!("rank {rank} is not in the window's group of {count}")));
        };
        let target = state.targets[chosen];
        // SAFETY: all three checked non-null; `baseptr` is really a `void **`.
        unsafe {
            *size = target.size as MPI_Aint;
            *disp_unit = target.disp_unit as c_int;
            *baseptr.cast::<*mut c_void>() = target.base.cast();
        }
        Ok(())
    });
    finish_on("MPI_Win_shared_query", win, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_attach(win: MPI_Win, base: *mut c_void, size: MPI_Aint) -> c_int {
    let result = runtime::with(|rt| {
        let window = rt.windows.get(win)?;
        let mut state = window.state.borrow_mut();
        if !state.dynamic {
            return Err(win_error(MPI_ERR_RMA_FLAVOR, "MPI_Win_attach needs a window of MPI_Win_create_dynamic"));
        }
        if size < 0 {
            return Err(win_error(MPI_ERR_SIZE, format!("the size {size} is negative")));
        }
        let start = base as usize;
        let end = start.checked_add(size as usize).ok_or_else(|| win_error(MPI_ERR_RMA_ATTACH, "the region wraps around the address space"))?;
        if state.attached.iter().any(|&(other, length)| start < other + length && other < end) {
            return Err(win_error(MPI_ERR_RMA_ATTACH, format!("the region at {start:#x} of {size} bytes overlaps memory already attached")));
        }
        state.attached.push((start, size as usize));
        state.publish_regions();
        Ok(())
    });
    finish_on("MPI_Win_attach", win, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_detach(win: MPI_Win, base: *const c_void) -> c_int {
    let result = runtime::with(|rt| {
        let window = rt.windows.get(win)?;
        let mut state = window.state.borrow_mut();
        if !state.dynamic {
            return Err(win_error(MPI_ERR_RMA_FLAVOR, "MPI_Win_detach needs a window of MPI_Win_create_dynamic"));
        }
        let index = state.attached.iter().position(|&(start, _)| start == base as usize).ok_or_else(|| win_error(MPI_ERR_RMA_ATTACH, format!("no memory is attached at {:#x}", base as usize)))?;
        state.attached.remove(index);
        state.publish_regions();
        Ok(())
    });
    finish_on("MPI_Win_detach", win, result)
}

// ---- Operations ----

/// An RMA operation's arguments.
struct Rma {
    action: Action,
    origin: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    /// Where fetched data goes (get: the origin buffer).
    result: *mut c_void,
    result_count: MPI_Count,
    result_datatype: MPI_Datatype,
    /// Compare-and-swap's compare value (one element of `origin_datatype`).
    compare: *const c_void,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
}

fn committed(datatype: MPI_Datatype, count: MPI_Count, what: &str) -> MpiResult<datatype::DatatypeRef> {
    if count < 0 {
        return Err(win_error(MPI_ERR_COUNT, format!("the {what} count {count} is negative")));
    }
    datatype::lookup_committed(datatype).map_err(|class| win_error(class, format!("the {what} datatype {datatype} is not a committed datatype")))
}

/// The predefined handle of a uniform datatype's basic element.
fn basic_handle(info: &datatype::DatatypeRef) -> Option<MPI_Datatype> {
    match info.uniform {
        Uniform::One(basic) => datatype::PREDEFINED_DATATYPES.iter().find(|(_, known, _)| *known == basic).map(|(handle, _, _)| *handle),
        _ => None,
    }
}

/// Packs `count` elements of `info` at `address`.
///
/// # Safety
/// The type map of the elements at `address` must be readable.
unsafe fn packed(info: &datatype::DatatypeRef, count: usize, address: *const c_void) -> Vec<u8> {
    let mut out = vec![0; info.size * count];
    // SAFETY: per the caller; `out` holds the packed bytes.
    unsafe { info.pack(count, address.cast(), &mut out) };
    out
}

/// Copies `len` bytes that may overlap; a single element of the common sizes without a call.
///
/// # Safety
/// As `std::ptr::copy`.
#[inline]
unsafe fn copy_bytes(from: *const u8, to: *mut u8, len: usize) {
    // SAFETY: per the caller; each small case reads the whole value before writing it.
    unsafe {
        match len {
            4 => to.cast::<u32>().write_unaligned(from.cast::<u32>().read_unaligned()),
            8 => to.cast::<u64>().write_unaligned(from.cast::<u64>().read_unaligned()),
            16 => to.cast::<u128>().write_unaligned(from.cast::<u128>().read_unaligned()),
            _ => std::ptr::copy(from, to, len),
        }
    }
}

/// Put, get and fetch-and-op of dense predefined types on a target this rank reaches itself
/// (`Direct`, its own memory, `SingleCopy` of an MPI_Win_create window), within range: the
/// origin buffers are used in place and nothing is allocated (a large copy may be shared with
/// the `helper`). None: the general path takes the operation (and reports what is wrong with it).
fn fast_path(state: &WinState, target: u32, args: &Rma, helper: (&Engine, &CopyHelper)) -> Option<MpiResult<()>> {
    let mapped = &state.targets[target as usize];
    if state.dynamic || !matches!(mapped.path, Path::Direct | Path::SingleCopy) || args.target_count < 0 {
        return None;
    }
    let len = datatype::dense_predefined_size(args.target_datatype)? * args.target_count as usize;
    let (local, local_count, local_datatype) = match args.action {
        Action::Put => (args.origin.cast_mut(), args.origin_count, args.origin_datatype),
        Action::Get => (args.result, args.result_count, args.result_datatype),
        Action::GetAccumulate
            if mapped.path == Path::Direct
                && args.target_count == 1
                && args.origin_datatype == args.target_datatype
                && args.result_datatype == args.target_datatype
                && args.origin_count == 1
                && args.result_count == 1 =>
        {
            return fast_fetch_and_op(state, target, args, len);
        }
        _ => return None,
    };
    if local_count < 0 || datatype::dense_predefined_size(local_datatype)? * local_count as usize != len {
        return None;
    }
    let offset = args.target_disp.checked_mul(mapped.disp_unit as isize)?;
    if offset < 0 || (offset as usize).checked_add(len)? > mapped.size {
        return None;
    }
    let local = local.cast::<u8>();
    if mapped.path == Path::Direct {
        let remote = mapped.base.wrapping_offset(offset);
        let (from, to) = if args.action == Action::Put { (local.cast_const(), remote) } else { (remote.cast_const(), local) };
        // SAFETY: the run lies within the target's window memory, mapped here (checked above);
        // MPI requires the origin buffer to hold its count of elements.
        unsafe {
            let (engine, copy_helper) = helper;
            if copy_helper.may_take(len) {
                copy_helper.copy(engine, mapped.job, from, to, len);
            } else {
                copy_bytes(from, to, len);
            }
        }
        return Some(Ok(()));
    }
    let remote = single_copy::Remote { pid: mapped.pid, base: mapped.address };
    let runs = [(offset, len)];
    let copied = if args.action == Action::Put {
        // SAFETY: MPI requires the origin buffer to hold its count of elements.
        remote.scatter(&runs, unsafe { std::slice::from_raw_parts(local, len) })
    } else {
        // SAFETY: as above, and it is not accessed otherwise until the operation completes.
        remote.gather(&runs, unsafe { std::slice::from_raw_parts_mut(local, len) })
    };
    Some(copied.map_err(|(class, detail)| win_error(class, detail)))
}

/// MPI_Fetch_and_op of one dense predefined element on a `Direct` target: applied in place under
/// the target's accumulate lock.
fn fast_fetch_and_op(state: &WinState, target: u32, args: &Rma, len: usize) -> Option<MpiResult<()>> {
    let mapped = &state.targets[target as usize];
    let offset = args.target_disp.checked_mul(mapped.disp_unit as isize)?;
    if offset < 0 || (offset as usize).checked_add(len)? > mapped.size {
        return None;
    }
    let remote = mapped.base.wrapping_offset(offset);
    if state.lock_free_accumulates && atomics::lock_free(remote as usize, len) {
        let update = atomics::Update::of(Action::GetAccumulate, args.op, args.target_datatype)?;
        // SAFETY: the element lies within the target's window memory, mapped here (checked
        // above), aligned, and every updater of this window updates it atomically; MPI requires
        // the origin and result buffers to hold one element each.
        unsafe {
            let operand = if args.op == MPI_NO_OP { &[][..] } else { std::slice::from_raw_parts(args.origin.cast::<u8>(), len) };
            atomics::update_element(update, remote, len, operand, &[], args.result.cast());
        }
        return Some(Ok(()));
    }
    let kernel = if args.op == MPI_NO_OP { None } else { Some(crate::op::predefined_kernel(args.op, args.target_datatype)?) };
    let _lock = state.segment.as_ref().map(|segment| lockword::AccumulateLock::take(segment.accumulate_word(target)));
    // SAFETY: the element lies within the target's window memory, mapped here (checked above),
    // and other accumulates are held off by its accumulate lock; MPI requires the origin and
    // result buffers to hold one element each.
    unsafe {
        copy_bytes(remote, args.result.cast::<u8>(), len);
        if let Some(kernel) = kernel {
            kernel(std::slice::from_raw_parts(args.origin.cast::<u8>(), len), std::slice::from_raw_parts_mut(remote, len));
        }
    }
    Some(Ok(()))
}

/// Issues one operation; with `request_based`, the outcome a request watches (gets of
/// request-based operations, which need a passive-target epoch), None when it is complete.
#[inline(never)]
fn rma(rt: &mut Runtime, win: MPI_Win, args: &Rma, request_based: bool) -> MpiResult<Option<Rc<Outcome>>> {
    let window = rt.windows.get(win)?;
    if args.target_rank == MPI_PROC_NULL {
        return Ok(None);
    }
    let target = {
        let mut state = window.state.borrow_mut();
        let count = state.targets.len();
        if args.target_rank < 0 || args.target_rank as usize >= count {
            return Err(win_error(MPI_ERR_RANK, format!("target rank {} is not in the window's group of {count}", args.target_rank)));
        }
        let target = args.target_rank as u32;
        if request_based {
            state.epochs.check_passive(target).map_err(|detail| sync_error(format!("request-based operations need a passive-target epoch: {detail}")))?;
        } else {
            state.epochs.check_access(target).map_err(sync_error)?;
        }
        if let Some(done) = fast_path(&state, target, args, (&rt.engine, &rt.copy_helper)) {
            return done.map(|()| None);
        }
        target
    };
    let state = window.state.clone();
    let mut state = state.borrow_mut();
    let action = args.action;
    let no_op = args.op == MPI_NO_OP && matches!(action, Action::GetAccumulate);
    let target_info = committed(args.target_datatype, args.target_count, "target")?;
    let target_len = target_info.size * args.target_count as usize;
    // The operand: put, accumulate, compare-and-swap's new value (MPI_NO_OP ignores it).
    let data = if matches!(action, Action::Get) || no_op {
        Operand::Packed(Vec::new())
    } else {
        let origin_info = committed(args.origin_datatype, args.origin_count, "origin")?;
        let data_len = origin_info.size * args.origin_count as usize;
        if data_len != target_len {
            return Err(win_error(MPI_ERR_ARG, format!("the origin's {data_len} bytes do not match the target's {target_len}")));
        }
        if matches!(action, Action::Accumulate | Action::GetAccumulate | Action::CompareAndSwap) && basic_handle(&origin_info) != basic_handle(&target_info) && target_len > 0 {
            return Err(win_error(MPI_ERR_TYPE, "the origin and target datatypes of an accumulate must be built from the same predefined type"));
        }
        // An operation that completes at synchronisation sends contiguous data from where it is;
        // a request-based one completes at once, so its data is packed.
        let lend = !request_based && matches!(action, Action::Put | Action::Accumulate);
        match origin_info.contiguous_run(args.origin_count as usize) {
            // SAFETY: the run lies within the origin's elements, which MPI requires to be readable
            // and unchanged until the operation completes at the next synchronisation, which
            // waits for every send of lent data (see `Operand::Lent`).
            Some((offset, len)) if lend && len > 0 => Operand::Lent(unsafe { std::slice::from_raw_parts(args.origin.cast::<u8>().wrapping_offset(offset), len) }),
            // SAFETY: MPI requires the origin buffer to hold its count of elements.
            _ => Operand::Packed(unsafe { packed(&origin_info, args.origin_count as usize, args.origin) }),
        }
    };
    let basic = basic_handle(&target_info).unwrap_or(MPI_BYTE);
    if matches!(action, Action::Accumulate | Action::GetAccumulate) && !no_op {
        if crate::op::builtin(args.op).is_none() {
            return Err(win_error(MPI_ERR_OP, format!("{} is not a predefined operation (accumulates take predefined ones only)", args.op)));
        }
        if target_len > 0 {
            crate::op::reduction(args.op, basic).map_err(|class| win_error(class, format!("operation {} is not defined on the target datatype", args.op)))?;
        }
    }
    let result = if action.fetches() {
        let result_info = committed(args.result_datatype, args.result_count, "result")?;
        let result_len = result_info.size * args.result_count as usize;
        if result_len != target_len {
            return Err(win_error(MPI_ERR_ARG, format!("the result buffer's {result_len} bytes do not match the target's {target_len}")));
        }
        Some(ResultBuffer { address: args.result.cast(), count: args.result_count as usize, datatype: result_info })
    } else {
        None
    };
    let compare = if action == Action::CompareAndSwap {
        let info = committed(args.origin_datatype, 1, "compare")?;
        // SAFETY: MPI requires one element at the compare address.
        unsafe { packed(&info, 1, args.compare) }
    } else {
        Vec::new()
    };
    let (disp_unit, dynamic, path) = (state.targets[target as usize].disp_unit, state.dynamic, state.targets[target as usize].path);
    let displacement = if dynamic { args.target_disp } else { args.target_disp.checked_mul(disp_unit as isize).ok_or_else(|| win_error(MPI_ERR_DISP, "the target displacement overflows"))? };
    let runs = ops::displaced(target_info.byte_runs(args.target_count as usize), displacement).map_err(|detail| win_error(MPI_ERR_DISP, detail))?;
    if !dynamic {
        ops::check_range(&runs, state.targets[target as usize].size, target).map_err(|detail| win_error(MPI_ERR_RMA_RANGE, detail))?;
    }
    let op = if no_op { MPI_NO_OP } else { args.op };
    // A dynamic target's attached regions, as it published them: checked here, or (too many to
    // publish) by the target on the `Messages` path.
    let mut path = path;
    if path == Path::SingleCopy && dynamic {
        match state.segment.as_ref().and_then(|segment| segment.region_table(target).read()) {
            Some(snapshot) => ops::check_attached(&runs, snapshot.regions(), target).map_err(|detail| win_error(MPI_ERR_RMA_RANGE, detail))?,
            None => path = Path::Messages,
        }
    }
    if path != Path::Messages || target == state.rank {
        let fetched = state.execute_mapped(target, action, &runs, &data, &compare, op, basic).map_err(|(class, detail)| win_error(class, detail))?;
        if let Some(result) = &result {
            // SAFETY: MPI requires the result buffer to hold its count of elements.
            unsafe { result.fill(&fetched) };
        }
        return Ok(None);
    }
    let kind = match action {
        Action::Put => RequestKind::Put,
        Action::Get => RequestKind::Get,
        Action::Accumulate => RequestKind::Accumulate,
        Action::GetAccumulate => RequestKind::GetAccumulate,
        Action::CompareAndSwap => RequestKind::CompareAndSwap,
    };
    let header = Header {
        kind,
        sequence: 0,
        op,
        basic,
        runs: runs.len() as u32,
        data_len: data.len() as u64,
        compare_len: compare.len() as u64,
        result_len: if action.fetches() { target_len as u64 } else { 0 },
    };
    let outcome = (request_based && action.fetches()).then(|| Rc::new(Outcome::default()));
    state.issue(&mut rt.engine, target, header, &runs, data, &compare, result, outcome.clone()).map_err(|e| engine_error(MPI_COMM_WORLD, e))?;
    Ok(outcome)
}

/// A blocking-style RMA call (it completes at synchronisation).
fn operation(function: &str, win: MPI_Win, args: Rma) -> c_int {
    let result = runtime::with(|rt| match passive_fast_path(rt, win, &args) {
        Some(done) => done,
        None => rma(rt, win, &args, false).map(|_| ()),
    });
    finish_on(function, win, result)
}

/// [`fast_path`] inside a passive-target epoch to the target, the common case of small
/// operations, checked before anything else: such an epoch needs no bookkeeping per operation,
/// so the state is only read. None: [`rma`] takes the operation.
#[inline(always)]
fn passive_fast_path(rt: &Runtime, win: MPI_Win, args: &Rma) -> Option<MpiResult<()>> {
    let state = rt.windows.find(win)?.state.try_borrow().ok()?;
    let target = u32::try_from(args.target_rank).ok().filter(|&target| (target as usize) < state.targets.len())?;
    if !state.epochs.passive_to(target) {
        return None;
    }
    fast_path(&state, target, args, (&rt.engine, &rt.copy_helper))
}

/// A request-based RMA call.
unsafe fn request_operation(function: &str, win: MPI_Win, args: Rma, request: *mut MPI_Request) -> c_int {
    let result = runtime::with(|rt| {
        if request.is_null() {
            return Err(win_error(MPI_ERR_ARG, "request must not be NULL"));
        }
        let outcome = rma(rt, win, &args, true)?;
        let comm = rt.windows.get(win)?.comm;
        let pending = match outcome {
            Some(outcome) => Pending::collective(comm, outcome),
            None => Pending::completed(comm, Completion::EMPTY),
        };
        let handle = rt.requests.insert(pending);
        // SAFETY: checked non-null.
        unsafe { *request = handle };
        Ok(())
    });
    finish_on(function, win, result)
}

#[allow(clippy::too_many_arguments)]
fn put_args(origin: *const c_void, origin_count: impl Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: impl Count, target_datatype: MPI_Datatype) -> Rma {
    Rma {
        action: Action::Put,
        origin,
        origin_count: origin_count.into(),
        origin_datatype,
        result: std::ptr::null_mut(),
        result_count: 0,
        result_datatype: MPI_BYTE,
        compare: std::ptr::null(),
        target_rank,
        target_disp,
        target_count: target_count.into(),
        target_datatype,
        op: MPI_REPLACE,
    }
}

fn get_args(origin: *mut c_void, origin_count: impl Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: impl Count, target_datatype: MPI_Datatype) -> Rma {
    Rma {
        action: Action::Get,
        result: origin,
        result_count: origin_count.into(),
        result_datatype: origin_datatype,
        ..put_args(std::ptr::null(), 0, MPI_BYTE, target_rank, target_disp, target_count, target_datatype)
    }
}

#[allow(clippy::too_many_arguments)]
fn accumulate_args(
    origin: *const c_void,
    origin_count: impl Count,
    origin_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: impl Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
) -> Rma {
    Rma { action: Action::Accumulate, op, ..put_args(origin, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype) }
}

#[allow(clippy::too_many_arguments)]
fn get_accumulate_args(
    origin: *const c_void,
    origin_count: impl Count,
    origin_datatype: MPI_Datatype,
    result: *mut c_void,
    result_count: impl Count,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: impl Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
) -> Rma {
    Rma {
        action: Action::GetAccumulate,
        result,
        result_count: result_count.into(),
        result_datatype,
        ..accumulate_args(origin, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op)
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Fetch_and_op(origin_addr: *const c_void, result_addr: *mut c_void, datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, op: MPI_Op, win: MPI_Win) -> c_int {
    let args = get_accumulate_args(origin_addr, 1, datatype, result_addr, 1, datatype, target_rank, target_disp, 1, datatype, op);
    operation("MPI_Fetch_and_op", win, args)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Compare_and_swap(
    origin_addr: *const c_void,
    compare_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    win: MPI_Win,
) -> c_int {
    let args =
        Rma { action: Action::CompareAndSwap, compare: compare_addr, ..get_accumulate_args(origin_addr, 1, datatype, result_addr, 1, datatype, target_rank, target_disp, 1, datatype, MPI_REPLACE) };
    operation("MPI_Compare_and_swap", win, args)
}
