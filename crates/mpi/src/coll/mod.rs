//! Collective operations.
//!
//! `algorithms` holds the algorithms, written over [`CollChannel`] (point-to-point on a
//! communicator's collective context, on contiguous bytes) so that they are tested on an
//! in-process simulated group; `abi` holds the MPI_* entry points, which pack derived datatypes
//! into contiguous buffers, run an algorithm and unpack.

pub mod abi;
pub mod algorithms;

use braid_config::Config;

/// Message sizes at which the algorithms switch strategy. Every rank of a communicator must use
/// the same values, or the ranks would run different algorithms and never match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollTuning {
    /// Smallest broadcast (bytes) done as scatter + ring allgather.
    pub bcast_split_min: usize,
    /// Smallest commutative allreduce (bytes) done as reduce-scatter + allgather.
    pub allreduce_split_min: usize,
    /// Largest allreduce (bytes times ranks) done as one all-to-all exchange of the inputs.
    pub allreduce_exchange_max: usize,
}

impl CollTuning {
    pub fn from_config(config: &Config) -> CollTuning {
        CollTuning {
            bcast_split_min: config.coll_bcast_split_min,
            allreduce_split_min: config.coll_allreduce_split_min,
            allreduce_exchange_max: config.coll_allreduce_exchange_max,
        }
    }
}

impl Default for CollTuning {
    fn default() -> CollTuning {
        CollTuning::from_config(&Config::default())
    }
}

/// Point-to-point between the members of one communicator, on its collective context.
/// Ranks are communicator ranks. Errors are MPI error classes.
pub trait CollChannel {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    fn send(&mut self, dest: usize, data: &[u8]) -> Result<(), i32>;
    fn recv(&mut self, source: usize, buffer: &mut [u8]) -> Result<(), i32>;
    /// Sends and receives concurrently (never deadlocks on a pairwise exchange).
    fn sendrecv(&mut self, dest: usize, data: &[u8], source: usize, buffer: &mut [u8]) -> Result<(), i32>;
    /// Sends `data` to every other rank and receives rank r's equally long `data` into block r
    /// of `all` (`size` blocks; this rank's block is left as it is). Pairwise exchange unless
    /// the channel can do better (post every receive, then send everything at once).
    fn exchange_all(&mut self, data: &[u8], all: &mut [u8]) -> Result<(), i32> {
        pairwise_exchange_all(self, data, all)
    }
    /// Algorithm switch points; a channel of a running process returns its configuration's.
    fn tuning(&self) -> CollTuning {
        CollTuning::default()
    }
}

/// [`CollChannel::exchange_all`] as n - 1 rounds of `sendrecv`.
pub fn pairwise_exchange_all<C: CollChannel + ?Sized>(ch: &mut C, data: &[u8], all: &mut [u8]) -> Result<(), i32> {
    let (rank, size, len) = (ch.rank(), ch.size(), data.len());
    if all.len() != len * size {
        return Err(crate::consts::MPI_ERR_ARG);
    }
    for step in 1..size {
        let dest = (rank + step) % size;
        let source = (rank + size - step) % size;
        ch.sendrecv(dest, data, source, &mut all[source * len..(source + 1) * len])?;
    }
    Ok(())
}

/// Combines `input` into `inout` element-wise (`inout = input op inout`), as MPI_Reduce's user
/// function does; both hold the same whole number of elements.
pub type Combine<'a> = &'a dyn Fn(&[u8], &mut [u8]);
