//! Bootstrap: how the ranks of a job find each other.
//!
//! The wire protocol is PMI-1 ("simple PMI", as spoken by MPICH's Hydra and Slurm's pmi2 plug-in):
//! `braid run` is the server, every rank is a client. Under a PMIx launcher the ranks speak PMIx
//! through the OpenPMIx library instead ([`pmix`]). [`Bootstrap`] is what the layers above use;
//! it has a PMI implementation, a PMIx one, a singleton one (a program started without a
//! launcher) and an in-process one for tests.

pub mod client;
pub mod group;
pub mod pmix;
pub mod server;
pub mod spawn;
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

    /// Whether another job started this one (MPI_Comm_spawn): its parents' port is then the
    /// value of [`spawn::PARENT_PORT_KEY`].
    fn spawned(&self) -> bool {
        false
    }

    /// Which command of its job started this process (PMI's appnum: 0 but in a job started
    /// with several commands).
    fn appnum(&self) -> i32 {
        0
    }

    /// How many processes the job may grow to, where the launcher says.
    fn universe_size(&mut self) -> Result<Option<u32>, BootstrapError> {
        Ok(None)
    }

    /// Publishes `port` under `service` in the launcher's name service (MPI_Publish_name).
    fn publish_name(&mut self, service: &str, port: &str) -> Result<(), BootstrapError> {
        let _ = (service, port);
        Err(no_name_service("publish_name"))
    }

    /// Withdraws `service` from the launcher's name service.
    fn unpublish_name(&mut self, service: &str) -> Result<(), BootstrapError> {
        let _ = service;
        Err(no_name_service("unpublish_name"))
    }

    /// The port published under `service`.
    fn lookup_name(&mut self, service: &str) -> Result<String, BootstrapError> {
        let _ = service;
        Err(no_name_service("lookup_name"))
    }

    /// Asks the launcher to start the processes of `request` as a new job; returns once they
    /// are started.
    fn spawn(&mut self, request: &spawn::SpawnRequest) -> Result<(), BootstrapError> {
        let _ = request;
        Err(BootstrapError { operation: "spawn", reason: "the program was started without a launcher, so nothing can start processes for it (run it with braid run)".into() })
    }
}

fn no_name_service(operation: &'static str) -> BootstrapError {
    BootstrapError { operation, reason: "the program was started without a launcher, so there is no name service (run it with braid run)".into() }
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
