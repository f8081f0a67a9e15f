//! Large puts and gets on targets reached by loads and stores, copied by two cores: the calling
//! rank copies one half, a helper thread ([`CopyAssistant`]) the other, on a CPU that no running
//! rank needs (a spare one, or the target's while it sleeps in a blocking call; the engine tells
//! which). One core's copy stops at its own cache bandwidth, so this is the one way a single put
//! gets faster than a `memcpy` (Panda 2007: a copy onloaded to an idle core). The helper starts
//! with the first such copy; a copy it does not take in time the caller finishes alone.

use std::cell::{RefCell, RefMut};
use std::time::Duration;

use braid_config::Config;
use braid_engine::Engine;
use braid_transport::shm::copy_assist::CopyAssistant;

/// The share of a copy the caller keeps: half, as both cores copy at the same rate.
const CALLER_SHARE_DIVISOR: usize = 2;

/// Whether and when large copies are shared, and the helper once started.
pub struct CopyHelper {
    enabled: bool,
    min: usize,
    spin: Duration,
    /// None until the first shared copy; `Err` if the thread could not be started (then every
    /// copy is the caller's).
    assistant: RefCell<Option<Result<CopyAssistant, ()>>>,
}

impl CopyHelper {
    pub fn new(config: &Config) -> CopyHelper {
        CopyHelper { enabled: config.copy_assist, min: config.copy_assist_min, spin: Duration::from_micros(config.copy_assist_spin_us.into()), assistant: RefCell::new(None) }
    }

    /// Whether a copy of `len` bytes is large enough to ask for help with.
    #[inline]
    pub fn may_take(&self, len: usize) -> bool {
        self.enabled && len >= self.min
    }

    /// Copies `len` bytes from `from` to `to` for an operation on `peer`'s window (a job rank),
    /// shared with the helper when the ranges are disjoint and a CPU is idle ([`Self::may_take`]
    /// said the size is worth it).
    ///
    /// # Safety
    /// As `std::ptr::copy`: `from` readable and `to` writable for `len` bytes, nothing else
    /// writing either during the call.
    #[cold]
    pub unsafe fn copy(&self, engine: &Engine, peer: u32, from: *const u8, to: *mut u8, len: usize) {
        let cpus = if disjoint(from as usize, to as usize, len) { engine.idle_cpus_beside(peer) } else { None };
        if let Some((cpus, mut assistant)) = cpus.and_then(|cpus| Some((cpus, self.assistant()?))) {
            // SAFETY: per the caller, and the ranges are disjoint (checked above).
            unsafe { assistant.copy(from, to, len, len / CALLER_SHARE_DIVISOR, cpus) };
        } else {
            // SAFETY: per the caller.
            unsafe { std::ptr::copy(from, to, len) };
        }
    }

    /// The helper, started at the first call; None if it could not be started (or, impossible
    /// below MPI_THREAD_MULTIPLE's runtime lock, another copy is using it).
    fn assistant(&self) -> Option<RefMut<'_, CopyAssistant>> {
        let slot = self.assistant.try_borrow_mut().ok()?;
        RefMut::filter_map(slot, |slot| slot.get_or_insert_with(|| CopyAssistant::start(self.spin).map_err(|_| ())).as_mut().ok()).ok()
    }
}

/// Whether `[a, a + len)` and `[b, b + len)` do not overlap.
fn disjoint(a: usize, b: usize, len: usize) -> bool {
    a.abs_diff(b) >= len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ranges_apart_by_their_length_are_disjoint() {
        assert!(disjoint(0, 100, 100));
        assert!(disjoint(100, 0, 100));
        assert!(!disjoint(0, 99, 100));
        assert!(!disjoint(99, 0, 100));
        assert!(!disjoint(5, 5, 1));
    }
}
