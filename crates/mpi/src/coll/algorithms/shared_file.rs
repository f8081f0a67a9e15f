//! A shared-memory file made by a group's first member and mapped by every member: the node-wide
//! reduction segment of the collectives and the memory of one-sided windows on a node. The
//! first member creates it under a name unique on the node (its pid and a serial number) and
//! broadcasts the name, the others open it, and all agree whether every member has it mapped;
//! then the name is removed (the mappings stay). The name starts with the maker's job, as the
//! shared-memory transport's files do, so that the launcher removes it with theirs when the job
//! ends before the members could (a member killed, or never coming, while it is made).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use super::{allreduce, bcast};
use crate::coll::port::Port;

/// Tells apart the files one process makes.
static FILES_MADE: AtomicU64 = AtomicU64::new(0);

/// This process's job (its key-value space's name), once MPI has started.
static JOB: OnceLock<String> = OnceLock::new();

/// Names the process's job, for the files it makes (called once MPI has started).
pub(crate) fn set_job(job: &str) {
    let _ = JOB.set(job.to_string());
}

/// The file's name: `braid-`, the maker's job, `prefix` without its `braid-`, the maker's pid and
/// its serial number.
fn file_name(prefix: &str, pid: u64, serial: u64) -> String {
    let what = prefix.strip_prefix("braid-").unwrap_or(prefix);
    match JOB.get() {
        Some(job) => format!("braid-{job}-{what}-{pid}-{serial}"),
        None => format!("braid-{what}-{pid}-{serial}"),
    }
}

/// Makes (first member of `port`'s group, with `create`) or opens (the others, with `open`) the
/// file, named from `prefix`; this member's mapping when every member has one, else None (the
/// failing members' `create` or `open` said why). Collective over the group.
pub async fn make_shared<T>(port: &Port, prefix: &str, create: impl FnOnce(&str) -> io::Result<T>, open: impl FnOnce(&str) -> io::Result<T>) -> Result<Option<T>, i32> {
    let first = port.rank() == 0;
    let mut made = None;
    // The maker's pid and serial number, pid 0 when it could not make the file.
    let mut announce = [0u8; 16];
    if first {
        let (pid, serial) = (u64::from(std::process::id()), FILES_MADE.fetch_add(1, Ordering::Relaxed));
        if let Ok(mapping) = create(&file_name(prefix, pid, serial)) {
            made = Some(mapping);
            announce[..8].copy_from_slice(&pid.to_le_bytes());
            announce[8..].copy_from_slice(&serial.to_le_bytes());
        }
    }
    bcast(port, &mut announce, 0).await?;
    let pid = u64::from_le_bytes(announce[..8].try_into().expect("8 bytes"));
    let serial = u64::from_le_bytes(announce[8..].try_into().expect("8 bytes"));
    if !first && pid != 0 {
        made = open(&file_name(prefix, pid, serial)).ok();
    }
    let mut everywhere = [u8::from(made.is_some())];
    allreduce(port, &mut everywhere, 1, &|input: &[u8], inout: &mut [u8]| inout[0] = inout[0].min(input[0]), true).await?;
    if first && pid != 0 {
        let _ = braid_sys::shm::unlink(&file_name(prefix, pid, serial));
    }
    Ok(made.filter(|_| everywhere[0] == 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_named_after_the_makers_job_as_the_launcher_sweeps_them() {
        set_job("kvs_1_2");
        assert_eq!(file_name("braid-flags", 42, 7), "braid-kvs_1_2-flags-42-7");
    }
}
