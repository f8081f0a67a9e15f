//! A lane's performance profile: transfer time sampled at power-of-two sizes, and the
//! prediction of any size's transfer time by log lookup and linear interpolation (Brunet, Trahay and Denis 2008).

/// One measurement: moving `size` bytes took `nanos` nanoseconds (one-way, end to end).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub size: usize,
    pub nanos: f64,
}

/// Samples at sizes 0, 1, 2, 4, ... (index `i` holds size `2^(i-1)`, index 0 holds size 0).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Profile {
    samples: Vec<Sample>,
}

impl Profile {
    /// A profile from samples sorted by size at 0 and powers of two, contiguous from 0.
    pub fn from_samples(samples: Vec<Sample>) -> Profile {
        debug_assert!(samples.iter().enumerate().all(|(i, s)| s.size == sample_size(i)));
        Profile { samples }
    }

    /// An estimated profile from a latency and a bandwidth (before anything is measured).
    pub fn from_model(latency_nanos: f64, bytes_per_second: f64, largest: usize) -> Profile {
        let count = index_of(largest.next_power_of_two()) + 1;
        let samples = (0..count)
            .map(|i| {
                let size = sample_size(i);
                Sample { size, nanos: latency_nanos + size as f64 * 1e9 / bytes_per_second }
            })
            .collect();
        Profile { samples }
    }

    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    /// Predicted time in nanoseconds to move `size` bytes: the two neighbouring samples found by
    /// log2, interpolated linearly; beyond the last sample, extrapolated at the last slope.
    pub fn predict(&self, size: usize) -> f64 {
        match self.samples.len() {
            0 => 0.0,
            1 => self.samples[0].nanos,
            len => {
                let upper = index_of(size.next_power_of_two()).clamp(1, len - 1);
                let (a, b) = (self.samples[upper - 1], self.samples[upper]);
                let slope = (b.nanos - a.nanos) / (b.size - a.size) as f64;
                (a.nanos + slope * (size as f64 - a.size as f64)).max(0.0)
            }
        }
    }

    /// Asymptotic bandwidth in bytes per second, from the two largest samples.
    pub fn bandwidth(&self) -> f64 {
        let len = self.samples.len();
        if len < 2 {
            return f64::INFINITY;
        }
        let (a, b) = (self.samples[len - 2], self.samples[len - 1]);
        (b.size - a.size) as f64 * 1e9 / (b.nanos - a.nanos).max(f64::MIN_POSITIVE)
    }
}

/// The size of the sample at `index` in every profile: 0, then 1, 2, 4, ...
pub fn sample_size(index: usize) -> usize {
    if index == 0 {
        0
    } else {
        1 << (index - 1)
    }
}

fn index_of(power_of_two_size: usize) -> usize {
    if power_of_two_size == 0 {
        0
    } else {
        power_of_two_size.trailing_zeros() as usize + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_profile_is_exact_at_samples_and_between() {
        let profile = Profile::from_model(1000.0, 1e9, 1 << 20);
        assert_eq!(profile.predict(0), 1000.0);
        assert_eq!(profile.predict(1024), 1000.0 + 1024.0);
        assert!((profile.predict(3000) - 4000.0).abs() < 1e-6);
        assert!((profile.predict(4 << 20) - (1000.0 + (4 << 20) as f64)).abs() < 1e-3);
        assert!((profile.bandwidth() - 1e9).abs() < 1.0);
    }

    #[test]
    fn interpolation_uses_the_neighbours() {
        let samples = vec![Sample { size: 0, nanos: 10.0 }, Sample { size: 1, nanos: 10.0 }, Sample { size: 2, nanos: 20.0 }, Sample { size: 4, nanos: 60.0 }];
        let profile = Profile::from_samples(samples);
        assert_eq!(profile.predict(3), 40.0);
        assert_eq!(profile.predict(8), 140.0);
    }

    #[test]
    fn sample_sizes_are_zero_then_powers_of_two() {
        assert_eq!((0..6).map(sample_size).collect::<Vec<_>>(), [0, 1, 2, 4, 8, 16]);
        let profile = Profile::from_model(10.0, 1e9, 100);
        assert!(profile.samples().iter().enumerate().all(|(i, s)| s.size == sample_size(i)));
        assert_eq!(profile.samples().last().unwrap().size, 128, "the model reaches the power of two at or above `largest`");
    }
}
