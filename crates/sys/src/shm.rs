//! POSIX shared-memory files under /dev/shm, mapped `MAP_SHARED` into this process.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::ptr::NonNull;

/// Where shared-memory files live.
pub const SHM_DIR: &str = "/dev/shm";

/// The path of the shared-memory file `name` (a plain file name, no `/`).
pub fn path_of(name: &str) -> PathBuf {
    PathBuf::from(SHM_DIR).join(name)
}

fn checked_path(name: &str) -> io::Result<PathBuf> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') || name.len() > 255 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("invalid shared-memory name {name:?}")));
    }
    Ok(path_of(name))
}

/// A shared-memory file mapped read-write into this process; unmapped on drop.
///
/// The mapping is plain memory that other processes may change at any time: the owner of a
/// `SharedMapping` decides how its bytes are accessed (atomics for anything shared concurrently).
#[derive(Debug)]
pub struct SharedMapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is ordinary memory not tied to a thread; `SharedMapping` only hands out a
// raw pointer, so every access is already the caller's responsibility.
unsafe impl Send for SharedMapping {}
// SAFETY: as above; `&SharedMapping` exposes nothing but the pointer and length.
unsafe impl Sync for SharedMapping {}

impl SharedMapping {
    /// Creates the file `name` (it must not exist yet), sizes it to `len` zero bytes and maps it.
    /// Pages are faulted in by this thread, so on NUMA machines they sit on its node.
    pub fn create(name: &str, len: usize) -> io::Result<SharedMapping> {
        let path = checked_path(name)?;
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "a shared mapping needs at least one byte"));
        }
        let file = OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).custom_flags(libc::O_CLOEXEC).open(&path)?;
        let mapped = file.set_len(len as u64).and_then(|()| map(&file, len, libc::MAP_POPULATE));
        if mapped.is_err() {
            let _ = std::fs::remove_file(&path);
        }
        mapped
    }

    /// Maps the whole of the existing file `name`, every page at once: a page touched first
    /// in the middle of a message would cost a page fault there.
    pub fn open(name: &str) -> io::Result<SharedMapping> {
        let path = checked_path(name)?;
        let file = OpenOptions::new().read(true).write(true).custom_flags(libc::O_CLOEXEC).open(&path)?;
        let len = usize::try_from(file.metadata()?.len()).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "shared-memory file too large"))?;
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("shared-memory file {name} is empty")));
        }
        map(&file, len, libc::MAP_POPULATE)
    }

    /// First byte of the mapping (page aligned).
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

fn map(file: &File, len: usize, extra_flags: libc::c_int) -> io::Result<SharedMapping> {
    // SAFETY: a fresh mapping at an address the kernel picks; the fd is valid for the call and the
    // mapping stays valid after the file is closed.
    let address = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | extra_flags, file.as_raw_fd(), 0) };
    if address == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let ptr = NonNull::new(address.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned a null mapping"))?;
    Ok(SharedMapping { ptr, len })
}

impl Drop for SharedMapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len describe exactly the mapping made in `map`, unmapped only here.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// Removes the file `name`; mappings of it stay valid until unmapped.
pub fn unlink(name: &str) -> io::Result<()> {
    std::fs::remove_file(checked_path(name)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unique(tag: &str) -> String {
        format!("braid-systest-{tag}-{}", std::process::id())
    }

    struct Cleanup(String);

    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = unlink(&self.0);
        }
    }

    #[test]
    fn two_mappings_of_one_file_share_bytes() {
        let name = unique("share");
        let _cleanup = Cleanup(name.clone());
        let created = SharedMapping::create(&name, 8192).unwrap();
        let opened = SharedMapping::open(&name).unwrap();
        assert_eq!(opened.len(), 8192);
        assert_ne!(created.as_ptr(), opened.as_ptr());
        // SAFETY: both pointers map 8192 bytes of the same file; no other thread touches them.
        unsafe {
            assert_eq!(*opened.as_ptr().add(4000), 0);
            *created.as_ptr().add(4000) = 42;
            assert_eq!(*opened.as_ptr().add(4000), 42);
        }
        unlink(&name).unwrap();
        assert!(!path_of(&name).exists());
        // SAFETY: the mapping outlives the file name.
        unsafe { assert_eq!(*opened.as_ptr().add(4000), 42) };
    }

    /// Minor page faults taken by this thread so far.
    fn minor_faults() -> i64 {
        // SAFETY: getrusage writes one rusage into the zeroed value we own.
        unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            assert_eq!(libc::getrusage(libc::RUSAGE_THREAD, &mut usage), 0);
            usage.ru_minflt
        }
    }

    #[test]
    fn both_mappings_are_faulted_in_before_first_use() {
        const PAGES: usize = 64;
        let name = unique("populate");
        let _cleanup = Cleanup(name.clone());
        let created = SharedMapping::create(&name, PAGES * 4096).unwrap();
        let opened = SharedMapping::open(&name).unwrap();
        let before = minor_faults();
        for page in 0..PAGES {
            // SAFETY: both mappings span PAGES pages of one file that only this thread touches.
            unsafe {
                *created.as_ptr().add(page * 4096) = 1;
                *opened.as_ptr().add(page * 4096 + 64) = 2;
            }
        }
        let faults = minor_faults() - before;
        assert!(faults < 8, "{faults} page faults touching {} freshly mapped pages", 2 * PAGES);
    }

    #[test]
    fn create_refuses_an_existing_file_and_bad_names() {
        let name = unique("exists");
        let _cleanup = Cleanup(name.clone());
        let _first = SharedMapping::create(&name, 4096).unwrap();
        assert_eq!(SharedMapping::create(&name, 4096).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(SharedMapping::open("braid-systest/evil").unwrap_err().kind(), io::ErrorKind::InvalidInput);
        assert_eq!(SharedMapping::create(&unique("empty"), 0).unwrap_err().kind(), io::ErrorKind::InvalidInput);
        assert!(!path_of(&unique("empty")).exists());
    }

    #[test]
    fn opening_a_missing_file_fails() {
        assert_eq!(SharedMapping::open(&unique("missing")).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
