//! Drain-rate observation: while a rail stays busy, what it drained between two progress steps
//! (at the times the driver passes in) corrects its profile online.

use std::time::{Duration, Instant};

use braid_lane::PeerId;

use super::io::RailIo;
use super::machine::{Rail, RailMachine};

/// Shortest stretch of a busy rail taken as one drain observation: acknowledgements arrive in
/// bursts, so shorter stretches measure the bursts rather than the rail.
const DRAIN_OBSERVATION_MIN: Duration = Duration::from_micros(500);

impl RailMachine {
    /// Feeds each rail's rate estimator with what drained since the last observation. Only
    /// stretches during which the rail stayed busy count (an idle stretch would pass for a slow
    /// rail, and a backlog found empty emptied at some unknown moment), and only once
    /// `split_min` bytes drained over at least [`DRAIN_OBSERVATION_MIN`], and not the first such
    /// stretch after the rail was idle.
    pub(super) fn observe_rates(&mut self, now: Instant, io: &impl RailIo) {
        for (index, rail) in self.rails.iter_mut().enumerate() {
            // A socket waiting for room is busy: its stretch goes on, read when it has room.
            if rail.peers.is_empty() || rail.peers.iter().any(|&peer| !io.has_room(index, peer)) {
                continue;
            }
            let backlog: u64 = rail.peers.iter().map(|&peer| io.backlog(index, peer)).sum();
            if backlog == 0 {
                rail.peers.clear();
                continue;
            }
            let drained = (rail.backlog + rail.posted).saturating_sub(backlog);
            let elapsed = now.duration_since(rail.observed_at);
            if drained < self.observe_min || elapsed < DRAIN_OBSERVATION_MIN {
                continue;
            }
            if !std::mem::replace(&mut rail.first_stretch, false) {
                rail.rate.observe(drained, elapsed.as_nanos() as u64, &rail.profile);
            }
            rail.posted = 0;
            rail.backlog = backlog;
            rail.observed_at = now;
        }
    }
}

impl Rail {
    /// Starts counting `peer`'s backlog (`backlog` now) in this rail's drain observations; a
    /// rail seen idle starts a fresh observation at `now`.
    #[cold]
    pub(super) fn watch(&mut self, peer: PeerId, backlog: u64, now: Instant) {
        if self.peers.is_empty() {
            self.posted = 0;
            self.backlog = 0;
            self.observed_at = now;
            self.first_stretch = true;
        }
        self.backlog += backlog;
        self.peers.push(peer);
    }
}
