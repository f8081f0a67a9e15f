//! The synchronisation calls: fence, passive target (lock, unlock, flush, sync) and PSCW.
//!
//! A window's state is shared with its progress agent, which the engine runs under the runtime;
//! with several threads in MPI (MPI_THREAD_MULTIPLE, or a progress thread) only the runtime's lock
//! keeps them apart. So every touch of the state, its handle's reference count included, happens
//! inside a runtime call ([`with_state`]), and a call is a sequence of such steps with the waits
//! between them. Under the lock a wait ([`wait_for`], [`take_lock_word`]) releases it between
//! tests, so that the other threads' calls, which it may depend on, go on.

use std::cell::RefCell;
use std::ffi::c_int;
use std::rc::Rc;
use std::sync::atomic::{fence, Ordering};

use super::super::lockword;
use super::super::state::{Operand, Path, WinState};
use super::super::sync::LockKind;
use super::super::wire::{Header, RequestKind};
use super::{check_call, finish_on, sync_error, win_error};
use crate::consts::*;
use crate::error::MpiResult;
use crate::runtime::{self, engine_error, Runtime};

/// Runs `f` on the window's state, inside the runtime.
pub(super) fn with_state<R>(win: MPI_Win, f: impl FnOnce(&mut Runtime, &Rc<RefCell<WinState>>) -> MpiResult<R>) -> MpiResult<R> {
    runtime::with(|rt| {
        let state = rt.windows.get(win)?.state.clone();
        f(rt, &state)
    })
}

/// Waits (making progress) until `done` holds for the window's state.
pub(super) fn wait_until_state(win: MPI_Win, done: impl Fn(&WinState) -> bool) -> MpiResult<()> {
    if runtime::is_locking() {
        return crate::threaded::wait_unlocked(|rt| {
            let state = rt.windows.get(win)?.state.clone();
            if !done(&state.borrow()) {
                rt.engine.progress().map_err(|e| engine_error(MPI_COMM_WORLD, e))?;
            }
            let finished = done(&state.borrow());
            Ok(finished.then_some(()))
        });
    }
    with_state(win, |rt, state| rt.engine.wait_until(|_| done(&state.borrow())).map_err(|e| engine_error(MPI_COMM_WORLD, e)))
}

/// [`wait_until_state`], then the failure an answer brought, if any.
fn wait_for(win: MPI_Win, done: impl Fn(&WinState) -> bool) -> MpiResult<()> {
    wait_until_state(win, done)?;
    with_state(win, |_, state| match state.borrow_mut().take_failure() {
        Some(failure) => Err(win_error(failure.class, failure.detail)),
        None => Ok(()),
    })
}

/// Whether `target`'s lock is a word in the window's shared segment.
fn by_lock_word(state: &WinState, target: u32) -> bool {
    matches!(state.targets[target as usize].path, Path::Direct | Path::SingleCopy) && state.segment.is_some()
}

/// Spins (making progress, yielding the core) until `target`'s lock word is taken: its release
/// rings no doorbell, so the engine's sleeping wait cannot be used.
fn take_lock_word(win: MPI_Win, target: u32, kind: LockKind) -> MpiResult<()> {
    let attempt = |rt: &mut Runtime, state: &Rc<RefCell<WinState>>| -> MpiResult<bool> {
        let taken = state.borrow().segment.as_ref().is_some_and(|segment| lockword::try_lock(segment.lock_word(target), kind));
        if !taken {
            rt.engine.progress().map_err(|e| engine_error(MPI_COMM_WORLD, e))?;
        }
        Ok(taken)
    };
    if runtime::is_locking() {
        return crate::threaded::wait_unlocked(|rt| {
            let state = rt.windows.get(win)?.state.clone();
            Ok(attempt(rt, &state)?.then_some(()))
        });
    }
    with_state(win, |rt, state| {
        while !attempt(rt, state)? {
            std::thread::yield_now();
        }
        Ok(())
    })
}

/// Sends the control frame `kind` to `target`.
fn send_control(rt: &mut Runtime, state: &Rc<RefCell<WinState>>, target: u32, kind: RequestKind) -> MpiResult<()> {
    state.borrow_mut().issue(&mut rt.engine, target, Header::control(kind, 0), &[], Operand::Packed(Vec::new()), &[], None, None).map_err(|e| engine_error(MPI_COMM_WORLD, e))
}

fn check_assert(assert: c_int, allowed: c_int) -> MpiResult<()> {
    if assert & !allowed != 0 {
        return Err(win_error(MPI_ERR_ASSERT, format!("assertion {assert:#x} has bits this call does not take")));
    }
    Ok(())
}

fn win_fence(assert: c_int, win: MPI_Win) -> MpiResult<()> {
    check_assert(assert, MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED)?;
    let comm = with_state(win, |rt, state| {
        state.borrow_mut().epochs.fence(assert & MPI_MODE_NOSUCCEED != 0).map_err(sync_error)?;
        Ok(rt.windows.get(win)?.comm)
    })?;
    wait_for(win, |state| state.outstanding_total() == 0)?;
    fence(Ordering::SeqCst);
    // SAFETY: the window's own communicator.
    check_call(MPI_COMM_WORLD, unsafe { crate::coll::abi::MPI_Barrier(comm) }, "the barrier of MPI_Win_fence")?;
    fence(Ordering::SeqCst);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_fence(assert: c_int, win: MPI_Win) -> c_int {
    finish_on("MPI_Win_fence", win, win_fence(assert, win))
}

fn lock_kind(lock_type: c_int) -> MpiResult<LockKind> {
    match lock_type {
        MPI_LOCK_SHARED => Ok(LockKind::Shared),
        MPI_LOCK_EXCLUSIVE => Ok(LockKind::Exclusive),
        _ => Err(win_error(MPI_ERR_LOCKTYPE, format!("{lock_type} is neither MPI_LOCK_SHARED nor MPI_LOCK_EXCLUSIVE"))),
    }
}

fn checked_rank(state: &WinState, rank: c_int) -> MpiResult<u32> {
    let count = state.targets.len();
    if rank < 0 || rank as usize >= count {
        return Err(win_error(MPI_ERR_RANK, format!("rank {rank} is not in the window's group of {count}")));
    }
    Ok(rank as u32)
}

/// How a lock on one target is taken and released.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LockRoute {
    /// A word in the window's shared segment.
    Word,
    /// This rank's own lock queue.
    OwnQueue,
    /// Requests to the target, answered when granted.
    Request,
}

fn lock_route(state: &WinState, target: u32) -> LockRoute {
    if by_lock_word(state, target) {
        LockRoute::Word
    } else if target == state.rank {
        LockRoute::OwnQueue
    } else {
        LockRoute::Request
    }
}

/// Takes the lock of `target` (already recorded in the epochs) by its route.
fn acquire(win: MPI_Win, target: u32, kind: LockKind) -> MpiResult<()> {
    let route = with_state(win, |_, state| Ok(lock_route(&state.borrow(), target)))?;
    match route {
        LockRoute::Word => take_lock_word(win, target, kind),
        LockRoute::OwnQueue => {
            let granted = with_state(win, |_, state| {
                let mut state = state.borrow_mut();
                state.self_granted = false;
                let (me, sequence) = (state.rank, 0);
                Ok(state.lock.request(me, sequence, kind))
            })?;
            if granted {
                return Ok(());
            }
            wait_for(win, |state| state.self_granted)
        }
        LockRoute::Request => {
            with_state(win, |rt, state| send_control(rt, state, target, RequestKind::Lock(kind)))?;
            wait_for(win, |state| state.outstanding_to(target) == 0)
        }
    }
}

/// Completes the operations to `target` and releases its lock by its route.
fn release(win: MPI_Win, target: u32, kind: LockKind) -> MpiResult<()> {
    wait_for(win, |state| state.outstanding_to(target) == 0)?;
    let route = with_state(win, |rt, state| {
        let route = lock_route(&state.borrow(), target);
        match route {
            LockRoute::Word => {
                if let Some(segment) = &state.borrow().segment {
                    lockword::unlock(segment.lock_word(target), kind);
                }
            }
            LockRoute::OwnQueue => state.borrow_mut().release_lock(&mut rt.engine, kind).map_err(|e| engine_error(MPI_COMM_WORLD, e))?,
            LockRoute::Request => send_control(rt, state, target, RequestKind::Unlock(kind))?,
        }
        Ok(route)
    })?;
    if route == LockRoute::Request {
        wait_for(win, |state| state.outstanding_to(target) == 0)?;
    }
    Ok(())
}

fn win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win) -> MpiResult<()> {
    let kind = lock_kind(lock_type)?;
    check_assert(assert, MPI_MODE_NOCHECK)?;
    let unchecked = assert & MPI_MODE_NOCHECK != 0;
    let (target, held) = with_state(win, |_, state| {
        let mut state = state.borrow_mut();
        let target = checked_rank(&state, rank)?;
        state.epochs.lock(target, kind).map_err(sync_error)?;
        if unchecked {
            state.unchecked_locks.push(target);
            return Ok((target, true));
        }
        // The common case on a node, a free lock word, is taken in this one step.
        let taken = lock_route(&state, target) == LockRoute::Word && state.segment.as_ref().is_some_and(|segment| lockword::try_lock(segment.lock_word(target), kind));
        Ok((target, taken))
    })?;
    if held {
        return Ok(());
    }
    acquire(win, target, kind).inspect_err(|_| {
        let _ = with_state(win, |_, state| {
            let _ = state.borrow_mut().epochs.unlock(target);
            Ok(())
        });
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win) -> c_int {
    finish_on("MPI_Win_lock", win, win_lock(lock_type, rank, assert, win))
}

fn win_unlock(rank: c_int, win: MPI_Win) -> MpiResult<()> {
    let (target, kind, unchecked, released) = with_state(win, |_, state| {
        let mut state = state.borrow_mut();
        let target = checked_rank(&state, rank)?;
        let kind = state.epochs.unlock(target).map_err(sync_error)?;
        let position = state.unchecked_locks.iter().position(|&locked| locked == target);
        let unchecked = position.map(|index| state.unchecked_locks.swap_remove(index)).is_some();
        // The common case on a node: nothing outstanding (direct operations are complete when
        // issued), so the lock word is released in this one step.
        let released = !unchecked && lock_route(&state, target) == LockRoute::Word && state.outstanding_to(target) == 0 && state.failure.is_none();
        if released {
            if let Some(segment) = &state.segment {
                lockword::unlock(segment.lock_word(target), kind);
            }
        }
        Ok((target, kind, unchecked, released))
    })?;
    if unchecked {
        wait_for(win, |state| state.outstanding_to(target) == 0)?;
    } else if !released {
        release(win, target, kind)?;
    }
    fence(Ordering::SeqCst);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock(rank: c_int, win: MPI_Win) -> c_int {
    finish_on("MPI_Win_unlock", win, win_unlock(rank, win))
}

/// Sends the control frame `kind` to `target` if its lock is taken by requests; whether it was.
fn request_if_remote(win: MPI_Win, target: u32, kind: RequestKind) -> MpiResult<bool> {
    with_state(win, |rt, state| {
        let remote = lock_route(&state.borrow(), target) == LockRoute::Request;
        if remote {
            send_control(rt, state, target, kind)?;
        }
        Ok(remote)
    })
}

fn win_lock_all(assert: c_int, win: MPI_Win) -> MpiResult<()> {
    check_assert(assert, MPI_MODE_NOCHECK)?;
    let unchecked = assert & MPI_MODE_NOCHECK != 0;
    let count = with_state(win, |_, state| {
        let mut state = state.borrow_mut();
        state.epochs.lock_all().map_err(sync_error)?;
        let count = state.targets.len() as u32;
        if unchecked {
            state.unchecked_locks.extend(0..count);
        }
        Ok(count)
    })?;
    if unchecked {
        return Ok(());
    }
    // The lock requests to remote targets go out together and their grants are awaited once: one
    // round trip, not one per target (shared locks never wait for each other).
    let mut requested = false;
    for target in 0..count {
        if request_if_remote(win, target, RequestKind::Lock(LockKind::Shared))? {
            requested = true;
        } else {
            acquire(win, target, LockKind::Shared)?;
        }
    }
    if requested {
        wait_for(win, |state| state.outstanding_total() == 0)?;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock_all(assert: c_int, win: MPI_Win) -> c_int {
    finish_on("MPI_Win_lock_all", win, win_lock_all(assert, win))
}

fn win_unlock_all(win: MPI_Win) -> MpiResult<()> {
    let (count, unchecked) = with_state(win, |_, state| {
        let mut state = state.borrow_mut();
        state.epochs.unlock_all().map_err(sync_error)?;
        let unchecked = !std::mem::take(&mut state.unchecked_locks).is_empty();
        Ok((state.targets.len() as u32, unchecked))
    })?;
    // Every operation completes first; then the unlocks to remote targets go out together and
    // their answers are awaited once.
    wait_for(win, |state| state.outstanding_total() == 0)?;
    if !unchecked {
        for target in 0..count {
            if !request_if_remote(win, target, RequestKind::Unlock(LockKind::Shared))? {
                release(win, target, LockKind::Shared)?;
            }
        }
        wait_for(win, |state| state.outstanding_total() == 0)?;
    }
    fence(Ordering::SeqCst);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock_all(win: MPI_Win) -> c_int {
    finish_on("MPI_Win_unlock_all", win, win_unlock_all(win))
}

/// MPI_Win_flush and MPI_Win_flush_local: the operations to `rank` are complete (answered)
/// when they return; `Direct` operations are complete when issued.
fn win_flush(rank: c_int, win: MPI_Win) -> MpiResult<()> {
    let (target, idle) = runtime::with(|rt| {
        let state = rt.windows.get(win)?.state.borrow();
        let target = checked_rank(&state, rank)?;
        state.epochs.check_passive(target).map_err(sync_error)?;
        Ok((target, state.outstanding_to(target) == 0 && state.failure.is_none()))
    })?;
    if !idle {
        wait_for(win, |state| state.outstanding_to(target) == 0)?;
    }
    fence(Ordering::SeqCst);
    Ok(())
}

fn win_flush_all(win: MPI_Win) -> MpiResult<()> {
    with_state(win, |_, state| state.borrow().epochs.check_any_passive().map_err(sync_error))?;
    wait_for(win, |state| state.outstanding_total() == 0)?;
    fence(Ordering::SeqCst);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush(rank: c_int, win: MPI_Win) -> c_int {
    finish_on("MPI_Win_flush", win, win_flush(rank, win))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush_local(rank: c_int, win: MPI_Win) -> c_int {
    finish_on("MPI_Win_flush_local", win, win_flush(rank, win))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush_all(win: MPI_Win) -> c_int {
    finish_on("MPI_Win_flush_all", win, win_flush_all(win))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush_local_all(win: MPI_Win) -> c_int {
    finish_on("MPI_Win_flush_local_all", win, win_flush_all(win))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_sync(win: MPI_Win) -> c_int {
    let result = runtime::with(|rt| rt.windows.get(win).map(|_| ())).map(|()| fence(Ordering::SeqCst));
    finish_on("MPI_Win_sync", win, result)
}

/// The window ranks of `group`'s members; MPI_ERR_GROUP if one is not in the window.
fn group_ranks(rt: &Runtime, win: MPI_Win, group: MPI_Group) -> MpiResult<Vec<u32>> {
    let members = rt.groups.get(group).map_err(|e| win_error(e.class, e.detail))?.clone();
    let window = rt.windows.get(win)?;
    members
        .iter()
        .map(|job| window.members.iter().position(|member| member == job).map(|rank| rank as u32).ok_or_else(|| win_error(MPI_ERR_GROUP, format!("job rank {job} of the group is not in the window"))))
        .collect()
}

/// Sends a PSCW frame (`kind`) to each of `ranks`; to itself it counts directly.
fn notify(rt: &mut Runtime, state: &Rc<RefCell<WinState>>, ranks: &[u32], kind: RequestKind) -> MpiResult<()> {
    let me = state.borrow().rank;
    for &rank in ranks {
        if rank == me {
            let mut state = state.borrow_mut();
            match kind {
                RequestKind::Post => state.posts[rank as usize] += 1,
                _ => state.completes[rank as usize] += 1,
            }
            continue;
        }
        send_control(rt, state, rank, kind)?;
    }
    Ok(())
}

fn win_post(group: MPI_Group, assert: c_int, win: MPI_Win) -> MpiResult<()> {
    check_assert(assert, MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT)?;
    with_state(win, |rt, state| {
        let ranks = group_ranks(rt, win, group)?;
        state.borrow_mut().epochs.post(ranks.clone()).map_err(sync_error)?;
        fence(Ordering::SeqCst);
        notify(rt, state, &ranks, RequestKind::Post)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_post(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    finish_on("MPI_Win_post", win, win_post(group, assert, win))
}

fn win_start(group: MPI_Group, assert: c_int, win: MPI_Win) -> MpiResult<()> {
    check_assert(assert, MPI_MODE_NOCHECK)?;
    let ranks = with_state(win, |rt, state| {
        let ranks = group_ranks(rt, win, group)?;
        state.borrow_mut().epochs.start(ranks.clone()).map_err(sync_error)?;
        Ok(ranks)
    })?;
    if assert & MPI_MODE_NOCHECK == 0 {
        wait_for(win, |state| ranks.iter().all(|&rank| state.posts[rank as usize] > 0))?;
        with_state(win, |_, state| {
            let mut state = state.borrow_mut();
            for &rank in &ranks {
                state.posts[rank as usize] -= 1;
            }
            Ok(())
        })?;
    }
    fence(Ordering::SeqCst);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_start(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    finish_on("MPI_Win_start", win, win_start(group, assert, win))
}

fn win_complete(win: MPI_Win) -> MpiResult<()> {
    let ranks = with_state(win, |_, state| state.borrow_mut().epochs.complete().map_err(sync_error))?;
    wait_for(win, |state| ranks.iter().all(|&rank| state.outstanding_to(rank) == 0))?;
    fence(Ordering::SeqCst);
    with_state(win, |rt, state| notify(rt, state, &ranks, RequestKind::Complete))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_complete(win: MPI_Win) -> c_int {
    finish_on("MPI_Win_complete", win, win_complete(win))
}

/// Whether every origin of the exposure epoch has completed; if so the epoch ends.
fn exposure_done(state: &mut WinState) -> MpiResult<bool> {
    let ranks = state.epochs.exposure().map_err(sync_error)?.to_vec();
    if !ranks.iter().all(|&rank| state.completes[rank as usize] > 0) {
        return Ok(false);
    }
    for &rank in &ranks {
        state.completes[rank as usize] -= 1;
    }
    state.epochs.end_exposure();
    fence(Ordering::SeqCst);
    Ok(true)
}

fn win_wait(win: MPI_Win) -> MpiResult<()> {
    let ranks = with_state(win, |_, state| Ok(state.borrow().epochs.exposure().map_err(sync_error)?.to_vec()))?;
    wait_for(win, |state| ranks.iter().all(|&rank| state.completes[rank as usize] > 0))?;
    with_state(win, |_, state| exposure_done(&mut state.borrow_mut()).map(|_| ()))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_wait(win: MPI_Win) -> c_int {
    finish_on("MPI_Win_wait", win, win_wait(win))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_test(win: MPI_Win, flag: *mut c_int) -> c_int {
    let result = with_state(win, |rt, state| {
        if flag.is_null() {
            return Err(win_error(MPI_ERR_ARG, "flag must not be NULL"));
        }
        state.borrow().epochs.exposure().map_err(sync_error)?;
        rt.engine.progress().map_err(|e| engine_error(MPI_COMM_WORLD, e))?;
        let done = exposure_done(&mut state.borrow_mut())?;
        // SAFETY: checked non-null.
        unsafe { *flag = c_int::from(done) };
        Ok(())
    });
    finish_on("MPI_Win_test", win, result)
}
