//! Collective operations.
//!
//! `algorithms` holds the algorithms, written over [`CollChannel`] (point-to-point on a
//! communicator's collective context, on contiguous bytes) so that they are tested on an
//! in-process simulated group; `abi` holds the MPI_* entry points, which pack derived datatypes
//! into contiguous buffers, run an algorithm and unpack.

pub mod abi;
pub mod algorithms;

/// Point-to-point between the members of one communicator, on its collective context.
/// Ranks are communicator ranks. Errors are MPI error classes.
pub trait CollChannel {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    fn send(&mut self, dest: usize, data: &[u8]) -> Result<(), i32>;
    fn recv(&mut self, source: usize, buffer: &mut [u8]) -> Result<(), i32>;
    /// Sends and receives concurrently (never deadlocks on a pairwise exchange).
    fn sendrecv(&mut self, dest: usize, data: &[u8], source: usize, buffer: &mut [u8]) -> Result<(), i32>;
}

/// Combines `input` into `inout` element-wise (`inout = input op inout`), as MPI_Reduce's user
/// function does; both hold the same whole number of elements.
pub type Combine<'a> = &'a dyn Fn(&[u8], &mut [u8]);
