//! Accumulate-like operations with the processor's atomic instructions, on windows whose
//! accumulates the program declared to be single elements of predefined types (the
//! `acc_single_intrinsic` hint, as Open MPI names it) and whose memory every rank maps. An element
//! of 4 or 8 bytes at an address aligned to its size is updated by one atomic instruction (an add,
//! an exchange, a compare-and-swap) or a compare-and-swap loop around the operation's kernel, with
//! no lock; every other element is updated under the target's accumulate lock. Each element is
//! always updated the one way, whoever updates it (an origin on the node, the target for a
//! request from another node, a rank on itself), so both stay atomic together.
//!
//! The compare-and-swap loop is checked with loom:
//! `RUSTFLAGS="--cfg loom" cargo test -p braid-mpi --release --target-dir target/loom atomics`.

use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::ops::Action;
use crate::consts::*;
use crate::op::Kernel;

/// Whether an element of `size` bytes at `address` is updated lock-free.
#[inline]
pub fn lock_free(address: usize, size: usize) -> bool {
    (size == 4 || size == 8) && address.is_multiple_of(size)
}

/// Whether every element of `size` bytes in the runs at `base` is updated lock-free: if not, the
/// operation takes the accumulate lock (its lock-free elements are still updated atomically).
pub fn all_lock_free(base: *mut u8, runs: &[(isize, usize)], size: usize) -> bool {
    size > 0 && runs.iter().all(|&(offset, len)| len.is_multiple_of(size) && lock_free(base.wrapping_offset(offset) as usize, size))
}

/// What happens to one element.
#[derive(Clone, Copy)]
pub enum Update {
    /// MPI_NO_OP: read it.
    Read,
    /// MPI_REPLACE: swap the operand in.
    Swap,
    /// MPI_SUM of an integer type: one atomic add (its kernel for an element that is not
    /// lock-free).
    Add(Kernel),
    /// Any other operation: its kernel applied in a compare-and-swap loop.
    Combine(Kernel),
    /// Compare-and-swap.
    CompareAndSwap,
}

impl Update {
    /// How `action` with `op` updates elements of `basic`; None if `op` is not a predefined
    /// operation defined on it.
    pub fn of(action: Action, op: MPI_Op, basic: MPI_Datatype) -> Option<Update> {
        Some(match (action, op) {
            (Action::CompareAndSwap, _) => Update::CompareAndSwap,
            (_, MPI_NO_OP) => Update::Read,
            (_, MPI_REPLACE) => Update::Swap,
            (_, MPI_SUM) if INTEGER_TYPES.contains(&basic) => Update::Add(crate::op::predefined_kernel(op, basic)?),
            _ => Update::Combine(crate::op::predefined_kernel(op, basic)?),
        })
    }
}

/// Two's-complement integer types, whose sum is the machine's wrapping add.
const INTEGER_TYPES: [MPI_Datatype; 13] =
    [MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_LONG_LONG_INT, MPI_UNSIGNED_LONG_LONG, MPI_INT32_T, MPI_INT64_T, MPI_UINT32_T, MPI_UINT64_T, MPI_AINT, MPI_COUNT];

/// The atomic cells the updates work on: 4 and 8 bytes.
pub trait Cell {
    type Value: Copy + PartialEq;
    type Bytes: AsRef<[u8]> + AsMut<[u8]>;
    fn load(&self) -> Self::Value;
    fn swap(&self, value: Self::Value) -> Self::Value;
    fn add(&self, value: Self::Value) -> Self::Value;
    fn compare_exchange(&self, current: Self::Value, new: Self::Value) -> Result<Self::Value, Self::Value>;
    fn to_bytes(value: Self::Value) -> Self::Bytes;
    fn from_bytes(bytes: &[u8]) -> Self::Value;
}

macro_rules! cell {
    ($atomic:ty, $value:ty) => {
        impl Cell for $atomic {
            type Value = $value;
            type Bytes = [u8; std::mem::size_of::<$value>()];
            fn load(&self) -> $value {
                <$atomic>::load(self, Ordering::SeqCst)
            }
            fn swap(&self, value: $value) -> $value {
                <$atomic>::swap(self, value, Ordering::SeqCst)
            }
            fn add(&self, value: $value) -> $value {
                <$atomic>::fetch_add(self, value, Ordering::SeqCst)
            }
            fn compare_exchange(&self, current: $value, new: $value) -> Result<$value, $value> {
                <$atomic>::compare_exchange(self, current, new, Ordering::SeqCst, Ordering::SeqCst)
            }
            fn to_bytes(value: $value) -> Self::Bytes {
                value.to_ne_bytes()
            }
            fn from_bytes(bytes: &[u8]) -> $value {
                <$value>::from_ne_bytes(bytes.try_into().expect("one element"))
            }
        }
    };
}
cell!(AtomicU32, u32);
cell!(AtomicU64, u64);
#[cfg(loom)]
cell!(loom::sync::atomic::AtomicU64, u64);

/// Applies `update` to `cell` with `operand` (the new value of a compare-and-swap, whose compare
/// value is `compare`): the element's old value.
pub fn update<C: Cell>(cell: &C, update: Update, operand: &[u8], compare: &[u8]) -> C::Value {
    match update {
        Update::Read => cell.load(),
        Update::Swap => cell.swap(C::from_bytes(operand)),
        Update::Add(_) => cell.add(C::from_bytes(operand)),
        Update::CompareAndSwap => match cell.compare_exchange(C::from_bytes(compare), C::from_bytes(operand)) {
            Ok(old) | Err(old) => old,
        },
        Update::Combine(kernel) => {
            let mut current = cell.load();
            loop {
                let mut next = C::to_bytes(current);
                kernel(operand, next.as_mut());
                match cell.compare_exchange(current, C::from_bytes(next.as_ref())) {
                    Ok(old) => return old,
                    Err(seen) => current = seen,
                }
            }
        }
    }
}

/// Applies `update` element by element to the runs at `base` (elements of `size` bytes), `data`
/// and `compare` the packed operands; the old contents, packed, for the actions that fetch.
/// Lock-free elements ([`lock_free`]) are updated atomically, the others plainly.
///
/// # Safety
/// The runs at `base` must be valid for reads and writes, a whole number of elements each; every
/// other update of the lock-free elements must be atomic, and of the others excluded (the caller
/// holds the target's accumulate lock unless [`all_lock_free`]).
pub unsafe fn execute(action: Action, update_kind: Update, base: *mut u8, runs: &[(isize, usize)], size: usize, data: &[u8], compare: &[u8]) -> Result<Vec<u8>, (c_int, String)> {
    let total: usize = runs.iter().map(|&(_, len)| len).sum();
    let reads_operand = !matches!(update_kind, Update::Read);
    if size == 0 || !total.is_multiple_of(size) || (reads_operand && data.len() != total) || (matches!(update_kind, Update::CompareAndSwap) && compare.len() != total) {
        return Err((MPI_ERR_ARG, format!("the operands do not match the target's {total} bytes of {size}-byte elements")));
    }
    let mut old = Vec::with_capacity(if action.fetches() { total } else { 0 });
    let mut at = 0;
    for &(offset, len) in runs {
        let run = base.wrapping_offset(offset);
        for element in (0..len).step_by(size) {
            let address = run.wrapping_add(element);
            let operand = if reads_operand { &data[at..at + size] } else { &[][..] };
            let compared = if matches!(update_kind, Update::CompareAndSwap) { &compare[at..at + size] } else { &[][..] };
            let mut before = [0u8; 8];
            if lock_free(address as usize, size) {
                // SAFETY: aligned and valid (checked above, and the caller's contract); every
                // other update of it is atomic too.
                unsafe { update_element(update_kind, address, size, operand, compared, before.as_mut_ptr()) };
            } else {
                // SAFETY: valid for `size` bytes; the caller holds the accumulate lock.
                unsafe { plain_update(address, size, update_kind, operand, compared, &mut before[..size]) };
            }
            if action.fetches() {
                old.extend_from_slice(&before[..size]);
            }
            at += size;
        }
    }
    Ok(old)
}

/// Applies `update` to the lock-free element of `size` bytes at `address`, its old bytes written
/// to `old`: fetch-and-op's and compare-and-swap's whole work, with no allocation.
///
/// # Safety
/// `address` must be valid for reads and writes and [`lock_free`], every other update of it
/// atomic; `operand` (and `compare`) must hold `size` bytes, `old` room for `size` bytes.
#[inline]
pub unsafe fn update_element(update_kind: Update, address: *mut u8, size: usize, operand: &[u8], compare: &[u8], old: *mut u8) {
    // SAFETY: per the caller: aligned, valid, updated only atomically; `old` has room.
    unsafe {
        if size == 4 {
            let before = update(AtomicU32::from_ptr(address.cast()), update_kind, operand, compare);
            old.cast::<[u8; 4]>().write_unaligned(before.to_ne_bytes());
        } else {
            let before = update(AtomicU64::from_ptr(address.cast()), update_kind, operand, compare);
            old.cast::<[u8; 8]>().write_unaligned(before.to_ne_bytes());
        }
    }
}

/// One element that is not lock-free, updated under the accumulate lock: its old bytes into
/// `before`.
///
/// # Safety
/// `address` must be valid for reads and writes of `size` bytes, and no one else may update it
/// meanwhile.
unsafe fn plain_update(address: *mut u8, size: usize, update_kind: Update, operand: &[u8], compare: &[u8], before: &mut [u8]) {
    // SAFETY: per the caller.
    let current = unsafe { std::slice::from_raw_parts_mut(address, size) };
    before.copy_from_slice(current);
    match update_kind {
        Update::Read => {}
        Update::Swap => current.copy_from_slice(operand),
        Update::CompareAndSwap => {
            if before == compare {
                current.copy_from_slice(operand);
            }
        }
        Update::Add(kernel) | Update::Combine(kernel) => kernel(operand, current),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn bytes_of(values: &[i64]) -> Vec<u8> {
        values.iter().flat_map(|value| value.to_ne_bytes()).collect()
    }

    #[test]
    fn every_update_on_aligned_and_misaligned_elements() {
        // Two aligned int64s at 0 and 8, one misaligned at 20.
        let mut memory = [0u64; 4];
        let base = memory.as_mut_ptr().cast::<u8>();
        assert!(all_lock_free(base, &[(0, 16)], 8));
        assert!(!all_lock_free(base, &[(20, 8)], 8));
        let add = Update::of(Action::GetAccumulate, MPI_SUM, MPI_INT64_T).unwrap();
        let max = Update::of(Action::Accumulate, MPI_MAX, MPI_INT64_T).unwrap();
        assert!(matches!(add, Update::Add(_)) && matches!(max, Update::Combine(_)));
        assert!(Update::of(Action::Accumulate, MPI_LAND, MPI_DOUBLE).is_none());
        // SAFETY: every run lies inside `memory`; nothing else touches it.
        unsafe {
            assert_eq!(execute(Action::GetAccumulate, add, base, &[(0, 16), (20, 8)], 8, &bytes_of(&[5, -2, 7]), &[]).unwrap(), bytes_of(&[0, 0, 0]));
            assert_eq!(execute(Action::GetAccumulate, add, base, &[(0, 8), (20, 8)], 8, &bytes_of(&[1, 1]), &[]).unwrap(), bytes_of(&[5, 7]));
            assert_eq!(execute(Action::Accumulate, max, base, &[(8, 8), (20, 8)], 8, &bytes_of(&[3, 2]), &[]).unwrap(), Vec::<u8>::new());
            let read = Update::of(Action::GetAccumulate, MPI_NO_OP, MPI_INT64_T).unwrap();
            assert_eq!(execute(Action::GetAccumulate, read, base, &[(0, 16), (20, 8)], 8, &[], &[]).unwrap(), bytes_of(&[6, 3, 8]));
            let swap = Update::of(Action::GetAccumulate, MPI_REPLACE, MPI_INT64_T).unwrap();
            assert_eq!(execute(Action::GetAccumulate, swap, base, &[(20, 8)], 8, &bytes_of(&[40]), &[]).unwrap(), bytes_of(&[8]));
            let cas = Update::of(Action::CompareAndSwap, MPI_NO_OP, MPI_INT64_T).unwrap();
            assert_eq!(execute(Action::CompareAndSwap, cas, base, &[(0, 8)], 8, &bytes_of(&[9]), &bytes_of(&[6])).unwrap(), bytes_of(&[6]));
            assert_eq!(execute(Action::CompareAndSwap, cas, base, &[(20, 8)], 8, &bytes_of(&[9]), &bytes_of(&[1])).unwrap(), bytes_of(&[40]));
            assert!(execute(Action::Accumulate, add, base, &[(0, 8)], 8, &bytes_of(&[1, 2]), &[]).is_err());
            let read_back = execute(Action::GetAccumulate, read, base, &[(0, 16), (20, 8)], 8, &[], &[]).unwrap();
            assert_eq!(read_back, bytes_of(&[9, 3, 40]));
        }
    }

    #[test]
    fn threads_adding_through_the_kernel_loop_lose_nothing() {
        let cell = AtomicU64::new(0);
        let Update::Combine(sum) = Update::Combine(crate::op::predefined_kernel(MPI_SUM, MPI_DOUBLE).unwrap()) else { unreachable!() };
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..10_000 {
                        update(&cell, Update::Combine(sum), &1.0f64.to_ne_bytes(), &[]);
                    }
                });
            }
        });
        assert_eq!(f64::from_bits(cell.into_inner()), 40_000.0);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;

    #[test]
    fn two_kernel_loops_and_an_add_all_land() {
        fn add8(input: &[u8], inout: &mut [u8]) {
            let sum = u64::from_ne_bytes(input.try_into().unwrap()).wrapping_add(u64::from_ne_bytes((&*inout).try_into().unwrap()));
            inout.copy_from_slice(&sum.to_ne_bytes());
        }
        loom::model(|| {
            let cell = loom::sync::Arc::new(loom::sync::atomic::AtomicU64::new(0));
            let others: Vec<_> = (0..2)
                .map(|_| {
                    let cell = cell.clone();
                    loom::thread::spawn(move || update(&*cell, Update::Combine(add8), &1u64.to_ne_bytes(), &[]))
                })
                .collect();
            update(&*cell, Update::Add(add8), &1u64.to_ne_bytes(), &[]);
            for other in others {
                other.join().unwrap();
            }
            assert_eq!(cell.load(Ordering::SeqCst), 3);
        });
    }
}
