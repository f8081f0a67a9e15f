//! A shared-memory file made by a group's first member and mapped by every member: the node-wide
//! reduction segment of the collectives and the memory of one-sided windows on a node. The
//! first member creates it under a name unique on the node (its pid and a serial number) and
//! broadcasts the name, the others open it, and all agree whether every member has it mapped;
//! then the name is removed (the mappings stay).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{allreduce, bcast};
use crate::coll::port::Port;

/// Tells apart the files one process makes.
static FILES_MADE: AtomicU64 = AtomicU64::new(0);

/// The file's name: `prefix`, the maker's pid and its serial number.
fn file_name(prefix: &str, pid: u64, serial: u64) -> String {
    format!("{prefix}-{pid}-{serial}")
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
