//! The PMIx bootstrap against a real PMIx server: Open MPI's `mpirun` (Debian's openmpi-bin, built
//! with OpenPMIx, which scripts/setup installs) serves PMIx to the processes it starts. Without
//! it the test fails and says so.

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

#[test]
fn pmi_hello_exchanges_values_through_pmix_under_open_mpis_mpirun() {
    let found = Command::new("mpirun.openmpi").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    assert!(found, "mpirun.openmpi is not installed (Debian package openmpi-bin; scripts/setup installs it)");
    let mut child = Command::new("mpirun.openmpi")
        .args(["--oversubscribe", "-n", "3"])
        .arg(pmi_hello())
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("mpirun.openmpi did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "mpirun.openmpi failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    for rank in 0..3 {
        assert!(stdout.contains(&format!("rank {rank} of 3 read all 3 values")), "rank {rank} missing in:\n{stdout}\n{stderr}");
    }
}
