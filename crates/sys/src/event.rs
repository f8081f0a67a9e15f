//! An event counter (Linux `eventfd`): readable while signalled, so it joins an epoll set and
//! lets one thread of a process wake another that sleeps on that set.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

#[derive(Debug)]
pub struct EventCounter {
    fd: OwnedFd,
}

impl EventCounter {
    /// A counter at zero (not readable), non-blocking and close-on-exec.
    pub fn new() -> io::Result<EventCounter> {
        // SAFETY: eventfd takes an initial value and flags; a non-negative result is a new
        // descriptor that nothing else owns.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created.
        Ok(EventCounter { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// Makes the counter readable (waking whoever sleeps on a set that holds it).
    pub fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes the 8 bytes of `one`, live for the call. It can only fail when the count
        // would overflow (then it is readable already) or with EAGAIN for the same reason.
        let _ = unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Takes the counter back to zero; whether it had been signalled.
    pub fn clear(&self) -> bool {
        let mut count: u64 = 0;
        // SAFETY: reads at most 8 bytes into `count`, live for the call; non-blocking, so an
        // unsignalled counter returns EAGAIN at once.
        let read = unsafe { libc::read(self.fd.as_raw_fd(), (&mut count as *mut u64).cast(), 8) };
        read == 8 && count > 0
    }
}

impl AsFd for EventCounter {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::Poller;
    use std::time::Duration;

    #[test]
    fn a_signal_wakes_a_sleeper_on_a_set_until_cleared() {
        let counter = EventCounter::new().unwrap();
        let mut set = Poller::new(1).unwrap();
        set.add(counter.as_fd(), 7).unwrap();
        assert!(!set.sleep(Duration::from_millis(1)).unwrap(), "an unsignalled counter is not ready");
        assert!(!counter.clear());
        counter.signal();
        counter.signal();
        assert!(set.sleep(Duration::from_secs(5)).unwrap(), "a signalled counter ends the sleep");
        assert!(counter.clear());
        assert!(!set.sleep(Duration::from_millis(1)).unwrap(), "cleared, it no longer ends a sleep");
    }
}
