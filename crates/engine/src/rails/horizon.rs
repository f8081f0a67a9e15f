//! How far ahead chunks are queued on a rail: the strategy's horizon, raised to outlast this
//! rank's recent absences from progress, and at most a share of the predicted time of the
//! transfers in flight.

use std::time::{Duration, Instant};

use braid_strategy::multirail;

use super::machine::RailMachine;

/// While one transfer is alone in flight, each rail queues at most 1/`LONE_TRANSFER_DIVISOR` of
/// its predicted time ahead: the rest of it waits to go on whichever rail drains first, so a
/// rail slowed by other traffic after the split (whose corrected rate lags) does not hold the
/// whole transfer up. The cap comes before the raise for the rank's absences: a rank that is
/// away while its one transfer's rails run dry stalls the whole message.
const LONE_TRANSFER_DIVISOR: f64 = 2.0;

/// While several transfers are in flight (a stream, or a window of them), each rail queues at
/// most 1/`STREAM_DIVISOR` of their combined predicted time, after the raise for absences: no
/// limit early in a long stream, and as it ends the queues shrink with it, so that the last
/// bytes go to whichever rail drains first rather than wait behind a whole (raised) horizon on a
/// rail whose rate was predicted too high. 3 is the best of 1.5 to 4 on the simulated network.
const STREAM_DIVISOR: f64 = 3.0;

impl RailMachine {
    /// The horizon (ns) chunks are queued to now, or None when the strategy posts everything.
    pub(super) fn queue_horizon_ns(&self) -> Option<f64> {
        let horizon = self.strategy.queue_horizon_ns()?;
        Some(match self.transfers.as_slice() {
            [] => self.gaps.horizon_ns(horizon),
            [lone] => self.gaps.horizon_ns(horizon.min(self.predicted_ns(lone.data.len()) / LONE_TRANSFER_DIVISOR)),
            transfers => {
                let in_flight: usize = transfers.iter().map(|transfer| transfer.data.len()).sum();
                self.gaps.horizon_ns(horizon).min(self.predicted_ns(in_flight) / STREAM_DIVISOR)
            }
        })
    }

    /// Predicted time (ns) to move `bytes` over every rail at once at their corrected rates.
    fn predicted_ns(&self, bytes: usize) -> f64 {
        let rate: f64 = self.rails.iter().map(|rail| rail.profile.bandwidth() * multirail::usable_factor(rail.rate.factor())).sum();
        bytes as f64 * 1e9 / rate
    }
}

/// A rail's queue must outlast the rank's absences: a rank descheduled (or computing) for a
/// while posts nothing meanwhile, and a rail whose queue ran out stays idle until it returns.
/// The longest recent gap between two progress steps with chunks outstanding is kept, and
/// halved every [`GAP_HALF_LIFE`] that brings no longer one; the strategy's queue horizon is
/// raised to [`GAP_COVER`] times it, at most to [`GAP_HORIZON_MAX`].
#[derive(Debug, Default)]
pub(super) struct ProgressGaps {
    pub(super) last_step: Option<Instant>,
    pub(super) longest: Duration,
    pub(super) longest_at: Option<Instant>,
}

pub(super) const GAP_HALF_LIFE: Duration = Duration::from_millis(200);
pub(super) const GAP_COVER: u32 = 2;
pub(super) const GAP_HORIZON_MAX: Duration = Duration::from_millis(50);

impl ProgressGaps {
    /// A progress step at `now` with chunks outstanding.
    pub(super) fn step(&mut self, now: Instant) {
        if let Some(last) = self.last_step.replace(now) {
            let gap = now.saturating_duration_since(last);
            let since_longest = self.longest_at.map_or(Duration::MAX, |at| now.saturating_duration_since(at));
            if gap >= self.longest {
                self.longest = gap;
                self.longest_at = Some(now);
            } else if since_longest >= GAP_HALF_LIFE {
                self.longest /= 2;
                self.longest_at = Some(now);
            }
        }
    }

    /// The rank slept, planning to be back by `planned`: only a later return is an absence (a
    /// sleep ends by itself when the rails need the rank).
    pub(super) fn slept_until(&mut self, planned: Instant) {
        if let Some(last) = self.last_step {
            self.last_step = Some(last.max(planned));
        }
    }

    /// Nothing outstanding: the time until the next chunk is not an absence.
    pub(super) fn idle(&mut self) {
        self.last_step = None;
    }

    /// `horizon_ns`, raised to cover the recent gaps.
    pub(super) fn horizon_ns(&self, horizon_ns: f64) -> f64 {
        let cover = (self.longest * GAP_COVER).min(GAP_HORIZON_MAX);
        horizon_ns.max(cover.as_nanos() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn queue_horizon_covers_recent_absences_and_forgets_them() {
        let base = 5e6;
        let mut gaps = ProgressGaps::default();
        let mut now = Instant::now();
        gaps.step(now);
        assert_eq!(gaps.horizon_ns(base), base);
        now += Duration::from_millis(12);
        gaps.step(now);
        assert_eq!(gaps.horizon_ns(base), 24e6);
        // Steps close together: the 12 ms absence is halved every half-life.
        for _ in 0..(GAP_HALF_LIFE.as_millis() + 1) {
            now += Duration::from_millis(1);
            gaps.step(now);
        }
        assert_eq!(gaps.horizon_ns(base), 12e6);
        for _ in 0..(4 * GAP_HALF_LIFE.as_millis()) {
            now += Duration::from_millis(1);
            gaps.step(now);
        }
        assert_eq!(gaps.horizon_ns(base), base);
        // Time with nothing outstanding is not an absence; a very long one is capped.
        gaps.idle();
        now += Duration::from_secs(1);
        gaps.step(now);
        assert_eq!(gaps.horizon_ns(base), base);
        now += Duration::from_secs(1);
        gaps.step(now);
        assert_eq!(gaps.horizon_ns(base), GAP_HORIZON_MAX.as_nanos() as f64);
    }

    #[test]
    fn a_planned_sleep_is_no_absence_but_oversleeping_is() {
        let base = 5e6;
        let mut gaps = ProgressGaps::default();
        let mut now = Instant::now();
        gaps.step(now);
        gaps.slept_until(now + Duration::from_millis(20));
        now += Duration::from_millis(20);
        gaps.step(now);
        assert_eq!(gaps.horizon_ns(base), base, "a 20 ms sleep as planned");
        gaps.slept_until(now + Duration::from_millis(10));
        now += Duration::from_millis(13);
        gaps.step(now);
        assert_eq!(gaps.horizon_ns(base), 6e6, "back 3 ms late: covered twice");
        gaps.idle();
        gaps.slept_until(now + Duration::from_millis(10));
        assert_eq!(gaps.last_step, None, "nothing outstanding: nothing to extend");
    }
}
