//! Signals for a launcher: receiving them through a descriptor (a self-pipe written by a signal
//! handler) so an event loop can poll for them, and sending them to processes and process groups.
//!
//! Handlers, unlike a blocked signal mask, are not inherited across `exec`: the programs the
//! launcher starts get the default dispositions and an unchanged mask.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;

/// The self-pipe, created once and never closed, so a handler still running after a queue is
/// dropped can never write into a reused descriptor.
static PIPE: OnceLock<(OwnedFd, OwnedFd)> = OnceLock::new();
/// The pipe's write end, for the handler (which must not touch the OnceLock).
static PIPE_WRITE_END: AtomicI32 = AtomicI32::new(-1);
static QUEUE_EXISTS: AtomicBool = AtomicBool::new(false);

extern "C" fn queue_signal(signal: libc::c_int) {
    // SAFETY: only async-signal-safe calls: errno is saved and restored around one write(2) of one
    // byte from a local to the non-blocking pipe (a full pipe just drops the byte).
    unsafe {
        let errno = *libc::__errno_location();
        let byte = signal as u8;
        libc::write(PIPE_WRITE_END.load(Ordering::Relaxed), (&byte as *const u8).cast(), 1);
        *libc::__errno_location() = errno;
    }
}

/// Signals caught by this process and queued on a pollable descriptor. One may exist at a time.
pub struct SignalQueue {
    read_end: BorrowedFd<'static>,
    previous: Vec<(i32, libc::sigaction)>,
}

impl SignalQueue {
    /// Catches `signals` (process-wide) and queues them until [`SignalQueue::take`].
    pub fn new(signals: &[i32]) -> io::Result<SignalQueue> {
        if QUEUE_EXISTS.swap(true, Ordering::AcqRel) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "a SignalQueue already exists in this process"));
        }
        let pipe = match pipe() {
            Ok(pipe) => pipe,
            Err(error) => {
                QUEUE_EXISTS.store(false, Ordering::Release);
                return Err(error);
            }
        };
        PIPE_WRITE_END.store(pipe.1.as_raw_fd(), Ordering::Relaxed);
        let mut queue = SignalQueue { read_end: pipe.0.as_fd(), previous: Vec::new() };
        queue.take()?;
        for &signal in signals {
            // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value to fill in.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            action.sa_sigaction = queue_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            // SAFETY: sigemptyset initialises the mask inside `action`.
            unsafe { libc::sigemptyset(&mut action.sa_mask) };
            // SAFETY: as above, zeroed is valid; sigaction overwrites it with the old disposition.
            let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: both pointers are to live sigaction values; the handler is async-signal-safe.
            if unsafe { libc::sigaction(signal, &action, &mut previous) } < 0 {
                return Err(io::Error::last_os_error());
            }
            queue.previous.push((signal, previous));
        }
        Ok(queue)
    }

    /// The signals that arrived since the last call, oldest first; empty when none is pending.
    pub fn take(&self) -> io::Result<Vec<i32>> {
        let mut signals = Vec::new();
        let mut buffer = [0u8; 64];
        loop {
            // SAFETY: `buffer` is writable for its whole length; the descriptor lives forever.
            let read = unsafe { libc::read(self.read_end.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
            if read < 0 {
                let error = io::Error::last_os_error();
                return match error.kind() {
                    io::ErrorKind::WouldBlock => Ok(signals),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(error),
                };
            }
            if read == 0 {
                return Ok(signals);
            }
            signals.extend(buffer[..read as usize].iter().map(|&byte| i32::from(byte)));
        }
    }
}

fn pipe() -> io::Result<&'static (OwnedFd, OwnedFd)> {
    if let Some(pipe) = PIPE.get() {
        return Ok(pipe);
    }
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 just created both descriptors; nothing else owns them.
    let created = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // Only one queue exists at a time (QUEUE_EXISTS), so no other thread is initialising the pipe.
    Ok(PIPE.get_or_init(|| created))
}

impl AsFd for SignalQueue {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.read_end
    }
}

impl Drop for SignalQueue {
    fn drop(&mut self) {
        for (signal, previous) in self.previous.drain(..).rev() {
            // SAFETY: restores the disposition saved in `new` for this signal.
            unsafe { libc::sigaction(signal, &previous, std::ptr::null_mut()) };
        }
        QUEUE_EXISTS.store(false, Ordering::Release);
    }
}

/// Sends `signal` to process `pid`.
pub fn send(pid: u32, signal: i32) -> io::Result<()> {
    let pid = positive(pid)?;
    // SAFETY: kill takes plain integers and changes no memory of ours.
    if unsafe { libc::kill(pid, signal) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends `signal` to every process in process group `group`.
pub fn send_to_group(group: u32, signal: i32) -> io::Result<()> {
    let group = positive(group)?;
    // SAFETY: killpg takes plain integers and changes no memory of ours.
    if unsafe { libc::killpg(group, signal) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn positive(id: u32) -> io::Result<libc::pid_t> {
    match libc::pid_t::try_from(id) {
        // 0 and 1 would address our own group or init: never what a launcher means.
        Ok(value) if value > 1 => Ok(value),
        _ => Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{id} is not a process or group id"))),
    }
}

/// The conventional name of `signal`, such as `SIGKILL`.
pub fn name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_caught_signal_arrives_on_the_queue_and_children_keep_defaults() {
        let queue = SignalQueue::new(&[libc::SIGUSR2]).unwrap();
        assert!(SignalQueue::new(&[libc::SIGUSR1]).is_err(), "only one queue at a time");
        assert_eq!(queue.take().unwrap(), Vec::<i32>::new());
        send(std::process::id(), libc::SIGUSR2).unwrap();
        let ready = crate::fd::poll_readable(&[queue.as_fd()], Some(std::time::Duration::from_secs(5))).unwrap();
        assert!(ready[0].readable);
        assert_eq!(queue.take().unwrap(), vec![libc::SIGUSR2]);
        // A child's mask is untouched and its handlers are reset: SIGUSR2 is neither blocked nor caught.
        let output = Command::new("grep").args(["-E", "^Sig(Blk|Cgt):", "/proc/self/status"]).output().unwrap();
        let text = String::from_utf8(output.stdout).unwrap();
        let mask = |name: &str| {
            let line = text.lines().find(|line| line.starts_with(name)).unwrap();
            u64::from_str_radix(line.split(':').nth(1).unwrap().trim(), 16).unwrap()
        };
        assert_eq!(mask("SigBlk"), 0, "{text}");
        assert_eq!(mask("SigCgt") & (1 << (libc::SIGUSR2 - 1)), 0, "{text}");
        drop(queue);
        let again = SignalQueue::new(&[libc::SIGUSR1]).unwrap();
        assert_eq!(again.take().unwrap(), Vec::<i32>::new());
    }

    #[test]
    fn signals_reach_a_child_and_its_group() {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        let mut child = Command::new("sleep").arg("10").spawn().unwrap();
        send(child.id(), libc::SIGTERM).unwrap();
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGTERM));

        let mut leader = Command::new("sleep").arg("10").process_group(0).spawn().unwrap();
        send_to_group(leader.id(), libc::SIGKILL).unwrap();
        assert_eq!(leader.wait().unwrap().signal(), Some(libc::SIGKILL));
        assert!(send(0, libc::SIGTERM).is_err());
        assert_eq!(name(libc::SIGKILL), Some("SIGKILL"));
    }
}
