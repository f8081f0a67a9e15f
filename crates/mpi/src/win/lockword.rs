//! The `Direct` path's locks: words in the window's shared segment that origins take with atomic
//! operations, the target taking no part. One word per target for MPI_Win_lock (a count of shared
//! holders, or [`EXCLUSIVE`]) and one for accumulate atomicity (0 free, 1 held).
//!
//! Checked with loom: `RUSTFLAGS="--cfg loom" cargo test -p braid-mpi --release --target-dir target/loom lockword`.

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};

use super::sync::LockKind;

/// A lock word (loom's model of one under loom, where only this module's tests run).
pub type Word = AtomicU64;

/// The lock word's value while an exclusive lock is held.
pub const EXCLUSIVE: u64 = u64::MAX;

/// One attempt to take the window lock: true if taken. Acquire on success: the holder sees what
/// the previous holders wrote before releasing.
pub fn try_lock(word: &AtomicU64, kind: LockKind) -> bool {
    match kind {
        LockKind::Exclusive => word.compare_exchange(0, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed).is_ok(),
        LockKind::Shared => {
            let current = word.load(Ordering::Relaxed);
            current != EXCLUSIVE && current + 1 != EXCLUSIVE && word.compare_exchange(current, current + 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
        }
    }
}

/// Releases a lock taken with [`try_lock`]. Release: the next holder sees this holder's writes.
pub fn unlock(word: &AtomicU64, kind: LockKind) {
    match kind {
        LockKind::Exclusive => word.store(0, Ordering::Release),
        LockKind::Shared => {
            word.fetch_sub(1, Ordering::Release);
        }
    }
}

/// One attempt to take the accumulate lock.
pub fn try_lock_accumulate(word: &AtomicU64) -> bool {
    word.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
}

pub fn unlock_accumulate(word: &AtomicU64) {
    word.store(0, Ordering::Release);
}

/// The accumulate lock, held until dropped.
pub struct AccumulateLock<'a>(&'a AtomicU64);

impl<'a> AccumulateLock<'a> {
    /// Spins until the accumulate lock `word` is taken (its holders hold it for one operation).
    pub fn take(word: &'a AtomicU64) -> AccumulateLock<'a> {
        while !try_lock_accumulate(word) {
            std::hint::spin_loop();
        }
        AccumulateLock(word)
    }
}

impl Drop for AccumulateLock<'_> {
    fn drop(&mut self) {
        unlock_accumulate(self.0);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn shared_holders_exclude_an_exclusive_one() {
        let word = AtomicU64::new(0);
        assert!(try_lock(&word, LockKind::Shared));
        assert!(try_lock(&word, LockKind::Shared));
        assert!(!try_lock(&word, LockKind::Exclusive));
        unlock(&word, LockKind::Shared);
        unlock(&word, LockKind::Shared);
        assert!(try_lock(&word, LockKind::Exclusive));
        assert!(!try_lock(&word, LockKind::Shared));
        unlock(&word, LockKind::Exclusive);
        assert_eq!(word.load(Ordering::Relaxed), 0);
        assert!(try_lock_accumulate(&word));
        assert!(!try_lock_accumulate(&word));
        unlock_accumulate(&word);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    /// Two origins increment a counter under exclusive locks: no increment is lost, and a shared
    /// holder afterwards sees both.
    #[test]
    fn exclusive_holders_do_not_overlap() {
        loom::model(|| {
            let state = Arc::new((AtomicU64::new(0), UnsafeCell::new(0u64)));
            let other = state.clone();
            let writer = loom::thread::spawn(move || {
                while !try_lock(&other.0, LockKind::Exclusive) {
                    loom::thread::yield_now();
                }
                // SAFETY: the exclusive lock is held.
                other.1.with_mut(|value| unsafe { *value += 1 });
                unlock(&other.0, LockKind::Exclusive);
            });
            while !try_lock(&state.0, LockKind::Exclusive) {
                loom::thread::yield_now();
            }
            // SAFETY: the exclusive lock is held.
            state.1.with_mut(|value| unsafe { *value += 1 });
            unlock(&state.0, LockKind::Exclusive);
            writer.join().unwrap();
            while !try_lock(&state.0, LockKind::Shared) {
                loom::thread::yield_now();
            }
            // SAFETY: a shared lock is held.
            assert_eq!(state.1.with(|value| unsafe { *value }), 2);
            unlock(&state.0, LockKind::Shared);
        });
    }

    /// A shared holder and an exclusive one never hold together.
    #[test]
    fn shared_and_exclusive_exclude_each_other() {
        loom::model(|| {
            let state = Arc::new((AtomicU64::new(0), UnsafeCell::new(0u64)));
            let other = state.clone();
            let reader = loom::thread::spawn(move || {
                while !try_lock(&other.0, LockKind::Shared) {
                    loom::thread::yield_now();
                }
                // SAFETY: a shared lock is held.
                let seen = other.1.with(|value| unsafe { *value });
                unlock(&other.0, LockKind::Shared);
                assert!(seen == 0 || seen == 2, "a reader saw a half-done update: {seen}");
            });
            while !try_lock(&state.0, LockKind::Exclusive) {
                loom::thread::yield_now();
            }
            // SAFETY: the exclusive lock is held.
            state.1.with_mut(|value| unsafe { *value = 1 });
            // SAFETY: as above.
            state.1.with_mut(|value| unsafe { *value = 2 });
            unlock(&state.0, LockKind::Exclusive);
            reader.join().unwrap();
        });
    }
}
