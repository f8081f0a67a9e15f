//! Futex wait/wake on words that may live in memory shared between processes, and the
//! [`Doorbell`] built on them.
//!
//! The futex operations are the *shared* (non-private) ones: the kernel keys them on the
//! underlying page, so a waiter and a waker may map the word at different addresses.

use std::io;
use std::sync::atomic::{compiler_fence, fence, AtomicU32, AtomicU8, Ordering};
use std::time::Duration;

/// Why [`wait`] returned. Callers re-check their condition in every case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// Woken by [`wake`] (or spuriously).
    Woken,
    /// The word no longer held the expected value.
    Changed,
    /// The timeout passed.
    TimedOut,
    /// A signal interrupted the wait.
    Interrupted,
}

/// Sleeps while `word == expected`, for at most `timeout` (forever if `None`).
pub fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) -> io::Result<WaitOutcome> {
    let timespec = timeout.map(|t| libc::timespec { tv_sec: t.as_secs().min(libc::time_t::MAX as u64) as libc::time_t, tv_nsec: t.subsec_nanos() as libc::c_long });
    let timespec_ptr = timespec.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: FUTEX_WAIT reads the aligned u32 behind `word` (valid for the call) and the optional
    // relative timeout; it writes nothing.
    let result = unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT, expected, timespec_ptr, std::ptr::null::<u32>(), 0u32) };
    outcome(result)
}

/// What a futex wait's result (0 or more: woken; -1: errno says why) means.
fn outcome(result: libc::c_long) -> io::Result<WaitOutcome> {
    if result >= 0 {
        return Ok(WaitOutcome::Woken);
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error() {
        Some(libc::EAGAIN) => Ok(WaitOutcome::Changed),
        Some(libc::ETIMEDOUT) => Ok(WaitOutcome::TimedOut),
        Some(libc::EINTR) => Ok(WaitOutcome::Interrupted),
        _ => Err(error),
    }
}

/// Most words [`wait_any`] takes (the kernel's FUTEX_WAITV_MAX).
pub const WAIT_ANY_MAX: usize = 128;

/// Longest sleep of [`Doorbell::sleep_any`] when it cannot watch every doorbell.
pub const CROWDED_SLEEP_MAX: Duration = Duration::from_millis(1);

/// Sleeps while every `word == expected` of `words`, for at most `timeout` (forever if `None`):
/// the first one woken (or found changed) ends the sleep (`futex_waitv`, Linux 5.16). A rank
/// reached through several shared-memory doorbells sleeps on all of them at once.
pub fn wait_any(words: &[(&AtomicU32, u32)], timeout: Option<Duration>) -> io::Result<WaitOutcome> {
    /// The kernel's `struct futex_waitv`.
    #[repr(C)]
    struct Waiter {
        value: u64,
        address: u64,
        flags: u32,
        reserved: u32,
    }
    /// FUTEX2_SIZE_U32, shared (no FUTEX2_PRIVATE).
    const SIZE_U32: u32 = 0x02;
    match words {
        [] => return Ok(WaitOutcome::Changed),
        [(word, expected)] => return wait(word, *expected, timeout),
        _ if words.len() > WAIT_ANY_MAX => return Err(io::Error::new(io::ErrorKind::InvalidInput, "futex_waitv takes at most 128 words")),
        _ => {}
    }
    let waiters: Vec<Waiter> = words.iter().map(|(word, expected)| Waiter { value: u64::from(*expected), address: word.as_ptr() as u64, flags: SIZE_U32, reserved: 0 }).collect();
    // futex_waitv's timeout is absolute, on the clock named by its last argument.
    let deadline = match timeout {
        Some(timeout) => {
            let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: clock_gettime writes the timespec it is given, valid for the call.
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
            let nanos = now.tv_nsec as u64 + u64::from(timeout.subsec_nanos());
            let seconds = (now.tv_sec as u64).saturating_add(timeout.as_secs()).saturating_add(nanos / 1_000_000_000);
            Some(libc::timespec { tv_sec: seconds.min(libc::time_t::MAX as u64) as libc::time_t, tv_nsec: (nanos % 1_000_000_000) as libc::c_long })
        }
        None => None,
    };
    let deadline_ptr = deadline.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: futex_waitv reads `waiters` (valid, `len` entries, each naming an aligned u32 that
    // lives for the call) and the optional absolute deadline; it writes nothing.
    let result = unsafe { libc::syscall(libc::SYS_futex_waitv, waiters.as_ptr(), waiters.len() as libc::c_uint, 0u32, deadline_ptr, libc::CLOCK_MONOTONIC) };
    outcome(result)
}

/// Wakes up to `count` waiters on `word`; returns how many were woken.
pub fn wake(word: &AtomicU32, count: u32) -> usize {
    let count = count.min(i32::MAX as u32) as libc::c_int;
    // SAFETY: FUTEX_WAKE only uses the address of `word` as a key.
    let result = unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, count, std::ptr::null::<libc::timespec>(), std::ptr::null::<u32>(), 0u32) };
    result.max(0) as usize
}

#[repr(C, align(64))]
#[derive(Debug, Default)]
struct CacheLine(AtomicU32);

/// The line senders read when they ring: whether the receiver sleeps, and whether its process
/// takes the heavy side of asymmetric fences (see [`asymmetric_fences`]).
#[repr(C, align(64))]
#[derive(Debug, Default)]
struct SleepLine {
    sleeping: AtomicU32,
    heavy_sleeper: AtomicU32,
}

/// Process-wide: 0 not asked yet, 1 no, 2 yes.
static ASYMMETRIC: AtomicU8 = AtomicU8::new(0);

/// membarrier(2) commands.
const MEMBARRIER_CMD_QUERY: libc::c_int = 0;
const MEMBARRIER_CMD_GLOBAL_EXPEDITED: libc::c_int = 1 << 1;
const MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_int = 1 << 2;

fn membarrier(command: libc::c_int) -> libc::c_long {
    // SAFETY: membarrier takes a command and flags, touches no memory of this process.
    unsafe { libc::syscall(libc::SYS_membarrier, command, 0 as libc::c_uint, 0 as libc::c_int) }
}

/// Whether this process takes part in asymmetric fences: a doorbell's sleeper, which sleeps
/// rarely, pays for a barrier on every CPU that runs such a process (membarrier's global
/// expedited command, Linux 4.16), so that a sender, which rings after every frame, needs only a
/// compiler fence between its publication and its look at the sleeping flag. Asked once: the
/// process registers for the expedited barrier, or, where the kernel (or a seccomp filter)
/// refuses, fences on both sides as before.
pub fn asymmetric_fences() -> bool {
    match ASYMMETRIC.load(Ordering::Relaxed) {
        0 => register_asymmetric_fences(),
        state => state == 2,
    }
}

#[cold]
fn register_asymmetric_fences() -> bool {
    let supported = membarrier(MEMBARRIER_CMD_QUERY);
    let needed = libc::c_long::from(MEMBARRIER_CMD_GLOBAL_EXPEDITED | MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
    let usable = supported >= 0 && supported & needed == needed && membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
    ASYMMETRIC.store(if usable { 2 } else { 1 }, Ordering::Relaxed);
    usable
}

/// A receiver's doorbell: senders ring it after posting, and it wakes the receiver only while it
/// sleeps, so ringing an awake receiver costs a load (and a fence, without asymmetric fences),
/// never a system call.
///
/// All-zero bytes are a valid idle doorbell, so it may be placed in a fresh shared mapping.
///
/// Protocol (an eventcount): the receiver calls [`prepare_sleep`](Doorbell::prepare_sleep), checks
/// its channels once more, then [`sleep`](Doorbell::sleep)s with the token and finally calls
/// [`finish_sleep`](Doorbell::finish_sleep). A sender publishes its frame, then calls
/// [`ring`](Doorbell::ring). Either the receiver's last check sees the frame, or the sender sees
/// the sleeping flag and bumps the counter, which makes the futex wait return. The store-load
/// order on each side takes a full fence, or, where both processes take part in asymmetric
/// fences ([`asymmetric_fences`]), a barrier on every CPU from the sleeper and nothing from the
/// sender but keeping the compiler from reordering.
#[repr(C)]
#[derive(Debug, Default)]
pub struct Doorbell {
    counter: CacheLine,
    sleeping: SleepLine,
}

impl Doorbell {
    pub fn new() -> Doorbell {
        Doorbell::default()
    }

    /// Announces that the receiver is about to sleep; returns the token for [`Doorbell::sleep`].
    pub fn prepare_sleep(&self) -> u32 {
        let token = self.counter.0.load(Ordering::Acquire);
        let heavy = asymmetric_fences();
        if heavy {
            // Never cleared: every sleep of this process takes the heavy barrier.
            self.sleeping.heavy_sleeper.store(1, Ordering::Relaxed);
        }
        self.sleeping.sleeping.store(1, Ordering::Relaxed);
        // Orders the flag store before the receiver's next look at its channels (pairs with the
        // fence in `ring`, or, for a sender that skips it, with the barrier below: its frame is
        // either visible once the barrier returns, or published after it, and then its look at
        // the flag comes later still and sees it set).
        fence(Ordering::SeqCst);
        if heavy && membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0 {
            // The barrier failed: a sender may have missed the flag, so this sleep must not
            // wait for it (the caller looks at its channels again).
            self.counter.0.fetch_add(1, Ordering::Release);
        }
        token
    }

    /// Sleeps until rung or `timeout` passes; returns at once if rung since `prepare_sleep`.
    pub fn sleep(&self, token: u32, timeout: Duration) {
        // Errors (only EFAULT/EINVAL, impossible for a valid &AtomicU32) end the sleep early,
        // which the caller's polling loop tolerates.
        let _ = wait(&self.counter.0, token, Some(timeout));
    }

    /// Sleeps until any of `doorbells` is rung (each with the token of its `prepare_sleep`) or
    /// `timeout` passes: a receiver rung through several doorbells. The kernel watches at most
    /// [`WAIT_ANY_MAX`] words at once: beyond that, the sleep watches the first ones and lasts
    /// at most [`CROWDED_SLEEP_MAX`], so the others are looked at soon.
    pub fn sleep_any(doorbells: &[(&Doorbell, u32)], timeout: Duration) {
        let (watched, timeout) = match doorbells.len() > WAIT_ANY_MAX {
            true => (&doorbells[..WAIT_ANY_MAX], timeout.min(CROWDED_SLEEP_MAX)),
            false => (doorbells, timeout),
        };
        let words: Vec<(&AtomicU32, u32)> = watched.iter().map(|(doorbell, token)| (&doorbell.counter.0, *token)).collect();
        // As in `sleep`: an error only ends the sleep early.
        let _ = wait_any(&words, Some(timeout));
    }

    /// Ends the sleep phase: senders stop ringing.
    pub fn finish_sleep(&self) {
        self.sleeping.sleeping.store(0, Ordering::Relaxed);
    }

    /// Whether the receiver is between `prepare_sleep` and `finish_sleep`: it waits in a blocking
    /// call with nothing to do, so its CPU is idle (a hint; it may wake at any moment).
    pub fn is_sleeping(&self) -> bool {
        self.sleeping.sleeping.load(Ordering::Relaxed) != 0
    }

    /// Called by a sender after publishing a frame (with a Release store).
    #[inline]
    pub fn ring(&self) {
        if self.sleeping.heavy_sleeper.load(Ordering::Relaxed) != 0 && asymmetric_fences() {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        if self.sleeping.sleeping.load(Ordering::Relaxed) != 0 {
            self.wake_sleeper();
        }
    }

    #[cold]
    fn wake_sleeper(&self) {
        self.counter.0.fetch_add(1, Ordering::Release);
        wake(&self.counter.0, u32::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn wait_returns_at_once_when_the_value_differs() {
        let word = AtomicU32::new(5);
        assert_eq!(wait(&word, 4, Some(Duration::from_secs(5))).unwrap(), WaitOutcome::Changed);
    }

    #[test]
    fn wait_times_out() {
        let word = AtomicU32::new(0);
        let start = Instant::now();
        assert_eq!(wait(&word, 0, Some(Duration::from_millis(20))).unwrap(), WaitOutcome::TimedOut);
        assert!(start.elapsed() >= Duration::from_millis(15));
    }

    #[test]
    fn a_sleeping_doorbell_is_woken_by_ring() {
        let bell = Arc::new(Doorbell::new());
        let sleeper = {
            let bell = Arc::clone(&bell);
            std::thread::spawn(move || {
                let token = bell.prepare_sleep();
                let start = Instant::now();
                bell.sleep(token, Duration::from_secs(10));
                bell.finish_sleep();
                start.elapsed()
            })
        };
        while bell.sleeping.sleeping.load(Ordering::Relaxed) == 0 {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(30));
        bell.ring();
        assert!(sleeper.join().unwrap() < Duration::from_secs(5));
    }

    #[test]
    fn wait_any_times_out_and_sees_a_changed_word() {
        let (a, b) = (AtomicU32::new(0), AtomicU32::new(7));
        let start = Instant::now();
        assert_eq!(wait_any(&[(&a, 0), (&b, 7)], Some(Duration::from_millis(20))).unwrap(), WaitOutcome::TimedOut);
        assert!(start.elapsed() >= Duration::from_millis(15));
        assert_eq!(wait_any(&[(&a, 0), (&b, 6)], Some(Duration::from_secs(5))).unwrap(), WaitOutcome::Changed);
    }

    #[test]
    fn any_of_several_doorbells_wakes_their_sleeper() {
        for rung in 0..2 {
            let bells = Arc::new([Doorbell::new(), Doorbell::new()]);
            let sleeper = {
                let bells = Arc::clone(&bells);
                std::thread::spawn(move || {
                    let tokens = [bells[0].prepare_sleep(), bells[1].prepare_sleep()];
                    let start = Instant::now();
                    Doorbell::sleep_any(&[(&bells[0], tokens[0]), (&bells[1], tokens[1])], Duration::from_secs(10));
                    bells.iter().for_each(Doorbell::finish_sleep);
                    start.elapsed()
                })
            };
            while bells[1].sleeping.sleeping.load(Ordering::Relaxed) == 0 {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(30));
            bells[rung].ring();
            assert!(sleeper.join().unwrap() < Duration::from_secs(5), "doorbell {rung} did not wake the sleeper");
        }
    }

    #[test]
    fn more_doorbells_than_the_kernel_watches_give_a_short_sleep_not_a_spin() {
        let bells: Vec<Doorbell> = (0..WAIT_ANY_MAX + 2).map(|_| Doorbell::new()).collect();
        let armed: Vec<(&Doorbell, u32)> = bells.iter().map(|bell| (bell, bell.prepare_sleep())).collect();
        let start = Instant::now();
        Doorbell::sleep_any(&armed, Duration::from_secs(10));
        let slept = start.elapsed();
        assert!(slept >= CROWDED_SLEEP_MAX / 2 && slept < Duration::from_secs(5), "slept {slept:?}");
    }

    /// Two threads hand a token back and forth through a flag each, sleeping on their doorbell
    /// whenever it is not theirs: a lost wake-up shows as a sleep that lasts its whole time-out.
    #[test]
    fn no_wake_up_is_lost_over_many_hand_overs() {
        const HAND_OVERS: u32 = 30000;
        const TIMEOUT: Duration = Duration::from_secs(2);
        let shared = Arc::new(([Doorbell::new(), Doorbell::new()], [AtomicU32::new(0), AtomicU32::new(0)]));
        let player = |me: usize| {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                let (bells, turns) = &*shared;
                let mut longest = Duration::ZERO;
                for round in 0..HAND_OVERS {
                    // Thread 0 moves first; each passes the round it finished.
                    let mine = if me == 0 { round } else { round + 1 };
                    while turns[me].load(Ordering::Acquire) < mine {
                        let token = bells[me].prepare_sleep();
                        if turns[me].load(Ordering::Acquire) >= mine {
                            bells[me].finish_sleep();
                            break;
                        }
                        let start = Instant::now();
                        bells[me].sleep(token, TIMEOUT);
                        bells[me].finish_sleep();
                        longest = longest.max(start.elapsed());
                    }
                    turns[1 - me].store(round + 1, Ordering::Release);
                    bells[1 - me].ring();
                }
                longest
            })
        };
        let (first, second) = (player(0), player(1));
        let longest = first.join().unwrap().max(second.join().unwrap());
        assert!(longest < TIMEOUT, "a sleep lasted its whole time-out ({longest:?}): a ring was lost (asymmetric fences: {})", asymmetric_fences());
    }

    #[test]
    fn ring_after_prepare_makes_sleep_return_at_once() {
        let bell = Doorbell::new();
        let token = bell.prepare_sleep();
        bell.ring();
        let start = Instant::now();
        bell.sleep(token, Duration::from_secs(10));
        assert!(start.elapsed() < Duration::from_secs(5));
        bell.finish_sleep();
        let before = bell.counter.0.load(Ordering::Relaxed);
        bell.ring();
        assert_eq!(bell.counter.0.load(Ordering::Relaxed), before, "an awake receiver must not be rung");
    }
}
