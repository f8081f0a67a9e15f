//! The rank side of PMIx, for processes that a PMIx launcher started (`srun --mpi=pmix`, Open
//! MPI's `mpirun`, PRRTE's `prterun`): the launcher says so with `PMIX_NAMESPACE` and the
//! server's address in the environment, and the OpenPMIx library (loaded then, not linked)
//! speaks to it.
//!
//! PMI-1's key-value space has no owners: any rank reads a key by its name alone. A PMIx value
//! is read from the process that posted it, so each rank also posts the names of its keys
//! (`braid-keys`, cumulative), and the first read after a fence learns from those who posted
//! what.

use std::collections::HashMap;

use braid_sys::pmix::{PmixClient, PmixValue, SpawnApp, RANK_WILDCARD};

use crate::spawn::{SpawnRequest, PARENT_PORT_KEY};
use crate::{Bootstrap, BootstrapError};

/// The library a PMIx launcher's processes load.
pub const PMIX_LIBRARY: &str = "libpmix.so.2";

/// The key under which each rank lists the keys it posted.
const KEYS_KEY: &str = "braid-keys";

/// A value a spawning job puts before its children start (PMI-1's preput) reaches them as the
/// environment variable of this prefix and its key: PMIx has no key-value space that two
/// namespaces share before they connect.
const PREPUT_PREFIX: &str = "BRAID_PREPUT_";

/// A rank's connection to its PMIx server.
pub struct PmixBootstrap {
    client: PmixClient,
    rank: u32,
    size: u32,
    job_id: String,
    appnum: i32,
    /// Every key this rank has posted, space-separated (keys hold no spaces).
    posted: Vec<String>,
    /// Which rank posted each key, as learnt after the last fence (None: not learnt yet).
    owners: Option<HashMap<String, u32>>,
    /// The spawning job's port, where this job was spawned through PMIx.
    parent_port: Option<String>,
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
        let mut bootstrap = PmixBootstrap::connect(PMIX_LIBRARY)?;
        bootstrap.parent_port = lookup(&format!("{PREPUT_PREFIX}{PARENT_PORT_KEY}"));
        Ok(Some(bootstrap))
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
        Ok(PmixBootstrap { client, rank, size: size as u32, job_id, appnum: appnum as i32, posted: Vec::new(), owners: None, parent_port: None })
    }

    /// The rank that posted `key`, learnt from every rank's list after the last fence.
    fn owner_of(&mut self, key: &str) -> Result<u32, BootstrapError> {
        if self.posted.iter().any(|mine| mine == key) {
            return Ok(self.rank);
        }
        if self.owners.is_none() {
            let mut owners = HashMap::new();
            for rank in 0..self.size {
                if let Some(PmixValue::Text(list)) = self.client.get(rank, KEYS_KEY).map_err(|error| failure("get", error))? {
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
        if let (PARENT_PORT_KEY, Some(port)) = (key, &self.parent_port) {
            return Ok(port.clone());
        }
        let owner = self.owner_of(key)?;
        match self.client.get(owner, key).map_err(|error| failure("get", error))? {
            Some(PmixValue::Text(value)) => Ok(value),
            Some(other) => Err(failure("get", format!("rank {owner} published {key:?} as {other:?}, not text"))),
            None => Err(failure("get", format!("rank {owner} has not published {key:?}"))),
        }
    }

    fn fence(&mut self) -> Result<(), BootstrapError> {
        self.client.put(KEYS_KEY, &self.posted.join(" ")).map_err(|error| failure("put", error))?;
        self.client.commit().map_err(|error| failure("commit", error))?;
        self.client.fence().map_err(|error| failure("fence", error))?;
        self.owners = None;
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

    fn spawned(&self) -> bool {
        self.parent_port.is_some()
    }

    fn spawn(&mut self, request: &SpawnRequest) -> Result<(), BootstrapError> {
        let apps = spawn_apps(request)?;
        self.client.spawn(&[], &apps).map(drop).map_err(|error| failure("spawn", format!("the PMIx launcher could not start the processes: {error}")))
    }

    fn publish_name(&mut self, service: &str, port: &str) -> Result<(), BootstrapError> {
        let _ = (service, port);
        Err(no_name_service("publish_name"))
    }

    fn unpublish_name(&mut self, service: &str) -> Result<(), BootstrapError> {
        let _ = service;
        Err(no_name_service("unpublish_name"))
    }

    fn lookup_name(&mut self, service: &str) -> Result<String, BootstrapError> {
        let _ = service;
        Err(no_name_service("lookup_name"))
    }
}

/// The applications of a PMIx spawn: each command's program found as MPI's `wdir` and `path`
/// info keys direct, started in `wdir`, with the spawning job's preput values in its
/// environment.
fn spawn_apps(request: &SpawnRequest) -> Result<Vec<SpawnApp>, BootstrapError> {
    let env: Vec<String> = request.preput.iter().map(|(key, value)| format!("{PREPUT_PREFIX}{key}={value}")).collect();
    request
        .commands
        .iter()
        .map(|command| {
            let program = command.program().ok_or_else(|| failure("spawn", format!("{:?} is not an executable program (looked up as its wdir and path info keys say)", command.execname)))?;
            Ok(SpawnApp {
                command: program.display().to_string(),
                argv: std::iter::once(command.execname.clone()).chain(command.args.iter().cloned()).collect(),
                env: env.clone(),
                cwd: command.info("wdir").map(str::to_string),
                processes: command.nprocs,
            })
        })
        .collect()
}

fn no_name_service(operation: &'static str) -> BootstrapError {
    failure(operation, "Braid does not use a PMIx launcher's name service yet: run the job with braid run")
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
    fn spawned_applications_carry_the_preput_values_and_the_commands_info() {
        use crate::spawn::SpawnCommand;
        let request = SpawnRequest {
            commands: vec![SpawnCommand { execname: "sh".into(), nprocs: 3, args: vec!["-c".into(), "true".into()], info: vec![("wdir".into(), "/tmp".into())] }],
            preput: vec![(PARENT_PORT_KEY.into(), "braid-port:10.0.0.1:4000".into())],
        };
        let apps = spawn_apps(&request).unwrap();
        assert_eq!(apps.len(), 1);
        assert!(apps[0].command.ends_with("/sh"), "{}", apps[0].command);
        assert_eq!(apps[0].argv, ["sh", "-c", "true"]);
        assert_eq!(apps[0].env, [format!("BRAID_PREPUT_{PARENT_PORT_KEY}=braid-port:10.0.0.1:4000")]);
        assert_eq!((apps[0].cwd.as_deref(), apps[0].processes), (Some("/tmp"), 3));
        let missing = SpawnRequest { commands: vec![SpawnCommand { execname: "no-such-program-here".into(), nprocs: 1, args: vec![], info: vec![] }], preput: vec![] };
        assert!(spawn_apps(&missing).unwrap_err().reason.contains("no-such-program-here"));
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
