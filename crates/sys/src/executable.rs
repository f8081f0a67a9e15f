//! Finding the program a command names, as a launcher would start it: a name with a slash is a
//! path (relative to the working directory the program will start in), any other name is looked
//! up in a search path.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The executable `name` names: a path when it holds a slash (relative ones from `wdir`, or the
/// current directory), else the first executable `name` in the directories of `search` (a
/// PATH-style list). None when there is no such executable file.
pub fn find_executable(name: &str, wdir: Option<&Path>, search: &OsStr) -> Option<PathBuf> {
    if name.contains('/') {
        let path = Path::new(name);
        let full = match wdir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        };
        return is_executable(&full).then_some(full);
    }
    std::env::split_paths(search).map(|dir| dir.join(name)).find(|candidate| is_executable(candidate))
}

/// Whether `path` is a file someone may execute.
pub fn is_executable(path: &Path) -> bool {
    path.metadata().is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_in_the_search_path_and_paths_from_the_working_directory() {
        let search = OsStr::new("/nonexistent:/bin:/usr/bin");
        let sh = find_executable("sh", None, search).expect("sh is in /bin or /usr/bin");
        assert!(sh.ends_with("sh"));
        assert_eq!(find_executable("braid-no-such-program", None, search), None);
        assert_eq!(find_executable("bin/sh", Some(Path::new("/")), search), Some(PathBuf::from("/bin/sh")));
        assert_eq!(find_executable("./sh", Some(Path::new("/nonexistent")), search), None);
        let plain = std::env::temp_dir().join(format!("braid-not-executable-{}", std::process::id()));
        std::fs::write(&plain, "data").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(find_executable(plain.to_str().unwrap(), None, search), None, "a file nobody may execute");
        std::fs::remove_file(&plain).unwrap();
    }
}
