//! The shared file pointer of an open file: an 8-byte counter in a hidden file beside it, which
//! every process of the file's group (on any node of a shared file system) moves under an
//! exclusive byte-range lock, as ROMIO keeps it. Counts etypes of the view.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

pub(crate) struct SharedPointer {
    path: PathBuf,
    file: File,
}

/// Where the hidden file of the open of `target` by the process group named `tag` lives: beside
/// the file, else (a directory the group cannot write) in the temporary directory.
pub(crate) fn hidden_path(target: &Path, tag: &str, beside: bool) -> PathBuf {
    let name = target.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let hidden = format!(".{name}.braid-shared-pointer.{tag}");
    match (beside, target.parent()) {
        (true, Some(dir)) if !dir.as_os_str().is_empty() => dir.join(hidden),
        (true, _) => PathBuf::from(hidden),
        (false, _) => std::env::temp_dir().join(hidden),
    }
}

impl SharedPointer {
    /// Creates the counter at `start` (one process of the group does).
    pub fn create(path: &Path, start: u64) -> io::Result<()> {
        let file = File::options().read(true).write(true).create(true).truncate(true).open(path)?;
        file.write_all_at(&start.to_le_bytes(), 0)
    }

    /// Opens the counter another process of the group created.
    pub fn open(path: &Path) -> io::Result<SharedPointer> {
        let file = File::options().read(true).write(true).open(path)?;
        Ok(SharedPointer { path: path.to_path_buf(), file })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Applies `update` to the pointer atomically with respect to every process; returns the value
    /// before.
    pub fn update(&self, update: impl FnOnce(u64) -> u64) -> io::Result<u64> {
        let _lock = braid_sys::file::lock_range(&self.file, 0, 8, true)?;
        let before = self.read()?;
        self.file.write_all_at(&update(before).to_le_bytes(), 0)?;
        Ok(before)
    }

    /// The counter, read under the caller's lock.
    fn read(&self) -> io::Result<u64> {
        let mut word = [0u8; 8];
        self.file.read_exact_at(&mut word, 0)?;
        Ok(u64::from_le_bytes(word))
    }

    /// Moves the pointer `by` etypes; returns where it was.
    pub fn fetch_add(&self, by: u64) -> io::Result<u64> {
        self.update(|at| at + by)
    }

    /// The pointer, read under a shared lock (no process is halfway through moving it).
    pub fn get(&self) -> io::Result<u64> {
        let _lock = braid_sys::file::lock_range(&self.file, 0, 8, false)?;
        self.read()
    }

    pub fn set(&self, to: u64) -> io::Result<()> {
        self.update(|_| to).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_moving_the_pointer_together_each_get_a_range_of_their_own() {
        let path = std::env::temp_dir().join(format!("braid-shared-pointer-test-{}", std::process::id()));
        SharedPointer::create(&path, 0).unwrap();
        let claims: Vec<u64> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    let path = path.clone();
                    scope.spawn(move || {
                        let pointer = SharedPointer::open(&path).unwrap();
                        (0..50).map(|_| pointer.fetch_add(3).unwrap()).collect::<Vec<u64>>()
                    })
                })
                .collect();
            workers.into_iter().flat_map(|worker| worker.join().unwrap()).collect()
        });
        let mut sorted = claims.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..200).map(|i| i * 3).collect::<Vec<u64>>(), "every claim once");
        let pointer = SharedPointer::open(&path).unwrap();
        assert_eq!(pointer.get().unwrap(), 600);
        pointer.set(7).unwrap();
        assert_eq!(pointer.get().unwrap(), 7);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn the_hidden_file_lives_beside_the_file_or_in_the_temporary_directory() {
        assert_eq!(hidden_path(Path::new("/data/out.bin"), "j1", true), PathBuf::from("/data/.out.bin.braid-shared-pointer.j1"));
        assert_eq!(hidden_path(Path::new("out.bin"), "j1", true), PathBuf::from(".out.bin.braid-shared-pointer.j1"));
        assert!(hidden_path(Path::new("/ro/out.bin"), "j1", false).starts_with(std::env::temp_dir()));
    }
}
