//! Placement by the measured pattern: a job whose heavy pairs both blocked and round-robin
//! placement split (tests/c/heavy_pairs.c, 8 ranks on 4 virtual nodes of 2) is profiled,
//! `braid place` computes the pattern placement, and the job run with it (`--placement FILE`,
//! and `--map-by pattern:DIR` in one step) must keep under 5% of its bytes across nodes in its
//! own profile. Bad placements and profiles are refused before any rank starts. The cluster
//! tests need root (they fail and say so otherwise).

use std::path::Path;

mod common;
use common::*;

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The share of a profiled job's bytes that went between ranks on different nodes.
fn crossing_share(dir: &Path) -> f64 {
    let profile = read_json(&dir.join("profile.json"));
    let nodes: Vec<String> = profile["ranks"].as_array().unwrap().iter().map(|rank| rank["node"].as_str().unwrap().to_string()).collect();
    let (mut across, mut total) = (0u64, 0u64);
    for (i, row) in profile["bytes"].as_array().unwrap().iter().enumerate() {
        for (j, cell) in row.as_array().unwrap().iter().enumerate() {
            let bytes = cell.as_u64().unwrap();
            if i != j {
                total += bytes;
                if nodes[i] != nodes[j] {
                    across += bytes;
                }
            }
        }
    }
    across as f64 / total as f64
}

struct Down(String);
impl Drop for Down {
    fn drop(&mut self) {
        remove_cluster(&self.0);
    }
}

/// A virtual cluster of this test's own (`braid cluster up PREFIX<pid> ARGS...`), taken down when
/// the guard is dropped; with what `cluster up` printed.
fn test_cluster(prefix: &str, args: &[&str]) -> (Down, String) {
    require_cluster_jobs(prefix);
    let name = format!("{prefix}{}", std::process::id());
    let mut command = vec!["cluster", "up", &name];
    command.extend_from_slice(args);
    let up = run(&command);
    assert!(up.status.success(), "cluster up: {}", text(&up.stderr));
    (Down(name), text(&up.stdout))
}

#[test]
fn the_pattern_placement_keeps_heavy_pairs_on_their_nodes() {
    let (cluster, _) = test_cluster("bpl", &["--nodes", "4", "--rails", "1gbit"]);
    let name = cluster.0.clone();
    let scratch = Scratch::new("placement-cluster");
    let program = compile_test_program("heavy_pairs", &scratch.0);
    let profiled_run = |dir: &Path, placement: &[&str]| {
        let mut command = braid();
        command.env("BRAID_PROFILE_DIR", scratch.0.join("rail-profiles"));
        command.arg("run").arg("--profile").arg(dir).args(["--cluster", &name, "-n", "8", "--ppn", "2"]).args(placement).arg(&program).args(["262144", "4"]);
        let output = finish(command.spawn().unwrap(), "profiled run");
        assert!(output.status.success(), "run {placement:?}: {}", text(&output.stderr));
        assert!(text(&output.stdout).contains("heavy_pairs: 8 ranks"), "{}", text(&output.stdout));
    };

    let blocked = scratch.0.join("blocked");
    profiled_run(&blocked, &[]);
    assert!(crossing_share(&blocked) > 0.9, "blocked placement splits every pair: {}", crossing_share(&blocked));

    let file = scratch.0.join("pattern.placement");
    let place = run(&["place", blocked.to_str().unwrap(), "--cluster", &name, "--ppn", "2", "-o", file.to_str().unwrap()]);
    assert!(place.status.success(), "braid place: {}", text(&place.stderr));
    let table = text(&place.stdout);
    let share_of = |policy: &str| -> f64 {
        let line = table.lines().find(|line| line.starts_with(policy)).unwrap_or_else(|| panic!("no {policy} line in {table}"));
        line.split_whitespace().find(|field| field.ends_with('%')).unwrap().trim_end_matches('%').parse().unwrap()
    };
    assert!(share_of("blocked") > 90.0 && share_of("cyclic") > 90.0, "{table}");
    assert!(share_of("pattern") < 5.0, "{table}");
    let placement = std::fs::read_to_string(&file).unwrap();
    let node_of = |rank: usize| placement.lines().find(|line| line.starts_with(&format!("{rank} "))).unwrap().split_whitespace().nth(1).unwrap().to_string();
    for (a, b) in [(0, 3), (1, 6), (2, 5), (4, 7)] {
        assert_eq!(node_of(a), node_of(b), "pair {a}-{b} in {placement}");
    }

    let placed = scratch.0.join("placed");
    profiled_run(&placed, &["--placement", file.to_str().unwrap()]);
    assert!(crossing_share(&placed) < 0.05, "with the placement file: {}", crossing_share(&placed));
    let one_step = scratch.0.join("one-step");
    profiled_run(&one_step, &["--map-by", &format!("pattern:{}", blocked.display())]);
    assert!(crossing_share(&one_step) < 0.05, "with --map-by pattern: {}", crossing_share(&one_step));

    // The other launchers' forms of the same placement.
    let hydra = run(&["place", blocked.to_str().unwrap(), "--cluster", &name, "--ppn", "2", "--format", "hydra"]);
    assert!(hydra.status.success(), "{}", text(&hydra.stderr));
    let lines: Vec<String> = text(&hydra.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 8);
    assert_eq!(lines[0], format!("{}:1", node_of(0)));

    // Refused before any rank starts: a placement for another rank count, more ranks on a node
    // than --ppn, a profile of another job size.
    let refused = |args: &[&str], expected: &str| {
        let mut all = vec!["run", "--cluster", &name];
        all.extend_from_slice(args);
        all.push("/bin/false");
        let output = run(&all);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output.stderr));
        assert!(text(&output.stderr).contains(expected), "{args:?}: {}", text(&output.stderr));
    };
    refused(&["-n", "6", "--placement", file.to_str().unwrap()], "places 8 ranks, but -n asks for 6");
    refused(&["-n", "8", "--ppn", "1", "--placement", file.to_str().unwrap()], "more than --ppn 1 allows");
    refused(&["-n", "4", "--ppn", "2", "--map-by", &format!("pattern:{}", blocked.display())], "profiles a job of 8 ranks, not 4");
    // On one node too (where the pattern orders the ranks over the cores).
    let alone = run(&["run", "-n", "2", "--map-by", &format!("pattern:{}", blocked.display()), "/bin/false"]);
    assert_eq!(alone.status.code(), Some(2), "{}", text(&alone.stderr));
    assert!(text(&alone.stderr).contains("profiles a job of 8 ranks, not 2"), "{}", text(&alone.stderr));
    let on_one_node = braid().args(["run", "-n", "8", "--map-by", &format!("pattern:{}", blocked.display())]).arg(&program).args(["4096", "1"]).output().unwrap();
    assert!(on_one_node.status.success(), "{}", text(&on_one_node.stderr));
}

#[test]
fn bad_placement_files_and_profiles_are_named() {
    let scratch = Scratch::new("placement-input");
    let mat = scratch.0.join("ring.mat");
    // A ring of 4: 0-1 and 2-3 heavy.
    std::fs::write(&mat, "0 9 0 1\n9 0 1 0\n0 1 0 9\n1 0 9 0\n").unwrap();
    let place = run(&["place", mat.to_str().unwrap(), "--hosts", "a,b", "--ppn", "2", "--policy", "cyclic"]);
    assert!(place.status.success(), "{}", text(&place.stderr));
    // The comparison goes to standard error when the placement goes to standard output.
    assert!(text(&place.stderr).contains("pattern"), "{}", text(&place.stderr));
    assert_eq!(text(&place.stdout).lines().filter(|line| !line.starts_with('#')).collect::<Vec<_>>(), ["0 a 0", "1 b 0", "2 a 1", "3 b 1"]);
    let pattern = run(&["place", mat.to_str().unwrap(), "--hosts", "a,b", "--ppn", "2", "--format", "openmpi-rankfile"]);
    let lines: Vec<String> = text(&pattern.stdout).lines().filter(|line| !line.starts_with('#')).map(str::to_string).collect();
    assert_eq!(lines, ["rank 0=a slot=0", "rank 1=a slot=1", "rank 2=b slot=0", "rank 3=b slot=1"]);

    let bad_mat = scratch.0.join("bad.mat");
    std::fs::write(&bad_mat, "0 1\n1\n").unwrap();
    let output = run(&["place", bad_mat.to_str().unwrap(), "--hosts", "a,b", "--ppn", "2"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("row 2 has 1 entries"), "{}", text(&output.stderr));
    let too_small = run(&["place", mat.to_str().unwrap(), "--hosts", "a,b", "--ppn", "1"]);
    assert!(text(&too_small.stderr).contains("4 ranks do not fit on 2 node(s)"), "{}", text(&too_small.stderr));
    let missing = run(&["place", scratch.0.join("nowhere").to_str().unwrap(), "--hosts", "a", "--ppn", "1"]);
    assert!(text(&missing.stderr).contains("cannot read"), "{}", text(&missing.stderr));

    let file = scratch.0.join("hosts.placement");
    std::fs::write(&file, "# braid placement/1: rank node slot\n0 a 0\n1 c 0\n").unwrap();
    let output = run(&["run", "--hosts", "a,b", "-n", "2", "--launch-agent", "/bin/false", "--placement", file.to_str().unwrap(), "/bin/true"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("unknown node \"c\" (the job's nodes: a, b)"), "{}", text(&output.stderr));
    let alone = run(&["run", "-n", "2", "--placement", file.to_str().unwrap(), "/bin/true"]);
    assert!(text(&alone.stderr).contains("needs --cluster or --hosts"), "{}", text(&alone.stderr));
}

#[test]
fn topology_constructors_with_reorder_keep_the_declared_heavy_edges_inside_nodes() {
    let (cluster, _) = test_cluster("bro", &["--nodes", "4", "--rails", "1gbit"]);
    let name = cluster.0.clone();
    let scratch = Scratch::new("reorder-cluster");
    let program = compile_test_program("graph_reorder", &scratch.0);
    // MPI_Graph_create has no weights: its pairs and ring edges count alike, so its reorder has
    // nothing to gain on this graph; the distributed graphs carry the weights.
    for kind in ["adjacent", "general"] {
        let mut shares = Vec::new();
        for reorder in ["0", "1"] {
            let dir = scratch.0.join(format!("{kind}-{reorder}"));
            let mut command = braid();
            command.env("BRAID_PROFILE_DIR", scratch.0.join("rail-profiles"));
            command.arg("run").arg("--profile").arg(&dir).args(["--cluster", &name, "-n", "8", "--ppn", "2"]).arg(&program).args([kind, reorder, "1048576", "2"]);
            let output = finish(command.spawn().unwrap(), "graph_reorder");
            assert!(output.status.success(), "{kind} reorder {reorder}: {}", text(&output.stderr));
            let line = text(&output.stdout);
            let moved: usize = line.split(": ").nth(2).and_then(|rest| rest.split_whitespace().next()).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(moved > 0, reorder == "1", "{line}");
            shares.push(crossing_share(&dir));
        }
        assert!(shares[0] > 0.8 && shares[1] < 0.1, "{kind}: share of bytes across nodes without and with reorder: {shares:?}");
    }
}

#[test]
fn ranks_keep_off_the_cores_that_do_the_rails_receive_processing() {
    let (cluster, described) = test_cluster("bnc", &["--nodes", "2", "--rails", "1gbit", "--rx-cpus", "0"]);
    let name = cluster.0.clone();
    let scratch = Scratch::new("network-cores");
    let program = compile_c(&repository().join("bench/compute_exchange.c"), &scratch.0);
    assert!(described.contains("receive processing runs on CPU(s) 0"), "{described}");
    let steered = std::process::Command::new("ip").args(["netns", "exec", &format!("braid-{name}-n1"), "cat", "/sys/class/net/rail0/queues/rx-0/rps_cpus"]).output().unwrap();
    assert_eq!(text(&steered.stdout).trim().trim_start_matches('0'), "1", "rail0's RPS mask");
    let cpu_of_rank_0 = |options: &[&str]| -> String {
        let mut command = braid();
        command.env("BRAID_PROFILE_DIR", scratch.0.join("rail-profiles"));
        command.args(["run", "--cluster", &name, "-n", "2", "--ppn", "1"]).args(options).arg(&program).args(["2", "4096", "0", "100000"]);
        let output = finish(command.spawn().unwrap(), "compute_exchange");
        assert!(output.status.success(), "{options:?}: {}", text(&output.stderr));
        let line = text(&output.stdout);
        line.split(" on CPU ").nth(1).and_then(|rest| rest.split(':').next()).unwrap_or_else(|| panic!("{line}")).to_string()
    };
    let topology = std::process::Command::new("nproc").output().unwrap();
    assert!(text(&topology.stdout).trim().parse::<usize>().unwrap() >= 2, "needs 2 CPUs or more");
    assert_eq!(cpu_of_rank_0(&["--network-cores", "ignore"]), "0");
    assert_ne!(cpu_of_rank_0(&[]), "0", "avoided by default");
    let bad = run(&["cluster", "up", &format!("{name}x"), "--nodes", "1", "--rails", "1gbit", "--rx-cpus", "4096"]);
    assert!(text(&bad.stderr).contains("--rx-cpus names CPU 4096"), "{}", text(&bad.stderr));
}
