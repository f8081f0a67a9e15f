//! The Fortran sentinels (MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE, ...) are variables in
//! common blocks that mpif.h and the modules declare; a binding recognises them by address. The
//! library defines each block, and the dynamic linker resolves a program's block of the same name
//! to one copy, the program's when it has one, so the address to compare with is the one the
//! dynamic linker finds for the name.

// The blocks' symbol names are Fortran's (lower case, trailing underscore).
#![allow(non_upper_case_globals)]

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_void, CStr};
use std::sync::OnceLock;

use crate::consts::*;

/// A common block of `N` bytes that Fortran programs may write (MPI never reads it).
#[repr(C)]
pub struct CommonBlock<const N: usize>(UnsafeCell<[u8; N]>);

// SAFETY: the library only takes the block's address; the contents belong to the program.
unsafe impl<const N: usize> Sync for CommonBlock<N> {}

impl<const N: usize> CommonBlock<N> {
    const fn new() -> CommonBlock<N> {
        CommonBlock(UnsafeCell::new([0; N]))
    }

    fn address(&self) -> usize {
        self.0.get() as usize
    }
}

const INTEGER: usize = 4;
const STATUS: usize = MPI_F_STATUS_SIZE as usize * INTEGER;

#[no_mangle]
pub static braid_fortran_bottom_: CommonBlock<INTEGER> = CommonBlock::new();
#[no_mangle]
pub static braid_fortran_in_place_: CommonBlock<INTEGER> = CommonBlock::new();
#[no_mangle]
pub static braid_fortran_buffer_automatic_: CommonBlock<INTEGER> = CommonBlock::new();
#[no_mangle]
pub static braid_fortran_status_ignore_: CommonBlock<STATUS> = CommonBlock::new();
#[no_mangle]
pub static braid_fortran_statuses_ignore_: CommonBlock<STATUS> = CommonBlock::new();
#[no_mangle]
pub static braid_fortran_errcodes_ignore_: CommonBlock<INTEGER> = CommonBlock::new();
#[no_mangle]
pub static braid_fortran_unweighted_: CommonBlock<INTEGER> = CommonBlock::new();
#[no_mangle]
pub static braid_fortran_weights_empty_: CommonBlock<INTEGER> = CommonBlock::new();
#[no_mangle]
pub static braid_fortran_argv_null_: CommonBlock<1> = CommonBlock::new();
#[no_mangle]
pub static braid_fortran_argvs_null_: CommonBlock<1> = CommonBlock::new();

/// The addresses of the program's sentinels.
pub struct Sentinels {
    bottom: usize,
    in_place: usize,
    buffer_automatic: usize,
    status_ignore: usize,
    statuses_ignore: usize,
    errcodes_ignore: usize,
    unweighted: usize,
    weights_empty: usize,
    argv_null: usize,
    argvs_null: usize,
}

static SENTINELS: OnceLock<Sentinels> = OnceLock::new();

/// The address the dynamic linker gives `name`, or the library's own block's if it finds none
/// (a library loaded with RTLD_LOCAL).
fn resolved(name: &CStr, own: usize) -> usize {
    // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches the global scope.
    let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if found.is_null() {
        own
    } else {
        found as usize
    }
}

impl Sentinels {
    pub fn get() -> &'static Sentinels {
        SENTINELS.get_or_init(|| Sentinels {
            bottom: resolved(c"braid_fortran_bottom_", braid_fortran_bottom_.address()),
            in_place: resolved(c"braid_fortran_in_place_", braid_fortran_in_place_.address()),
            buffer_automatic: resolved(c"braid_fortran_buffer_automatic_", braid_fortran_buffer_automatic_.address()),
            status_ignore: resolved(c"braid_fortran_status_ignore_", braid_fortran_status_ignore_.address()),
            statuses_ignore: resolved(c"braid_fortran_statuses_ignore_", braid_fortran_statuses_ignore_.address()),
            errcodes_ignore: resolved(c"braid_fortran_errcodes_ignore_", braid_fortran_errcodes_ignore_.address()),
            unweighted: resolved(c"braid_fortran_unweighted_", braid_fortran_unweighted_.address()),
            weights_empty: resolved(c"braid_fortran_weights_empty_", braid_fortran_weights_empty_.address()),
            argv_null: resolved(c"braid_fortran_argv_null_", braid_fortran_argv_null_.address()),
            argvs_null: resolved(c"braid_fortran_argvs_null_", braid_fortran_argvs_null_.address()),
        })
    }

    /// A choice buffer: MPI_BOTTOM, MPI_IN_PLACE and MPI_BUFFER_AUTOMATIC become C's.
    pub fn buffer(&self, buffer: *mut c_void) -> *mut c_void {
        let address = buffer as usize;
        if address == self.bottom {
            MPI_BOTTOM.cast_mut()
        } else if address == self.in_place {
            MPI_IN_PLACE.cast_mut()
        } else if address == self.buffer_automatic {
            MPI_BUFFER_AUTOMATIC.cast_mut()
        } else {
            buffer
        }
    }

    pub fn status(&self, status: *mut c_void) -> *mut c_void {
        if status as usize == self.status_ignore {
            MPI_STATUS_IGNORE.cast()
        } else {
            status
        }
    }

    pub fn statuses(&self, statuses: *mut c_void) -> *mut c_void {
        if statuses as usize == self.statuses_ignore {
            MPI_STATUSES_IGNORE.cast()
        } else {
            statuses
        }
    }

    pub fn errcodes(&self, errcodes: *mut c_void) -> *mut c_void {
        if errcodes as usize == self.errcodes_ignore {
            MPI_ERRCODES_IGNORE.cast()
        } else {
            errcodes
        }
    }

    pub fn weights(&self, weights: *mut c_void) -> *mut c_void {
        match weights as usize {
            address if address == self.unweighted => MPI_UNWEIGHTED.cast(),
            address if address == self.weights_empty => MPI_WEIGHTS_EMPTY.cast(),
            _ => weights,
        }
    }

    /// Whether `argv` is MPI_ARGV_NULL (or MPI_ARGVS_NULL).
    pub fn is_argv_null(&self, argv: *const c_char) -> bool {
        argv as usize == self.argv_null || argv as usize == self.argvs_null
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinels_become_c_sentinels_and_other_addresses_stay() {
        let sentinels = Sentinels::get();
        let mut data = [0u8; 4];
        let data = data.as_mut_ptr().cast::<c_void>();
        assert_eq!(sentinels.buffer(sentinels.bottom as *mut c_void), MPI_BOTTOM.cast_mut());
        assert_eq!(sentinels.buffer(sentinels.in_place as *mut c_void), MPI_IN_PLACE.cast_mut());
        assert_eq!(sentinels.buffer(data), data);
        assert_eq!(sentinels.status(sentinels.status_ignore as *mut c_void), MPI_STATUS_IGNORE.cast());
        assert_eq!(sentinels.statuses(sentinels.statuses_ignore as *mut c_void), MPI_STATUSES_IGNORE.cast());
        assert_eq!(sentinels.errcodes(sentinels.errcodes_ignore as *mut c_void), MPI_ERRCODES_IGNORE.cast());
        assert_eq!(sentinels.weights(sentinels.unweighted as *mut c_void), MPI_UNWEIGHTED.cast());
        assert_eq!(sentinels.weights(sentinels.weights_empty as *mut c_void), MPI_WEIGHTS_EMPTY.cast());
        assert_eq!(sentinels.status(data), data);
        assert!(sentinels.is_argv_null(sentinels.argv_null as *const c_char));
    }
}
