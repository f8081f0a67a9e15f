//! Sampled profiles cached in small text files, one per rail identity (see [`identity_file`]): a
//! comment line, then one `size nanos` line per sample. Start-up loads a rail's file instead of
//! sampling it again.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use braid_lane::profile::sample_size;
use braid_lane::{Profile, Sample};

/// First line of a profile file.
const FILE_HEADING: &str = "# braid profile: size_bytes one_way_nanos";

/// Writes the samples of `profile` to `path` (creating its directory), replacing any previous file
/// atomically: a concurrent reader sees the old or the new profile, never half of one.
pub fn save(profile: &Profile, path: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = format!("{FILE_HEADING}\n");
    for sample in profile.samples() {
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

/// Reads a profile written by [`save`]. A file that is not a non-empty list of samples at sizes
/// 0, 1, 2, 4, ... with finite non-negative times is `InvalidData`.
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
        if size != sample_size(samples.len()) {
            return Err(invalid(number, &format!("expected the sample of size {}", sample_size(samples.len()))));
        }
        if !nanos.is_finite() || nanos < 0.0 {
            return Err(invalid(number, "time must be finite and non-negative"));
        }
        samples.push(Sample { size, nanos });
    }
    if samples.is_empty() {
        return Err(invalid(0, "no samples"));
    }
    Ok(Profile::from_samples(samples))
}

/// The file caching the profile of the rail named `identity` (interface, addresses, MTU: a
/// changed network gets a fresh file): `<dir>/<identity>.profile`, with every character outside
/// `[A-Za-z0-9._-]` replaced by `_`.
pub fn identity_file(dir: &Path, identity: &str) -> PathBuf {
    let name: String = identity.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect();
    let name = if name.is_empty() || name.starts_with('.') { format!("_{name}") } else { name };
    dir.join(format!("{name}.profile"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        save(&profile, &path).unwrap();
        assert_eq!(load(&path).unwrap(), profile);
        let model = Profile::from_model(30_000.0, 1.25e8, 4 << 20);
        save(&model, &path).unwrap();
        assert_eq!(load(&path).unwrap(), model, "a second save replaces the first");
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
            let error = load(&path).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidData);
            assert!(error.to_string().contains(why), "{text:?}: {error}");
        }
        assert_eq!(load(&dir.join("absent.profile")).unwrap_err().kind(), io::ErrorKind::NotFound);
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
