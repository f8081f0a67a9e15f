//! A second thread that copies part of a large copy alongside the caller, on CPUs the caller
//! names (idle ones: spare CPUs of the node, or those of a rank that sleeps in a blocking call).
//! One core copying a buffer of the size of its L2 cache into shared memory runs at its own
//! cache bandwidth; two cores each copying a half move the bytes about 1.5 times as fast.
//!
//! The hand-over is one job slot: a state word and the job's fields. The caller posts the tail of
//! its copy, copies the head, then either takes the tail back (the assistant had not claimed it:
//! it was parked, descheduled, or late) or waits for the assistant to finish it. An absent
//! assistant therefore costs the caller a compare-and-swap, never a wait; and the caller returns
//! only once nobody touches its buffers any more. The protocol is checked by loom
//! (`RUSTFLAGS="--cfg loom" cargo test -p braid-transport --release --target-dir target/loom
//! copy_assist`).
//!
//! An idle assistant watches the slot for `spin` (so a stream of copies keeps it awake), then
//! parks on the state word's futex; the caller wakes it when it posts. A wake-up arrives late for
//! the copy that sent it (which the caller then finishes alone) but in time for the next one.

#[cfg(loom)]
use loom::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};

/// No job.
const EMPTY: u32 = 0;
/// A job waits to be claimed (or taken back).
const POSTED: u32 = 1;
/// The assistant copies the job.
const CLAIMED: u32 = 2;
/// The assistant finished the job; the caller clears the slot.
const DONE: u32 = 3;
/// The assistant ends.
const STOP: u32 = 4;

/// The job slot shared by the caller and the assistant.
#[derive(Debug, Default)]
struct Slot {
    state: AtomicU32,
    from: AtomicUsize,
    to: AtomicUsize,
    len: AtomicUsize,
    /// The assistant sleeps (or is about to) on `state`'s futex.
    parked: AtomicU32,
    /// Jobs the assistant finished.
    helped: AtomicUsize,
}

impl Slot {
    /// Caller: posts a job (the slot is `EMPTY`); true if the assistant must be woken.
    fn post(&self, from: usize, to: usize, len: usize) -> bool {
        self.from.store(from, Ordering::Relaxed);
        self.to.store(to, Ordering::Relaxed);
        self.len.store(len, Ordering::Relaxed);
        self.state.store(POSTED, Ordering::Release);
        // Either the assistant's look at the state after announcing its sleep sees the job, or
        // this load sees the announcement (pairs with the fence in `announce_park`).
        fence(Ordering::SeqCst);
        self.parked.load(Ordering::Relaxed) != 0
    }

    /// Assistant: takes the posted job, if there is one: (from, to, len).
    fn claim(&self) -> Option<(usize, usize, usize)> {
        self.state.compare_exchange(POSTED, CLAIMED, Ordering::Acquire, Ordering::Relaxed).ok()?;
        Some((self.from.load(Ordering::Relaxed), self.to.load(Ordering::Relaxed), self.len.load(Ordering::Relaxed)))
    }

    /// Assistant: the claimed job is copied; it touches neither buffer again.
    fn finish(&self) {
        self.helped.fetch_add(1, Ordering::Relaxed);
        self.state.store(DONE, Ordering::Release);
    }

    /// Caller: takes its posted job back if the assistant has not claimed it (the caller then
    /// copies it); the slot is `EMPTY` again.
    fn take_back(&self) -> bool {
        self.state.compare_exchange(POSTED, EMPTY, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// Caller: whether the claimed job is finished (its bytes are then visible to the caller).
    fn is_done(&self) -> bool {
        self.state.load(Ordering::Acquire) == DONE
    }

    /// Caller: empties a finished slot for the next job.
    fn clear(&self) {
        self.state.store(EMPTY, Ordering::Relaxed);
    }

    /// Assistant: announces that it is about to sleep; returns the state to sleep on, or None
    /// if there is work (or a stop) after all.
    fn announce_park(&self) -> Option<u32> {
        self.parked.store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        match self.state.load(Ordering::Relaxed) {
            POSTED | STOP => {
                self.parked.store(0, Ordering::Relaxed);
                None
            }
            state => Some(state),
        }
    }

    fn end_park(&self) {
        self.parked.store(0, Ordering::Relaxed);
    }
}

pub use thread::CopyAssistant;

mod thread {
    use std::sync::Arc;
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    use braid_sys::{affinity, process};

    use super::{AtomicU32, Ordering, Slot, STOP};

    /// Longest single park; the assistant then looks at the slot again (a lost wake-up can only
    /// delay help, never a copy).
    #[cfg(not(loom))]
    const PARK_MAX: Duration = Duration::from_millis(100);

    /// Spins of a caller waiting for the assistant's part before it yields its CPU instead.
    const SPINS_BEFORE_YIELD: u32 = 1 << 14;

    /// A helper thread for large copies. Dropping it stops and joins the thread.
    pub struct CopyAssistant {
        slot: Arc<Slot>,
        thread: Option<JoinHandle<()>>,
        /// The assistant's kernel thread id, for moving it.
        tid: u32,
        /// The CPUs it was last moved to.
        placed_on: Vec<usize>,
    }

    impl CopyAssistant {
        /// Starts the thread; once idle, it watches for work for `spin`, then parks.
        pub fn start(spin: Duration) -> std::io::Result<CopyAssistant> {
            let slot = Arc::new(Slot::default());
            let (sender, receiver) = std::sync::mpsc::channel();
            let thread = {
                let slot = Arc::clone(&slot);
                std::thread::Builder::new().name("braid-copy".into()).spawn(move || {
                    let _ = sender.send(process::thread_id());
                    serve(&slot, spin);
                })?
            };
            let tid = receiver.recv().map_err(|_| std::io::Error::other("the copy assistant thread ended at once"))?;
            Ok(CopyAssistant { slot, thread: Some(thread), tid, placed_on: Vec::new() })
        }

        /// Copies `len` bytes from `from` to `to` with the assistant, moved to `cpus` first, doing
        /// the part from `head` on (rounded to a cache line) if it takes it in time. Returns when
        /// every byte is copied.
        ///
        /// # Safety
        /// As `std::ptr::copy_nonoverlapping`: `from` readable and `to` writable for `len` bytes,
        /// the two ranges disjoint, and nothing else writing either during the call.
        pub unsafe fn copy(&mut self, from: *const u8, to: *mut u8, len: usize, head: usize, cpus: &[usize]) {
            let head = (head.min(len) + 63) & !63;
            if head >= len {
                // SAFETY: per the caller.
                unsafe { std::ptr::copy_nonoverlapping(from, to, len) };
                return;
            }
            self.place(cpus);
            let tail = len - head;
            if self.slot.post(from as usize + head, to as usize + head, tail) {
                wake(&self.slot.state);
            }
            // SAFETY: per the caller; the head and tail are disjoint, and the assistant touches
            // only the tail.
            unsafe { std::ptr::copy_nonoverlapping(from, to, head) };
            if self.slot.take_back() {
                // SAFETY: as above; the assistant never claimed the tail.
                unsafe { std::ptr::copy_nonoverlapping(from.add(head), to.add(head), tail) };
                return;
            }
            // The assistant is usually done within a spin or two; a long wait means it shares
            // this CPU (its placement was refused), so it gets the CPU.
            let mut spins = 0u32;
            while !self.slot.is_done() {
                if spins < SPINS_BEFORE_YIELD {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            self.slot.clear();
        }

        /// How many tails the assistant has copied.
        pub fn helped(&self) -> usize {
            self.slot.helped.load(Ordering::Relaxed)
        }

        /// Moves the assistant to `cpus` unless it is there already (a system call, so only on
        /// a change). A refusal leaves it where it was: help from a busier CPU is still help.
        fn place(&mut self, cpus: &[usize]) {
            if !cpus.is_empty() && self.placed_on != cpus {
                let _ = affinity::set_process(self.tid, cpus);
                self.placed_on = cpus.to_vec();
            }
        }
    }

    impl Drop for CopyAssistant {
        fn drop(&mut self) {
            self.slot.state.store(STOP, Ordering::Release);
            wake(&self.slot.state);
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }

    /// The assistant's loop: copy claimed jobs; spin for `spin` after the last, then park.
    fn serve(slot: &Slot, spin: Duration) {
        let mut idle_since = Instant::now();
        loop {
            if let Some((from, to, len)) = slot.claim() {
                // SAFETY: the caller posted a tail it may copy (see `CopyAssistant::copy`), and
                // it waits for `finish` before it returns.
                unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, len) };
                slot.finish();
                idle_since = Instant::now();
                continue;
            }
            if slot.state.load(Ordering::Acquire) == STOP {
                return;
            }
            if idle_since.elapsed() < spin {
                std::hint::spin_loop();
                continue;
            }
            if let Some(state) = slot.announce_park() {
                park(&slot.state, state);
                slot.end_park();
            }
            idle_since = Instant::now();
        }
    }

    /// Sleeps while `word` holds `value`, at most [`PARK_MAX`].
    #[cfg(not(loom))]
    fn park(word: &AtomicU32, value: u32) {
        let _ = braid_sys::futex::wait(word, value, Some(PARK_MAX));
    }

    /// Wakes the assistant parked on `word`.
    #[cfg(not(loom))]
    fn wake(word: &AtomicU32) {
        braid_sys::futex::wake(word, 1);
    }

    // Under loom the slot's words are the model's, which no futex can watch; the model checks
    // the slot alone, so its builds only need these to compile.
    #[cfg(loom)]
    fn park(_: &AtomicU32, _: u32) {
        std::thread::yield_now();
    }

    #[cfg(loom)]
    fn wake(_: &AtomicU32) {}

    #[cfg(all(test, not(loom)))]
    mod tests {
        use super::*;

        fn pattern(len: usize) -> Vec<u8> {
            (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
        }

        #[test]
        fn every_byte_arrives_whoever_copies_it() {
            let mut assistant = CopyAssistant::start(Duration::from_millis(5)).unwrap();
            let cpus = affinity::calling_thread().unwrap();
            for len in [0, 1, 63, 64, 65, 4096, 100_003, 1 << 20] {
                for head in [0, 1, len / 3, len / 2, len] {
                    let source = pattern(len);
                    let mut target = vec![0u8; len];
                    // SAFETY: both vectors hold `len` bytes and are distinct.
                    unsafe { assistant.copy(source.as_ptr(), target.as_mut_ptr(), len, head, &cpus) };
                    assert!(source == target, "len {len} head {head}");
                }
            }
        }

        /// Copies 4 MiB with the assistant until it has taken a tail, for at most `patience`.
        fn copies_until_helped(assistant: &mut CopyAssistant, patience: Duration) -> bool {
            let len = 4 << 20;
            let source = pattern(len);
            let mut target = vec![0u8; len];
            let before = assistant.helped();
            let start = Instant::now();
            while assistant.helped() == before && start.elapsed() < patience {
                target.fill(0);
                // SAFETY: both vectors hold `len` bytes and are distinct.
                unsafe { assistant.copy(source.as_ptr(), target.as_mut_ptr(), len, len / 2, &[]) };
                assert!(source == target);
            }
            assistant.helped() > before
        }

        #[test]
        fn an_awake_assistant_takes_tails() {
            let mut assistant = CopyAssistant::start(Duration::from_secs(1)).unwrap();
            assert!(copies_until_helped(&mut assistant, Duration::from_secs(10)));
        }

        #[test]
        fn a_parked_assistant_helps_again_once_woken() {
            let mut assistant = CopyAssistant::start(Duration::from_millis(2)).unwrap();
            for _ in 0..3 {
                let idle = Instant::now();
                while assistant.slot.parked.load(Ordering::Relaxed) == 0 && idle.elapsed() < Duration::from_secs(10) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                assert!(assistant.slot.parked.load(Ordering::Relaxed) != 0, "the idle assistant parks");
                assert!(copies_until_helped(&mut assistant, Duration::from_secs(10)));
            }
        }
    }
}

/// Exhaustive model checks of the hand-over: the tail is copied exactly once, by the assistant or
/// by the caller, never while the other touches it, and the caller returns only after it.
#[cfg(all(test, loom))]
mod model {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    /// Every interleaving of `model`, with no preemption bound.
    fn exhaustively(model: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = None;
        builder.check(model);
    }

    #[test]
    fn the_tail_is_copied_once_and_before_the_caller_returns() {
        exhaustively(|| {
            let slot = Arc::new(Slot::default());
            let tail = Arc::new(UnsafeCell::new(0u32));
            let assistant = {
                let (slot, tail) = (Arc::clone(&slot), Arc::clone(&tail));
                loom::thread::spawn(move || {
                    // Two looks at the slot, one after a park announcement, as the thread does.
                    for _ in 0..2 {
                        if let Some((from, to, len)) = slot.claim() {
                            assert_eq!((from, to, len), (1, 2, 3));
                            // SAFETY: loom checks that no other access overlaps this one.
                            tail.with_mut(|bytes| unsafe { *bytes += 1 });
                            slot.finish();
                            return;
                        }
                        if slot.announce_park().is_some() {
                            slot.end_park();
                        }
                    }
                })
            };
            let _wake = slot.post(1, 2, 3);
            if slot.take_back() {
                // SAFETY: as above.
                tail.with_mut(|bytes| unsafe { *bytes += 1 });
            } else {
                while !slot.is_done() {
                    loom::thread::yield_now();
                }
                slot.clear();
            }
            // The caller reads the tail as its own again: loom reports it if the assistant could
            // still be writing it.
            // SAFETY: as above.
            assert_eq!(tail.with(|bytes| unsafe { *bytes }), 1);
            assistant.join().unwrap();
            // SAFETY: as above.
            assert_eq!(tail.with(|bytes| unsafe { *bytes }), 1);
        });
    }

    #[test]
    fn a_park_announcement_never_hides_a_posted_job() {
        exhaustively(|| {
            let slot = Arc::new(Slot::default());
            let assistant = {
                let slot = Arc::clone(&slot);
                loom::thread::spawn(move || slot.announce_park().is_none())
            };
            let must_wake = slot.post(1, 2, 3);
            let saw_the_job = assistant.join().unwrap();
            // A sleeper that missed the job must have been seen by the poster, who wakes it.
            assert!(saw_the_job || must_wake);
        });
    }
}
