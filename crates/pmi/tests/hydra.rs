//! The PMI client against MPICH's own launcher, over both of its hand-offs (PMI_FD and PMI_PORT).
//! Needs `mpiexec.hydra` (Debian package mpich, which scripts/setup installs): without it the tests
//! fail and say so.

use std::time::Duration;

mod common;
use common::{installed, run_pmi_hello};

fn require_hydra() {
    assert!(installed("mpiexec.hydra"), "mpiexec.hydra is not installed (Debian package mpich; scripts/setup installs it)");
}

/// Runs `mpiexec.hydra ARGS pmi_hello`, killing it after 20 s; returns (success, stdout, stderr).
fn run_hydra(args: &[&str]) -> (bool, String, String) {
    run_pmi_hello("mpiexec.hydra", args, &[], Duration::from_secs(20))
}

fn assert_every_rank_read_every_value(args: &[&str]) {
    let (success, stdout, stderr) = run_hydra(args);
    assert!(success, "mpiexec.hydra {args:?} failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    for rank in 0..3 {
        assert!(stdout.contains(&format!("rank {rank} of 3 read all 3 values")), "rank {rank} missing in:\n{stdout}\n{stderr}");
    }
}

#[test]
fn pmi_hello_runs_under_hydra_with_an_inherited_socket() {
    require_hydra();
    assert_every_rank_read_every_value(&["-n", "3"]);
}

#[test]
fn pmi_hello_runs_under_hydra_with_a_port() {
    require_hydra();
    assert_every_rank_read_every_value(&["-pmi-port", "-n", "3"]);
}
