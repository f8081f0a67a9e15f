//! What the launcher tests share: the `pmi_hello` example, and running it under a launcher with a
//! time limit.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The `pmi_hello` example, built on demand when a test runs on its own.
pub fn pmi_hello() -> PathBuf {
    let profile_dir = std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().to_path_buf();
    let example = profile_dir.join("examples").join("pmi_hello");
    if !example.exists() {
        let status = Command::new(env!("CARGO")).args(["build", "--quiet", "-p", "braid-pmi", "--example", "pmi_hello"]).status().unwrap();
        assert!(status.success(), "building the pmi_hello example failed");
    }
    example
}

/// Whether `launcher` runs at all (`--version`).
pub fn installed(launcher: &str) -> bool {
    Command::new(launcher).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// Runs `launcher ARGS pmi_hello` with `environment`, killing it after `limit`; returns (success,
/// stdout, stderr).
pub fn run_pmi_hello(launcher: &str, args: &[&str], environment: &[(&str, &str)], limit: Duration) -> (bool, String, String) {
    let mut child = Command::new(launcher).args(args).arg(pmi_hello()).envs(environment.iter().copied()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{launcher} {args:?} did not finish in {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}
