//! `braid run --hosts` on a 2-node virtual cluster: the launcher runs inside node 0 and starts
//! ranks through a launch agent that maps each node's management address to `ip netns exec` (a
//! stand-in for ssh). Needs root, iproute2 and libbraid.so next to the `braid` binary (the test
//! fails and says what is missing otherwise). Each cluster is named `bh<pid><letter>` and removed
//! by a guard, even when the test fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;
use common::*;

/// A running 2-node cluster and a scratch directory, both removed when dropped, whatever happened.
struct Cluster {
    name: String,
    scratch: PathBuf,
}

impl Cluster {
    /// Cluster `bh<pid><letter>`: each test its own letter, as they run in parallel.
    fn up(letter: char) -> Cluster {
        let name = format!("bh{}{letter}", std::process::id());
        let scratch = std::env::temp_dir().join(format!("braid-hosts-{name}"));
        std::fs::create_dir_all(&scratch).unwrap();
        let cluster = Cluster { name, scratch };
        let up = run(&["cluster", "up", &cluster.name, "--nodes", "2", "--rails", "1gbit"]);
        assert!(up.status.success(), "cluster up failed: {}", text(&up.stderr));
        cluster
    }

    /// An agent that runs its command in the node whose management address it is given.
    fn agent(&self) -> PathBuf {
        let status = run(&["cluster", "status", &self.name]);
        let described = text(&status.stdout);
        assert!(described.contains("10.213.0.1") && described.contains("10.213.0.2"), "unexpected addresses:\n{described}");
        let script = format!(
            "#!/bin/sh\nwhile [ \"${{1#-}}\" != \"$1\" ]; do shift; done\nhost=$1; shift\ncase \"$host\" in\n  10.213.0.1) node=0 ;;\n  10.213.0.2) node=1 ;;\n  \
             *) echo \"agent: unknown host $host\" >&2; exit 255 ;;\nesac\nexec ip netns exec braid-{}-n$node sh -c \"$*\"\n",
            self.name
        );
        let path = self.scratch.join("agent");
        std::fs::write(&path, script).unwrap();
        assert!(Command::new("chmod").arg("+x").arg(&path).status().unwrap().success());
        path
    }

    /// Compiles tests/c/`program`.c with bin/braidcc against this build's library.
    fn compiled(&self, program: &str) -> PathBuf {
        compile_test_program(program, &self.scratch)
    }

    /// `braid run --hosts` (node 0 and node 1, 2 ranks each) started inside node 0.
    fn run_on_hosts(&self, agent: &Path, program: &[&str]) -> Output {
        self.run_with_agent(agent.to_str().expect("a UTF-8 path"), program)
    }

    /// [`Cluster::run_on_hosts`] with the launch agent given as a command line.
    fn run_with_agent(&self, agent: &str, program: &[&str]) -> Output {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &format!("braid-{}-n0", self.name), env!("CARGO_BIN_EXE_braid")])
            .args(["run", "--hosts", "10.213.0.1,10.213.0.2", "--launch-agent"])
            .arg(agent)
            .args(["-n", "4", "--ppn", "2"])
            .args(program)
            .current_dir(&self.scratch)
            // Inside a node "auto" would also pick the management network; the agent passes this on.
            .env("BRAID_RAILS", "rail0")
            .env("BRAID_PROFILE_DIR", self.scratch.join("profiles"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        finish(command.spawn().unwrap(), &format!("braid run --hosts {program:?}"))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // No panicking here: this may run while a failed test unwinds.
        remove_cluster(&self.name);
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

#[test]
fn hosts_runs_ranks_through_the_launch_agent_and_reports_a_failing_rank() {
    require_cluster_jobs("bh");
    let cluster = Cluster::up('a');
    let agent = cluster.agent();
    let program = cluster.compiled("p2p_matching");

    let output = cluster.run_on_hosts(&agent, &[program.to_str().unwrap()]);
    assert!(output.status.success(), "p2p_matching over --hosts failed:\n{}{}", text(&output.stdout), text(&output.stderr));
    assert!(text(&output.stdout).contains("p2p_matching: ok on 4 ranks"), "stdout:\n{}", text(&output.stdout));

    // Rank 2 (node 1) fails; the others would sleep for a minute unless the launcher ends them.
    let started = Instant::now();
    let failing = "if [ \"$PMI_ID\" = 2 ]; then sleep 0.2; exit 3; fi; exec sleep 60";
    let output = cluster.run_on_hosts(&agent, &["sh", "-c", failing]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "stderr:\n{stderr}");
    assert!(stderr.contains("rank 2 (pid ") && stderr.contains("exited with code 3"), "stderr:\n{stderr}");
    assert!(started.elapsed() < Duration::from_secs(15), "ending the job took {:?}", started.elapsed());
}

/// A job on two hosts spawns: the children start on the spawning root's host through the launch
/// agent, and the parents on the other host reach them over the network (spawn.c checks the
/// task pool, MPI_Comm_spawn_multiple and disconnection).
#[test]
fn hosts_spawns_children_beside_the_root_and_reaches_them_from_the_other_host() {
    require_cluster_jobs("bh");
    let cluster = Cluster::up('s');
    let agent = cluster.agent();
    let program = cluster.compiled("spawn");
    let output = cluster.run_on_hosts(&agent, &[program.to_str().unwrap()]);
    assert!(output.status.success(), "spawn over --hosts failed:\n{}{}", text(&output.stdout), text(&output.stderr));
}

/// Under MPICH's launcher on the same two hosts: Hydra starts its proxies through the agent, and
/// a job spanning both spawns through Hydra's PMI spawn command; the children reach their
/// parents on both hosts (spawn.c checks the task pool, MPI_Comm_spawn_multiple and
/// disconnection).
#[test]
fn hydra_on_two_hosts_spawns_and_the_children_reach_every_parent() {
    require_cluster_jobs("bh");
    let found = Command::new("mpiexec.hydra").arg("--version").stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).status().is_ok();
    assert!(found, "mpiexec.hydra is not installed (Debian package mpich; scripts/setup installs it)");
    let cluster = Cluster::up('y');
    let agent = cluster.agent();
    let program = cluster.compiled("spawn");
    let mut command = Command::new("ip");
    command
        .args(["netns", "exec", &format!("braid-{}-n0", cluster.name), "mpiexec.hydra", "-launcher", "ssh", "-launcher-exec"])
        .arg(&agent)
        .args(["-hosts", "10.213.0.1,10.213.0.2", "-ppn", "1", "-n", "2", "-genv", "BRAID_RAILS", "rail0"])
        .arg(&program)
        .current_dir(&cluster.scratch)
        .env("BRAID_PROFILE_DIR", cluster.scratch.join("profiles"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let output = finish(command.spawn().unwrap(), "mpiexec.hydra on two hosts");
    assert!(output.status.success(), "spawn under mpiexec.hydra on two hosts failed:\n{}{}", text(&output.stdout), text(&output.stderr));
}

/// A real sshd in each node of the cluster (Debian's openssh-server, which scripts/setup
/// installs): its own host key, port, and one authorised key, all in the scratch directory;
/// stopped when dropped.
struct Sshd {
    daemons: Vec<std::process::Child>,
    key: PathBuf,
}

impl Sshd {
    const PORT: &'static str = "2222";

    fn start(cluster: &Cluster) -> Sshd {
        assert!(Path::new("/usr/sbin/sshd").exists(), "sshd is not installed (Debian package openssh-server; scripts/setup installs it)");
        let keygen = |path: &Path| {
            let made = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(path).status().unwrap();
            assert!(made.success(), "ssh-keygen failed");
        };
        let (host_key, key) = (cluster.scratch.join("host_key"), cluster.scratch.join("user_key"));
        keygen(&host_key);
        keygen(&key);
        std::fs::copy(key.with_extension("pub"), cluster.scratch.join("authorized_keys")).unwrap();
        // sshd checks that its privilege-separation directory exists.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let mut daemons = Vec::new();
        for node in 0..2 {
            let config = cluster.scratch.join(format!("sshd-{node}.conf"));
            let text = format!(
                "Port {}\nListenAddress 10.213.0.{}\nHostKey {}\nPidFile {}\nAuthorizedKeysFile {}\nPermitRootLogin yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n",
                Self::PORT,
                node + 1,
                host_key.display(),
                cluster.scratch.join(format!("sshd-{node}.pid")).display(),
                cluster.scratch.join("authorized_keys").display()
            );
            std::fs::write(&config, text).unwrap();
            let daemon = Command::new("ip")
                .args(["netns", "exec", &format!("braid-{}-n{node}", cluster.name), "/usr/sbin/sshd", "-D", "-e", "-f"])
                .arg(&config)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::fs::File::create(cluster.scratch.join(format!("sshd-{node}.log"))).unwrap())
                .spawn()
                .unwrap();
            daemons.push(daemon);
        }
        let sshd = Sshd { daemons, key };
        // Up when a command runs through each.
        let deadline = Instant::now() + Duration::from_secs(10);
        for node in 1..=2 {
            loop {
                let probe = Command::new("ip")
                    .args(["netns", "exec", &format!("braid-{}-n0", cluster.name)])
                    .args(sshd.agent().split_whitespace())
                    .arg(format!("10.213.0.{node}"))
                    .arg("true")
                    .stdin(std::process::Stdio::null())
                    .output()
                    .unwrap();
                if probe.status.success() {
                    break;
                }
                assert!(Instant::now() < deadline, "sshd on node {node} does not answer: {}", text(&probe.stderr));
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        sshd
    }

    /// The launch agent: real ssh with a terminal (-tt: remote processes end with the session).
    fn agent(&self) -> String {
        format!("ssh -tt -p {} -i {} -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR", Self::PORT, self.key.display())
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        for daemon in &mut self.daemons {
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
    }
}

/// `braid run --hosts` through real ssh: ranks on both nodes, and a failing rank that ends the
/// job and leaves no remote process behind.
#[test]
fn hosts_runs_ranks_through_real_ssh_and_ends_them_with_the_job() {
    require_cluster_jobs("bh");
    let cluster = Cluster::up('h');
    let sshd = Sshd::start(&cluster);
    let program = cluster.compiled("p2p_matching");
    let output = cluster.run_with_agent(&sshd.agent(), &[program.to_str().unwrap()]);
    assert!(output.status.success(), "p2p_matching over ssh failed:\n{}{}", text(&output.stdout), text(&output.stderr));
    assert!(text(&output.stdout).contains("p2p_matching: ok on 4 ranks"), "stdout:\n{}", text(&output.stdout));

    let marker = format!("sleep 61.{}", std::process::id());
    let failing = format!("if [ \"$PMI_ID\" = 2 ]; then sleep 0.3; exit 3; fi; exec {marker}");
    let started = Instant::now();
    let output = cluster.run_with_agent(&sshd.agent(), &["sh", "-c", &failing]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "stderr:\n{stderr}");
    assert!(stderr.contains("rank 2 (pid ") && stderr.contains("exited with code 3"), "stderr:\n{stderr}");
    assert!(started.elapsed() < Duration::from_secs(15), "ending the job took {:?}", started.elapsed());
    // The ranks that slept on the other end of ssh end with their sessions.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Command::new("pgrep").args(["-f", &marker]).output().unwrap().status.success() {
        assert!(Instant::now() < deadline, "remote ranks ({marker}) outlived the job");
        std::thread::sleep(Duration::from_millis(100));
    }
}
