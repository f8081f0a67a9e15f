//! The `SingleCopy` path: a target on this node whose window memory is its own (MPI_Win_create,
//! dynamic windows) is read and written with process_vm_readv/writev, with no action by the
//! target. Whether the kernel allows it (ptrace rules, Yama) is probed at window creation by
//! reading a known word in each peer; a refusal is remembered for the process's later windows.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use braid_sys::cma;

use super::ops::Memory;
use crate::consts::*;

/// The word probes read: its address is exchanged at window creation.
static PROBE: AtomicU64 = AtomicU64::new(PROBE_VALUE);
const PROBE_VALUE: u64 = 0x6272_6169_642d_726d;
/// A probe was refused once: later windows do not try again.
static REFUSED: AtomicBool = AtomicBool::new(false);

/// The address of this process's probe word, for its peers.
pub fn probe_address() -> u64 {
    PROBE.as_ptr() as u64
}

/// Whether this process may read process `pid`, whose probe word is at `address`.
pub fn reachable(pid: i32, address: u64) -> bool {
    if REFUSED.load(Ordering::Relaxed) {
        return false;
    }
    let mut word = [0u8; 8];
    match cma::read_remote(pid, address, &mut word) {
        Ok(8) if u64::from_ne_bytes(word) == PROBE_VALUE => true,
        Ok(_) => false,
        Err(error) => {
            if cma::is_refused(&error) {
                REFUSED.store(true, Ordering::Relaxed);
            }
            false
        }
    }
}

/// Another process's memory, runs relative to `base` (an address in that process).
pub struct Remote {
    pub pid: i32,
    pub base: u64,
}

impl Remote {
    fn address(&self, offset: isize, done: usize) -> u64 {
        self.base.wrapping_add_signed(offset as i64).wrapping_add(done as u64)
    }
}

/// The error of a copy the kernel stopped: the target's memory is gone or never was there.
fn failed(what: &str, len: usize, address: u64, error: Option<std::io::Error>) -> (c_int, String) {
    let why = error.map_or("it stopped early".to_string(), |error| error.to_string());
    (MPI_ERR_OTHER, format!("{what} {len} bytes at {address:#x} in the target process failed: {why} (is its window memory still allocated?)"))
}

impl Memory for Remote {
    fn gather(&self, runs: &[(isize, usize)], out: &mut [u8]) -> Result<(), (c_int, String)> {
        let mut at = 0;
        for &(offset, len) in runs {
            let mut done = 0;
            while done < len {
                match cma::read_remote(self.pid, self.address(offset, done), &mut out[at + done..at + len]) {
                    Ok(0) => return Err(failed("reading", len, self.address(offset, done), None)),
                    Ok(copied) => done += copied,
                    Err(error) => return Err(failed("reading", len, self.address(offset, done), Some(error))),
                }
            }
            at += len;
        }
        Ok(())
    }

    fn scatter(&self, runs: &[(isize, usize)], data: &[u8]) -> Result<(), (c_int, String)> {
        let mut at = 0;
        for &(offset, len) in runs {
            let mut done = 0;
            while done < len {
                match cma::write_remote(self.pid, self.address(offset, done), &data[at + done..at + len]) {
                    Ok(0) => return Err(failed("writing", len, self.address(offset, done), None)),
                    Ok(copied) => done += copied,
                    Err(error) => return Err(failed("writing", len, self.address(offset, done), Some(error))),
                }
            }
            at += len;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::win::ops::{apply, Action};

    #[test]
    fn this_process_is_reachable_and_operations_apply_through_single_copies() {
        assert!(reachable(std::process::id() as i32, probe_address()));
        let mut memory = [1i32, 2, 3, 4];
        let remote = Remote { pid: std::process::id() as i32, base: memory.as_mut_ptr() as u64 };
        let sum = crate::op::reduction(MPI_SUM, MPI_INT).unwrap();
        let data: Vec<u8> = [10i32, 20].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let old = apply(&remote, Action::GetAccumulate, &[(0, 4), (12, 4)], &data, &[], Some(&sum)).unwrap();
        assert_eq!(old, [1i32, 4].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>());
        // SAFETY: the kernel wrote the array behind the compiler's back; read it as volatile.
        assert_eq!(unsafe { std::ptr::read_volatile(&memory) }, [11, 2, 3, 24]);
        let bad = Remote { pid: std::process::id() as i32, base: 8 };
        assert_eq!(apply(&bad, Action::Get, &[(0, 4)], &[], &[], None).unwrap_err().0, MPI_ERR_OTHER);
    }
}
