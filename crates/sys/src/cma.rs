//! Cross-memory attach: reading and writing another process's memory directly
//! (`process_vm_readv`, `process_vm_writev`), the single-copy path for large intra-node messages.

use std::io;

/// Copies up to `local.len()` bytes from `remote_address` in process `pid` into `local`; returns
/// how many were copied (fewer when the kernel stops early, e.g. at an unmapped page).
///
/// When the kernel refuses access (ptrace rules, Yama, other user), the error satisfies
/// [`is_refused`] and the caller should fall back to a two-copy path.
pub fn read_remote(pid: i32, remote_address: u64, local: &mut [u8]) -> io::Result<usize> {
    if local.is_empty() {
        return Ok(0);
    }
    let local_iov = libc::iovec { iov_base: local.as_mut_ptr().cast(), iov_len: local.len() };
    let remote_iov = libc::iovec { iov_base: remote_address as usize as *mut libc::c_void, iov_len: local.len() };
    // SAFETY: the local iovec covers exactly `local`, writable and borrowed mutably for the call;
    // the remote iovec is only read by the kernel in the other process, which checks it.
    let copied = unsafe { libc::process_vm_readv(pid, &local_iov, 1, &remote_iov, 1, 0) };
    if copied < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(copied as usize)
}

/// Copies `local` into process `pid` at `remote_address` (process_vm_writev); returns the bytes
/// copied, which may be fewer than asked.
pub fn write_remote(pid: i32, remote_address: u64, local: &[u8]) -> io::Result<usize> {
    if local.is_empty() {
        return Ok(0);
    }
    let local_iov = libc::iovec { iov_base: local.as_ptr().cast_mut().cast(), iov_len: local.len() };
    let remote_iov = libc::iovec { iov_base: remote_address as usize as *mut libc::c_void, iov_len: local.len() };
    // SAFETY: the local iovec covers exactly `local`, which the kernel only reads; the remote
    // iovec is written by the kernel in the other process, which checks it.
    let copied = unsafe { libc::process_vm_writev(pid, &local_iov, 1, &remote_iov, 1, 0) };
    if copied < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(copied as usize)
}

/// Whether `error` from [`read_remote`] or [`write_remote`] means "not allowed" (EPERM) rather than a bad address or
/// a missing process.
pub fn is_refused(error: &io::Error) -> bool {
    error.raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process_memory() {
        let source: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        let mut target = vec![0u8; 9_000];
        let copied = read_remote(std::process::id() as i32, source.as_ptr() as u64 + 1000, &mut target).unwrap();
        assert_eq!(copied, 9_000);
        assert_eq!(&target[..], &source[1000..]);
    }

    #[test]
    fn writes_this_process_memory() {
        let source: Vec<u8> = (0..5_000u32).map(|i| (i * 13) as u8).collect();
        let mut target = vec![0u8; 8_000];
        let copied = write_remote(std::process::id() as i32, target.as_mut_ptr() as u64 + 3000, &source).unwrap();
        assert_eq!(copied, 5_000);
        assert_eq!(&target[3000..], &source[..]);
        assert!(target[..3000].iter().all(|&byte| byte == 0));
    }

    #[test]
    fn a_bad_address_is_an_error_but_not_a_refusal() {
        let mut target = [0u8; 64];
        let error = read_remote(std::process::id() as i32, 8, &mut target).unwrap_err();
        assert!(!is_refused(&error), "{error}");
        assert_eq!(error.raw_os_error(), Some(libc::EFAULT));
    }

    #[test]
    fn refusal_is_recognised() {
        assert!(is_refused(&io::Error::from_raw_os_error(libc::EPERM)));
        assert!(!is_refused(&io::Error::from_raw_os_error(libc::ESRCH)));
    }

    /// A child that drops to an unprivileged user may not read its root parent: the kernel says
    /// EPERM. Needs root to drop privileges; without root the child reads init (pid 1) instead,
    /// which an ordinary user may not read either.
    #[test]
    fn an_unprivileged_reader_is_refused() {
        let secret = [7u8; 64];
        let target_pid = if is_root() { std::process::id() as i32 } else { 1 };
        let address = secret.as_ptr() as u64;
        // SAFETY: the child runs only async-signal-safe system calls (setgid, setuid,
        // process_vm_readv) and leaves with _exit, never returning into the test harness.
        let child = unsafe { libc::fork() };
        assert!(child >= 0, "fork failed");
        if child == 0 {
            let status = {
                // SAFETY: plain system calls on the child's own credentials.
                let dropped = !is_root() || unsafe { libc::setgid(65534) == 0 && libc::setuid(65534) == 0 };
                let mut buffer = [0u8; 64];
                match (dropped, read_remote(target_pid, address, &mut buffer)) {
                    (false, _) => 3,
                    (true, Err(error)) if is_refused(&error) => 0,
                    (true, Err(_)) => 1,
                    (true, Ok(_)) => 2,
                }
            };
            // SAFETY: ends the forked child without running the parent's destructors.
            unsafe { libc::_exit(status) };
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above; `status` is a valid out pointer.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(libc::WIFEXITED(status));
        assert_eq!(libc::WEXITSTATUS(status), 0, "1: other error, 2: read allowed, 3: could not drop privileges");
    }

    fn is_root() -> bool {
        // SAFETY: geteuid cannot fail.
        unsafe { libc::geteuid() == 0 }
    }
}
