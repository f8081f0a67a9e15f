//! Noticing a rank of this node whose process has ended before the job did, or the end of the
//! launcher itself. A launcher that watches its ranks (braid run, Hydra, mpirun, srun
//! --mpi=pmix) ends the job itself and says which rank died; one that does not (srun
//! --mpi=pmi2) would leave the others waiting forever, and a launcher killed with SIGKILL would
//! leave its ranks running. So a waiter checks, every `BRAID_PEER_CHECK_MS` while it blocks, and
//! gives up only when the same rank (or the launcher) is found ended twice in a row: the
//! launcher, which usually acts within milliseconds, has its turn first. Free of I/O: the engine
//! passes in what the transports and the kernel say.

use std::time::{Duration, Instant};

use crate::EngineError;

pub(crate) struct PeerWatch {
    /// How often to look; `None`: never.
    interval: Option<Duration>,
    next: Instant,
    /// The rank found ended at the last look.
    suspect: Option<u32>,
    /// The process that started this rank (its launcher, or the launcher's agent), watched in a
    /// job of more than one rank; and whether the last look found it gone.
    parent: Option<i32>,
    orphaned: bool,
}

impl PeerWatch {
    pub(crate) fn new(interval_ms: u32, now: Instant, parent: Option<i32>) -> PeerWatch {
        let interval = (interval_ms > 0).then(|| Duration::from_millis(interval_ms.into()));
        PeerWatch { interval, next: now + interval.unwrap_or_default(), suspect: None, parent, orphaned: false }
    }

    /// Whether it is time to look again (and, if so, the next look is scheduled).
    pub(crate) fn due(&mut self, now: Instant) -> bool {
        let Some(interval) = self.interval else { return false };
        if now < self.next {
            return false;
        }
        self.next = now + interval;
        true
    }

    /// Judges a look: `ended` is a rank whose process the transports found ended, with what is
    /// known. The second look in a row that finds the same rank fails the wait.
    pub(crate) fn judge(&mut self, ended: Option<(u32, String)>) -> Result<(), EngineError> {
        match ended {
            Some((rank, reason)) if self.suspect == Some(rank) => Err(EngineError::Unreachable { rank, reason: format!("{reason} before the job did") }),
            Some((rank, _)) => {
                self.suspect = Some(rank);
                Ok(())
            }
            None => {
                self.suspect = None;
                Ok(())
            }
        }
    }

    /// Judges a look at this process's parent (`now`: its pid as the kernel says now): a parent
    /// other than the one that started the rank, twice in a row, means the launcher ended.
    pub(crate) fn judge_parent(&mut self, now: i32) -> Result<(), EngineError> {
        let Some(parent) = self.parent else { return Ok(()) };
        if now == parent {
            self.orphaned = false;
            return Ok(());
        }
        if self.orphaned {
            return Err(EngineError::Transport(format!("the process that started this rank (pid {parent}) ended: the launcher is gone, so this rank ends")));
        }
        self.orphaned = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_are_spaced_by_the_interval_and_off_at_zero() {
        let start = Instant::now();
        let mut watch = PeerWatch::new(250, start, None);
        assert!(!watch.due(start + Duration::from_millis(100)));
        assert!(watch.due(start + Duration::from_millis(250)));
        assert!(!watch.due(start + Duration::from_millis(400)));
        assert!(watch.due(start + Duration::from_millis(500)));
        let mut off = PeerWatch::new(0, start, None);
        assert!(!off.due(start + Duration::from_secs(3600)));
    }

    #[test]
    fn a_rank_fails_the_wait_only_when_found_ended_twice_in_a_row() {
        let mut watch = PeerWatch::new(250, Instant::now(), None);
        let ended = |rank: u32| Some((rank, format!("its process (pid {}) ended", 100 + rank)));
        assert!(watch.judge(ended(1)).is_ok(), "the launcher gets one interval first");
        assert!(watch.judge(None).is_ok());
        assert!(watch.judge(ended(1)).is_ok(), "a look that found nothing in between starts over");
        assert!(watch.judge(ended(2)).is_ok(), "another rank starts over");
        match watch.judge(ended(2)) {
            Err(EngineError::Unreachable { rank: 2, reason }) => assert!(reason.contains("pid 102"), "{reason}"),
            other => panic!("expected rank 2 to fail the wait, got {other:?}"),
        }
    }

    #[test]
    fn a_launcher_is_gone_when_the_parent_changed_on_two_looks() {
        let mut watch = PeerWatch::new(250, Instant::now(), Some(4242));
        assert!(watch.judge_parent(4242).is_ok());
        assert!(watch.judge_parent(1).is_ok(), "one look is not enough");
        assert!(watch.judge_parent(4242).is_ok(), "back again: starts over");
        assert!(watch.judge_parent(1).is_ok());
        match watch.judge_parent(1) {
            Err(EngineError::Transport(reason)) => assert!(reason.contains("pid 4242"), "{reason}"),
            other => panic!("expected the launcher's end to fail the wait, got {other:?}"),
        }
        let mut alone = PeerWatch::new(250, Instant::now(), None);
        assert!(alone.judge_parent(1).is_ok() && alone.judge_parent(1).is_ok(), "a singleton has no launcher to lose");
    }
}
