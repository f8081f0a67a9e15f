//! The one executor of RMA operations, used by every path: the origin on a `Direct` target or on
//! itself, on a `SingleCopy` target through [`Memory`] of another process, the target on a
//! `Messages` request. Operands are packed bytes; the target's memory is a list of byte runs.

use std::ffi::c_int;

use crate::consts::*;
use crate::op::Reduction;

/// What an operation does to the target's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Put,
    Get,
    Accumulate,
    /// Get_accumulate and Fetch_and_op: the old contents come back, then they are combined.
    GetAccumulate,
    CompareAndSwap,
}

impl Action {
    /// Whether the operation reads the target's memory and hands it back.
    pub fn fetches(self) -> bool {
        matches!(self, Action::Get | Action::GetAccumulate | Action::CompareAndSwap)
    }

    /// Whether the operation must be atomic with the other accumulate-like ones.
    pub fn is_atomic(self) -> bool {
        matches!(self, Action::Accumulate | Action::GetAccumulate | Action::CompareAndSwap)
    }
}

/// Total bytes of `runs`.
pub fn runs_len(runs: &[(isize, usize)]) -> usize {
    runs.iter().map(|&(_, len)| len).sum()
}

/// Checks that every run lies within `[0, size)`: the window's memory at the target.
pub fn check_range(runs: &[(isize, usize)], size: usize, target: u32) -> Result<(), String> {
    for &(offset, len) in runs {
        let end = usize::try_from(offset).ok().and_then(|start| start.checked_add(len));
        if end.is_none_or(|end| end > size) {
            return Err(format!("the access of {len} bytes at byte {offset} of rank {target}'s window is outside its {size} bytes"));
        }
    }
    Ok(())
}

/// Checks that every run lies within one of `regions` (address, length): a dynamic window's
/// attached memory.
pub fn check_attached(runs: &[(isize, usize)], regions: &[(usize, usize)], target: u32) -> Result<(), String> {
    for &(address, len) in runs {
        let inside = usize::try_from(address).ok().is_some_and(|start| regions.iter().any(|&(base, size)| start >= base && start.checked_add(len).is_some_and(|end| end <= base + size)));
        if !inside {
            return Err(format!("the access of {len} bytes at address {address:#x} is outside the memory attached to rank {target}'s dynamic window"));
        }
    }
    Ok(())
}

/// Shifts runs relative to a displacement to runs relative to the window's base.
pub fn displaced(runs: Vec<(isize, usize)>, displacement: isize) -> Result<Vec<(isize, usize)>, String> {
    runs.into_iter().map(|(offset, len)| offset.checked_add(displacement).map(|at| (at, len)).ok_or_else(|| "the target displacement overflows".to_string())).collect()
}

/// Window memory an operation applies to: mapped in this process, or another process's reached
/// with single copies. Failures are (MPI error class, detail).
pub trait Memory {
    /// Copies the runs into `out` (their total length).
    fn gather(&self, runs: &[(isize, usize)], out: &mut [u8]) -> Result<(), (c_int, String)>;
    /// Copies `data` (the runs' total length) into the runs.
    fn scatter(&self, runs: &[(isize, usize)], data: &[u8]) -> Result<(), (c_int, String)>;
}

/// Memory mapped in this process, runs relative to `base`.
pub struct Mapped {
    base: *mut u8,
}

impl Mapped {
    /// # Safety
    /// Every run later given to `gather`/`scatter` must be valid for reads and writes at `base`.
    pub unsafe fn new(base: *mut u8) -> Mapped {
        Mapped { base }
    }
}

impl Memory for Mapped {
    fn gather(&self, runs: &[(isize, usize)], out: &mut [u8]) -> Result<(), (c_int, String)> {
        let mut at = 0;
        for &(offset, len) in runs {
            // SAFETY: the run is readable (`Mapped::new`'s contract) and `out` holds the runs'
            // total length.
            unsafe { std::ptr::copy(self.base.wrapping_offset(offset), out.as_mut_ptr().add(at), len) };
            at += len;
        }
        Ok(())
    }

    fn scatter(&self, runs: &[(isize, usize)], data: &[u8]) -> Result<(), (c_int, String)> {
        let mut at = 0;
        for &(offset, len) in runs {
            // SAFETY: the run is writable (`Mapped::new`'s contract) and `data` holds the runs'
            // total length. `copy`: an origin may put from its own window into itself.
            unsafe { std::ptr::copy(data.as_ptr().add(at), self.base.wrapping_offset(offset), len) };
            at += len;
        }
        Ok(())
    }
}

/// Applies `action` to the runs at `base`, memory mapped here (see [`apply`]).
///
/// # Safety
/// Every run at `base` must be valid memory for reads and writes for the duration of the call,
/// and not be changed by anyone else meanwhile where `action` is atomic (the caller holds the
/// target's accumulate lock, or is the target's only writer).
pub unsafe fn execute(action: Action, base: *mut u8, runs: &[(isize, usize)], data: &[u8], compare: &[u8], reduction: Option<&Reduction>) -> Result<Vec<u8>, (c_int, String)> {
    // SAFETY: per this function's contract.
    let memory = unsafe { Mapped::new(base) };
    apply(&memory, action, runs, data, compare, reduction)
}

/// Applies `action` to the runs of `memory`: `data` is the origin's packed operand (put,
/// accumulate, the new value of compare-and-swap), `compare` the compare value; `reduction`
/// combines for the accumulate-like actions. Returns the fetched bytes (empty for put and
/// accumulate). Atomic actions need the caller to keep other writers out meanwhile (the target's
/// accumulate lock, or being the target's only writer).
pub fn apply(memory: &impl Memory, action: Action, runs: &[(isize, usize)], data: &[u8], compare: &[u8], reduction: Option<&Reduction>) -> Result<Vec<u8>, (c_int, String)> {
    let len = runs_len(runs);
    let operand_len = match action {
        Action::Get => len,
        Action::Accumulate | Action::GetAccumulate if reduction.is_none() => len,
        _ => data.len(),
    };
    if operand_len != len {
        return Err((MPI_ERR_ARG, format!("the origin's {} bytes do not match the target's {len}", data.len())));
    }
    match action {
        Action::Put => {
            memory.scatter(runs, data)?;
            Ok(Vec::new())
        }
        Action::Get => {
            let mut out = vec![0; len];
            memory.gather(runs, &mut out)?;
            Ok(out)
        }
        Action::Accumulate | Action::GetAccumulate => {
            let mut current = vec![0; len];
            memory.gather(runs, &mut current)?;
            let Some(reduction) = reduction else {
                // MPI_NO_OP: nothing changes.
                return Ok(if action == Action::GetAccumulate { current } else { Vec::new() });
            };
            let old = (action == Action::GetAccumulate).then(|| current.clone());
            reduction.apply(data, &mut current);
            memory.scatter(runs, &current)?;
            Ok(old.unwrap_or_default())
        }
        Action::CompareAndSwap => {
            if compare.len() != len {
                return Err((MPI_ERR_ARG, format!("the compare value's {} bytes do not match the target's {len}", compare.len())));
            }
            let mut current = vec![0; len];
            memory.gather(runs, &mut current)?;
            if current == compare {
                memory.scatter(runs, data)?;
            }
            Ok(current)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked_against_the_window() {
        assert!(check_range(&[(0, 8), (8, 8)], 16, 1).is_ok());
        assert!(check_range(&[(9, 8)], 16, 1).unwrap_err().contains("outside"));
        assert!(check_range(&[(-1, 1)], 16, 1).is_err());
        assert!(check_range(&[(isize::MAX, 2)], isize::MAX as usize, 1).is_err());
        assert!(check_range(&[], 0, 1).is_ok());
        assert!(check_attached(&[(0x1000, 8)], &[(0x1000, 8)], 0).is_ok());
        assert!(check_attached(&[(0x1004, 8)], &[(0x1000, 8)], 0).is_err());
        assert_eq!(displaced(vec![(0, 4), (-4, 4)], 8).unwrap(), vec![(8, 4), (4, 4)]);
        assert!(displaced(vec![(isize::MAX, 1)], 1).is_err());
    }

    #[test]
    fn put_get_and_compare_and_swap_touch_only_their_runs() {
        let mut memory = [0u8; 16];
        let base = memory.as_mut_ptr();
        let runs = [(2isize, 2usize), (8, 2)];
        // SAFETY: every run lies inside `memory`.
        unsafe {
            execute(Action::Put, base, &runs, &[1, 2, 3, 4], &[], None).unwrap();
            assert_eq!(execute(Action::Get, base, &runs, &[], &[], None).unwrap(), vec![1, 2, 3, 4]);
            assert!(execute(Action::Put, base, &runs, &[1], &[], None).is_err());
            assert_eq!(execute(Action::CompareAndSwap, base, &[(2, 2)], &[9, 9], &[0, 0], None).unwrap(), vec![1, 2]);
            assert_eq!(execute(Action::CompareAndSwap, base, &[(2, 2)], &[9, 9], &[1, 2], None).unwrap(), vec![1, 2]);
        }
        assert_eq!(memory, [0, 0, 9, 9, 0, 0, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn accumulates_combine_with_the_reduction() {
        let mut memory = [5i32, 6, 7];
        let base = memory.as_mut_ptr().cast::<u8>();
        let sum = crate::op::reduction(MPI_SUM, MPI_INT).unwrap();
        let data: Vec<u8> = [10i32, 20].iter().flat_map(|v| v.to_ne_bytes()).collect();
        // SAFETY: the runs lie inside `memory`.
        let old = unsafe { execute(Action::GetAccumulate, base, &[(4, 8)], &data, &[], Some(&sum)).unwrap() };
        assert_eq!(old, [6i32, 7].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>());
        assert_eq!(memory, [5, 16, 27]);
        let base = memory.as_mut_ptr().cast::<u8>();
        // SAFETY: as above.
        let fetched = unsafe { execute(Action::GetAccumulate, base, &[(0, 4)], &[], &[], None).unwrap() };
        assert_eq!(fetched, 5i32.to_ne_bytes());
        let replace = crate::op::reduction(MPI_REPLACE, MPI_INT).unwrap();
        // SAFETY: as above.
        unsafe { execute(Action::Accumulate, base, &[(0, 4)], &1i32.to_ne_bytes(), &[], Some(&replace)).unwrap() };
        assert_eq!(memory, [1, 16, 27]);
    }
}
