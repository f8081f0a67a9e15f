//! Sleeping on the rails: one epoll set holds every rail transport's doorbell, so a waiting rank
//! sleeps on all its rails at once (the driver's part), and the rail set's core says how long it
//! may sleep before the rails need it while no frame arrives: until a rail holding chunk bytes
//! back has drained far enough under its queue cap to take a refill (`Rail::refill`), or a rail
//! with none left has drained dry enough to take over or hedge.

use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Duration;

use braid_lane::PeerId;
use braid_strategy::multirail;
use braid_sys::event::EventCounter;
use braid_sys::net::Poller;
use braid_transport::Transport;

use super::io::RailIo;
use super::machine::{Rail, RailMachine};
use super::transfer::{fill_waiting_bytes, QUEUED_FRAME_MIN};

/// Every rail's doorbell in one epoll set, with a counter in it that the process's other threads
/// signal to wake a thread asleep on the set (MPI_THREAD_MULTIPLE). Shared with that thread,
/// which sleeps without holding the engine.
pub(crate) struct RailDoorbells {
    set: Poller,
    wake: EventCounter,
}

/// One epoll set holding the doorbell of every rail in `links`; `None` if some rail has none
/// (the rank then keeps polling) or there are no rails.
pub(super) fn open(links: &[Box<dyn Transport>]) -> Option<Arc<RailDoorbells>> {
    if links.is_empty() {
        return None;
    }
    let mut set = Poller::new(links.len() + 1).ok()?;
    for (index, link) in links.iter().enumerate() {
        set.add(link.doorbell()?, index as u64).ok()?;
    }
    let wake = EventCounter::new().ok()?;
    set.add(wake.as_fd(), links.len() as u64).ok()?;
    Some(Arc::new(RailDoorbells { set, wake }))
}

impl RailDoorbells {
    /// Sleeps until a rail's doorbell rings, another thread calls [`RailDoorbells::wake`], or
    /// `timeout` passes.
    pub(crate) fn sleep(&self, timeout: Duration) {
        let _ = self.set.sleep(timeout);
    }

    /// Wakes a thread of this process asleep on the set.
    pub(crate) fn wake(&self) {
        self.wake.signal();
    }

    /// Takes back a wake-up that nobody slept through, so that the next sleep is not cut short.
    pub(crate) fn clear_wake(&self) {
        self.wake.clear();
    }
}

impl RailMachine {
    /// How long this rank may sleep when nothing arrives, as far as the rails are concerned:
    /// `None` when only arrivals matter (no transfer of ours in flight); zero when it must not
    /// sleep. A connection waiting for room is left out: its doorbell rings when it has some.
    pub(crate) fn sleep_limit(&self, io: &impl RailIo) -> Option<Duration> {
        if self.transfers.is_empty() {
            return None;
        }
        let mut waiting = self.waiting_scratch.take();
        fill_waiting_bytes(&self.transfers, self.rails.len(), &mut waiting);
        let limit = self.sleep_limit_with(io, &waiting);
        self.waiting_scratch.set(waiting);
        limit
    }

    /// [`RailMachine::sleep_limit`] with `waiting[rail]`, the chunk bytes each rail has not
    /// taken yet.
    fn sleep_limit_with(&self, io: &impl RailIo, waiting: &[u64]) -> Option<Duration> {
        let horizon = self.queue_horizon_ns();
        let mut limit: Option<Duration> = None;
        let mut previous: Option<PeerId> = None;
        for transfer in &self.transfers {
            // What decides the sleep is the peer's rails, not which of its transfers: a window of
            // transfers to one peer is looked at once.
            if previous.replace(transfer.peer) == Some(transfer.peer) {
                continue;
            }
            let Some(state) = self.peers.get(transfer.peer as usize).and_then(Option::as_ref) else { continue };
            for (index, rail) in self.rails.iter().enumerate() {
                if !state.rail_up[index] || !io.has_room(index, transfer.peer) {
                    continue;
                }
                let backlog = io.backlog(index, transfer.peer);
                let excess = if waiting[index] > 0 {
                    // Without a horizon every chunk is posted until the socket is full, or
                    // posted by offload workers, which ring no doorbell: keep polling.
                    let Some(horizon) = horizon else { return Some(Duration::ZERO) };
                    // Until a refill's worth of room is free under the cap; at least one
                    // frame's time (the last step could not post).
                    let cap = rail.queue_cap(horizon);
                    (backlog + rail.refill(cap, self.refill_share)).saturating_sub(cap).max(QUEUED_FRAME_MIN as u64)
                } else {
                    let dry = rail.frame_min();
                    if backlog <= dry {
                        continue;
                    }
                    backlog - dry
                };
                let time = rail.drain_time(excess);
                limit = Some(limit.map_or(time, |limit| limit.min(time)));
            }
        }
        limit
    }
}

impl Rail {
    /// How long this rail takes to drain `bytes`, at its sustained rate as corrected online.
    fn drain_time(&self, bytes: u64) -> Duration {
        let rate = self.profile.bandwidth() * multirail::usable_factor(self.rate.factor());
        let seconds = bytes as f64 / rate;
        if seconds.is_finite() && seconds > 0.0 {
            Duration::from_secs_f64(seconds.min(1.0))
        } else {
            Duration::ZERO
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_lane::Profile;
    use braid_strategy::multirail::SplitSettings;
    use std::time::Instant;

    #[test]
    fn drain_time_follows_the_rail_rate() {
        let settings = SplitSettings::from_config(&braid_config::Config::default());
        let rail = Rail {
            profile: Profile::from_model(10_000.0, 250e6, 16 << 20),
            rate: settings.rate_estimator(),
            chunk_max: 1 << 20,
            posted: 0,
            backlog: 0,
            observed_at: Instant::now(),
            peers: Vec::new(),
            first_stretch: false,
        };
        let time = rail.drain_time(2_500_000);
        assert!((time.as_secs_f64() - 0.01).abs() < 0.001, "{time:?}");
        assert_eq!(rail.drain_time(0), Duration::ZERO);
    }
}
