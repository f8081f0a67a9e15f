//! Which synchronisation epochs of a window are open at this rank, and what that allows: a pure
//! state machine, the same for every access path. Failures are MPI_ERR_RMA_SYNC details.

/// A passive-target lock this rank holds on one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    Shared,
    Exclusive,
}

/// The epochs open at this rank on one window.
#[derive(Debug, Default)]
pub struct Epochs {
    /// A fence was called without MPI_MODE_NOSUCCEED: an active-target epoch may be open.
    fence: bool,
    /// Operations were issued since the last fence.
    fence_used: bool,
    /// Targets locked with MPI_Win_lock, by window rank (every operation looks here).
    locks: Vec<Option<LockKind>>,
    /// How many targets are locked.
    locked: usize,
    /// MPI_Win_lock_all is in effect.
    lock_all: bool,
    /// MPI_Win_start's group (window ranks), until MPI_Win_complete.
    access_group: Option<Vec<u32>>,
    /// MPI_Win_post's group (window ranks), until MPI_Win_wait or a successful MPI_Win_test.
    exposure_group: Option<Vec<u32>>,
}

impl Epochs {
    /// Whether an operation may target `target` now; the error detail otherwise. An operation in
    /// a fence epoch marks it used.
    pub fn check_access(&mut self, target: u32) -> Result<(), String> {
        if self.passive_to(target) {
            return Ok(());
        }
        if self.access_group.as_ref().is_some_and(|group| group.contains(&target)) {
            return Ok(());
        }
        if self.access_group.is_some() {
            return Err(format!("rank {target} is not in the group of MPI_Win_start"));
        }
        if self.fence {
            self.fence_used = true;
            return Ok(());
        }
        Err(format!("no access epoch to rank {target} is open (call MPI_Win_fence, MPI_Win_lock, MPI_Win_lock_all or MPI_Win_start first)"))
    }

    fn passive_open(&self) -> bool {
        self.lock_all || self.locked > 0
    }

    /// Whether a passive-target epoch to `target` is open (its lock, or lock_all, is held).
    #[inline]
    pub fn passive_to(&self, target: u32) -> bool {
        self.lock_all || self.locked(target)
    }

    fn locked(&self, target: u32) -> bool {
        self.locks.get(target as usize).is_some_and(Option::is_some)
    }

    /// A fence in a fence epoch whose operations are issued may not be mixed with other epochs.
    fn fence_busy(&self) -> bool {
        self.fence && self.fence_used
    }

    /// MPI_Win_fence with `nosucceed` (MPI_MODE_NOSUCCEED).
    pub fn fence(&mut self, nosucceed: bool) -> Result<(), String> {
        if self.passive_open() {
            return Err("MPI_Win_fence inside a passive-target epoch (a lock is held)".to_string());
        }
        if self.access_group.is_some() || self.exposure_group.is_some() {
            return Err("MPI_Win_fence inside a PSCW epoch (between MPI_Win_start/post and complete/wait)".to_string());
        }
        self.fence = !nosucceed;
        self.fence_used = false;
        Ok(())
    }

    /// Before a lock or a start: an unused fence epoch just ends.
    fn leave_idle_fence(&mut self, what: &str) -> Result<(), String> {
        if self.fence_busy() {
            return Err(format!("{what} inside a fence epoch with operations issued (end it with MPI_Win_fence(MPI_MODE_NOSUCCEED) first)"));
        }
        self.fence = false;
        Ok(())
    }

    pub fn lock(&mut self, target: u32, kind: LockKind) -> Result<(), String> {
        if self.lock_all {
            return Err("MPI_Win_lock while MPI_Win_lock_all is in effect".to_string());
        }
        if self.locked(target) {
            return Err(format!("rank {target} is already locked by this rank"));
        }
        if self.access_group.is_some() {
            return Err("MPI_Win_lock inside a PSCW access epoch".to_string());
        }
        self.leave_idle_fence("MPI_Win_lock")?;
        if self.locks.len() <= target as usize {
            self.locks.resize(target as usize + 1, None);
        }
        self.locks[target as usize] = Some(kind);
        self.locked += 1;
        Ok(())
    }

    pub fn unlock(&mut self, target: u32) -> Result<LockKind, String> {
        let kind = self.locks.get_mut(target as usize).and_then(Option::take).ok_or_else(|| format!("rank {target} is not locked by this rank (MPI_Win_unlock without MPI_Win_lock)"))?;
        self.locked -= 1;
        Ok(kind)
    }

    pub fn lock_all(&mut self) -> Result<(), String> {
        if self.lock_all || self.locked > 0 {
            return Err("MPI_Win_lock_all while a lock is held".to_string());
        }
        if self.access_group.is_some() {
            return Err("MPI_Win_lock_all inside a PSCW access epoch".to_string());
        }
        self.leave_idle_fence("MPI_Win_lock_all")?;
        self.lock_all = true;
        Ok(())
    }

    pub fn unlock_all(&mut self) -> Result<(), String> {
        if !self.lock_all {
            return Err("MPI_Win_unlock_all without MPI_Win_lock_all".to_string());
        }
        self.lock_all = false;
        Ok(())
    }

    /// Whether `target` is in a passive-target epoch (what flush needs).
    pub fn check_passive(&self, target: u32) -> Result<(), String> {
        if self.passive_to(target) {
            Ok(())
        } else {
            Err(format!("rank {target} is not locked by this rank (flush outside a passive-target epoch)"))
        }
    }

    /// Whether any passive-target epoch is open (flush_all needs one).
    pub fn check_any_passive(&self) -> Result<(), String> {
        if self.passive_open() {
            Ok(())
        } else {
            Err("no passive-target epoch is open (flush_all needs MPI_Win_lock or MPI_Win_lock_all)".to_string())
        }
    }

    pub fn start(&mut self, group: Vec<u32>) -> Result<(), String> {
        if self.access_group.is_some() {
            return Err("MPI_Win_start while an access epoch of MPI_Win_start is open".to_string());
        }
        if self.passive_open() {
            return Err("MPI_Win_start inside a passive-target epoch".to_string());
        }
        self.leave_idle_fence("MPI_Win_start")?;
        self.access_group = Some(group);
        Ok(())
    }

    /// MPI_Win_complete: the group of the access epoch it ends.
    pub fn complete(&mut self) -> Result<Vec<u32>, String> {
        self.access_group.take().ok_or_else(|| "MPI_Win_complete without MPI_Win_start".to_string())
    }

    pub fn post(&mut self, group: Vec<u32>) -> Result<(), String> {
        if self.exposure_group.is_some() {
            return Err("MPI_Win_post while an exposure epoch is open (call MPI_Win_wait first)".to_string());
        }
        if self.fence_busy() {
            return Err("MPI_Win_post inside a fence epoch with operations issued".to_string());
        }
        self.fence = false;
        self.exposure_group = Some(group);
        Ok(())
    }

    /// The group of the open exposure epoch (MPI_Win_wait and MPI_Win_test need one).
    pub fn exposure(&self) -> Result<&[u32], String> {
        self.exposure_group.as_deref().ok_or_else(|| "no exposure epoch is open (MPI_Win_wait or MPI_Win_test without MPI_Win_post)".to_string())
    }

    /// Ends the exposure epoch (MPI_Win_wait, or MPI_Win_test once it reports true).
    pub fn end_exposure(&mut self) {
        self.exposure_group = None;
    }

    /// MPI_Win_free: no epoch but an unused fence may be open.
    pub fn check_free(&self) -> Result<(), String> {
        if self.passive_open() {
            return Err("MPI_Win_free while a lock is held".to_string());
        }
        if self.access_group.is_some() || self.exposure_group.is_some() {
            return Err("MPI_Win_free inside a PSCW epoch".to_string());
        }
        if self.fence_busy() {
            return Err("MPI_Win_free inside a fence epoch with operations issued (end it with a fence first)".to_string());
        }
        Ok(())
    }
}

/// The lock of one target as the target keeps it (the `Messages` path): holders and a queue of
/// waiters granted in arrival order.
#[derive(Debug, Default)]
pub struct TargetLock {
    shared: u32,
    exclusive: bool,
    /// (origin window rank, request sequence number, kind), oldest first.
    waiting: std::collections::VecDeque<(u32, u32, LockKind)>,
}

impl TargetLock {
    fn grantable(&self, kind: LockKind) -> bool {
        match kind {
            LockKind::Shared => !self.exclusive,
            LockKind::Exclusive => !self.exclusive && self.shared == 0,
        }
    }

    fn take(&mut self, kind: LockKind) {
        match kind {
            LockKind::Shared => self.shared += 1,
            LockKind::Exclusive => self.exclusive = true,
        }
    }

    /// A lock request: true if granted now, else it waits its turn (behind earlier waiters, so
    /// that a stream of shared locks cannot starve an exclusive one).
    pub fn request(&mut self, origin: u32, sequence: u32, kind: LockKind) -> bool {
        if self.waiting.is_empty() && self.grantable(kind) {
            self.take(kind);
            return true;
        }
        self.waiting.push_back((origin, sequence, kind));
        false
    }

    /// Releases one hold of `kind`; returns the waiters granted as a result, in order.
    pub fn release(&mut self, kind: LockKind) -> Result<Vec<(u32, u32)>, String> {
        match kind {
            LockKind::Shared if self.shared > 0 => self.shared -= 1,
            LockKind::Exclusive if self.exclusive => self.exclusive = false,
            _ => return Err("unlock of a lock that is not held".to_string()),
        }
        let mut granted = Vec::new();
        while let Some(&(origin, sequence, kind)) = self.waiting.front() {
            if !self.grantable(kind) {
                break;
            }
            self.waiting.pop_front();
            self.take(kind);
            granted.push((origin, sequence));
        }
        Ok(granted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_need_an_access_epoch_to_their_target() {
        let mut epochs = Epochs::default();
        assert!(epochs.check_access(1).unwrap_err().contains("no access epoch"));
        epochs.fence(false).unwrap();
        epochs.check_access(1).unwrap();
        epochs.fence(true).unwrap();
        assert!(epochs.check_access(1).is_err(), "MPI_MODE_NOSUCCEED ends the epoch");
        epochs.lock(2, LockKind::Shared).unwrap();
        epochs.check_access(2).unwrap();
        assert!(epochs.check_access(1).is_err());
        assert_eq!(epochs.unlock(2).unwrap(), LockKind::Shared);
        assert!(epochs.unlock(2).unwrap_err().contains("not locked"));
    }

    #[test]
    fn a_used_fence_epoch_excludes_locks_and_an_idle_one_ends() {
        let mut epochs = Epochs::default();
        epochs.fence(false).unwrap();
        epochs.lock(0, LockKind::Exclusive).unwrap();
        assert!(epochs.fence(false).unwrap_err().contains("passive"));
        epochs.unlock(0).unwrap();
        epochs.fence(false).unwrap();
        epochs.check_access(0).unwrap();
        assert!(epochs.lock(0, LockKind::Shared).unwrap_err().contains("fence epoch"));
        assert!(epochs.check_free().is_err());
        epochs.fence(true).unwrap();
        epochs.check_free().unwrap();
    }

    #[test]
    fn lock_all_and_lock_exclude_each_other() {
        let mut epochs = Epochs::default();
        epochs.lock_all().unwrap();
        assert!(epochs.lock(1, LockKind::Shared).is_err());
        assert!(epochs.lock_all().is_err());
        epochs.check_passive(3).unwrap();
        epochs.check_any_passive().unwrap();
        assert!(epochs.check_free().is_err());
        epochs.unlock_all().unwrap();
        assert!(epochs.unlock_all().is_err());
        assert!(epochs.check_passive(3).is_err());
        assert!(epochs.check_any_passive().is_err());
    }

    #[test]
    fn pscw_epochs_pair_up() {
        let mut epochs = Epochs::default();
        assert!(epochs.complete().is_err());
        assert!(epochs.exposure().is_err());
        epochs.start(vec![1, 2]).unwrap();
        epochs.check_access(2).unwrap();
        assert!(epochs.check_access(0).unwrap_err().contains("MPI_Win_start"));
        assert!(epochs.start(vec![1]).is_err());
        epochs.post(vec![0]).unwrap();
        assert!(epochs.post(vec![0]).is_err());
        assert!(epochs.check_free().is_err());
        assert_eq!(epochs.complete().unwrap(), vec![1, 2]);
        assert_eq!(epochs.exposure().unwrap(), &[0]);
        epochs.end_exposure();
        epochs.check_free().unwrap();
    }

    #[test]
    fn target_locks_grant_in_order_without_starving_exclusive_requests() {
        let mut lock = TargetLock::default();
        assert!(lock.request(0, 1, LockKind::Shared));
        assert!(lock.request(1, 1, LockKind::Shared));
        assert!(!lock.request(2, 7, LockKind::Exclusive));
        assert!(!lock.request(3, 1, LockKind::Shared), "a shared request waits behind the exclusive one");
        assert_eq!(lock.release(LockKind::Shared).unwrap(), vec![]);
        assert_eq!(lock.release(LockKind::Shared).unwrap(), vec![(2, 7)]);
        assert_eq!(lock.release(LockKind::Exclusive).unwrap(), vec![(3, 1)]);
        assert!(lock.release(LockKind::Exclusive).is_err());
        assert_eq!(lock.release(LockKind::Shared).unwrap(), vec![]);
    }
}
