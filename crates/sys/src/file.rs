//! What parallel file I/O needs beyond `std::fs`: byte-range locks that processes (and the threads
//! of one process) take on a shared file, and preallocation of a file's blocks.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// A byte-range lock on a file, held until dropped. Open-file-description locks: two opens of
/// one file in one process exclude each other, as two processes do, and closing another
/// descriptor of the file does not release them (as it would classic POSIX locks).
pub struct RangeLock<'a> {
    file: &'a File,
    start: u64,
    len: u64,
}

fn flock_of(kind: libc::c_short, start: u64, len: u64) -> io::Result<libc::flock> {
    let overflow = || io::Error::new(io::ErrorKind::InvalidInput, "lock range beyond the largest file offset");
    // SAFETY: flock is a plain C struct; all zeroes is a valid value, completed below.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = libc::off_t::try_from(start).map_err(|_| overflow())?;
    // A length of 0 locks to the end of the file, however far it grows.
    lock.l_len = libc::off_t::try_from(len).map_err(|_| overflow())?;
    Ok(lock)
}

/// Waits for and takes a lock on `len` bytes of `file` from `start` (0: to the end of the file,
/// wherever that will be): exclusive for writers, shared for readers.
pub fn lock_range(file: &File, start: u64, len: u64, exclusive: bool) -> io::Result<RangeLock<'_>> {
    let kind = if exclusive { libc::F_WRLCK } else { libc::F_RDLCK };
    let lock = flock_of(kind as libc::c_short, start, len)?;
    loop {
        // SAFETY: F_OFD_SETLKW reads the flock struct, which lives across the call; `file` is open.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLKW, &lock) };
        if rc == 0 {
            return Ok(RangeLock { file, start, len });
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

impl Drop for RangeLock<'_> {
    fn drop(&mut self) {
        if let Ok(unlock) = flock_of(libc::F_UNLCK as libc::c_short, self.start, self.len) {
            // SAFETY: as in lock_range; unlocking a range this description holds cannot block.
            unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_OFD_SETLK, &unlock) };
        }
    }
}

/// Allocates the blocks of `file`'s first `len` bytes (the file grows to `len` if shorter; its
/// data stays). Where the file system cannot, the missing part is written with zeros.
pub fn preallocate(file: &File, len: u64) -> io::Result<()> {
    let size = file.metadata()?.len();
    if len <= size {
        return Ok(());
    }
    let end = libc::off_t::try_from(len).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "size beyond the largest file offset"))?;
    // SAFETY: posix_fallocate only acts on the open descriptor; it returns an error number.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, end) };
    match rc {
        0 => Ok(()),
        libc::EOPNOTSUPP | libc::EINVAL => {
            use std::os::unix::fs::FileExt;
            let zeros = vec![0u8; 1 << 16];
            let mut at = size;
            while at < len {
                let chunk = (len - at).min(zeros.len() as u64) as usize;
                file.write_all_at(&zeros[..chunk], at)?;
                at += chunk as u64;
            }
            Ok(())
        }
        error => Err(io::Error::from_raw_os_error(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn scratch(name: &str) -> (std::path::PathBuf, File) {
        let path = std::env::temp_dir().join(format!("braid-sys-file-{name}-{}", std::process::id()));
        let file = File::options().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        (path, file)
    }

    #[test]
    fn an_exclusive_lock_holds_off_another_open_of_the_file_until_dropped() {
        let (path, file) = scratch("lock");
        let other = File::options().read(true).write(true).open(&path).unwrap();
        let held = lock_range(&file, 0, 10, true).unwrap();
        let (tx, rx) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let _lock = lock_range(&other, 5, 1, true).unwrap();
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "the second lock was granted while the first was held");
        drop(held);
        rx.recv_timeout(Duration::from_secs(5)).expect("the second lock once the first is gone");
        waiter.join().unwrap();
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn preallocation_grows_a_file_and_keeps_its_data() {
        let (path, file) = scratch("prealloc");
        use std::os::unix::fs::FileExt;
        file.write_all_at(b"abc", 0).unwrap();
        preallocate(&file, 100_000).unwrap();
        assert_eq!(file.metadata().unwrap().len(), 100_000);
        let mut head = [0u8; 3];
        file.read_exact_at(&mut head, 0).unwrap();
        assert_eq!(&head, b"abc");
        preallocate(&file, 10).unwrap();
        assert_eq!(file.metadata().unwrap().len(), 100_000, "preallocation never shrinks");
        let _ = std::fs::remove_file(path);
    }
}
