//! Online correction of a rail's profiled rate from how fast its recent chunks really drained,
//! so that a rail slowed by other traffic is given less.

use braid_lane::Profile;

use super::timing::{RATE_FACTOR_MAX, RATE_FACTOR_MIN};

/// Observed / profiled drain rate for one rail, from exponentially weighted sums of the bytes
/// drained and the time taken. Averaging the per-observation rates instead would overstate the
/// rate: acknowledgements arrive in bursts, so short stretches that end on a burst read fast,
/// and the mean of ratios gives them the weight of long ones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateEstimator {
    smoothing: f64,
    /// Smoothed bytes drained and nanoseconds taken; both zero until the first observation.
    bytes: f64,
    elapsed_ns: f64,
    factor: f64,
}

impl RateEstimator {
    /// An estimator that trusts the profile until told otherwise; `smoothing` (BRAID_RATE_SMOOTHING)
    /// is the weight of each new observation, within (0, 1].
    pub fn new(smoothing: f64) -> RateEstimator {
        let smoothing = if smoothing.is_nan() { 1.0 } else { smoothing.clamp(f64::MIN_POSITIVE, 1.0) };
        RateEstimator { smoothing, bytes: 0.0, elapsed_ns: 0.0, factor: 1.0 }
    }

    /// Records that the rail drained `bytes` in `elapsed_ns` while it stayed busy. A drain in
    /// mid-stream moves at the rail's sustained rate, so it is compared with the profile's
    /// large-message bandwidth (not with the profiled time of a message of that size, which
    /// on a shaped link includes the burst an idle link lets through at once). Empty or instant
    /// drains, and rails without a finite bandwidth, say nothing and are ignored.
    pub fn observe(&mut self, bytes: u64, elapsed_ns: u64, profile: &Profile) {
        let bandwidth = profile.bandwidth();
        if bytes == 0 || elapsed_ns == 0 || !(bandwidth > 0.0 && bandwidth.is_finite()) {
            return;
        }
        if self.elapsed_ns == 0.0 {
            // The profile is the prior: as if a drain as long as this one had gone at its rate.
            (self.bytes, self.elapsed_ns) = (bandwidth * elapsed_ns as f64 / 1e9, elapsed_ns as f64);
        }
        self.bytes += self.smoothing * (bytes as f64 - self.bytes);
        self.elapsed_ns += self.smoothing * (elapsed_ns as f64 - self.elapsed_ns);
        let observed_rate = self.bytes * 1e9 / self.elapsed_ns;
        self.factor = (observed_rate / bandwidth).clamp(RATE_FACTOR_MIN, RATE_FACTOR_MAX);
    }

    /// Observed / profiled drain rate (1.0 until something was observed); goes into
    /// [`super::RailView::rate_factor`].
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// Forgets the observations (the rail was re-sampled or reconnected).
    pub fn reset(&mut self) {
        *self = RateEstimator::new(self.smoothing);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converges_to_the_observed_ratio_at_the_smoothing_pace() {
        let profile = Profile::from_model(50_000.0, 250e6, 1 << 24);
        let mut estimator = RateEstimator::new(0.25);
        assert_eq!(estimator.factor(), 1.0);
        // 1 MiB at half the sampled rate: 8 ms instead of 4 ms.
        let half_rate_ns = (2.0 * (1u64 << 20) as f64 * 1e9 / profile.bandwidth()) as u64;
        estimator.observe(1 << 20, half_rate_ns, &profile);
        assert!((estimator.factor() - 0.875).abs() < 1e-6, "{}", estimator.factor());
        for _ in 0..40 {
            estimator.observe(1 << 20, half_rate_ns, &profile);
        }
        assert!((estimator.factor() - 0.5).abs() < 1e-3);
        estimator.observe(0, 5, &profile);
        estimator.observe(5, 0, &profile);
        assert!((estimator.factor() - 0.5).abs() < 1e-3);
        estimator.reset();
        assert_eq!(estimator.factor(), 1.0);
    }

    #[test]
    fn bursty_acknowledgements_do_not_inflate_the_rate() {
        // A 250 Mbit/s rail whose acknowledgements come in bursts: short stretches that end on
        // a burst alternate with long ones that end on a small ack. The mean of their rates is
        // 1.7x the profile; the rail drains at the profile's rate, and the estimate swings
        // around that with each burst.
        let profile = Profile::from_model(50_000.0, 31.1e6, 1 << 24);
        let mut estimator = RateEstimator::new(0.25);
        let long_ns = 1_600_000;
        let short_ns = 500_000;
        let long_bytes = 17_896;
        let short_bytes = (profile.bandwidth() * (long_ns + short_ns) as f64 / 1e9) as u64 - long_bytes;
        let mut factors = Vec::new();
        for _ in 0..100 {
            estimator.observe(long_bytes, long_ns, &profile);
            factors.push(estimator.factor());
            estimator.observe(short_bytes, short_ns, &profile);
            factors.push(estimator.factor());
        }
        let mean = factors.iter().sum::<f64>() / factors.len() as f64;
        assert!((mean - 1.0).abs() < 0.05, "mean factor {mean}");
        assert!(factors.iter().all(|factor| (factor - 1.0).abs() < 0.25), "{factors:?}");
    }

    #[test]
    fn absurd_observations_are_bounded() {
        let profile = Profile::from_model(50_000.0, 250e6, 1 << 24);
        let mut estimator = RateEstimator::new(1.0);
        estimator.observe(1 << 20, 1, &profile);
        assert_eq!(estimator.factor(), RATE_FACTOR_MAX);
        estimator.observe(1, u64::MAX, &profile);
        assert_eq!(estimator.factor(), RATE_FACTOR_MIN);
    }
}
