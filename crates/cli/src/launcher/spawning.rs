//! Jobs that the launched job's processes spawn (MPI_Comm_spawn, through PMI's spawn command):
//! each is a job of its own, with its own key-value space, started on the node of the process
//! that asked (in its namespace on the virtual cluster, through the launch agent on another
//! host), in the launched job's process group (so signals and the job's end reach it).

use std::ffi::OsString;
use std::path::PathBuf;

use braid_pmi::spawn::{SpawnCommand, SpawnRequest};

use super::{Job, Launch, Site};

/// A command ready to start: its program and its working directory, where given.
struct Resolved {
    program: PathBuf,
    wdir: Option<PathBuf>,
    args: Vec<OsString>,
}

impl Job<'_> {
    /// Starts the job that process `requester` asks for; `Err` says why not, and then nothing
    /// was started (every command is checked first).
    pub(super) fn spawn(&mut self, requester: u32, request: &SpawnRequest) -> Result<(), String> {
        if self.ending.is_some() {
            return Err("the job is ending".into());
        }
        if request.processes() == 0 {
            return Err("the spawn asks for no processes".into());
        }
        let resolved = request.commands.iter().map(resolve).collect::<Result<Vec<Resolved>, String>>()?;
        let (namespace, remote, node_name) = {
            let site = &self.sites[requester as usize];
            (site.namespace.clone(), site.remote.clone(), site.node_name.clone())
        };
        let kvsname = format!("{}-spawn{}", self.server.kvsname(), self.spawned_jobs.len() + 1);
        let first = self.server.add_job(&kvsname, request);
        self.spawned_jobs.push(kvsname);
        let total = request.processes();
        let mut process = first;
        for (command, resolved) in request.commands.iter().zip(&resolved) {
            for _ in 0..command.nprocs {
                let rank = process - first;
                self.sites.push(Site { namespace: namespace.clone(), remote: remote.clone(), local_rank: rank, local_size: total, node_name: node_name.clone() });
                let launch = Launch { program: resolved.program.as_os_str(), args: &resolved.args, pmi_rank: rank, pmi_size: total, spawned: true, wdir: resolved.wdir.as_deref() };
                if let Err(failure) = self.start_process(process, &launch) {
                    // Its program was checked: this is the system failing (no processes left),
                    // and the processes already started wait for this one: the job ends.
                    let reason = failure.describe();
                    self.fail(failure);
                    return Err(reason);
                }
                process += 1;
            }
        }
        Ok(())
    }
}

/// Finds a command's program and working directory, as MPI's reserved info keys `wdir` and
/// `path` direct; `host` may only name this host. Other keys are ignored, as MPI allows.
fn resolve(command: &SpawnCommand) -> Result<Resolved, String> {
    if let Some(host) = command.info("host") {
        let here = braid_sys::process::hostname().unwrap_or_default();
        if !matches!(host, "localhost" | "127.0.0.1") && host != here {
            return Err(format!("the info key host={host} names another host; braid run starts spawned processes beside the process that spawns them ({here})"));
        }
    }
    let wdir = command.info("wdir").map(PathBuf::from);
    if let Some(dir) = &wdir {
        if !dir.is_dir() {
            return Err(format!("the working directory wdir={} does not exist", dir.display()));
        }
    }
    let execname = &command.execname;
    let program = command.program().ok_or_else(|| format!("cannot start {execname:?}: no such executable{}", command.info("path").map(|path| format!(" in path={path}")).unwrap_or_default()))?;
    Ok(Resolved { program, wdir, args: command.args.iter().map(OsString::from).collect() })
}
