//! Whether local peers wait for a CPU: the time the kernel counts as each one's run delay
//! (`/proc/PID/schedstat`, second field: nanoseconds spent runnable but not running).
//!
//! A waiter whose peer is preempted (by a low-priority job on that peer's core, say) should not
//! sleep: the peer answers as soon as it runs again, while a sleeper's core goes to whatever else
//! is runnable there, and the kernel may leave it there for the rest of a tick after the wake-up.
//! A peer that computes, or sleeps, has a run delay that stays still.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Peers looked at per call at most (taken in turn): each look is a system call, and a waiter
/// polls nothing while it reads.
const PEERS_PER_LOOK: usize = 8;

struct Peer {
    schedstat: File,
    run_delay: u64,
}

/// The run delays of some processes, as last read.
pub(super) struct RunDelays {
    peers: Vec<Peer>,
    next: usize,
}

impl RunDelays {
    /// Opens the schedstat file of each of `pids`; a process whose file cannot be opened (no
    /// procfs, a kernel without scheduler statistics) is left out, and then never counts as waiting.
    pub(super) fn open(pids: impl IntoIterator<Item = u32>) -> RunDelays {
        let peers = pids
            .into_iter()
            .filter_map(|pid| File::open(format!("/proc/{pid}/schedstat")).ok())
            .map(|schedstat| {
                let run_delay = read_run_delay(&schedstat).unwrap_or(0);
                Peer { schedstat, run_delay }
            })
            .collect();
        RunDelays { peers, next: 0 }
    }

    /// Whether any process looked at now has waited for a CPU since it was looked at last.
    pub(super) fn any_grew(&mut self) -> bool {
        let count = self.peers.len();
        let mut grew = false;
        for step in 0..count.min(PEERS_PER_LOOK) {
            let peer = &mut self.peers[(self.next + step) % count];
            if let Some(now) = read_run_delay(&peer.schedstat) {
                grew |= now > peer.run_delay;
                peer.run_delay = now;
            }
        }
        if count > 0 {
            self.next = (self.next + PEERS_PER_LOOK) % count;
        }
        grew
    }
}

/// The run delay in an open schedstat file (read again from its start: procfs renders it anew).
fn read_run_delay(schedstat: &File) -> Option<u64> {
    let mut text = [0u8; 96];
    let len = schedstat.read_at(&mut text, 0).ok()?;
    parse_run_delay(&text[..len])
}

/// The second of the space-separated numbers of `/proc/PID/schedstat`.
fn parse_run_delay(text: &[u8]) -> Option<u64> {
    let field = text.split(|&byte| byte == b' ' || byte == b'\n').nth(1)?;
    std::str::from_utf8(field).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};
    use std::time::Duration;

    #[test]
    fn the_second_field_is_the_run_delay() {
        assert_eq!(parse_run_delay(b"215230939 21694558 961\n"), Some(21694558));
        assert_eq!(parse_run_delay(b"0 0 1\n"), Some(0));
        assert_eq!(parse_run_delay(b"12\n"), None);
        assert_eq!(parse_run_delay(b""), None);
    }

    struct Reaped(Child);

    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn busy_on_cpu0() -> Reaped {
        let child = Command::new("sh").args(["-c", "while :; do :; done"]).spawn().expect("spawn sh");
        // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it, and
        // sched_setaffinity only reads it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            assert_eq!(libc::sched_setaffinity(child.id() as libc::pid_t, std::mem::size_of::<libc::cpu_set_t>(), &set), 0);
        }
        Reaped(child)
    }

    /// Two busy processes on one CPU take turns, so each waits for it; a sleeping one does not.
    #[test]
    fn a_preempted_process_waits_and_a_sleeping_one_does_not() {
        if File::open("/proc/self/schedstat").is_err() {
            return;
        }
        let (first, _second) = (busy_on_cpu0(), busy_on_cpu0());
        let sleeper = Reaped(Command::new("sleep").arg("30").spawn().expect("spawn sleep"));
        let mut preempted = RunDelays::open([first.0.id()]);
        let mut asleep = RunDelays::open([sleeper.0.id()]);
        std::thread::sleep(Duration::from_millis(100));
        // The sleeper may have waited for a CPU while it started: that look only primes.
        let _ = asleep.any_grew();
        std::thread::sleep(Duration::from_millis(200));
        assert!(preempted.any_grew(), "a process sharing its only CPU with another must wait for it");
        assert!(!asleep.any_grew(), "a sleeping process never waits for a CPU");
        assert!(!RunDelays::open([u32::MAX]).any_grew(), "a process that does not exist never waits");
    }
}
