//! Job profiles: `braid run --profile DIR` on a program whose traffic is known
//! (tests/c/profile_pattern.c), on one node and across a 2-node virtual cluster; every cell of
//! the bytes matrix must be what the program sent, with the right node names and transports; and
//! `braid report` on missing, partial and corrupt profile directories. The cluster test needs
//! root (it fails and says so otherwise).

use std::path::{Path, PathBuf};

mod common;
use common::*;

const PATTERN_RANKS: usize = 4;

fn pattern_bytes(i: usize, j: usize) -> u64 {
    (1000 * (i + 1) + 10 * j) as u64
}

fn pattern_messages(i: usize, j: usize) -> u64 {
    (1 + (i + 2 * j) % 3) as u64
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn matrix(value: &serde_json::Value) -> Vec<Vec<u64>> {
    value.as_array().unwrap().iter().map(|row| row.as_array().unwrap().iter().map(|cell| cell.as_u64().unwrap()).collect()).collect()
}

/// Checks what every profiled run of the pattern must show, whatever the placement.
fn check_pattern(dir: &Path, node_of_rank: &[&str]) -> serde_json::Value {
    let profile = read_json(&dir.join("profile.json"));
    assert_eq!(profile["schema"], "braid-profile/1");
    assert_eq!(profile["size"], PATTERN_RANKS as u64);
    assert_eq!(profile["missing_ranks"].as_array().unwrap().len(), 0, "{}", profile["missing_ranks"]);
    assert_eq!(profile["matrix_source"], "engine");
    let bytes = matrix(&profile["bytes"]);
    let messages = matrix(&profile["messages"]);
    // Besides the pattern, the first collective on the node sets up its shared flag segment
    // once: the maker sends the segment's name (16 bytes) and the ranks agree that each mapped
    // it (one byte per message), in a few messages.
    const SETUP_BYTES: u64 = 16 + 4;
    const SETUP_MESSAGES: u64 = 4;
    for i in 0..PATTERN_RANKS {
        for j in 0..PATTERN_RANKS {
            let expected = if i == j { 0 } else { pattern_bytes(i, j) };
            assert!(bytes[i][j] >= expected && bytes[i][j] <= expected + SETUP_BYTES, "bytes from rank {i} to rank {j}: {} for {expected}", bytes[i][j]);
            if i != j {
                assert!(messages[i][j] >= pattern_messages(i, j) && messages[i][j] <= pattern_messages(i, j) + SETUP_MESSAGES, "messages from {i} to {j}: {}", messages[i][j]);
            }
        }
    }
    let ranks = profile["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), PATTERN_RANKS);
    for rank in ranks {
        let index = rank["rank"].as_u64().unwrap() as usize;
        assert_eq!(rank["node"], node_of_rank[index], "rank {index}'s node");
        let (wall, mpi) = (rank["wall_time"].as_f64().unwrap(), rank["mpi_time"].as_f64().unwrap());
        assert!(wall > 0.0 && mpi > 0.0 && mpi <= wall, "rank {index}: wall {wall}, inside MPI {mpi}");
        assert!(!rank["cpus_seen"].as_array().unwrap().is_empty());
    }
    // The phase marked with MPI_Pcontrol holds the exchange, and only it.
    let phases = profile["phases"].as_array().unwrap();
    let exchange = phases.iter().find(|phase| phase["name"] == "exchange").expect("an \"exchange\" phase");
    let exchanged = matrix(&exchange["bytes"]);
    for (i, row) in exchanged.iter().enumerate() {
        for (j, &cell) in row.iter().enumerate() {
            // Exact: the barriers around the phase carry no bytes.
            assert_eq!(cell, if i == j { 0 } else { pattern_bytes(i, j) }, "bytes from rank {i} to rank {j} inside the phase");
        }
    }
    let names: Vec<&str> = exchange["functions"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"MPI_Sendrecv") && !names.contains(&"MPI_Barrier"), "{names:?}");
    let main = phases.iter().find(|phase| phase["name"] == "main").expect("a \"main\" phase");
    assert!(main["functions"].as_array().unwrap().iter().any(|f| f["name"] == "MPI_Barrier"));
    // The same matrix as Open MPI's monitoring tools write it, made symmetric.
    let mat = std::fs::read_to_string(dir.join("bytes.mat")).unwrap();
    let rows: Vec<Vec<u64>> = mat.lines().map(|line| line.split(' ').map(|cell| cell.parse().unwrap()).collect()).collect();
    for i in 0..PATTERN_RANKS {
        for j in 0..PATTERN_RANKS {
            assert_eq!(rows[i][j], bytes[i][j] + bytes[j][i], "bytes.mat[{i}][{j}]");
        }
    }
    let prof = std::fs::read_to_string(dir.join("rank-1.prof")).unwrap();
    let line = prof.lines().find(|line| line.starts_with("E\t1\t2\t")).expect("an E line from 1 to 2");
    assert!(line.contains(&format!("\t{} bytes\t{} msgs sent\t", pattern_bytes(1, 2), pattern_messages(1, 2))), "{line}");
    assert_eq!(line.rsplit('\t').next().unwrap().split(',').count(), 66, "{line}");
    profile
}

fn profiled_run(dir: &Path, placement: &[&str], program: &Path) {
    let mut command = braid();
    command.arg("run").arg("--profile").arg(dir).args(placement).arg(program);
    let output = finish(command.spawn().unwrap(), "profiled run");
    assert!(output.status.success(), "profiled run failed: {}", text(&output.stderr));
    assert!(text(&output.stderr).contains("profile of 4 rank(s)"), "{}", text(&output.stderr));
}

#[test]
fn the_profile_of_a_known_pattern_on_one_node_is_exact() {
    require_mpi_programs();
    let scratch = Scratch::new("profile-node");
    let program = compile_test_program("profile_pattern", &scratch.0);
    let dir = scratch.0.join("profile");
    profiled_run(&dir, &["-n", "4"], &program);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    let profile = check_pattern(&dir, &[host.as_str(); PATTERN_RANKS]);
    let by_transport = &profile["bytes_by_transport"];
    assert_eq!(matrix(&by_transport["shm"]), matrix(&profile["bytes"]), "on one node every byte goes through shared memory");
    assert!(by_transport.get("rails").is_none());
    let report = run(&["report", dir.to_str().unwrap()]);
    assert!(report.status.success(), "braid report: {}", text(&report.stderr));
    let summary = text(&report.stdout);
    for expected in ["Profile of 4 of 4 rank(s) on 1 node(s)", "MPI_Sendrecv", "within nodes 100.0%", "Advice:"] {
        assert!(summary.contains(expected), "the summary lacks {expected:?}:\n{summary}");
    }
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let fetched = ["src=", "href=", "url("].iter().filter(|reference| page.contains(*reference)).count();
    assert!(page.contains("id=\"heatmap\"") && fetched == 0, "the page draws no heat map or refers to other files");
    look_at_the_report(&dir.join("report.html"), &scratch.0.join("report.png"));
}

/// Opens the report in headless Chromium, as a person would, and checks the screenshot: the
/// heat map's darkest cells, the time bars and the node bars are drawn in their colours.
fn look_at_the_report(page: &Path, screenshot: &Path) {
    let browser = find_in_path("chromium").expect("chromium is not installed (scripts/setup installs it)");
    let output = std::process::Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1100,2400"])
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let log = text(&output.stderr);
    assert!(output.status.success() && screenshot.is_file(), "chromium did not take the screenshot:\n{log}");
    assert!(!log.contains("Uncaught") && !log.contains("CONSOLE"), "the page logged errors:\n{log}");
    let decoder = png::Decoder::new(std::fs::File::open(screenshot).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    let channels = frame.color_type.samples();
    let count = |rgb: [u8; 3]| pixels[..frame.buffer_size()].chunks(channels).filter(|pixel| pixel[..3] == rgb).count();
    // Colours of report/html.rs: the darkest heat-map cell, computing, inside MPI, within a node.
    for (what, rgb) in [("the heat map's darkest cell", [8, 48, 107]), ("computing time", [0x7f, 0xbf, 0x7b]), ("time inside MPI", [0xfd, 0xb8, 0x63]), ("bytes within the node", [0x4c, 0x9a, 0x2a])] {
        assert!(count(rgb) > 100, "the screenshot shows no {what} (colour {rgb:?})");
    }
}

#[test]
fn the_profile_across_two_nodes_names_them_and_splits_shared_memory_from_the_rails() {
    require_cluster_jobs("bp");
    require_mpi_programs();
    let scratch = Scratch::new("profile-cluster");
    let program = compile_test_program("profile_pattern", &scratch.0);
    let name = format!("bp{}a", std::process::id());
    struct Down(String);
    impl Drop for Down {
        fn drop(&mut self) {
            remove_cluster(&self.0);
        }
    }
    let up = run(&["cluster", "up", &name, "--nodes", "2", "--rails", "1gbit"]);
    assert!(up.status.success(), "cluster up: {}", text(&up.stderr));
    let _down = Down(name.clone());
    let dir = scratch.0.join("profile");
    let mut command = braid();
    command.env("BRAID_PROFILE_DIR", scratch.0.join("rail-profiles"));
    command.arg("run").arg("--profile").arg(&dir).args(["--cluster", &name, "-n", "4", "--ppn", "2"]).arg(&program);
    let output = finish(command.spawn().unwrap(), "profiled cluster run");
    assert!(output.status.success(), "profiled cluster run failed: {}", text(&output.stderr));
    let nodes = [format!("braid-{name}-n0"), format!("braid-{name}-n0"), format!("braid-{name}-n1"), format!("braid-{name}-n1")];
    let node_names: Vec<&str> = nodes.iter().map(String::as_str).collect();
    let profile = check_pattern(&dir, &node_names);
    let bytes = matrix(&profile["bytes"]);
    let shm = matrix(&profile["bytes_by_transport"]["shm"]);
    let rails = matrix(&profile["bytes_by_transport"]["rails"]);
    for i in 0..PATTERN_RANKS {
        for j in 0..PATTERN_RANKS {
            let same_node = i / 2 == j / 2;
            assert_eq!(shm[i][j], if same_node { bytes[i][j] } else { 0 }, "shared memory from {i} to {j}");
            assert_eq!(rails[i][j], if same_node { 0 } else { bytes[i][j] }, "rails from {i} to {j}");
        }
    }
    let node_rails = profile["rails"].as_array().unwrap();
    assert_eq!(node_rails.len(), 2, "both nodes sent on their rail");
    for node in node_rails {
        let sent: u64 = node["bytes_sent"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap()).sum();
        assert!(sent > 0, "{node}");
        assert_eq!(node["ranks_using"][0], 2, "both ranks of {} sent on the rail", node["node"]);
        let timeline: u64 = node["timeline"][0].as_array().unwrap().iter().map(|b| b.as_u64().unwrap()).sum();
        assert!(timeline > 0 && timeline <= sent, "{node}");
    }
}

#[test]
fn a_profile_directory_that_cannot_be_written_stops_the_job_before_it_starts() {
    let output = run(&["run", "--profile", "/proc/braid-cannot-be-here", "-n", "2", "true"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("/proc/braid-cannot-be-here") && stderr.contains("no rank was started"), "{stderr}");
}

fn write(path: PathBuf, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn report_says_what_is_wrong_with_a_missing_partial_or_corrupt_directory() {
    require_mpi_programs();
    let scratch = Scratch::new("profile-bad");
    let missing = run(&["report", scratch.0.join("nothing-here").to_str().unwrap()]);
    assert!(!missing.status.success() && text(&missing.stderr).contains("nothing-here"), "{}", text(&missing.stderr));
    let empty = scratch.0.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let none = run(&["report", empty.to_str().unwrap()]);
    assert!(!none.status.success() && text(&none.stderr).contains("no rank files"), "{}", text(&none.stderr));

    // A real profile of 4 ranks, then one rank's file taken away: the report names it.
    let program = compile_test_program("profile_pattern", &scratch.0);
    let dir = scratch.0.join("profile");
    profiled_run(&dir, &["-n", "4"], &program);
    std::fs::remove_file(dir.join("rank-2.json")).unwrap();
    let partial = run(&["report", dir.to_str().unwrap()]);
    assert!(partial.status.success(), "{}", text(&partial.stderr));
    assert!(text(&partial.stdout).contains("rank(s) 2 left no profile"), "{}", text(&partial.stdout));
    assert!(std::fs::read_to_string(dir.join("report.html")).unwrap().contains("Rank(s) 2 left no profile"));

    // A truncated file and one from another job are named, with what is wrong.
    let good = std::fs::read_to_string(dir.join("rank-1.json")).unwrap();
    write(dir.join("rank-3.json"), &good[..good.len() / 2]);
    let corrupt = run(&["report", dir.to_str().unwrap()]);
    let stderr = text(&corrupt.stderr);
    assert!(!corrupt.status.success() && stderr.contains("rank-3.json") && stderr.contains("rank 3"), "{stderr}");
    write(dir.join("rank-3.json"), &good.replace("\"rank\":1", "\"rank\":0"));
    let misnamed = run(&["report", dir.to_str().unwrap()]);
    assert!(!misnamed.status.success() && text(&misnamed.stderr).contains("rank-3.json says it is rank 0"), "{}", text(&misnamed.stderr));
}

#[test]
fn the_same_profiler_works_under_mpich() {
    require_mpi_programs();
    let scratch = Scratch::new("profile-mpich");
    let built = std::process::Command::new(repository().join("scripts/profiler-lib")).args(["--impl", "mpich", "--out"]).arg(&scratch.0).output().unwrap();
    assert!(built.status.success(), "scripts/profiler-lib --impl mpich: {}", text(&built.stderr));
    let library = text(&built.stdout).trim().to_string();
    let program = scratch.0.join("profile_pattern");
    let compiled = std::process::Command::new("mpicc.mpich").args(["-std=c99", "-O2", "-o"]).arg(&program).arg(repository().join("tests/c/profile_pattern.c")).output().unwrap();
    assert!(compiled.status.success(), "mpicc.mpich: {}", text(&compiled.stderr));
    // Under another launcher the profiler makes the directory itself.
    let dir = scratch.0.join("profile/under/mpich");
    let mut job = std::process::Command::new("mpiexec.mpich");
    job.args(["-n", "4"]).arg(&program).env("BRAID_PROFILE", &dir).env("LD_PRELOAD", &library);
    job.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let output = finish(job.spawn().unwrap(), "mpiexec.mpich");
    assert!(output.status.success(), "the job under MPICH failed: {}", text(&output.stderr));
    let report = run(&["report", dir.to_str().unwrap()]);
    assert!(report.status.success(), "braid report: {}", text(&report.stderr));
    assert!(text(&report.stdout).contains("MPICH"), "{}", text(&report.stdout));
    let profile = read_json(&dir.join("profile.json"));
    assert_eq!(profile["matrix_source"], "calls");
    let bytes = matrix(&profile["bytes"]);
    for (i, row) in bytes.iter().enumerate() {
        for (j, &cell) in row.iter().enumerate() {
            assert_eq!(cell, if i == j { 0 } else { pattern_bytes(i, j) }, "bytes from {i} to {j} under MPICH");
        }
    }
}
