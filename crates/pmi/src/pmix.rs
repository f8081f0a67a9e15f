//! The rank side of PMIx, for processes that a PMIx launcher started (`srun --mpi=pmix`, Open
//! MPI's `mpirun`, PRRTE's `prterun`): the launcher says so with `PMIX_NAMESPACE` and the
//! server's address in the environment, and the OpenPMIx library (loaded then, not linked)
//! speaks to it.
//!
//! PMI-1's key-value space has no owners: any rank reads a key by its name alone. A PMIx value
//! is read from the process that posted it, so at every fence each rank also posts the names
//! of all its keys (under a key of that fence's own, `braid-keys-<fence>`), and the first read
//! after a fence learns from those lists who posted what.

use std::collections::HashMap;

use braid_sys::pmix::{PmixClient, PmixValue, RANK_WILDCARD};

use crate::{Bootstrap, BootstrapError};

/// The library a PMIx launcher's processes load.
pub const PMIX_LIBRARY: &str = "libpmix.so.2";

/// The key under which each rank lists the keys it posted, followed by the number of the fence
/// that published the list: a key is put once, as PMIx expects (a client may keep the first
/// value it read of another process's key; OpenPMIx's hash store does).
const KEYS_KEY: &str = "braid-keys";

/// A rank's connection to its PMIx server.
pub struct PmixBootstrap {
    client: PmixClient,
    rank: u32,
    size: u32,
    job_id: String,
    appnum: i32,
    /// Every key this rank has posted (keys hold no spaces: the lists join them with one).
    posted: Vec<String>,
    /// Which rank posted each key, as learnt after the last fence (None: not learnt yet).
    owners: Option<HashMap<String, u32>>,
    /// Fences so far.
    fences: u32,
}

fn failure(operation: &'static str, error: impl std::fmt::Display) -> BootstrapError {
    BootstrapError { operation, reason: error.to_string() }
}

impl PmixBootstrap {
    /// Connects when the environment names a PMIx server (`PMIX_NAMESPACE`); `Ok(None)` when it
    /// does not.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<PmixBootstrap>, BootstrapError> {
        if lookup("PMIX_NAMESPACE").is_none() {
            return Ok(None);
        }
        PmixBootstrap::connect(PMIX_LIBRARY).map(Some)
    }

    /// Loads `library` and connects to the server that started this process.
    pub fn connect(library: &str) -> Result<PmixBootstrap, BootstrapError> {
        let client = PmixClient::connect(library).map_err(|error| failure("init", format!("started by a PMIx launcher (PMIX_NAMESPACE is set), but {error}")))?;
        let number = |key: &str, rank: u32| -> Result<Option<u64>, BootstrapError> {
            match client.get(rank, key).map_err(|error| failure("init", error))? {
                Some(PmixValue::Number(value)) => Ok(Some(value)),
                Some(other) => Err(failure("init", format!("the PMIx server gave {other:?} for {key}"))),
                None => Ok(None),
            }
        };
        let rank = client.rank();
        let size = number("pmix.job.size", RANK_WILDCARD)?.ok_or_else(|| failure("init", "the PMIx server does not say the job's size (pmix.job.size)"))?;
        let appnum = number("pmix.appnum", rank)?.unwrap_or(0);
        let job_id = file_safe(&client.namespace());
        Ok(PmixBootstrap { client, rank, size: size as u32, job_id, appnum: appnum as i32, posted: Vec::new(), owners: None, fences: 0 })
    }

    /// The rank that posted `key`, learnt from every rank's list after the last fence.
    fn owner_of(&mut self, key: &str) -> Result<u32, BootstrapError> {
        if self.posted.iter().any(|mine| mine == key) {
            return Ok(self.rank);
        }
        if self.owners.is_none() && self.fences > 0 {
            let mut owners = HashMap::new();
            let lists = keys_key(self.fences - 1);
            for rank in 0..self.size {
                if let Some(PmixValue::Text(list)) = self.client.get(rank, &lists).map_err(|error| failure("get", error))? {
                    for name in list.split(' ').filter(|name| !name.is_empty()) {
                        owners.insert(name.to_string(), rank);
                    }
                }
            }
            self.owners = Some(owners);
        }
        self.owners.as_ref().and_then(|owners| owners.get(key).copied()).ok_or_else(|| failure("get", format!("no rank has published {key:?}")))
    }
}

/// The key of the lists of keys that fence number `fence` (from 0) publishes.
fn keys_key(fence: u32) -> String {
    format!("{KEYS_KEY}-{fence}")
}

/// A namespace as a piece of a file name (shared-memory files are named after the job).
fn file_safe(namespace: &str) -> String {
    let safe: String = namespace.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
    format!("pmix-{safe}")
}

impl Bootstrap for PmixBootstrap {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn job_id(&self) -> &str {
        &self.job_id
    }

    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        self.client.put(key, value).map_err(|error| failure("put", error))?;
        if !self.posted.iter().any(|mine| mine == key) {
            self.posted.push(key.to_string());
        }
        Ok(())
    }

    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        let owner = self.owner_of(key)?;
        match self.client.get(owner, key).map_err(|error| failure("get", error))? {
            Some(PmixValue::Text(value)) => Ok(value),
            Some(other) => Err(failure("get", format!("rank {owner} published {key:?} as {other:?}, not text"))),
            None => Err(failure("get", format!("rank {owner} has not published {key:?}"))),
        }
    }

    fn fence(&mut self) -> Result<(), BootstrapError> {
        self.client.put(&keys_key(self.fences), &self.posted.join(" ")).map_err(|error| failure("put", error))?;
        self.client.commit().map_err(|error| failure("commit", error))?;
        self.client.fence().map_err(|error| failure("fence", error))?;
        self.owners = None;
        self.fences += 1;
        Ok(())
    }

    fn finalize(&mut self) -> Result<(), BootstrapError> {
        self.client.finalize().map_err(|error| failure("finalize", error))
    }

    fn abort(&mut self, code: i32, message: &str) -> Result<(), BootstrapError> {
        self.client.abort(code, message).map_err(|error| failure("abort", error))
    }

    fn appnum(&self) -> i32 {
        self.appnum
    }

    fn universe_size(&mut self) -> Result<Option<u32>, BootstrapError> {
        match self.client.get(RANK_WILDCARD, "pmix.univ.size").map_err(|error| failure("get", error))? {
            Some(PmixValue::Number(size)) => Ok(Some(size as u32)),
            _ => Ok(None),
        }
    }

    fn spawn(&mut self, request: &crate::spawn::SpawnRequest) -> Result<(), BootstrapError> {
        let _ = request;
        // Asked through PMIx_Spawn (OpenPMIx 4.2, Open MPI 5's mpirun), about one spawn in ten
        // started a process that waited in PMIx_Init for good; Slurm's PMIx server does not
        // spawn at all.
        Err(failure("spawn", "Braid does not spawn through a PMIx launcher: run the job with braid run or mpiexec.hydra to start processes from it"))
    }

    fn publish_name(&mut self, service: &str, port: &str) -> Result<(), BootstrapError> {
        // PMIx servers may let a second publication replace the first; MPI wants it refused.
        let key = service_key(service);
        if self.client.lookup(&key).map_err(|error| failure("publish_name", error))?.is_some() {
            return Err(failure("publish_name", format!("a port is published under {service:?} already")));
        }
        self.client.publish(&key, port).map_err(|error| failure("publish_name", error))
    }

    fn unpublish_name(&mut self, service: &str) -> Result<(), BootstrapError> {
        // As for publishing: a server may accept withdrawing what is not there.
        let key = service_key(service);
        if self.client.lookup(&key).map_err(|error| failure("unpublish_name", error))?.is_none() {
            return Err(failure("unpublish_name", format!("no port is published under {service:?}")));
        }
        self.client.unpublish(&key).map_err(|error| failure("unpublish_name", error))
    }

    fn lookup_name(&mut self, service: &str) -> Result<String, BootstrapError> {
        match self.client.lookup(&service_key(service)).map_err(|error| failure("lookup_name", error))? {
            Some(port) => Ok(port),
            None => Err(failure("lookup_name", format!("no port is published under {service:?}"))),
        }
    }
}

/// The PMIx key of an MPI service name: prefixed, so that it cannot meet a key of PMIx's own.
fn service_key(service: &str) -> String {
    format!("braid-service-{service}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_become_file_name_pieces() {
        assert_eq!(file_safe("2046951425"), "pmix-2046951425");
        assert_eq!(file_safe("slurm.pmix.12.0"), "pmix-slurm-pmix-12-0");
    }

    #[test]
    fn without_a_pmix_namespace_there_is_no_pmix_launcher() {
        assert!(PmixBootstrap::from_lookup(|_| None).unwrap().is_none());
    }

    #[test]
    fn a_pmix_launcher_without_the_library_is_reported() {
        let error = PmixBootstrap::connect("libno-such-pmix.so.9").err().expect("no library");
        assert!(error.reason.contains("PMIX_NAMESPACE") && error.reason.contains("libno-such-pmix.so.9"), "{error}");
    }
}
