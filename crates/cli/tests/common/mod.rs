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

#[allow(dead_code)] // Not every test crate runs braid with its output in a pipe it leaves unread.
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

/// The repository root.
#[allow(dead_code)] // Only the test crates that compile MPI programs use it.
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Where the MPI library of this build is: beside the `braid` binary.
#[allow(dead_code)] // Only the test crates that compile MPI programs use it.
pub fn library_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_braid")).parent().unwrap().to_path_buf()
}

/// Fails the test unless virtual clusters can be built here (root, iproute2), with what is
/// missing: CI runs as root with scripts/setup's tools, so a missing piece is an error. Removes
/// the clusters `<prefix><pid><letter>` that test processes which died left behind.
#[allow(dead_code)] // Only the test crates that build clusters use it.
pub fn require_clusters(prefix: &str) {
    assert!(netns::can_manage(), "building a virtual cluster needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)");
    for tool in ["ip", "tc", "ethtool"] {
        assert!(find_in_path(tool).is_some(), "`{tool}` is not installed (scripts/setup installs it)");
    }
    remove_stale_clusters(prefix);
}

/// [`require_clusters`], and MPI programs can be built against this build's library.
#[allow(dead_code)] // Only the test crates that run cluster jobs use it.
pub fn require_cluster_jobs(prefix: &str) {
    require_clusters(prefix);
    require_mpi_programs();
}

/// Compiles tests/c/`program`.c with bin/braidcc against this build's library, into `dir`.
#[allow(dead_code)] // Only the test crates that compile MPI programs use it.
pub fn compile_test_program(program: &str, dir: &Path) -> PathBuf {
    compile_c(&repository().join("tests/c").join(format!("{program}.c")), dir)
}

/// Fails the test unless MPI programs can be built against this build's library.
#[allow(dead_code)] // Only the test crates that compile MPI programs use it.
pub fn require_mpi_programs() {
    assert!(find_in_path("cc").is_some(), "`cc` is not installed (scripts/setup installs it)");
    assert!(library_dir().join("libbraid.so").is_file(), "{} has no libbraid.so (build the workspace, e.g. `cargo build -p braid-mpi`)", library_dir().display());
}

/// Compiles the C program `source` with bin/braidcc against this build's library, into `dir`
/// (named after the source).
#[allow(dead_code)] // Only the test crates that compile MPI programs use it.
pub fn compile_c(source: &Path, dir: &Path) -> PathBuf {
    let binary = dir.join(source.file_stem().unwrap());
    let output = Command::new(repository().join("bin/braidcc")).args(["-std=c99", "-O2", "-DTEST_BRAID_ONLY"]).arg(source).arg("-o").arg(&binary).env("BRAID_LIBDIR", library_dir()).output().unwrap();
    assert!(output.status.success(), "braidcc {}: {}", source.display(), text(&output.stderr));
    binary
}

/// Takes cluster `name` down and deletes any of its namespaces still there. Never panics: it
/// runs from guards, maybe while a failed test unwinds.
#[allow(dead_code)] // Only the test crates that compile MPI programs use it.
pub fn remove_cluster(name: &str) {
    let _ = braid().args(["cluster", "down", name]).output();
    let prefix = format!("braid-{name}-");
    for namespace in netns::list().unwrap_or_default().into_iter().filter(|namespace| namespace.starts_with(&prefix)) {
        let _ = Command::new("ip").args(["netns", "delete", &namespace]).output();
    }
}

/// A directory of a test's own, removed when dropped (also while a failed test unwinds).
#[allow(dead_code)] // Only the test crates that compile MPI programs use it.
pub struct Scratch(pub PathBuf);

#[allow(dead_code)]
impl Scratch {
    /// `braid-<what>-<pid>` in the temporary directory, for test `what`.
    pub fn new(what: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("braid-{what}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// Compiles crates/cli/tests/programs/`name`.c into this directory.
    pub fn program(&self, name: &str) -> PathBuf {
        compile_c(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs").join(format!("{name}.c")), &self.0)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
