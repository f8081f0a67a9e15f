//! A PMI round trip without MPI: every rank publishes a value, fences, and reads every rank's.
//! Run it under `braid run -n 3`, `mpiexec.hydra -n 3` or a PMIx launcher (`mpirun.openmpi -n 3`,
//! `srun --mpi=pmix -n 3`); it prints one line per rank and exits 0 when every value arrived
//! intact.

use std::process::ExitCode;

use braid_pmi::client::PmiClient;
use braid_pmi::pmix::PmixBootstrap;
use braid_pmi::{Bootstrap, BootstrapError};

/// The launcher's PMI-1 connection, else its PMIx one.
fn launcher() -> Result<Option<Box<dyn Bootstrap>>, BootstrapError> {
    if let Some(client) = PmiClient::from_env()? {
        return Ok(Some(Box::new(client)));
    }
    Ok(PmixBootstrap::from_lookup(|name| std::env::var(name).ok())?.map(|client| Box::new(client) as Box<dyn Bootstrap>))
}

fn main() -> ExitCode {
    let mut client = match launcher() {
        Ok(Some(client)) => client,
        Ok(None) => {
            eprintln!("pmi_hello: no PMI launcher in the environment; run it under `braid run`, `mpiexec.hydra` or a PMIx launcher");
            return ExitCode::from(2);
        }
        Err(error) => {
            eprintln!("pmi_hello: {error}");
            return ExitCode::from(1);
        }
    };
    match exchange(client.as_mut()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("pmi_hello: rank {}: {error}", client.rank());
            ExitCode::from(1)
        }
    }
}

fn value_of(rank: u32, job_id: &str) -> String {
    format!("hello-from-{rank}-of-{job_id}")
}

fn exchange(client: &mut dyn Bootstrap) -> Result<(), Box<dyn std::error::Error>> {
    let (rank, size) = (client.rank(), client.size());
    let job_id = client.job_id().to_string();
    client.put(&format!("hello-{rank}"), &value_of(rank, &job_id))?;
    client.fence()?;
    for peer in 0..size {
        let value = client.get(&format!("hello-{peer}"))?;
        if value != value_of(peer, &job_id) {
            return Err(format!("rank {peer}'s value arrived as {value:?}").into());
        }
    }
    client.fence()?;
    client.finalize()?;
    println!("pmi_hello: rank {rank} of {size} read all {size} values");
    Ok(())
}
