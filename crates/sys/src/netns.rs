//! Named network namespaces (the `ip netns` convention: a bind mount at /run/netns/NAME), entering
//! them, and telling which one this process is in.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

/// Where `ip netns add` mounts named namespaces.
pub const NAMED_NAMESPACES: &str = "/run/netns";

/// Bits of the effective capability set (capability(7)): CAP_NET_ADMIN and CAP_SYS_ADMIN.
const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;

/// An open handle on a named network namespace. Holding it keeps the namespace reachable even if
/// its name is removed meanwhile.
#[derive(Clone)]
pub struct Namespace {
    name: String,
    handle: Arc<OwnedFd>,
}

impl Namespace {
    /// Opens /run/netns/NAME.
    pub fn open(name: &str) -> io::Result<Namespace> {
        let file = File::open(path_of(name)?).map_err(|error| io::Error::new(error.kind(), format!("network namespace {name}: {error}")))?;
        Ok(Namespace { name: name.to_string(), handle: Arc::new(OwnedFd::from(file)) })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace's inode number: equal for two processes exactly when they share the namespace.
    pub fn inode(&self) -> io::Result<u64> {
        Ok(File::from(self.handle.try_clone()?).metadata()?.ino())
    }

    /// Moves the calling thread into the namespace (sockets it opens from now on live there).
    pub fn enter(&self) -> io::Result<()> {
        // SAFETY: the descriptor is open for the handle's lifetime; setns changes no memory.
        if unsafe { libc::setns(self.handle.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Makes `command`'s process start inside the namespace, as `ip netns exec` does: it enters the
    /// namespace and gets a private mount namespace whose /sys shows this namespace's interfaces.
    /// Inherited descriptors (Unix sockets, pipes) keep working: they do not belong to a namespace.
    pub fn enter_on_exec(&self, command: &mut Command) {
        let handle = Arc::clone(&self.handle);
        let pre_exec = move || -> io::Result<()> {
            let check = |result: libc::c_int| if result == 0 { Ok(()) } else { Err(io::Error::last_os_error()) };
            // SAFETY: between fork and exec only async-signal-safe system calls run here, on
            // a descriptor owned by this closure and static C strings.
            unsafe {
                check(libc::setns(handle.as_raw_fd(), libc::CLONE_NEWNET))?;
                check(libc::unshare(libc::CLONE_NEWNS))?;
                // Slave propagation: the /sys replacement below must not reach the parent's mounts.
                check(libc::mount(c"".as_ptr(), c"/".as_ptr(), std::ptr::null(), libc::MS_SLAVE | libc::MS_REC, std::ptr::null()))?;
                if libc::umount2(c"/sys".as_ptr(), libc::MNT_DETACH) != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
                    return Err(io::Error::last_os_error());
                }
                check(libc::mount(c"sysfs".as_ptr(), c"/sys".as_ptr(), c"sysfs".as_ptr(), 0, std::ptr::null()))
            }
        };
        // SAFETY: the closure only makes async-signal-safe system calls and allocates nothing.
        unsafe {
            command.pre_exec(pre_exec);
        }
    }
}

fn path_of(name: &str) -> io::Result<PathBuf> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("invalid network namespace name {name:?}")));
    }
    Ok(PathBuf::from(NAMED_NAMESPACES).join(name))
}

/// Moves the calling thread into the named namespace.
pub fn enter(name: &str) -> io::Result<()> {
    Namespace::open(name)?.enter()
}

/// Whether a namespace of that name exists.
pub fn exists(name: &str) -> bool {
    path_of(name).is_ok_and(|path| path.exists())
}

/// The names of every named network namespace, sorted.
pub fn list() -> io::Result<Vec<String>> {
    let entries = match std::fs::read_dir(NAMED_NAMESPACES) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut names: Vec<String> = entries.flatten().filter_map(|entry| entry.file_name().into_string().ok()).collect();
    names.sort();
    Ok(names)
}

/// The inode of the calling thread's network namespace.
pub fn current_inode() -> io::Result<u64> {
    Ok(std::fs::metadata("/proc/thread-self/ns/net")?.ino())
}

/// The name of the calling thread's network namespace, if it is a named one (`None` for the
/// root namespace or an unnamed one).
pub fn current_name() -> io::Result<Option<String>> {
    let current = current_inode()?;
    for name in list()? {
        let Ok(path) = path_of(&name) else { continue };
        if std::fs::metadata(path).is_ok_and(|metadata| metadata.ino() == current) {
            return Ok(Some(name));
        }
    }
    Ok(None)
}

/// Whether this process may create, enter and configure namespaces (CAP_NET_ADMIN and
/// CAP_SYS_ADMIN in its effective set, as root has).
pub fn can_manage() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return false };
    let effective = status.lines().find_map(|line| line.strip_prefix("CapEff:")).and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok()).unwrap_or(0);
    [CAP_NET_ADMIN, CAP_SYS_ADMIN].iter().all(|bit| effective & (1 << bit) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_namespace_has_a_stable_inode() {
        let inode = current_inode().unwrap();
        assert!(inode > 0);
        assert_eq!(inode, current_inode().unwrap());
        assert_eq!(inode, std::fs::metadata("/proc/self/ns/net").unwrap().ino());
    }

    #[test]
    fn names_that_escape_the_directory_are_refused() {
        for name in ["", ".", "..", "a/b", "../etc"] {
            assert_eq!(Namespace::open(name).err().unwrap().kind(), io::ErrorKind::InvalidInput, "{name:?}");
            assert!(!exists(name));
        }
        assert!(Namespace::open("braid-no-such-namespace").is_err());
        assert!(!exists("braid-no-such-namespace"));
    }

    /// A namespace made with `ip netns add` for one test, deleted when dropped.
    struct ScratchNamespace(String);

    impl Drop for ScratchNamespace {
        fn drop(&mut self) {
            let _ = Command::new("ip").args(["netns", "delete", &self.0]).output();
        }
    }

    #[test]
    fn a_thread_enters_a_named_namespace_and_a_child_starts_inside_it() {
        let scratch = ScratchNamespace(format!("braid-tns{}", std::process::id()));
        let made = can_manage() && Command::new("ip").args(["netns", "add", &scratch.0]).output().is_ok_and(|output| output.status.success());
        assert!(made, "making a network namespace needs root and `ip`");
        assert!(exists(&scratch.0));
        assert!(list().unwrap().contains(&scratch.0));
        let namespace = Namespace::open(&scratch.0).unwrap();
        let inside = namespace.inode().unwrap();
        let outside = current_inode().unwrap();
        assert_ne!(inside, outside);
        let name = scratch.0.clone();
        let (seen, seen_name) = std::thread::spawn(move || {
            enter(&name).unwrap();
            (current_inode().unwrap(), current_name().unwrap())
        })
        .join()
        .unwrap();
        assert_eq!(seen, inside);
        assert_eq!(seen_name.as_deref(), Some(scratch.0.as_str()));
        assert_eq!(current_inode().unwrap(), outside, "only the thread that entered moved");

        let mut command = Command::new("sh");
        command.args(["-c", "stat -L -c %i /proc/self/ns/net; ls /sys/class/net"]);
        namespace.enter_on_exec(&mut command);
        let output = command.output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let mut lines = stdout.lines();
        assert_eq!(lines.next(), Some(inside.to_string().as_str()));
        assert_eq!(lines.collect::<Vec<_>>(), ["lo"], "/sys shows the namespace's interfaces only");
    }

    #[test]
    fn list_is_sorted_and_names_exist() {
        let names = list().unwrap();
        assert!(names.windows(2).all(|pair| pair[0] <= pair[1]));
        assert!(names.iter().all(|name| exists(name)));
    }
}
