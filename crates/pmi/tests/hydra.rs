//! The PMI client against MPICH's own launcher, over both of its hand-offs (PMI_FD and PMI_PORT).
//! Needs `mpiexec.hydra` (Debian package mpich, which scripts/setup installs): without it the tests
//! fail and say so.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The `pmi_hello` example, built on demand when this test runs on its own.
fn pmi_hello() -> PathBuf {
    let profile_dir = std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().to_path_buf();
    let example = profile_dir.join("examples").join("pmi_hello");
    if !example.exists() {
        let status = Command::new(env!("CARGO")).args(["build", "--quiet", "-p", "braid-pmi", "--example", "pmi_hello"]).status().unwrap();
        assert!(status.success(), "building the pmi_hello example failed");
    }
    example
}

fn require_hydra() {
    let found = Command::new("mpiexec.hydra").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    assert!(found, "mpiexec.hydra is not installed (Debian package mpich; scripts/setup installs it)");
}

/// Runs `mpiexec.hydra ARGS pmi_hello`, killing it after 20 s; returns (success, stdout, stderr).
fn run_hydra(args: &[&str]) -> (bool, String, String) {
    let mut child = Command::new("mpiexec.hydra").args(args).arg(pmi_hello()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("mpiexec.hydra {args:?} did not finish in 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
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
