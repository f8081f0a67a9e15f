//! The two widths of count and displacement arguments: the int forms of the MPI calls, and the
//! large-count (`_c`) forms of MPI 4.0, whose counts are MPI_Count and displacements MPI_Aint.
//! One implementation serves both, generic over these traits.

use std::ffi::c_int;

use crate::consts::{MPI_Aint, MPI_Count};

/// A count argument: an int, or a large count.
pub trait Count: Copy + Into<MPI_Count> + 'static {}

impl Count for c_int {}
impl Count for MPI_Count {}

/// A displacement argument: an int, or an address-sized displacement (the `_c` forms', and the
/// byte displacements of MPI_Neighbor_alltoallw, which with MPI_BOTTOM are addresses).
pub trait Offset: Copy + 'static {
    fn value(self) -> isize;
}

impl Offset for c_int {
    fn value(self) -> isize {
        self as isize
    }
}

impl Offset for MPI_Aint {
    fn value(self) -> isize {
        self
    }
}
