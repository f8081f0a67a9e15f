//! Multirail strategies (Brunet, Trahay and Denis 2008): how one peer's traffic is spread over several rails.
//!
//! Everything here is a pure function of what it is given — profiles, backlogs, observed drain
//! rates — so the unit tests drive it on a simulated network. The engine calls it when it sends
//! an eager frame (which rail, and whether to aggregate) and when a rendezvous payload is ready
//! to move (what split).
//!
//! The parts: [`build`] makes the strategy BRAID_STRATEGY names; a [`RateEstimator`] per rail
//! turns observed drains into [`RailView::rate_factor`]; an [`Aggregator`] per peer holds small
//! eager frames while their rail is busy (for strategies whose
//! [`MultirailStrategy::aggregates_eager`] says so); [`rendezvous_threshold`] and
//! [`offload_pays`] derive thresholds from the profiles; [`predicted_finish`],
//! [`split_finish`] and [`common_finish_time`] expose the predictions for logs and benchmarks.

mod aggregate;
mod rate;
mod strategies;
mod thresholds;
mod timing;

use braid_config::{Config, StrategyKind};
use braid_lane::Profile;

pub use aggregate::{Aggregator, Batch, Decision};
pub use rate::RateEstimator;
pub use thresholds::{offload_pays, rendezvous_threshold, RENDEZVOUS_THRESHOLD_MAX, RENDEZVOUS_THRESHOLD_MIN};
pub use timing::{common_finish_time, fastest_rail, predicted_finish, soonest_rail, split_finish, time_until_idle, transfer_time, usable_factor, RATE_FACTOR_MAX, RATE_FACTOR_MIN};

/// One rail toward one peer, as the strategy sees it at one instant.
#[derive(Debug, Clone, Copy)]
pub struct RailView<'a> {
    /// Sampled transfer time per size.
    pub profile: &'a Profile,
    /// Bytes queued on this rail and not yet drained (kernel queue plus our own).
    pub backlog_bytes: u64,
    /// Online correction of the profile's rate: observed drain rate / profiled rate (1.0 = as sampled).
    pub rate_factor: f64,
    /// The rail is connected and has not failed.
    pub up: bool,
    /// Nanoseconds a frame posted now waits in queues the path holds for other traffic,
    /// beyond its own latency (from the transport's round trips: the smoothed one less the least
    /// one); 0 where unknown. Only the eager rail's choice reads it: a small frame's time
    /// is that wait, while a split's chunks see other traffic as a lower drain rate, which
    /// `rate_factor` already holds.
    pub standing_delay_ns: f64,
}

/// A piece of a payload assigned to a rail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub rail: usize,
    pub offset: usize,
    pub len: usize,
}

/// A multirail strategy plug-in (chosen by BRAID_STRATEGY).
pub trait MultirailStrategy: Send {
    fn name(&self) -> &'static str;
    /// The rail that carries an eager message of `len` bytes and the control frames.
    fn eager_rail(&mut self, len: usize, rails: &[RailView<'_>]) -> usize;
    /// Splits a `len`-byte payload over the rails, appending the chunks (covering 0..len exactly,
    /// in offset order) to `out`.
    fn split(&mut self, len: usize, rails: &[RailView<'_>], out: &mut Vec<Chunk>);
    /// Whether small eager frames to a peer wait (in an [`Aggregator`]) for their busy rail
    /// rather than leaving at once.
    fn aggregates_eager(&self) -> bool {
        false
    }
    /// Most predicted drain time (ns) of chunk bytes the engine keeps handed to one rail; the
    /// rest of a split waits with the engine for [`MultirailStrategy::takeover`]. `None`: hand
    /// every chunk to its rail at once and never rebalance.
    fn queue_horizon_ns(&self) -> Option<f64> {
        None
    }
    /// How many bytes from the end of the `unposted` bytes assigned to rail `victim` (and not
    /// yet handed to it) rail `thief`, which has nothing left to send, should take over so that
    /// both are predicted to finish together; 0 leaves them where they are.
    fn takeover(&mut self, thief: usize, victim: usize, unposted: usize, rails: &[RailView<'_>]) -> usize {
        let _ = (thief, victim, unposted, rails);
        0
    }
}

/// The settings the strategies and their helpers use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplitSettings {
    /// Smallest chunk worth putting on an additional rail (BRAID_SPLIT_MIN).
    pub split_min: usize,
    /// Weight of the newest observation in [`RateEstimator`] (BRAID_RATE_SMOOTHING).
    pub rate_smoothing: f64,
    /// Most bytes in one aggregated eager packet. There is no setting of its own: a packet is
    /// at most one eager message long (BRAID_EAGER_MAX), a size every rail was sampled at.
    pub aggregate_max: usize,
    /// Most predicted drain time (ns) queued on one rail by `hetero` (BRAID_RAIL_QUEUE_US; 0: no
    /// limit and no rebalancing).
    pub queue_horizon_ns: f64,
}

impl SplitSettings {
    pub fn from_config(config: &Config) -> SplitSettings {
        SplitSettings { split_min: config.split_min.max(1), rate_smoothing: config.rate_smoothing, aggregate_max: config.eager_max.max(1), queue_horizon_ns: config.rail_queue_us as f64 * 1e3 }
    }

    /// A rate estimator for one rail.
    pub fn rate_estimator(&self) -> RateEstimator {
        RateEstimator::new(self.rate_smoothing)
    }

    /// An aggregator for one peer.
    pub fn aggregator(&self) -> Aggregator {
        Aggregator::new(self.aggregate_max)
    }
}

impl Default for SplitSettings {
    fn default() -> SplitSettings {
        SplitSettings::from_config(&Config::default())
    }
}

/// The strategy BRAID_STRATEGY names.
pub fn build(kind: StrategyKind, settings: SplitSettings) -> Box<dyn MultirailStrategy> {
    let split_min = settings.split_min.max(1);
    match kind {
        StrategyKind::Single => Box::new(strategies::Single),
        StrategyKind::Greedy => Box::new(strategies::Greedy),
        StrategyKind::Iso => Box::new(strategies::Iso { split_min }),
        StrategyKind::Weighted => Box::new(strategies::Weighted { split_min }),
        StrategyKind::Hetero => Box::new(strategies::Hetero { split_min, queue_horizon_ns: Some(settings.queue_horizon_ns).filter(|&horizon| horizon > 0.0) }),
    }
}
