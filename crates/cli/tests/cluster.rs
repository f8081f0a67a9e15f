//! `braid cluster` and `braid run --cluster` end to end. Building clusters needs root and iproute2:
//! without them the tests fail and say what is missing. Every cluster is named `bt<pid><letter>`
//! and removed by a guard, even when a test fails; clusters left by a test process that died are
//! removed at start.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::Command;

use braid_sys::netns;

mod common;
use common::*;

/// Removes cluster `name` when dropped, whatever happened.
struct ClusterGuard {
    name: String,
}

impl ClusterGuard {
    fn new(letter: char) -> ClusterGuard {
        ClusterGuard { name: format!("bt{}{letter}", std::process::id()) }
    }

    fn namespaces(&self) -> Vec<String> {
        let prefix = format!("braid-{}-", self.name);
        netns::list().unwrap().into_iter().filter(|namespace| namespace.starts_with(&prefix)).collect()
    }

    fn node(&self, index: usize) -> String {
        format!("braid-{}-n{index}", self.name)
    }
}

impl Drop for ClusterGuard {
    fn drop(&mut self) {
        // No panicking here: this may run while a failed test unwinds.
        let _ = braid().args(["cluster", "down", &self.name]).output();
        for namespace in netns::list().unwrap_or_default().into_iter().filter(|namespace| namespace.starts_with(&format!("braid-{}-", self.name))) {
            let _ = Command::new("ip").args(["netns", "delete", &namespace]).output();
        }
    }
}

/// Sends for `seconds` from node 0 to node 1's `address`; returns (bytes sent, bytes received, Mbit/s).
fn transfer(guard: &ClusterGuard, address: &str, seconds: f64) -> (u64, u64, f64) {
    let target = format!("{address}:5201");
    let mut listener = braid().args(["net-probe", "listen", "--netns", &guard.node(1), &target]).spawn().unwrap();
    let mut lines = BufReader::new(listener.stdout.take().unwrap()).lines();
    let first = lines.next().map(Result::unwrap).unwrap_or_default();
    assert!(first.starts_with("listening on"), "listener said {first:?}");
    let sender = run(&["net-probe", "send", "--netns", &guard.node(0), &target, "--seconds", &seconds.to_string()]);
    assert!(sender.status.success(), "sending to {target} failed: {}", text(&sender.stderr));
    let received = lines.next().map(Result::unwrap).unwrap_or_default();
    let mut stderr = String::new();
    listener.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(finish(listener, "net-probe listen").status.success(), "listener failed: {stderr}");
    let sent: u64 = text(&sender.stdout).split_whitespace().nth(1).unwrap().parse().unwrap();
    // "received BYTES bytes in SECONDS s: RATE Mbit/s"
    let words: Vec<&str> = received.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"received"), "listener said {received:?}");
    (sent, words[1].parse().unwrap(), words[6].parse().unwrap())
}

#[test]
fn a_two_node_cluster_carries_every_network_and_runs_jobs_across_its_nodes() {
    require_clusters("bt");
    let guard = ClusterGuard::new('a');
    let name = guard.name.as_str();
    let up = run(&["cluster", "up", name, "--nodes", "2", "--rails", "100mbit,300mbit"]);
    assert!(up.status.success(), "up failed: {}", text(&up.stderr));
    assert_eq!(guard.namespaces().len(), 3, "{:?}", guard.namespaces());

    let again = run(&["cluster", "up", name, "--nodes", "2", "--rails", "1gbit"]);
    assert!(!again.status.success());
    assert!(text(&again.stderr).contains("already exists"), "{}", text(&again.stderr));

    let status = run(&["cluster", "status", name]);
    assert!(status.status.success(), "status: {}{}", text(&status.stdout), text(&status.stderr));
    let description = text(&status.stdout);
    for expected in ["100mbit", "300mbit", "10.213.2.2", &guard.node(1), "state: intact"] {
        assert!(description.contains(expected), "status lacks {expected:?}:\n{description}");
    }
    assert!(text(&run(&["cluster", "list"]).stdout).contains(&format!("{name}: 2 node(s), rails 100mbit,300mbit")));

    for address in ["10.213.0.2", "10.213.1.2", "10.213.2.2"] {
        let (sent, received, _) = transfer(&guard, address, 0.05);
        assert!(sent > 0 && sent == received, "over {address}: sent {sent}, received {received}");
    }
    let (_, _, slow) = transfer(&guard, "10.213.1.2", 1.5);
    assert!((60.0..=110.0).contains(&slow), "rail0 is shaped to 100 Mbit/s but carried {slow} Mbit/s");
    let (_, _, fast) = transfer(&guard, "10.213.2.2", 1.0);
    assert!((180.0..=330.0).contains(&fast), "rail1 is shaped to 300 Mbit/s but carried {fast} Mbit/s");

    let reshaped = run(&["cluster", "shape", name, "--rail", "rail1", "--rate", "50mbit"]);
    assert!(reshaped.status.success(), "shape failed: {}", text(&reshaped.stderr));
    let (_, _, slowed) = transfer(&guard, "10.213.2.2", 1.5);
    assert!((30.0..=55.0).contains(&slowed), "rail1 is reshaped to 50 Mbit/s but carried {slowed} Mbit/s");
    let status = run(&["cluster", "status", name]);
    assert!(status.status.success() && text(&status.stdout).contains("50mbit"), "status after shape: {}", text(&status.stdout));
    assert!(text(&run(&["cluster", "list"]).stdout).contains(&format!("{name}: 2 node(s), rails 100mbit,50mbit")));
    for (rail, rate, expected) in [("mgmt", "1gbit", "has no rail mgmt (its rails: rail0, rail1)"), ("rail7", "1gbit", "no rail rail7"), ("rail0", "fast", "fast")] {
        let refused = run(&["cluster", "shape", name, "--rail", rail, "--rate", rate]);
        assert!(!refused.status.success() && text(&refused.stderr).contains(expected), "shape {rail} {rate}: {}", text(&refused.stderr));
    }

    let script = r#"echo "$PMI_RANK $(stat -L -c %i /proc/self/ns/net) $BRAID_RAILS $BRAID_LOCAL_RANK/$BRAID_LOCAL_SIZE $(cat /sys/class/net/rail1/mtu)""#;
    let job = run(&["run", "--cluster", name, "-n", "4", "--ppn", "2", "sh", "-c", script]);
    assert!(job.status.success(), "job failed: {}", text(&job.stderr));
    let mut ranks: Vec<Vec<String>> = text(&job.stdout).lines().map(|line| line.split_whitespace().map(str::to_string).collect()).collect();
    ranks.sort();
    assert_eq!(ranks.len(), 4, "{ranks:?}");
    let inode = |rank: usize| ranks[rank][1].clone();
    assert_eq!(inode(0), inode(1), "ranks 0 and 1 share node 0: {ranks:?}");
    assert_eq!(inode(2), inode(3), "ranks 2 and 3 share node 1: {ranks:?}");
    assert_ne!(inode(0), inode(2), "nodes 0 and 1 are different namespaces: {ranks:?}");
    assert_ne!(inode(0), netns::current_inode().unwrap().to_string(), "ranks run inside the cluster");
    for (rank, fields) in ranks.iter().enumerate() {
        assert_eq!(fields[2], "rail0,rail1");
        assert_eq!(fields[3], format!("{}/2", rank % 2));
        assert_eq!(fields[4], "1500", "/sys shows the node's own interfaces");
    }

    let cyclic = run(&["run", "--cluster", name, "-n", "3", "--map-by", "node", "sh", "-c", "echo $PMI_RANK $(stat -L -c %i /proc/self/ns/net)"]);
    assert!(cyclic.status.success(), "cyclic job failed: {}", text(&cyclic.stderr));
    let mut lines: Vec<String> = text(&cyclic.stdout).lines().map(str::to_string).collect();
    lines.sort();
    let nodes: Vec<&str> = lines.iter().map(|line| line.split_whitespace().nth(1).unwrap()).collect();
    assert_eq!(nodes.len(), 3, "{lines:?}");
    assert!(nodes[0] == nodes[2] && nodes[0] != nodes[1], "round-robin over nodes: {lines:?}");

    let down = run(&["cluster", "down", name]);
    assert!(down.status.success(), "down failed: {}", text(&down.stderr));
    assert!(guard.namespaces().is_empty(), "left behind: {:?}", guard.namespaces());
    assert!(!run(&["cluster", "status", name]).status.success());
    assert!(!run(&["run", "--cluster", name, "-n", "2", "true"]).status.success());
}

#[test]
fn a_failed_up_removes_everything_it_made() {
    require_clusters("bt");
    let guard = ClusterGuard::new('b');
    // A PATH with ip and ethtool but no tc: building fails when the first rail is shaped.
    let tools = std::env::temp_dir().join(format!("braid-cluster-tools-{}", std::process::id()));
    std::fs::create_dir_all(&tools).unwrap();
    for tool in ["ip", "ethtool"] {
        let _ = std::fs::remove_file(tools.join(tool));
        std::os::unix::fs::symlink(find_in_path(tool).unwrap(), tools.join(tool)).unwrap();
    }
    let failed = finish(braid().args(["cluster", "up", &guard.name, "--nodes", "2", "--rails", "1gbit"]).env("PATH", &tools).spawn().unwrap(), "cluster up");
    std::fs::remove_dir_all(&tools).unwrap();
    assert!(!failed.status.success());
    assert!(text(&failed.stderr).contains("`tc` is not installed"), "{}", text(&failed.stderr));
    assert!(guard.namespaces().is_empty(), "left behind: {:?}", guard.namespaces());
    assert!(!Path::new(&format!("/run/braid/clusters/{}.json", guard.name)).exists());

    // A half-removed cluster (a node namespace gone) is still taken down completely.
    let up = run(&["cluster", "up", &guard.name, "--nodes", "2", "--rails", "1gbit"]);
    assert!(up.status.success(), "up failed: {}", text(&up.stderr));
    assert!(Command::new("ip").args(["netns", "delete", &guard.node(0)]).status().unwrap().success());
    let status = run(&["cluster", "status", &guard.name]);
    assert!(!status.status.success());
    assert!(text(&status.stdout).contains(&format!("node namespace {} is missing", guard.node(0))), "{}", text(&status.stdout));
    assert!(run(&["cluster", "down", &guard.name]).status.success());
    assert!(guard.namespaces().is_empty(), "left behind: {:?}", guard.namespaces());
}

#[test]
fn unsupported_or_impossible_requests_fail_clearly() {
    let cases: [(&[&str], &str); 6] = [
        (&["cluster", "up", "x", "--nodes", "2", "--rails", "2g"], "invalid rate"),
        (&["cluster", "up", "bad/name", "--nodes", "2", "--rails", "1gbit"], "invalid cluster name"),
        (&["run", "--hosts", "a,b", "--cluster", "b", "-n", "2", "true"], "--cluster and --hosts cannot be used together"),
        (&["run", "--ppn", "2", "-n", "2", "true"], "--ppn needs --cluster"),
        (&["run", "--map-by", "node", "-n", "2", "true"], "--map-by node needs --cluster"),
        (&["run", "--cluster", "bt-no-such-cluster", "-n", "2", "true"], "no cluster named bt-no-such-cluster"),
    ];
    for (args, message) in cases {
        let outcome = run(args);
        assert!(!outcome.status.success(), "braid {args:?} succeeded");
        assert!(text(&outcome.stderr).contains(message), "braid {args:?}: {}", text(&outcome.stderr));
    }
}

/// A job spread over two nodes spawns children on its root's node: the parent on the other node
/// reaches them over the network, those on the root's node over shared memory (spawn.c checks
/// the intercommunicator, a task pool, MPI_Comm_spawn_multiple and disconnection).
#[test]
fn a_job_across_nodes_spawns_and_reaches_its_children_from_every_node() {
    require_clusters("bt");
    let guard = ClusterGuard::new('s');
    let up = run(&["cluster", "up", &guard.name, "--nodes", "2", "--rails", "1gbit"]);
    assert!(up.status.success(), "cluster up: {}", text(&up.stderr));
    let scratch = Scratch::new("spawn-across-nodes");
    let program = compile_c(&repository().join("tests/c/spawn.c"), &scratch.0);
    let job = run(&["run", "--cluster", &guard.name, "-n", "2", "--map-by", "node", program.to_str().unwrap()]);
    assert!(job.status.success(), "spawning across nodes failed: {}{}", text(&job.stdout), text(&job.stderr));
}

/// Two jobs connect through a port across nodes: the server's job has a rank on each node, the
/// client's one rank on the first node, which meets the server's second rank over the network.
#[test]
fn jobs_on_different_nodes_connect_through_a_port() {
    require_clusters("bt");
    let guard = ClusterGuard::new('p');
    let up = run(&["cluster", "up", &guard.name, "--nodes", "2", "--rails", "1gbit"]);
    assert!(up.status.success(), "cluster up: {}", text(&up.stderr));
    let scratch = Scratch::new("connect-across-nodes");
    let program = compile_c(&repository().join("tests/c/connect.c"), &scratch.0);
    let port_file = scratch.0.join("port");
    let server_args: Vec<String> = ["run", "--cluster", &guard.name, "-n", "2", "--map-by", "node", program.to_str().unwrap(), "server", port_file.to_str().unwrap()].map(String::from).to_vec();
    let server = std::thread::spawn(move || braid().args(server_args).output().unwrap());
    let client = run(&["run", "--cluster", &guard.name, "-n", "1", program.to_str().unwrap(), "client", port_file.to_str().unwrap()]);
    let server = server.join().unwrap();
    assert!(client.status.success(), "client: {}{}", text(&client.stdout), text(&client.stderr));
    assert!(server.status.success(), "server: {}{}", text(&server.stdout), text(&server.stderr));
}

/// MPI-IO across the nodes of the virtual cluster, which share the file system as a cluster's
/// parallel file system is shared: views and collective buffering (one aggregator per node),
/// the shared file pointer (a hidden file both nodes lock) and atomic mode.
#[test]
fn file_io_works_across_nodes() {
    require_clusters("bt");
    let guard = ClusterGuard::new('f');
    let up = run(&["cluster", "up", &guard.name, "--nodes", "2", "--rails", "1gbit"]);
    assert!(up.status.success(), "cluster up: {}", text(&up.stderr));
    let scratch = Scratch::new("io-across-nodes");
    for program in ["io_views", "io_shared", "io_atomic", "io_access"] {
        let binary = compile_c(&repository().join(format!("tests/c/{program}.c")), &scratch.0);
        for ranks in ["2", "4"] {
            let job = run(&["run", "--cluster", &guard.name, "-n", ranks, "--map-by", "node", binary.to_str().unwrap()]);
            assert!(job.status.success(), "{program} on {ranks} ranks across nodes: {}{}", text(&job.stdout), text(&job.stderr));
        }
    }
}
