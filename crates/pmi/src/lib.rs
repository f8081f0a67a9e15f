//! Bootstrap: how the ranks of a job find each other.
//!
//! The wire protocol is PMI-1 ("simple PMI", as spoken by MPICH's Hydra): `braid run` is the server,
//! every rank is a client. [`Bootstrap`] is what the layers above use; it has a PMI implementation,
//! a singleton one (a program started without a launcher) and an in-process one for tests.

pub mod client;
pub mod group;
pub mod server;
pub mod threads;
pub mod wire;

use std::fmt;

/// The key-value space and fences of one job, as seen by one rank.
///
/// Semantics are PMI-1's: a value put before a fence is visible to every rank after that fence.
pub trait Bootstrap: Send {
    /// This process's rank in the job, 0-based.
    fn rank(&self) -> u32;
    /// Number of ranks in the job.
    fn size(&self) -> u32;
    /// A name unique to this job (PMI's kvsname); used to name shared-memory files.
    fn job_id(&self) -> &str;
    /// Publishes `key = value` (both without spaces or `=`; values up to 1024 bytes).
    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError>;
    /// Reads a value published by any rank before the last fence.
    fn get(&mut self, key: &str) -> Result<String, BootstrapError>;
    /// Collective: commits this rank's puts and waits for every rank.
    fn fence(&mut self) -> Result<(), BootstrapError>;
    /// Tells the launcher this rank is ending normally.
    fn finalize(&mut self) -> Result<(), BootstrapError>;
    /// Asks the launcher to end the whole job with `code`, printing `message`.
    fn abort(&mut self, code: i32, message: &str) -> Result<(), BootstrapError>;
}

/// A bootstrap failure, with the operation that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapError {
    pub operation: &'static str,
    pub reason: String,
}

impl fmt::Display for BootstrapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PMI {} failed: {}", self.operation, self.reason)
    }
}

impl std::error::Error for BootstrapError {}
