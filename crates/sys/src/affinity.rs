//! CPU affinity (`sched_getaffinity` / `sched_setaffinity`) of the calling thread or of a process.
//!
//! CPU sets are plain ascending lists of CPU numbers; the kernel mask is sized at run time so
//! machines with more than 1024 CPUs work too.

use std::io;
use std::mem::size_of;

type MaskWord = libc::c_ulong;

const WORD_BITS: usize = MaskWord::BITS as usize;
/// glibc's `cpu_set_t` size; the kernel may need more on very large machines.
const FIRST_MASK_BITS: usize = 1024;
const LARGEST_MASK_BITS: usize = 1 << 20;

/// The CPUs the calling thread may run on, ascending.
pub fn calling_thread() -> io::Result<Vec<usize>> {
    get(0)
}

/// Restricts the calling thread (and the processes it starts afterwards) to `cpus`.
pub fn set_calling_thread(cpus: &[usize]) -> io::Result<()> {
    set(0, cpus)
}

/// The CPUs process (or thread) `pid` may run on, ascending.
pub fn of_process(pid: u32) -> io::Result<Vec<usize>> {
    get(to_pid(pid)?)
}

/// Restricts process (or thread) `pid` to `cpus`. Threads it already started keep their own mask.
pub fn set_process(pid: u32, cpus: &[usize]) -> io::Result<()> {
    set(to_pid(pid)?, cpus)
}

fn to_pid(pid: u32) -> io::Result<libc::pid_t> {
    match libc::pid_t::try_from(pid) {
        Ok(value) if value > 0 => Ok(value),
        _ => Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{pid} is not a process id"))),
    }
}

fn get(pid: libc::pid_t) -> io::Result<Vec<usize>> {
    let mut bits = FIRST_MASK_BITS;
    loop {
        let mut mask = vec![0 as MaskWord; bits / WORD_BITS];
        let bytes = mask.len() * size_of::<MaskWord>();
        // SAFETY: `mask` is a live, writable buffer of exactly `bytes` bytes; the kernel writes at
        // most that many. cpu_set_t is an array of unsigned longs, so the layouts agree.
        let rc = unsafe { libc::sched_getaffinity(pid, bytes, mask.as_mut_ptr().cast::<libc::cpu_set_t>()) };
        if rc == 0 {
            return Ok(cpus_of_mask(&mask));
        }
        let error = io::Error::last_os_error();
        // EINVAL: the kernel's CPU mask is larger than ours.
        if error.raw_os_error() != Some(libc::EINVAL) || bits >= LARGEST_MASK_BITS {
            return Err(error);
        }
        bits *= 2;
    }
}

fn set(pid: libc::pid_t, cpus: &[usize]) -> io::Result<()> {
    if cpus.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty CPU set cannot be bound to"));
    }
    let highest = cpus.iter().copied().max().unwrap_or(0);
    if highest >= LARGEST_MASK_BITS {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CPU {highest} is out of range")));
    }
    let words = (highest / WORD_BITS + 1).max(FIRST_MASK_BITS / WORD_BITS);
    let mut mask = vec![0 as MaskWord; words];
    for &cpu in cpus {
        mask[cpu / WORD_BITS] |= 1 << (cpu % WORD_BITS);
    }
    let bytes = mask.len() * size_of::<MaskWord>();
    // SAFETY: `mask` is a live buffer of exactly `bytes` bytes that the kernel only reads.
    let rc = unsafe { libc::sched_setaffinity(pid, bytes, mask.as_ptr().cast::<libc::cpu_set_t>()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn cpus_of_mask(mask: &[MaskWord]) -> Vec<usize> {
    let mut cpus = Vec::new();
    for (index, &word) in mask.iter().enumerate() {
        for bit in 0..WORD_BITS {
            if word & (1 << bit) != 0 {
                cpus.push(index * WORD_BITS + bit);
            }
        }
    }
    cpus
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_can_narrow_and_restore_its_mask() {
        std::thread::spawn(|| {
            let original = calling_thread().unwrap();
            assert!(!original.is_empty());
            let chosen = *original.last().unwrap();
            set_calling_thread(&[chosen]).unwrap();
            assert_eq!(calling_thread().unwrap(), vec![chosen]);
            set_calling_thread(&original).unwrap();
            assert_eq!(calling_thread().unwrap(), original);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_process_mask_is_readable_and_bad_input_is_refused() {
        let own = of_process(std::process::id()).unwrap();
        assert!(!own.is_empty());
        assert!(set_calling_thread(&[]).is_err());
        assert!(of_process(0).is_err());
        assert!(set_process(std::process::id(), &[LARGEST_MASK_BITS]).is_err());
    }

    #[test]
    fn masks_decode_to_ascending_cpu_lists() {
        let mut mask = vec![0 as MaskWord; 2];
        mask[0] = 0b1011;
        mask[1] = 1;
        assert_eq!(cpus_of_mask(&mask), vec![0, 1, 3, WORD_BITS]);
    }
}
