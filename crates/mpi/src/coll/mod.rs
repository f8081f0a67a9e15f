//! Collective operations.
//!
//! `algorithms` holds the algorithms, `async fn`s over a [`port::Port`] (rounds of point-to-point
//! on contiguous bytes), tested on a simulated group; `drive` carries their rounds out on the
//! engine, for a blocking call or as a non-blocking request that progress advances; `abi` holds the
//! MPI_* entry points, which pack derived datatypes
//! into contiguous buffers, run an algorithm and unpack.

pub mod abi;
pub mod algorithms;
pub mod drive;
pub mod hierarchy;
pub mod port;
mod retained;

use braid_config::{Config, HierarchyMode};

/// Message sizes at which the algorithms switch strategy. Every rank of a communicator must use
/// the same values, or the ranks would run different algorithms and never match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollTuning {
    /// Smallest broadcast (bytes) done as scatter + ring allgather.
    pub bcast_split_min: usize,
    /// Largest broadcast (bytes times the ranks it goes to) the root sends to each rank itself,
    /// on a communicator within one node.
    pub bcast_flat_max: usize,
    /// Bytes of a rank's slot in a one-node communicator's flag segment: the most a blocking
    /// broadcast puts there (0: the flag forms are off).
    pub shm_slot: usize,
    /// Most bytes per rank the other collectives' flag forms take.
    pub shm_max: usize,
    /// Largest blocking allreduce two ranks of a node, a CPU each, do as an exchange of messages.
    pub pair_exchange_max: usize,
    /// Smallest commutative allreduce (bytes) done as reduce-scatter + allgather.
    pub allreduce_split_min: usize,
    /// Largest allreduce (bytes times ranks) done as one all-to-all exchange of the inputs.
    pub allreduce_exchange_max: usize,
    /// Peers exchanged with at once in a flat alltoall(v) (1: pairwise).
    pub alltoall_batch: usize,
    /// When a communicator that spans nodes runs its collectives' hierarchical forms.
    pub hierarchy: HierarchyMode,
}

impl CollTuning {
    pub fn from_config(config: &Config) -> CollTuning {
        CollTuning {
            bcast_split_min: config.coll_bcast_split_min,
            bcast_flat_max: config.coll_bcast_flat_max,
            shm_slot: config.coll_shm_slot,
            shm_max: config.coll_shm_max,
            pair_exchange_max: config.coll_pair_exchange_max,
            allreduce_split_min: config.coll_allreduce_split_min,
            allreduce_exchange_max: config.coll_allreduce_exchange_max,
            alltoall_batch: config.coll_alltoall_batch,
            hierarchy: config.coll_hierarchy,
        }
    }
}

impl Default for CollTuning {
    fn default() -> CollTuning {
        CollTuning::from_config(&Config::default())
    }
}

/// Most ranks of an allreduce done as one all-to-all exchange of the inputs: it sends n - 1
/// messages per rank.
pub(crate) const SMALL_ALLREDUCE_RANKS: usize = 8;

/// Combines `input` into `inout` element-wise (`inout = input op inout`), as MPI_Reduce's user
/// function does; both hold the same whole number of elements.
pub type Combine<'a> = &'a dyn Fn(&[u8], &mut [u8]);
