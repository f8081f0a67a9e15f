//! `braid run` inside a Slurm allocation (`salloc`, `sbatch`): the ranks go to the allocation's
//! nodes, each started as a job step by `srun`, as Open MPI's and MPICH's launchers do there, so
//! that Slurm accounts for them and ends them with the job.

use std::process::Command;

/// Which launcher starts the ranks (`--launcher`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LauncherChoice {
    /// `srun` inside a Slurm allocation, else this machine.
    Auto,
    /// Processes of this machine, even inside an allocation.
    Local,
    /// `srun`; outside an allocation this is an error.
    Slurm,
}

/// The agent that starts one rank on a node of the allocation, given the node and then a shell
/// command: one task of one node, sharing the allocation's CPUs with the other ranks' steps
/// (`--overlap`), without Slurm's PMI (the rank speaks to braid run).
pub const SRUN_AGENT: [&str; 7] = ["srun", "--mpi=none", "--overlap", "--nodes=1", "--ntasks=1", "--quiet", "--nodelist"];

/// The allocation's node list as Slurm gives it to the processes inside it.
pub fn allocation_nodelist(lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
    lookup("SLURM_JOB_ID")?;
    lookup("SLURM_JOB_NODELIST").or_else(|| lookup("SLURM_NODELIST")).filter(|list| !list.trim().is_empty())
}

/// The nodes of `nodelist` (`node[1-3,7]` ...), expanded by Slurm's own `scontrol`.
pub fn expand_nodelist(nodelist: &str) -> Result<Vec<String>, String> {
    let output = Command::new("scontrol").args(["show", "hostnames", nodelist]).output().map_err(|error| format!("cannot run scontrol to read the allocation's nodes ({nodelist}): {error}"))?;
    if !output.status.success() {
        return Err(format!("scontrol show hostnames {nodelist} failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    let nodes: Vec<String> = String::from_utf8_lossy(&output.stdout).split_whitespace().map(str::to_string).collect();
    if nodes.is_empty() {
        return Err(format!("the allocation's node list {nodelist:?} names no node"));
    }
    Ok(nodes)
}

/// The nodes the ranks run on through `srun`, by `choice`: `None` to run them here.
pub fn launch_nodes(choice: LauncherChoice, lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Vec<String>>, String> {
    let nodelist = allocation_nodelist(lookup);
    match (choice, nodelist) {
        (LauncherChoice::Local, _) | (LauncherChoice::Auto, None) => Ok(None),
        (LauncherChoice::Slurm, None) => Err("--launcher slurm needs a Slurm allocation (SLURM_JOB_ID and SLURM_JOB_NODELIST are not set: run braid run inside salloc or sbatch)".to_string()),
        (_, Some(list)) => expand_nodelist(&list).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| value.to_string())
    }

    #[test]
    fn an_allocation_is_a_job_id_with_a_node_list() {
        assert_eq!(allocation_nodelist(environment(&[("SLURM_JOB_ID", "7"), ("SLURM_JOB_NODELIST", "n[1-2]")])), Some("n[1-2]".to_string()));
        assert_eq!(allocation_nodelist(environment(&[("SLURM_JOB_ID", "7"), ("SLURM_NODELIST", "n1")])), Some("n1".to_string()));
        assert_eq!(allocation_nodelist(environment(&[("SLURM_JOB_NODELIST", "n1")])), None);
        assert_eq!(allocation_nodelist(environment(&[("SLURM_JOB_ID", "7")])), None);
    }

    #[test]
    fn outside_an_allocation_auto_and_local_run_here_and_slurm_is_refused() {
        assert_eq!(launch_nodes(LauncherChoice::Auto, environment(&[])), Ok(None));
        assert_eq!(launch_nodes(LauncherChoice::Local, environment(&[("SLURM_JOB_ID", "7"), ("SLURM_JOB_NODELIST", "n1")])), Ok(None));
        let refused = launch_nodes(LauncherChoice::Slurm, environment(&[])).unwrap_err();
        assert!(refused.contains("salloc"), "{refused}");
    }
}
