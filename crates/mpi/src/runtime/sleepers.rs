//! Waiting threads that sleep at MPI_THREAD_MULTIPLE: who sleeps where, and who wakes them (the
//! waiting loop itself is `threaded::Backoff`). A blocking call there is a series of short
//! steps (tests) that each take the state's lock, so that the process's other threads go on
//! between them. After a while awake, as long as a single-threaded waiter polls and yields, a
//! waiting thread sleeps instead of stepping again:
//! - one waiting thread at a time, the *leader*, sleeps on the engine's doorbell, which peers
//!   ring as they ring a single-threaded rank's (the doorbell has one sleeper);
//! - the others sleep on a word of this process.
//!
//! Every call that leaves the state changed (anything but a waiting step whose progress moved
//! nothing) wakes them on its way out, under the lock: the leader through the engine's doorbell,
//! the others through the word. A sleeper arms its sleep first, then tests once more, then
//! sleeps, so nothing that happens after its last test goes unseen.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use braid_engine::{Engine, EngineError, Parking};
use braid_sys::futex;

/// A waiting thread sleeps on the engine's doorbell.
static LEADER_PARKED: AtomicBool = AtomicBool::new(false);
/// Waiting threads asleep on [`WORD`].
static SLEEPERS: AtomicU32 = AtomicU32::new(0);
/// Bumped to wake the threads asleep on it.
static WORD: AtomicU32 = AtomicU32::new(0);
/// How long a waiting thread stays awake before it sleeps, in nanoseconds (`u64::MAX`: never
/// sleeps, with `BRAID_WAIT=poll`), as the engine says at MPI_Init.
static PARK_AFTER_NS: AtomicU64 = AtomicU64::new(u64::MAX);
/// How long one sleep on [`WORD`] lasts at most, in nanoseconds (the engine's longest sleep).
static WORD_SLEEP_NS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The calling thread is in a waiting step: its call changes nothing that others wait for
    /// unless the engine's progress moves something during it.
    static WAITING_STEP: Cell<bool> = const { Cell::new(false) };
}

/// Takes the engine's waiting policy (MPI_Init).
pub(crate) fn configure(engine: &Engine) {
    let after = engine.park_after().map_or(u64::MAX, |after| u64::try_from(after.as_nanos()).unwrap_or(u64::MAX));
    PARK_AFTER_NS.store(after, Ordering::Relaxed);
    WORD_SLEEP_NS.store(u64::try_from(engine.sleep_timeout().as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// Runs `step` (a test of what a thread waits for) as a waiting step.
pub(crate) fn waiting_step<R>(step: impl FnOnce() -> R) -> R {
    WAITING_STEP.with(|flag| flag.set(true));
    let result = step();
    WAITING_STEP.with(|flag| flag.set(false));
    result
}

/// What a locked call notes on its way in, to tell on its way out whether it changed anything.
pub(crate) fn entry_mark(engine: Option<&Engine>) -> Option<u64> {
    if WAITING_STEP.with(Cell::get) {
        engine.map(Engine::moved_steps)
    } else {
        None
    }
}

/// A locked call leaves (still under the lock): unless it was a waiting step that moved nothing,
/// it wakes the sleeping waiters.
pub(crate) fn on_exit(engine: Option<&Engine>, mark: Option<u64>) {
    let Some(engine) = engine else { return };
    if mark == Some(engine.moved_steps()) {
        return;
    }
    if LEADER_PARKED.load(Ordering::Relaxed) {
        engine.wake_parked();
    }
    wake_followers();
}

fn wake_followers() {
    if SLEEPERS.load(Ordering::Relaxed) != 0 {
        WORD.fetch_add(1, Ordering::Release);
        futex::wake(&WORD, u32::MAX);
    }
}

/// A sleep armed and not yet slept.
pub(crate) enum Armed {
    Leader(Parking),
    /// On [`WORD`], with the value it had when armed.
    Follower(u32),
}

/// How long a waiting thread stays awake before it sleeps; `None`: it never sleeps.
pub(crate) fn park_after() -> Option<Duration> {
    match PARK_AFTER_NS.load(Ordering::Relaxed) {
        u64::MAX => None,
        nanos => Some(Duration::from_nanos(nanos)),
    }
}

/// Arms a sleep (under the state's lock): on the engine's doorbell if no other thread sleeps
/// there, else on the word. `None` when the engine has nothing to sleep on now (work needs
/// polling).
pub(crate) fn arm(engine: &mut Engine) -> Result<Option<Armed>, EngineError> {
    if LEADER_PARKED.load(Ordering::Relaxed) {
        SLEEPERS.fetch_add(1, Ordering::Relaxed);
        return Ok(Some(Armed::Follower(WORD.load(Ordering::Acquire))));
    }
    match engine.park()? {
        Some(parking) => {
            LEADER_PARKED.store(true, Ordering::Relaxed);
            Ok(Some(Armed::Leader(parking)))
        }
        // A process alone in its job hears nothing but its own threads.
        None if engine.size() == 1 => {
            SLEEPERS.fetch_add(1, Ordering::Relaxed);
            Ok(Some(Armed::Follower(WORD.load(Ordering::Acquire))))
        }
        None => Ok(None),
    }
}

/// Sleeps (without the state's lock) on what [`arm`] armed.
pub(crate) fn sleep(armed: &Armed) {
    match armed {
        Armed::Leader(parking) => parking.sleep(),
        Armed::Follower(seen) => {
            let _ = futex::wait(&WORD, *seen, Some(Duration::from_nanos(WORD_SLEEP_NS.load(Ordering::Relaxed))));
        }
    }
}

/// Whether giving `armed` back needs the engine (the state's lock).
pub(crate) fn needs_engine(armed: &Armed) -> bool {
    matches!(armed, Armed::Leader(_))
}

/// Gives back a sleep that lasted `slept`; `engine` is needed for the doorbell (see
/// [`needs_engine`]).
pub(crate) fn disarm(armed: Armed, slept: Duration, engine: Option<&mut Engine>) {
    match armed {
        Armed::Leader(parking) => {
            LEADER_PARKED.store(false, Ordering::Relaxed);
            if let Some(engine) = engine {
                engine.unpark(parking, slept);
            }
            // The doorbell is free: a thread asleep on the word takes it over.
            wake_followers();
        }
        Armed::Follower(_) => {
            SLEEPERS.fetch_sub(1, Ordering::Relaxed);
        }
    }
}
