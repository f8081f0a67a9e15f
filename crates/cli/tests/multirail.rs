//! Multirail jobs on a 2-node virtual cluster with two shaped rails (2gbit, 1gbit): matching
//! across nodes, large messages split over both rails, a rail taken down mid-run, a rail that
//! crawls after its profile, every rail lost while a receive waits with nothing in flight, and
//! shared memory mixed with TCP in one job.
//! Needs root, iproute2 and libbraid.so next to the `braid` binary (the tests fail and say what
//! is missing otherwise). Every cluster is named `bm<pid><letter>` and removed by a guard, even
//! when a test fails; clusters left by a test process that died are removed at start. The tests
//! take turns: they share two cores and their timings matter.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

mod common;
use common::*;

/// The stream of the failover test takes about 5 s on a quiet machine; past this it hangs.
const STREAM_LIMIT: Duration = Duration::from_secs(20);
/// The large-message job takes about 2.5 s with a rail crawling (2 s without), and 40 s or
/// more where the crawling rail holds what it was planned to carry.
const CRAWL_LIMIT: Duration = Duration::from_secs(30);
/// A receive from a peer that every rail lost fails in about 3 s; past this it hangs.
const LOST_PEER_LIMIT: Duration = Duration::from_secs(20);
/// The short soak takes about 40 s with the cluster's set-up; past this it hangs.
const SOAK_LIMIT: Duration = Duration::from_secs(150);
/// The rails of every cluster here.
const RAILS: &str = "2gbit,1gbit";
const RAIL_NAMES: [&str; 2] = ["rail0", "rail1"];

static TURN: Mutex<()> = Mutex::new(());

fn take_turn() -> MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A running cluster, taken down (and its compiled programs removed) when dropped, whatever happened.
struct Cluster {
    name: String,
    programs: PathBuf,
}

impl Cluster {
    /// This test's turn and its cluster (the test fails if this machine cannot run cluster jobs).
    fn for_test(letter: char) -> (MutexGuard<'static, ()>, Cluster) {
        require_cluster_jobs("bm");
        let turn = take_turn();
        (turn, Cluster::up(letter))
    }

    fn up(letter: char) -> Cluster {
        let name = format!("bm{}{letter}", std::process::id());
        let programs = std::env::temp_dir().join(format!("braid-multirail-{name}"));
        std::fs::create_dir_all(&programs).unwrap();
        let cluster = Cluster { name, programs };
        let up = run(&["cluster", "up", &cluster.name, "--nodes", "2", "--rails", RAILS]);
        assert!(up.status.success(), "cluster up failed: {}", text(&up.stderr));
        cluster
    }

    fn node(&self, index: usize) -> String {
        format!("braid-{}-n{index}", self.name)
    }

    /// Bytes node `node` has sent on each rail so far.
    fn sent_per_rail(&self, node: usize) -> Vec<u64> {
        RAIL_NAMES
            .iter()
            .map(|rail| {
                let path = format!("/sys/class/net/{rail}/statistics/tx_bytes");
                let output = Command::new("ip").args(["netns", "exec", &self.node(node), "cat", &path]).output().unwrap();
                assert!(output.status.success(), "reading {path} in {}: {}", self.node(node), text(&output.stderr));
                text(&output.stdout).trim().parse().unwrap()
            })
            .collect()
    }

    /// Compiles tests/c/`program`.c with bin/braidcc against this build's library.
    fn compiled(&self, program: &str) -> PathBuf {
        let binary = self.programs.join(program);
        if binary.is_file() {
            return binary;
        }
        compile_test_program(program, &self.programs)
    }

    /// `braid run --cluster` with the given placement, program and arguments.
    fn job(&self, placement: &[&str], program: &Path, args: &[&str]) -> Command {
        let mut command = self.braid();
        command.args(["run", "--cluster", &self.name]).args(placement).arg(program).args(args);
        command
    }

    /// `braid` with this cluster's rail profile cache: every cluster has the same addresses, so a
    /// shared cache would mix them.
    fn braid(&self) -> Command {
        let mut command = braid();
        command.env("BRAID_PROFILE_DIR", self.programs.join("profiles"));
        command
    }

    /// Samples the rails' profiles into the cache its jobs use.
    fn sample(&self) {
        let sampled = finish(self.braid().args(["sample", "--cluster", &self.name]).spawn().unwrap(), "braid sample");
        assert!(sampled.status.success(), "braid sample failed: {}", text(&sampled.stderr));
    }

    /// Reshapes `rail` to `rate` (`braid cluster shape`), leaving it up and its profile cached.
    fn shape(&self, rail: &str, rate: &str) {
        let shaped = self.braid().args(["cluster", "shape", &self.name, "--rail", rail, "--rate", rate]).output().unwrap();
        assert!(shaped.status.success(), "braid cluster shape {rail} {rate}: {}", text(&shaped.stderr));
    }

    fn run_job(&self, placement: &[&str], program: &str, args: &[&str]) -> Output {
        let binary = self.compiled(program);
        let output = finish(self.job(placement, &binary, args).spawn().unwrap(), &format!("{program} {placement:?}"));
        assert!(output.status.success(), "{program} {placement:?} failed:\n{}{}", text(&output.stdout), text(&output.stderr));
        output
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // No panicking here: this may run while a failed test unwinds.
        remove_cluster(&self.name);
        let _ = std::fs::remove_dir_all(&self.programs);
    }
}

fn difference(after: &[u64], before: &[u64]) -> Vec<u64> {
    after.iter().zip(before).map(|(after, before)| after - before).collect()
}

const MIB: u64 = 1 << 20;

#[test]
fn matching_and_ordering_hold_across_nodes() {
    let (_turn, cluster) = Cluster::for_test('a');
    let before = cluster.sent_per_rail(0);
    let output = cluster.run_job(&["-n", "2", "--ppn", "1"], "p2p_matching", &[]);
    assert!(text(&output.stdout).contains("p2p_matching: ok on 2 ranks"), "{}", text(&output.stdout));
    let sent = difference(&cluster.sent_per_rail(0), &before);
    assert!(sent.iter().sum::<u64>() > MIB, "the job crossed nodes, yet the rails carried only {sent:?} bytes");

    let cyclic = cluster.run_job(&["-n", "3", "--map-by", "node"], "p2p_matching", &[]);
    assert!(text(&cyclic.stdout).contains("p2p_matching: ok on 3 ranks"), "{}", text(&cyclic.stdout));
}

#[test]
fn large_messages_are_split_over_both_rails_and_arrive_intact() {
    let (_turn, cluster) = Cluster::for_test('b');
    let before = [cluster.sent_per_rail(0), cluster.sent_per_rail(1)];
    let output = cluster.run_job(&["-n", "2", "--ppn", "1"], "large", &[]);
    assert!(text(&output.stdout).contains("large: ok on 2 ranks"), "{}", text(&output.stdout));
    // Node 0 sends about 250 MiB and node 1 about 140 MiB, in messages of 16 to 64 MiB; on rails
    // of 2 and 1 Gbit/s the slower one should carry about a third of it.
    for (node, before) in before.iter().enumerate() {
        let sent = difference(&cluster.sent_per_rail(node), before);
        let total: u64 = sent.iter().sum();
        assert!(total > 100 * MIB, "node {node} sent only {sent:?} bytes per rail");
        for (rail, bytes) in sent.iter().enumerate() {
            assert!(*bytes * 8 > total, "node {node}: rail{rail} carried {bytes} of {total} bytes ({sent:?}): not split over both rails");
        }
    }
}

#[test]
fn a_rail_taken_down_mid_run_loses_duplicates_and_corrupts_nothing() {
    let (_turn, cluster) = Cluster::for_test('c');
    let binary = cluster.compiled("multirail_stream");
    // 600 messages of 2 MiB: several seconds on both rails, so the rail goes down mid-stream.
    // Equal splits put every message on both rails for sure; failover is the engine's, whatever
    // the strategy.
    let mut job = cluster.job(&["-n", "2", "--ppn", "1"], &binary, &["600", "2097152"]).env("BRAID_STRATEGY", "iso").spawn().unwrap();
    let mut stdout = BufReader::new(job.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first.trim_end(), "streaming", "the stream did not start");
    let before = cluster.sent_per_rail(0);
    std::thread::sleep(Duration::from_millis(300));
    let during = cluster.sent_per_rail(0);
    let down = Command::new("ip").args(["netns", "exec", &cluster.node(0), "ip", "link", "set", "rail1", "down"]).output().unwrap();
    assert!(down.status.success(), "taking rail1 down: {}", text(&down.stderr));
    assert!(during[1] > before[1], "rail1 carried nothing before it went down: {before:?} -> {during:?}");

    let (status, rest, stderr) = ending_within(job, stdout, STREAM_LIMIT);
    let Some(status) = status else {
        panic!("the stream hung after rail1 went down (killed after {STREAM_LIMIT:?}):\n{rest}{stderr}");
    };
    assert!(status.success(), "the stream failed after rail1 went down:\n{rest}{stderr}");
    assert!(rest.contains("multirail_stream: ok on 2 ranks"), "{rest}{stderr}");
    let after = cluster.sent_per_rail(0);
    assert!(after[0] - during[0] > 100 * MIB, "rail0 did not carry the rest of the stream: {during:?} -> {after:?}");
}

#[test]
fn a_rail_that_crawls_after_its_profile_does_not_hold_large_messages_up() {
    let (_turn, cluster) = Cluster::for_test('g');
    // Profiled at its real rate, rail1 then drops to a two-hundredth of it (a path losing most
    // of its packets) and stays up: no failover, only the strategy keeps the 64 MiB messages
    // from waiting for the share planned for it. Without its queue horizon (everything handed
    // to the sockets at once) the job took 39 s at a hundredth, with `weighted` 83 s.
    cluster.sample();
    cluster.shape("rail1", "5mbit");
    let binary = cluster.compiled("large");
    let mut job = cluster.job(&["-n", "2", "--ppn", "1"], &binary, &[]).env("BRAID_STRATEGY", "hetero").spawn().unwrap();
    let stdout = BufReader::new(job.stdout.take().unwrap());
    let (status, stdout, stderr) = ending_within(job, stdout, CRAWL_LIMIT);
    let Some(status) = status else {
        panic!("the large messages were held by the crawling rail (killed after {CRAWL_LIMIT:?}):\n{stdout}{stderr}");
    };
    assert!(status.success() && stdout.contains("large: ok on 2 ranks"), "{stdout}{stderr}");
}

/// The end of a running job whose first stdout line was read: its status, or None if it was
/// still running at `limit` (then it is killed), and the rest of its stdout and its stderr. The
/// pipes are read in threads, so that a job that hangs is killed at the limit, not waited on.
fn ending_within(mut job: Child, mut stdout: BufReader<ChildStdout>, limit: Duration) -> (Option<ExitStatus>, String, String) {
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stdout.read_to_string(&mut rest);
        rest
    });
    let mut stderr_pipe = job.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut stderr = String::new();
        let _ = stderr_pipe.read_to_string(&mut stderr);
        stderr
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = job.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = job.kill();
            let _ = job.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    (status, rest.join().unwrap(), stderr.join().unwrap())
}

#[test]
fn a_receive_from_a_peer_that_every_rail_lost_while_idle_fails_instead_of_hanging() {
    let (_turn, cluster) = Cluster::for_test('f');
    let binary = cluster.compiled("silent_peer");
    // Rank 0 (node 0) pauses for a minute; rank 1 (node 1) waits for it in MPI_Recv, nothing
    // in flight. With both of node 0's rails down, only the keepalive probes notice.
    let mut job = cluster.job(&["-n", "2", "--ppn", "1"], &binary, &["60"]).spawn().unwrap();
    let mut stdout = BufReader::new(job.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first.trim_end(), "waiting", "rank 1 did not get to its receive");
    std::thread::sleep(Duration::from_millis(300));
    for rail in RAIL_NAMES {
        let down = Command::new("ip").args(["netns", "exec", &cluster.node(0), "ip", "link", "set", rail, "down"]).output().unwrap();
        assert!(down.status.success(), "taking {rail} down: {}", text(&down.stderr));
    }
    // The default keepalive (1 s) and rail timeout (2 s) notice it in about 3 s.
    let (status, rest, stderr) = ending_within(job, stdout, LOST_PEER_LIMIT);
    let Some(status) = status else {
        panic!("rank 1 still waited {LOST_PEER_LIMIT:?} after every rail to rank 0 went down:\n{rest}{stderr}");
    };
    assert!(!status.success(), "the job succeeded without its rails:\n{rest}{stderr}");
    assert!(stderr.contains("rank 1") && stderr.contains("every network rail to it has failed"), "the job did not say that rank 1 lost every rail to rank 0:\n{rest}{stderr}");
}

#[test]
fn shared_memory_and_tcp_mix_in_one_job() {
    let (_turn, cluster) = Cluster::for_test('d');
    let before = cluster.sent_per_rail(0);
    for (program, says) in [("collectives", "collectives: ok on 4 ranks"), ("p2p_matching", "p2p_matching: ok on 4 ranks"), ("ring", "ring: 4 ranks")] {
        let output = cluster.run_job(&["-n", "4", "--ppn", "2"], program, &[]);
        assert!(text(&output.stdout).contains(says), "{program}: {}", text(&output.stdout));
    }
    let sent = difference(&cluster.sent_per_rail(0), &before);
    assert!(sent.iter().sum::<u64>() > MIB, "ranks on two nodes, yet the rails carried only {sent:?} bytes");
}

#[test]
fn offloaded_chunks_arrive_intact_and_in_place() {
    let (_turn, cluster) = Cluster::for_test('e');
    let binary = cluster.compiled("multirail_stream");
    // A zero offload cost makes equation 1 pay for every split that puts chunks on both rails;
    // without a queue horizon hetero hands whole chunks over, which is what workers take.
    let output = finish(
        cluster.job(&["-n", "2", "--ppn", "1"], &binary, &["40", "4194304"]).env("BRAID_RAIL_QUEUE_US", "0").env("BRAID_OFFLOAD_COST_US", "0").env("BRAID_DEBUG", "1").spawn().unwrap(),
        "offloaded stream",
    );
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success() && stdout.contains("multirail_stream: ok on 2 ranks"), "{stdout}{stderr}");
    assert!(stderr.contains("offload cost 0.0 us"), "no offload workers started:\n{stderr}");
    assert!(stderr.contains("offloaded"), "no split was offloaded:\n{stderr}");
}

#[test]
fn waiting_threads_sleep_on_the_rails_and_wake_when_answered() {
    let (_turn, cluster) = Cluster::for_test('h');
    // MPI_THREAD_MULTIPLE: threads that wait on a peer across the rails, or on a thread of their
    // own process, sleep (on the rails alone, then with shared-memory peers too) and come back
    // when answered; a missed wake-up would cost the 5 s sleep limit.
    for placement in [["-n", "2", "--ppn", "1"], ["-n", "4", "--ppn", "2"]] {
        let binary = cluster.compiled("thread_wait");
        let output = finish(cluster.job(&placement, &binary, &[]).env("BRAID_BLOCK_TIMEOUT_MS", "5000").spawn().unwrap(), "thread_wait");
        assert!(output.status.success(), "thread_wait {placement:?} failed:\n{}{}", text(&output.stdout), text(&output.stderr));
    }
}

/// The short version of `scripts/soak` (10 minutes there): 30 s of random checked traffic and
/// MPI_THREAD_MULTIPLE window locking on 2 nodes x 2 ranks while the rails flap every 5 s, the
/// third outage long enough to fail rail1 over. The script builds a cluster of its own.
#[test]
fn a_short_soak_with_flapping_rails_loses_and_corrupts_nothing() {
    require_cluster_jobs("soak");
    let _turn = take_turn();
    let mut command = Command::new(repository().join("scripts/soak"));
    command.args(["--seconds", "30", "--flap", "5", "--report", "10"]).env("BRAID", env!("CARGO_BIN_EXE_braid"));
    command.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut soak = command.spawn().unwrap();
    let stdout = BufReader::new(soak.stdout.take().unwrap());
    let (status, stdout, stderr) = ending_within(soak, stdout, SOAK_LIMIT);
    let Some(status) = status else {
        panic!("the soak hung (killed after {SOAK_LIMIT:?}):\n{stdout}{stderr}");
    };
    assert!(status.success() && stdout.contains("soak: ok:") && stdout.contains(" 0 errors"), "the soak failed:\n{stdout}{stderr}");
    assert!(stdout.contains("rail1 down for 4000 ms") && stdout.contains("rail0 down for 300 ms"), "the rails did not flap:\n{stdout}");
}
