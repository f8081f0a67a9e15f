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

/// The kernel's id of the calling thread (what [`crate::affinity::set_process`] takes to move
/// one thread of a process).
pub fn thread_id() -> u32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    let id = unsafe { libc::gettid() };
    id as u32
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
