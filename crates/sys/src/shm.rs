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
        create_mapped(name, len, libc::MAP_POPULATE)
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

/// Creates the file `name` (it must not exist yet) of `len` zero bytes and maps it with
/// `extra_flags`; on failure the file is removed.
fn create_mapped(name: &str, len: usize, extra_flags: libc::c_int) -> io::Result<SharedMapping> {
    let path = checked_path(name)?;
    if len == 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "a shared mapping needs at least one byte"));
    }
    let file = OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).custom_flags(libc::O_CLOEXEC).open(&path)?;
    let mapped = file.set_len(len as u64).and_then(|()| map(&file, len, extra_flags));
    if mapped.is_err() {
        let _ = std::fs::remove_file(&path);
    }
    mapped
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

/// Memory of this process moved, where it lies, under a new shared-memory file: the same
/// addresses and contents, which other processes may now map too ([`SharedMapping::open`] of the
/// file's name). With `restore`, dropping it puts private anonymous memory with the same contents
/// back; without, the memory stays backed by the (by then unlinked) file, private in effect.
#[derive(Debug)]
pub struct SharedInPlace {
    start: NonNull<u8>,
    len: usize,
    restore: bool,
}

/// How much memory [`SharedInPlace`] moves at a time: the move needs this much on top of the
/// memory itself, since each part's old pages are freed as its new ones take their place.
const MOVE_CHUNK: usize = 16 << 20;

impl SharedInPlace {
    /// Copies the `len` bytes at `start` into the new shared-memory file `name`, moving the
    /// file's mapping over them part by part (`mremap`), which replaces the pages. On failure the
    /// file is removed; the parts already moved keep their contents, backed by it.
    ///
    /// # Safety
    /// `start` and `len` must be page-aligned (`len` > 0), and the pages private writable memory
    /// of this process that nothing else reads or writes (no other thread, no signal handler)
    /// until this returns, nor, with `restore`, while the result is dropped; they must stay
    /// mapped while the result lives.
    pub unsafe fn new(name: &str, start: *mut u8, len: usize, restore: bool) -> io::Result<SharedInPlace> {
        let start_ptr = NonNull::new(start).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "null address"))?;
        // Not populated: the file's pages are allocated as the copy writes them.
        let staging = create_mapped(name, len, 0)?;
        let mut moved = 0;
        while moved < len {
            let part = MOVE_CHUNK.min(len - moved);
            // SAFETY: per the caller `start` holds `len` bytes that nothing else touches, and
            // `staging` is another mapping of `len`; `part` starts `moved` bytes into both.
            if let Err(error) = unsafe { replace_with(start.add(moved), staging.as_ptr().add(moved), part) } {
                // SAFETY: the part of the staging mapping not moved yet, unmapped once.
                unsafe { libc::munmap(staging.as_ptr().add(moved).cast(), len - moved) };
                std::mem::forget(staging);
                let _ = unlink(name);
                return Err(error);
            }
            moved += part;
        }
        // Every page of it is at `start` now, owned by the result.
        std::mem::forget(staging);
        Ok(SharedInPlace { start: start_ptr, len, restore })
    }
}

/// Copies the `len` bytes at `place` into the mapping at `replacement`, then moves that mapping
/// over them (`mremap`), replacing their pages.
///
/// # Safety
/// Both ranges must be page-aligned mappings of this process of `len` bytes, nothing else may
/// touch `place` meanwhile, and `replacement` is gone from its address on success.
unsafe fn replace_with(place: *mut u8, replacement: *mut u8, len: usize) -> io::Result<()> {
    // SAFETY: per the caller.
    unsafe {
        std::ptr::copy_nonoverlapping(place, replacement, len);
        if libc::mremap(replacement.cast(), len, len, libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED, place.cast::<libc::c_void>()) == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

impl Drop for SharedInPlace {
    fn drop(&mut self) {
        if !self.restore {
            return;
        }
        let (start, len) = (self.start.as_ptr(), self.len);
        let mut restored = 0;
        while restored < len {
            let part = MOVE_CHUNK.min(len - restored);
            // SAFETY: fresh private pages elsewhere receive a part's contents, then move over the
            // shared ones (nothing else touches them meanwhile: `new`'s contract). If a step
            // fails the rest stays shared, still this process's memory with its contents.
            unsafe {
                let private = libc::mmap(std::ptr::null_mut(), part, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
                if private == libc::MAP_FAILED {
                    return;
                }
                if replace_with(start.add(restored), private.cast(), part).is_err() {
                    libc::munmap(private, part);
                    return;
                }
            }
            restored += part;
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
    fn memory_shared_in_place_keeps_its_contents_and_is_seen_by_another_mapping() {
        // Larger than one part of the move, and not a whole number of parts.
        let len = MOVE_CHUNK + 3 * crate::memory_map::page_size();
        let name = format!("braid-test-in-place-{}", std::process::id());
        // SAFETY: a private anonymous mapping of this test alone.
        let start = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        assert_ne!(start, libc::MAP_FAILED);
        let bytes = start.cast::<u8>();
        // SAFETY: within the mapping above, which only this test uses.
        unsafe {
            for at in (0..len).step_by(4093) {
                bytes.add(at).write((at % 251) as u8);
            }
            let shared = SharedInPlace::new(&name, bytes, len, true).unwrap();
            assert!((0..len).step_by(4093).all(|at| bytes.add(at).read() == (at % 251) as u8), "contents kept");
            let other = SharedMapping::open(&name).unwrap();
            unlink(&name).unwrap();
            let last = len - 1;
            bytes.add(last).write(42);
            assert_eq!(other.as_ptr().add(last).read(), 42, "a write in place shows in the file");
            other.as_ptr().add(6).write(43);
            assert_eq!(bytes.add(6).read(), 43, "a write to the file shows in place");
            drop(shared);
            // Restored: private again, with the contents.
            other.as_ptr().add(7).write(44);
            assert_eq!((bytes.read(), bytes.add(6).read(), bytes.add(7).read(), bytes.add(last).read()), (0, 43, 0, 42));
            assert!(crate::memory_map::in_private_anonymous_memory(bytes as usize, bytes as usize + len).unwrap());
            libc::munmap(start, len);
        }
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
