//! A transport's performance profile: transfer time sampled at power-of-two sizes, and the
//! prediction of any size's transfer time by log lookup and linear interpolation (seed 004).
//!
//! Sampled profiles are cached in small text files, one per rail identity (see
//! [`identity_file`]): a comment line, then one `size nanos` line per sample.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

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
        debug_assert!(samples.iter().enumerate().all(|(i, s)| s.size == size_at(i)));
        Profile { samples }
    }

    /// An estimated profile from a latency and a bandwidth (before anything is measured).
    pub fn from_model(latency_nanos: f64, bytes_per_second: f64, largest: usize) -> Profile {
        let count = index_of(largest.next_power_of_two()) + 1;
        let samples = (0..count)
            .map(|i| {
                let size = size_at(i);
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

/// First line of a profile file.
const FILE_HEADING: &str = "# braid profile: size_bytes one_way_nanos";

impl Profile {
    /// Writes the samples to `path` (creating its directory), replacing any previous file
    /// atomically: a concurrent reader sees the old or the new profile, never half of one.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut text = format!("{FILE_HEADING}\n");
        for sample in &self.samples {
            text.push_str(&format!("{} {}\n", sample.size, sample.nanos));
        }
        let mut temporary = path.as_os_str().to_owned();
        temporary.push(format!(".tmp{}", std::process::id()));
        let temporary = PathBuf::from(temporary);
        let written = std::fs::File::create(&temporary).and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.sync_all()
        });
        match written.and_then(|()| std::fs::rename(&temporary, path)) {
            Ok(()) => Ok(()),
            Err(error) => {
                let _ = std::fs::remove_file(&temporary);
                Err(error)
            }
        }
    }

    /// Reads a profile written by [`Profile::save`]. A file that is not a non-empty list of
    /// samples at sizes 0, 1, 2, 4, ... with finite non-negative times is `InvalidData`.
    pub fn load(path: &Path) -> io::Result<Profile> {
        let text = std::fs::read_to_string(path)?;
        let invalid = |line: usize, why: &str| io::Error::new(io::ErrorKind::InvalidData, format!("{}:{line}: {why}", path.display()));
        let mut samples = Vec::new();
        for (number, line) in text.lines().enumerate().map(|(i, line)| (i + 1, line.trim())) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let (Some(size), Some(nanos), None) = (fields.next(), fields.next(), fields.next()) else {
                return Err(invalid(number, "expected `size nanos`"));
            };
            let size: usize = size.parse().map_err(|_| invalid(number, "size is not an integer"))?;
            let nanos: f64 = nanos.parse().map_err(|_| invalid(number, "time is not a number"))?;
            if size != size_at(samples.len()) {
                return Err(invalid(number, &format!("expected the sample of size {}", size_at(samples.len()))));
            }
            if !nanos.is_finite() || nanos < 0.0 {
                return Err(invalid(number, "time must be finite and non-negative"));
            }
            samples.push(Sample { size, nanos });
        }
        if samples.is_empty() {
            return Err(invalid(0, "no samples"));
        }
        Ok(Profile { samples })
    }
}

/// The file caching the profile of the rail named `identity` (interface, addresses, MTU: a
/// changed network gets a fresh file): `<dir>/<identity>.profile`, with every character outside
/// `[A-Za-z0-9._-]` replaced by `_`.
pub fn identity_file(dir: &Path, identity: &str) -> PathBuf {
    let name: String = identity.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect();
    let name = if name.is_empty() || name.starts_with('.') { format!("_{name}") } else { name };
    dir.join(format!("{name}.profile"))
}

fn size_at(index: usize) -> usize {
    if index == 0 { 0 } else { 1 << (index - 1) }
}

fn index_of(power_of_two_size: usize) -> usize {
    if power_of_two_size == 0 { 0 } else { power_of_two_size.trailing_zeros() as usize + 1 }
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
        let samples = vec![
            Sample { size: 0, nanos: 10.0 },
            Sample { size: 1, nanos: 10.0 },
            Sample { size: 2, nanos: 20.0 },
            Sample { size: 4, nanos: 60.0 },
        ];
        let profile = Profile::from_samples(samples);
        assert_eq!(profile.predict(3), 40.0);
        assert_eq!(profile.predict(8), 140.0);
    }

    fn scratch_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("braid-profile-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn saved_profiles_load_back_exactly() {
        let dir = scratch_dir("roundtrip");
        let path = identity_file(&dir.join("nested"), "eth1-10.1.0.2-10.1.0.0/24-mtu1500");
        assert_eq!(path.file_name().unwrap(), "eth1-10.1.0.2-10.1.0.0_24-mtu1500.profile");
        let profile = Profile::from_samples(vec![Sample { size: 0, nanos: 12.5 }, Sample { size: 1, nanos: 13.0 }, Sample { size: 2, nanos: 1.0 / 3.0 }]);
        profile.save(&path).unwrap();
        assert_eq!(Profile::load(&path).unwrap(), profile);
        let model = Profile::from_model(30_000.0, 1.25e8, 4 << 20);
        model.save(&path).unwrap();
        assert_eq!(Profile::load(&path).unwrap(), model, "a second save replaces the first");
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "no temporary file is left");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn malformed_profile_files_are_refused() {
        let dir = scratch_dir("malformed");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.profile");
        for (text, why) in [
            ("", "no samples"),
            ("# only a comment\n", "no samples"),
            ("0 10\n2 20\n", "size 1"),
            ("0 10\n1 x\n", "not a number"),
            ("0 10 7\n", "size nanos"),
            ("0 -1\n", "non-negative"),
            ("0 inf\n", "finite"),
        ] {
            std::fs::write(&path, text).unwrap();
            let error = Profile::load(&path).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidData);
            assert!(error.to_string().contains(why), "{text:?}: {error}");
        }
        assert_eq!(Profile::load(&dir.join("absent.profile")).unwrap_err().kind(), io::ErrorKind::NotFound);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn identity_file_names_stay_inside_the_directory() {
        let dir = Path::new("/var/tmp/p");
        assert_eq!(identity_file(dir, "../../etc/x"), dir.join("_.._.._etc_x.profile"));
        assert_eq!(identity_file(dir, ""), dir.join("_.profile"));
        assert_eq!(identity_file(dir, "lo 127.0.0.1"), dir.join("lo_127.0.0.1.profile"));
    }
}
