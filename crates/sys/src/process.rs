//! Facts about this process and its node, and the permission other ranks need for CMA.

use std::io;

/// Lets any process of this user read this process's memory with `process_vm_readv`, as Yama's
/// `ptrace_scope = 1` would otherwise refuse a peer that is not our ancestor. Succeeds when Yama
/// is absent (the kernel then answers EINVAL and the ordinary same-user rules apply).
pub fn allow_ptrace_from_any() -> io::Result<()> {
    // SAFETY: PR_SET_PTRACER takes a plain integer argument and changes only this process.
    let result = unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
    if result == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EINVAL) {
        return Ok(());
    }
    Err(error)
}

/// Other processes of this machine, watched for their end: through a pidfd each (readable once
/// the process has ended, even while it is an unreaped zombie), or, where the kernel has no
/// pidfd_open, by signal 0 (which a zombie still answers).
pub struct ProcessWatch {
    watched: Vec<(i32, Option<std::os::fd::OwnedFd>)>,
}

impl ProcessWatch {
    /// Watches the processes `pids`.
    pub fn new(pids: &[i32]) -> ProcessWatch {
        ProcessWatch { watched: pids.iter().map(|&pid| (pid, pidfd_open(pid).ok())).collect() }
    }

    /// The index (into the pids given) of a process that has ended, if any. Never blocks.
    pub fn ended(&self) -> Option<usize> {
        use std::os::fd::AsFd;
        let with_fd: Vec<(usize, std::os::fd::BorrowedFd<'_>)> = self.watched.iter().enumerate().filter_map(|(index, (_, fd))| fd.as_ref().map(|fd| (index, fd.as_fd()))).collect();
        if !with_fd.is_empty() {
            let fds: Vec<_> = with_fd.iter().map(|(_, fd)| *fd).collect();
            if let Ok(readiness) = crate::fd::poll_readable(&fds, Some(std::time::Duration::ZERO)) {
                if let Some(position) = readiness.iter().position(|ready| ready.readable || ready.hangup) {
                    return Some(with_fd[position].0);
                }
            }
        }
        self.watched.iter().position(|(pid, fd)| {
            // SAFETY: signal 0 only checks that the process exists; nothing is delivered.
            fd.is_none() && unsafe { libc::kill(*pid, 0) } != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
        })
    }

    /// The pid of watched process `index`.
    pub fn pid(&self, index: usize) -> i32 {
        self.watched[index].0
    }
}

fn pidfd_open(pid: i32) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just opened for us, owned by no one else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// This node's host name.
pub fn hostname() -> io::Result<String> {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname truncates to it.
    if unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    Ok(String::from_utf8_lossy(&buffer[..end]).into_owned())
}

/// The kernel's random id of the current boot: two processes with the same host name and boot
/// id run on the same node under the same kernel (so they can share memory).
pub fn boot_id() -> io::Result<String> {
    let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")?;
    let id = text.trim();
    if id.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "empty boot_id"));
    }
    Ok(id.to_string())
}

/// Names the node this process runs on, for deciding which ranks share a node: host name, boot id
/// and network-namespace inode. Ranks in different network namespaces of one machine (the nodes of
/// a virtual cluster) are different nodes: they reach each other only through the network. The
/// result holds no whitespace or `=`, so it fits in a PMI value as is.
pub fn node_identity() -> io::Result<String> {
    let identity = format!("{}:{}:net{}", hostname()?, boot_id()?, crate::netns::current_inode()?);
    Ok(identity.chars().map(|c| if c.is_ascii_graphic() && c != '=' { c } else { '_' }).collect())
}

/// The process that started this one, or the one it was handed to when that ended (init, or
/// the nearest subreaper).
pub fn parent_pid() -> i32 {
    // SAFETY: getppid takes no arguments and cannot fail.
    unsafe { libc::getppid() }
}

/// The kernel's id of the calling thread (what [`crate::affinity::set_process`] takes to move
/// one thread of a process).
pub fn thread_id() -> u32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    let id = unsafe { libc::gettid() };
    id as u32
}

#[cfg(test)]
mod watch_tests {
    use super::*;

    #[test]
    fn an_ended_child_is_seen_and_a_live_one_is_not() {
        let mut sleeper = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let mut quick = std::process::Command::new("true").spawn().unwrap();
        let watch = ProcessWatch::new(&[sleeper.id() as i32, quick.id() as i32]);
        // `true` ends at once; unreaped it stays a zombie, which the watch must count as ended.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while watch.ended().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(watch.ended(), Some(1));
        assert_eq!(watch.pid(1), quick.id() as i32);
        let _ = quick.wait();
        let _ = sleeper.kill();
        let _ = sleeper.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_facts_are_stable_and_nonempty() {
        let host = hostname().unwrap();
        assert!(!host.is_empty());
        assert_eq!(host, hostname().unwrap());
        let id = boot_id().unwrap();
        assert_eq!(id.len(), 36, "boot_id is a UUID: {id}");
        assert_eq!(id, boot_id().unwrap());
    }

    #[test]
    fn node_identity_names_host_boot_and_network_namespace() {
        let identity = node_identity().unwrap();
        assert_eq!(identity, node_identity().unwrap());
        assert!(identity.contains(&boot_id().unwrap()), "{identity}");
        assert!(identity.ends_with(&format!(":net{}", crate::netns::current_inode().unwrap())), "{identity}");
        assert!(identity.chars().all(|c| c.is_ascii_graphic() && c != '='), "{identity}");
    }

    #[test]
    fn ptrace_permission_can_be_granted() {
        allow_ptrace_from_any().unwrap();
    }
}
