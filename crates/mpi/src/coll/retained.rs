//! The argument arrays of a persistent collective (counts, displacements, types), read once at
//! its init: programs free them once the init call returns (mpi4py does, and MPICH and Open MPI
//! read them then), so each MPI_Start must not read them again. The init builds the schedule
//! once while recording every array it reads ([`record`]); each start builds it again replaying
//! those copies ([`replay`]) instead of the program's memory, in the order they were read (a
//! build reads the same arrays in the same order from the same arguments; matching by address
//! would confuse two temporaries of the library that happened to share one). Outside both,
//! arrays are read where they are ([`read`]).

use std::cell::RefCell;
use std::rc::Rc;

/// The copies of the arrays one init read, in the order it read them.
pub(crate) type Copies = Rc<Vec<Vec<u8>>>;

enum Mode {
    Direct,
    Record(Vec<Vec<u8>>),
    /// The copies, and how many of them this build has read.
    Replay(Copies, usize),
}

thread_local! {
    static MODE: RefCell<Mode> = const { RefCell::new(Mode::Direct) };
}

/// Puts the mode back to reading the program's memory when dropped.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        MODE.with(|mode| *mode.borrow_mut() = Mode::Direct);
    }
}

/// Runs `build` recording the arrays it reads; returns its result and the copies.
pub(crate) fn record<R>(build: impl FnOnce() -> R) -> (R, Copies) {
    MODE.with(|mode| *mode.borrow_mut() = Mode::Record(Vec::new()));
    let restore = Restore;
    let result = build();
    let copies = MODE.with(|mode| match std::mem::replace(&mut *mode.borrow_mut(), Mode::Direct) {
        Mode::Record(copies) => copies,
        _ => Vec::new(),
    });
    drop(restore);
    (result, Rc::new(copies))
}

/// Runs `build` reading the recorded copies in place of the program's arrays.
pub(crate) fn replay<R>(copies: &Copies, build: impl FnOnce() -> R) -> R {
    MODE.with(|mode| *mode.borrow_mut() = Mode::Replay(copies.clone(), 0));
    let _restore = Restore;
    build()
}

/// The `len` entries of the array at `array`: from the program's memory, or from the copy an
/// init recorded at this point of the build.
///
/// # Safety
/// Unless a copy of it is being replayed, `array` must point to `len` readable entries.
pub(crate) unsafe fn read<T: Copy>(array: *const T, len: usize) -> Vec<T> {
    let bytes = len * std::mem::size_of::<T>();
    let replayed = MODE.with(|mode| match &mut *mode.borrow_mut() {
        Mode::Replay(copies, next) => {
            let copy = copies.get(*next).filter(|copy| copy.len() == bytes).cloned();
            *next += 1;
            copy
        }
        _ => None,
    });
    let mut values: Vec<T> = Vec::with_capacity(len);
    match replayed {
        // SAFETY: the copy holds exactly `len` values of T, recorded from such an array.
        Some(copy) => unsafe {
            std::ptr::copy_nonoverlapping(copy.as_ptr(), values.as_mut_ptr().cast::<u8>(), bytes);
            values.set_len(len);
        },
        // SAFETY: per the caller.
        None => values.extend_from_slice(unsafe { std::slice::from_raw_parts(array, len) }),
    }
    MODE.with(|mode| {
        if let Mode::Record(copies) = &mut *mode.borrow_mut() {
            // SAFETY: `values` holds `len` plain values: `bytes` initialized bytes.
            let raw = unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), bytes) };
            copies.push(raw.to_vec());
        }
    });
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_reads_the_copies_an_init_recorded_not_the_memory() {
        let mut counts = [1i64, 2, 3];
        let (sum, copies) = record(|| unsafe { read(counts.as_ptr(), 3) }.iter().sum::<i64>());
        assert_eq!(sum, 6);
        counts.iter_mut().for_each(|count| *count = 100);
        let replayed = replay(&copies, || unsafe { read(counts.as_ptr(), 3) });
        assert_eq!(replayed, vec![1, 2, 3], "the program's later changes are not seen");
        assert_eq!(unsafe { read(counts.as_ptr(), 3) }, vec![100, 100, 100], "outside a replay the memory is read");
    }
}
