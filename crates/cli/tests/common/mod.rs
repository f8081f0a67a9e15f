//! Helpers shared by the launcher's cluster tests: run `braid` with a deadline, read its output.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

use braid_sys::netns;

/// Longest any command here may take before the test kills it and fails.
pub const COMMAND_LIMIT: Duration = Duration::from_secs(30);

pub fn braid() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_braid"));
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// Waits for `child`, killing it (and failing) past [`COMMAND_LIMIT`].
pub fn finish(mut child: Child, what: &str) -> Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > COMMAND_LIMIT {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!("{what} did not finish in {COMMAND_LIMIT:?}; stderr:\n{}", String::from_utf8_lossy(&output.stderr));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

pub fn run(args: &[&str]) -> Output {
    finish(braid().args(args).spawn().unwrap(), &format!("braid {}", args.join(" ")))
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn find_in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|candidate| candidate.is_file())
}

/// Removes clusters of earlier test processes that died before their guards ran.
/// Takes down, once per test process, clusters named `<prefix><pid><letter>` whose test process
/// (pid) is gone: what a killed test run left behind.
pub fn remove_stale_clusters(prefix: &str) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for namespace in netns::list().unwrap_or_default() {
            let Some(rest) = namespace.strip_prefix(&format!("braid-{prefix}")[..]) else { continue };
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let Some(letter) = rest[digits.len()..].chars().next() else { continue };
            let alive = digits.parse::<u32>().is_ok_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
            if !digits.is_empty() && !alive {
                let _ = braid().args(["cluster", "down", &format!("{prefix}{digits}{letter}")]).output();
            }
        }
    });
}
