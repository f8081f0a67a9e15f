//! Predicted times on one rail: when it frees up, how long a chunk takes once it does, and the
//! inverse (how many bytes fit in a time budget). Seed 004, section III-C.

use braid_lane::Profile;

use super::{Chunk, RailView};

/// Rate factors are held within these bounds so that every predicted time stays finite: a rail
/// observed a thousand times slower than sampled is treated as exactly that slow, which is
/// enough for every strategy to avoid it.
pub const RATE_FACTOR_MIN: f64 = 1.0 / 1024.0;
/// A rail never counts as more than four times faster than it was sampled: observations that
/// suggest more are drains into a socket buffer, not the wire.
pub const RATE_FACTOR_MAX: f64 = 4.0;

/// The rail's rate factor as the predictions use it (unset or nonsense reads as "as sampled").
pub fn usable_factor(rate_factor: f64) -> f64 {
    if rate_factor.is_nan() {
        1.0
    } else {
        rate_factor.clamp(RATE_FACTOR_MIN, RATE_FACTOR_MAX)
    }
}

/// Nanoseconds until the rail has drained its backlog: backlog / (bandwidth x rate factor).
pub fn time_until_idle(rail: &RailView<'_>) -> f64 {
    if rail.backlog_bytes == 0 {
        return 0.0;
    }
    let bandwidth = rail.profile.bandwidth();
    if bandwidth.is_infinite() {
        return 0.0;
    }
    rail.backlog_bytes as f64 * 1e9 / (bandwidth * usable_factor(rail.rate_factor))
}

/// Nanoseconds to move `len` bytes once the rail is idle: the sampled latency plus the
/// size-dependent part of the profile, slowed (or sped up) by the observed rate factor.
///
/// The size-dependent part is never taken as faster than the profile's sustained bandwidth: a
/// shaped link lets an idle burst through at once, which the samples of medium sizes catch,
/// but that credit is gone as soon as the link is in use (streams, ping-pongs, other chunks).
pub fn transfer_time(rail: &RailView<'_>, len: usize) -> f64 {
    let latency = rail.profile.predict(0);
    latency + sustained_part(rail.profile, latency, len) / usable_factor(rail.rate_factor)
}

/// The profile's size-dependent time for `len` bytes, at least `len` at its sustained bandwidth.
fn sustained_part(profile: &Profile, latency: f64, len: usize) -> f64 {
    let at_bandwidth = len as f64 * 1e9 / profile.bandwidth();
    (profile.predict(len) - latency).max(0.0).max(at_bandwidth)
}

/// Nanoseconds from now until `len` bytes handed to this rail now have arrived.
pub fn predicted_finish(rail: &RailView<'_>, len: usize) -> f64 {
    time_until_idle(rail) + transfer_time(rail, len)
}

/// Nanoseconds from now until the last of `chunks` has arrived (0 for no chunks).
pub fn split_finish(chunks: &[Chunk], rails: &[RailView<'_>]) -> f64 {
    chunks.iter().map(|chunk| predicted_finish(&rails[chunk.rail], chunk.len)).fold(0.0, f64::max)
}

/// The up rail that delivers `len` bytes soonest, counting its backlog; `None` if no rail is up.
pub fn soonest_rail(len: usize, rails: &[RailView<'_>]) -> Option<usize> {
    argmin_up(rails, |rail| predicted_finish(rail, len))
}

/// The up rail whose profile moves `len` bytes fastest, ignoring load; `None` if no rail is up.
pub fn fastest_rail(len: usize, rails: &[RailView<'_>]) -> Option<usize> {
    argmin_up(rails, |rail| rail.profile.predict(len))
}

pub(crate) fn argmin_up(rails: &[RailView<'_>], cost: impl Fn(&RailView<'_>) -> f64) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (index, rail) in rails.iter().enumerate().filter(|(_, rail)| rail.up) {
        let value = cost(rail);
        if best.is_none_or(|(_, lowest)| value < lowest) {
            best = Some((index, value));
        }
    }
    best.map(|(index, _)| index)
}

/// The smallest common finish time T (nanoseconds from now) by which the up rails together can
/// deliver `len` bytes, each rail carrying the largest chunk it can finish by T; found by
/// dichotomy on T (narrowed by false position). This is what `hetero` aims every chunk at;
/// `None` if no rail is up.
pub fn common_finish_time(len: usize, rails: &[RailView<'_>]) -> Option<f64> {
    let up = rails.iter().enumerate().filter(|(_, rail)| rail.up).map(|(index, _)| index);
    common_finish(len, rails, up)
}

/// Relative width of the bracket on T at which the search stops: far below the 1% that matters.
const FINISH_PRECISION: f64 = 1e-6;
/// Absolute width (ns) at which it stops for tiny transfers.
const FINISH_PRECISION_NS: f64 = 0.5;
/// Bound on the search steps; halving alone would exhaust an f64 in 64.
const FINISH_STEPS_MAX: u32 = 64;

/// [`common_finish_time`] over the rails listed by `candidates`.
///
/// The bytes the rails can carry by T grow with T, piecewise linearly (the profiles are), so the
/// bracket [low, high] around the answer is narrowed by false position with the Illinois
/// correction, falling back to halving: a handful of steps instead of some forty.
pub(crate) fn common_finish<I>(len: usize, rails: &[RailView<'_>], candidates: I) -> Option<f64>
where
    I: Iterator<Item = usize> + Clone,
{
    let mut low = f64::INFINITY;
    let mut high = f64::INFINITY;
    for rail in candidates.clone() {
        let view = &rails[rail];
        let idle = time_until_idle(view);
        low = low.min(idle + transfer_time(view, 0));
        high = high.min(idle + transfer_time(view, len));
    }
    if high.is_infinite() {
        return None;
    }
    let wanted = len as f64;
    let excess = |finish: f64| candidates.clone().map(|rail| capacity_by(&rails[rail], finish, len)).sum::<f64>() - wanted;
    let mut excess_low = excess(low);
    if excess_low >= 0.0 {
        return Some(low);
    }
    let mut excess_high = excess(high).max(f64::MIN_POSITIVE);
    let mut last_moved_high = None;
    for _ in 0..FINISH_STEPS_MAX {
        if high - low <= (high * FINISH_PRECISION).max(FINISH_PRECISION_NS) {
            break;
        }
        let secant = high - excess_high * (high - low) / (excess_high - excess_low);
        let probe = if secant > low && secant < high { secant } else { 0.5 * (low + high) };
        let at_probe = excess(probe);
        if at_probe >= 0.0 {
            high = probe;
            if at_probe <= wanted * FINISH_PRECISION {
                break;
            }
            excess_high = at_probe;
            if last_moved_high == Some(true) {
                excess_low *= 0.5;
            }
            last_moved_high = Some(true);
        } else {
            low = probe;
            excess_low = at_probe;
            if last_moved_high == Some(false) {
                excess_high *= 0.5;
            }
            last_moved_high = Some(false);
        }
    }
    Some(high)
}

/// The most bytes (at most `cap`) this rail can deliver by `finish` ns from now.
pub(crate) fn capacity_by(rail: &RailView<'_>, finish: f64, cap: usize) -> f64 {
    let budget = finish - time_until_idle(rail);
    let latency = rail.profile.predict(0);
    if budget < latency {
        return 0.0;
    }
    // transfer_time(x) <= budget  <=>  predict(x) <= latency + (budget - latency) * factor
    // and x / bandwidth <= (budget - latency) * factor (see `sustained_part`).
    let factor = usable_factor(rail.rate_factor);
    let target = latency + (budget - latency) * factor;
    let at_bandwidth = (budget - latency) * factor * rail.profile.bandwidth() / 1e9;
    inverse_predict(rail.profile, target).min(at_bandwidth).min(cap as f64)
}

/// The size at which the profile's prediction first exceeds `target_ns` (the inverse of the
/// piecewise-linear prediction; infinite when it never does).
pub(crate) fn inverse_predict(profile: &Profile, target_ns: f64) -> f64 {
    let samples = profile.samples();
    match samples {
        [] => f64::INFINITY,
        [only] => {
            if target_ns >= only.nanos {
                f64::INFINITY
            } else {
                0.0
            }
        }
        [first, ..] if first.nanos > target_ns => 0.0,
        _ => {
            let crossing = samples.windows(2).find(|pair| pair[1].nanos > target_ns);
            let (a, b) = match crossing {
                Some(pair) => (pair[0], pair[1]),
                None => (samples[samples.len() - 2], samples[samples.len() - 1]),
            };
            let slope = (b.nanos - a.nanos) / (b.size - a.size) as f64;
            if slope <= 0.0 {
                return f64::INFINITY;
            }
            a.size as f64 + (target_ns - a.nanos) / slope
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_lane::Sample;

    fn view(profile: &Profile, backlog_bytes: u64, rate_factor: f64) -> RailView<'_> {
        RailView { profile, backlog_bytes, rate_factor, up: true, standing_delay_ns: 0.0 }
    }

    #[test]
    fn inverse_prediction_undoes_prediction() {
        let profile = Profile::from_model(20_000.0, 125e6, 1 << 24);
        for size in [0usize, 1, 7, 100, 4096, 65_537, 1 << 20, 3 << 22, 1 << 26] {
            let back = inverse_predict(&profile, profile.predict(size));
            assert!((back - size as f64).abs() <= 1e-6 * size as f64 + 1e-3 || size == 0, "{size}: {back}");
        }
        assert_eq!(inverse_predict(&profile, 19_999.0), 0.0);
    }

    #[test]
    fn inverse_of_a_noisy_profile_takes_the_first_crossing() {
        let samples = vec![Sample { size: 0, nanos: 10.0 }, Sample { size: 1, nanos: 30.0 }, Sample { size: 2, nanos: 20.0 }, Sample { size: 4, nanos: 60.0 }];
        let profile = Profile::from_samples(samples);
        assert!((inverse_predict(&profile, 20.0) - 0.5).abs() < 1e-9);
        assert!((inverse_predict(&profile, 100.0) - 6.0).abs() < 1e-9);
    }

    #[test]
    fn backlog_and_rate_factor_delay_a_rail() {
        let profile = Profile::from_model(10_000.0, 1e9, 1 << 22);
        assert_eq!(time_until_idle(&view(&profile, 0, 0.5)), 0.0);
        assert!((time_until_idle(&view(&profile, 1_000_000, 1.0)) - 1e6).abs() < 1.0);
        assert!((time_until_idle(&view(&profile, 1_000_000, 0.5)) - 2e6).abs() < 1.0);
        assert!((transfer_time(&view(&profile, 0, 0.5), 1 << 20) - (10_000.0 + 2.0 * (1 << 20) as f64)).abs() < 1.0);
        assert!((predicted_finish(&view(&profile, 1000, f64::NAN), 1000) - 12_000.0).abs() < 1e-6);
    }

    #[test]
    fn an_idle_burst_in_the_samples_is_not_counted_on() {
        // Sampled on a shaped link: 64 KiB went through in a burst, at 4x the sustained rate.
        let mut samples: Vec<Sample> = Profile::from_model(10_000.0, 1e8, 1 << 22).samples().to_vec();
        let burst = samples.iter_mut().find(|sample| sample.size == 1 << 16).unwrap();
        burst.nanos = 10_000.0 + (1 << 16) as f64 * 1e9 / 4e8;
        let profile = Profile::from_samples(samples);
        let rail = view(&profile, 0, 1.0);
        let sustained = 10_000.0 + (1 << 16) as f64 * 1e9 / 1e8;
        assert!((transfer_time(&rail, 1 << 16) - sustained).abs() < 1.0);
        assert!((capacity_by(&rail, sustained, usize::MAX) - (1 << 16) as f64).abs() < 1.0);
    }

    #[test]
    fn common_finish_time_balances_two_equal_rails() {
        let profile = Profile::from_model(10_000.0, 1e9, 1 << 22);
        let rails = [view(&profile, 0, 1.0), view(&profile, 0, 1.0)];
        let finish = common_finish_time(2_000_000, &rails).unwrap();
        assert!((finish - 1_010_000.0).abs() < 2.0, "{finish}");
        let down = [RailView { up: false, ..rails[0] }];
        assert_eq!(common_finish_time(10, &down), None);
    }
}
