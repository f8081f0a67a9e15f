//! The PMIx bootstrap against a real PMIx server: Open MPI's `mpirun` (Debian's openmpi-bin, built
//! with OpenPMIx, which scripts/setup installs) serves PMIx to the processes it starts. Without
//! it the test fails and says so.

use std::time::Duration;

mod common;
use common::{installed, run_pmi_hello};

#[test]
fn pmi_hello_exchanges_values_through_pmix_under_open_mpis_mpirun() {
    assert!(installed("mpirun.openmpi"), "mpirun.openmpi is not installed (Debian package openmpi-bin; scripts/setup installs it)");
    let root = [("OMPI_ALLOW_RUN_AS_ROOT", "1"), ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")];
    let (success, stdout, stderr) = run_pmi_hello("mpirun.openmpi", &["--oversubscribe", "-n", "3"], &root, Duration::from_secs(60));
    assert!(success, "mpirun.openmpi failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    for rank in 0..3 {
        assert!(stdout.contains(&format!("rank {rank} of 3 read all 3 values")), "rank {rank} missing in:\n{stdout}\n{stderr}");
    }
}
