//! File descriptors passed between processes: inherited descriptors (PMI_FD), close-on-exec
//! control for descriptors handed to children, and `poll` for event loops and for writers of
//! non-blocking descriptors.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Takes a private copy of a descriptor this process inherited by number (such as the one named
/// by `PMI_FD`). The copy is close-on-exec; the original is made close-on-exec too so programs this
/// process starts do not inherit it. Fails with `EBADF` when `raw` is not open.
pub fn duplicate_inherited(raw: RawFd) -> io::Result<OwnedFd> {
    if raw < 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: F_DUPFD_CLOEXEC only reads the descriptor table; an unopened `raw` yields EBADF.
    let copy = unsafe { libc::fcntl(raw, libc::F_DUPFD_CLOEXEC, 0) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `copy` was just created by F_DUPFD_CLOEXEC, so nothing else in the process owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(copy) };
    // SAFETY: `raw` is open (it was just duplicated); setting FD_CLOEXEC changes no memory.
    let rc = unsafe { libc::fcntl(raw, libc::F_SETFD, libc::FD_CLOEXEC) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(owned)
}

/// Whether `fd` survives `exec` (is inherited by programs started from now on).
pub fn set_inheritable(fd: BorrowedFd<'_>, inheritable: bool) -> io::Result<()> {
    // SAFETY: `fd` is a valid descriptor for the borrow's lifetime; F_GETFD reads only its flags.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let wanted = if inheritable { flags & !libc::FD_CLOEXEC } else { flags | libc::FD_CLOEXEC };
    // SAFETY: as above; F_SETFD changes only the descriptor's flags.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, wanted) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What `poll` reported for one descriptor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Readiness {
    /// Data (or end of file) can be read without blocking.
    pub readable: bool,
    /// The peer closed its end (reading returns what is left, then end of file).
    pub hangup: bool,
    /// An error or an invalid descriptor.
    pub error: bool,
}

impl Readiness {
    /// Worth a `read`: data, end of file or an error to collect.
    pub fn any(&self) -> bool {
        self.readable || self.hangup || self.error
    }
}

/// Waits until one of `fds` is readable (or hung up), or `timeout` passes (`None`: no limit).
/// Returns one entry per descriptor, in order; an interrupted wait returns all-quiet entries.
pub fn poll_readable(fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> io::Result<Vec<Readiness>> {
    let mut entries: Vec<libc::pollfd> = fds.iter().map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let timeout_ms = match timeout {
        None => -1,
        Some(duration) => duration.as_millis().min(i32::MAX as u128) as libc::c_int,
    };
    // SAFETY: `entries` is a live array of `entries.len()` pollfd structs that poll may write to;
    // every descriptor in it is kept open by the borrows in `fds`.
    let rc = unsafe { libc::poll(entries.as_mut_ptr(), entries.len() as libc::nfds_t, timeout_ms) };
    if rc < 0 {
        let error = io::Error::last_os_error();
        if error.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![Readiness::default(); fds.len()]);
        }
        return Err(error);
    }
    Ok(entries
        .iter()
        .map(|entry| Readiness { readable: entry.revents & libc::POLLIN != 0, hangup: entry.revents & libc::POLLHUP != 0, error: entry.revents & (libc::POLLERR | libc::POLLNVAL) != 0 })
        .collect())
}

/// Waits until `fd` accepts a write without blocking (or reports an error or hang-up, which the
/// write then returns), or `timeout` passes (`None`: no limit). Returns whether it became ready;
/// an interrupted wait returns `false`.
pub fn wait_writable(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<bool> {
    let mut entry = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
    let timeout_ms = match timeout {
        None => -1,
        Some(duration) => duration.as_millis().min(i32::MAX as u128) as libc::c_int,
    };
    // SAFETY: `entry` is one live pollfd that poll may write to; the borrow keeps `fd` open.
    let rc = unsafe { libc::poll(&mut entry, 1, timeout_ms) };
    if rc < 0 {
        let error = io::Error::last_os_error();
        if error.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(error);
    }
    Ok(entry.revents != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn an_inherited_descriptor_is_copied_and_closed_on_exec() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        set_inheritable(theirs.as_fd(), true).unwrap();
        let copy = duplicate_inherited(theirs.as_raw_fd()).unwrap();
        assert_ne!(copy.as_raw_fd(), theirs.as_raw_fd());
        // SAFETY: test-only check of the flags of a descriptor that `theirs` keeps open.
        let flags = unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
        let mut copy = UnixStream::from(copy);
        copy.write_all(b"x").unwrap();
        let mut byte = [0u8; 1];
        (&ours).read_exact(&mut byte).unwrap();
        assert_eq!(&byte, b"x");
        assert!(duplicate_inherited(-1).is_err());
    }

    #[test]
    fn a_full_stream_is_not_writable_until_read() {
        let (mut reader, writer) = UnixStream::pair().unwrap();
        writer.set_nonblocking(true).unwrap();
        assert!(wait_writable(writer.as_fd(), Some(Duration::from_millis(10))).unwrap());
        let chunk = [0u8; 4096];
        while (&writer).write(&chunk).is_ok() {}
        assert!(!wait_writable(writer.as_fd(), Some(Duration::from_millis(10))).unwrap());
        let mut drained = vec![0u8; 1 << 20];
        let _ = reader.read(&mut drained).unwrap();
        assert!(wait_writable(writer.as_fd(), Some(Duration::from_millis(1000))).unwrap());
    }

    #[test]
    fn poll_reports_readable_and_hung_up_descriptors() {
        let (a, b) = UnixStream::pair().unwrap();
        let (c, d) = UnixStream::pair().unwrap();
        let quiet = poll_readable(&[b.as_fd(), d.as_fd()], Some(Duration::from_millis(10))).unwrap();
        assert!(!quiet[0].any() && !quiet[1].any());
        (&a).write_all(b"hello").unwrap();
        drop(c);
        let ready = poll_readable(&[b.as_fd(), d.as_fd()], None).unwrap();
        assert!(ready[0].readable && !ready[0].hangup);
        assert!(ready[1].hangup);
    }
}
