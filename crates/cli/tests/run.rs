//! `braid run` end to end, with shell programs as ranks (bash where a rank speaks PMI by hand).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use braid_sys::topology::{parse_cpu_list, Topology};
use braid_sys::{affinity, signal};

/// Longest any job here may take before the test kills it and fails.
const JOB_LIMIT: Duration = Duration::from_secs(15);

/// Bash functions for a rank that speaks PMI-1 over `PMI_FD` by hand.
const PMI_IN_BASH: &str = r#"
pmi() { printf '%s\n' "$1" >&"$PMI_FD"; IFS= read -r REPLY_LINE <&"$PMI_FD"; }
pmi_send() { printf '%s\n' "$1" >&"$PMI_FD"; }
pmi "cmd=init pmi_version=1 pmi_subversion=1"
pmi "cmd=get_my_kvsname"; KVS=${REPLY_LINE#*kvsname=}; KVS=${KVS%% *}
"#;

struct Outcome {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

fn braid() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_braid"));
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// Waits for `child`, killing it (and failing) past [`JOB_LIMIT`].
fn finish(mut child: Child, started: Instant) -> Outcome {
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > JOB_LIMIT {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!("braid run did not finish in {JOB_LIMIT:?}; stderr:\n{}", String::from_utf8_lossy(&output.stderr));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let elapsed = started.elapsed();
    let output = child.wait_with_output().unwrap();
    Outcome { status: output.status, stdout: String::from_utf8_lossy(&output.stdout).into_owned(), stderr: String::from_utf8_lossy(&output.stderr).into_owned(), elapsed }
}

fn run(args: &[&str]) -> Outcome {
    let started = Instant::now();
    finish(braid().args(args).spawn().unwrap(), started)
}

/// `braid run -n N sh -c SCRIPT` (or bash, for scripts that speak PMI).
fn run_script(ranks: u32, shell: &str, script: &str) -> Outcome {
    run(&["run", "-n", &ranks.to_string(), shell, "-c", script])
}

/// [`run_script`] with bash and BRAID_UNFINALIZED_WAIT_S set to `wait_s`.
fn run_script_waiting(ranks: u32, wait_s: &str, script: &str) -> Outcome {
    let started = Instant::now();
    finish(braid().env("BRAID_UNFINALIZED_WAIT_S", wait_s).args(["run", "-n", &ranks.to_string(), "bash", "-c", script]).spawn().unwrap(), started)
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// Removes a job's shared-memory files if the launcher failed to, so a failing test leaves nothing.
struct ShmGuard(Vec<String>);

impl ShmGuard {
    fn leftovers(&self) -> Vec<String> {
        let entries = std::fs::read_dir("/dev/shm").unwrap();
        entries.flatten().filter_map(|entry| entry.file_name().into_string().ok()).filter(|name| self.0.iter().any(|kvs| name.starts_with(&format!("braid-{kvs}-")))).collect()
    }
}

impl Drop for ShmGuard {
    fn drop(&mut self) {
        for name in self.leftovers() {
            let _ = std::fs::remove_file(format!("/dev/shm/{name}"));
        }
    }
}

#[test]
fn every_rank_gets_its_pmi_and_local_environment() {
    let outcome = run_script(3, "sh", r#"[ -e "/proc/self/fd/$PMI_FD" ] || exit 9; echo "rank $PMI_RANK/$PMI_SIZE local $BRAID_LOCAL_RANK/$BRAID_LOCAL_SIZE""#);
    assert!(outcome.status.success(), "{}", outcome.stderr);
    assert_eq!(sorted_lines(&outcome.stdout), vec!["rank 0/3 local 0/3", "rank 1/3 local 1/3", "rank 2/3 local 2/3"]);
    assert_eq!(outcome.stderr, "");
}

#[test]
fn a_failing_rank_sets_the_exit_code_and_ends_the_others() {
    let outcome = run_script(3, "sh", r#"if [ "$PMI_RANK" = 1 ]; then exit 3; fi; exec sleep 10"#);
    assert_eq!(outcome.status.code(), Some(3), "{}", outcome.stderr);
    assert!(outcome.stderr.contains("braid run: rank 1 (pid "), "{}", outcome.stderr);
    assert!(outcome.stderr.contains(") exited with code 3"), "{}", outcome.stderr);
    assert!(outcome.elapsed < Duration::from_secs(3), "took {:?}", outcome.elapsed);
}

#[test]
fn a_rank_killed_by_a_signal_is_named_and_the_others_die_within_two_seconds() {
    let dir = std::env::temp_dir().join(format!("braid-cli-test-pids-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = format!(r#"echo $$ > {0}/$PMI_RANK; if [ "$PMI_RANK" = 2 ]; then sleep 0.2; date +%s%N > {0}/killed_at; kill -9 $$; fi; exec sleep 10"#, dir.display());
    let outcome = run_script(3, "sh", &script);
    let ended_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let killed_at: u64 = std::fs::read_to_string(dir.join("killed_at")).unwrap().trim().parse().unwrap();
    let pids: Vec<u32> = (0..3).map(|rank| std::fs::read_to_string(dir.join(rank.to_string())).unwrap().trim().parse().unwrap()).collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(outcome.status.code(), Some(128 + 9), "{}", outcome.stderr);
    let expected = format!("braid run: rank 2 (pid {}) was killed by signal 9 (SIGKILL)", pids[2]);
    assert!(outcome.stderr.contains(&expected), "{}", outcome.stderr);
    let job_end_after_kill = ended_at.saturating_sub(Duration::from_nanos(killed_at));
    assert!(job_end_after_kill < Duration::from_secs(2), "the job ended {job_end_after_kill:?} after the kill");
    for pid in &pids[..2] {
        assert!(!PathBuf::from(format!("/proc/{pid}")).exists(), "rank process {pid} survived the job");
    }
}

#[test]
fn a_rank_ignoring_sigterm_is_killed_after_the_grace_period() {
    let outcome = run_script(2, "sh", r#"trap "" TERM; if [ "$PMI_RANK" = 0 ]; then sleep 0.3; exit 4; fi; sleep 10"#);
    assert_eq!(outcome.status.code(), Some(4), "{}", outcome.stderr);
    assert!(outcome.elapsed >= Duration::from_millis(1200) && outcome.elapsed < Duration::from_millis(3500), "took {:?}", outcome.elapsed);
}

#[test]
fn an_abort_ends_the_job_with_its_code_and_message() {
    let script = format!(r#"{PMI_IN_BASH} if [ "$PMI_RANK" = 1 ]; then pmi_send "cmd=abort exitcode=5 error_msg=bad input file"; fi; sleep 10"#);
    let outcome = run_script(2, "bash", &script);
    assert_eq!(outcome.status.code(), Some(5), "{}", outcome.stderr);
    assert!(outcome.stderr.contains(") called MPI_Abort with code 5: bad input file"), "{}", outcome.stderr);
    assert!(outcome.stderr.contains("braid run: rank 1 (pid "), "{}", outcome.stderr);
    assert!(outcome.elapsed < Duration::from_secs(3), "took {:?}", outcome.elapsed);
}

/// Whether process `pid` is gone or a zombie (dead, waiting for its new parent to reap it).
fn is_dead(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return true };
    stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
}

#[test]
fn processes_the_ranks_leave_running_end_with_the_job() {
    let dir = std::env::temp_dir().join(format!("braid-cli-test-strays-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = format!(r#"{PMI_IN_BASH} sleep 30 & echo $! > {0}/$PMI_RANK; pmi "cmd=finalize"; exit 0"#, dir.display());
    let outcome = run_script(2, "bash", &script);
    let pids: Vec<u32> = (0..2).map(|rank| std::fs::read_to_string(dir.join(rank.to_string())).unwrap().trim().parse().unwrap()).collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(outcome.status.success(), "{}", outcome.stderr);
    assert!(outcome.elapsed < Duration::from_secs(5), "the job took {:?}", outcome.elapsed);
    for pid in pids {
        let dead = (0..100).any(|_| {
            is_dead(pid) || {
                std::thread::sleep(Duration::from_millis(10));
                false
            }
        });
        if !dead {
            let _ = signal::send(pid, libc::SIGKILL);
        }
        assert!(dead, "process {pid}, started by a rank, outlived the job");
    }
}

#[test]
fn leaving_without_finalize_while_others_run_is_an_error() {
    let script = format!(r#"{PMI_IN_BASH} if [ "$PMI_RANK" = 0 ]; then exit 0; fi; sleep 10"#);
    let outcome = run_script_waiting(2, "1", &script);
    assert_eq!(outcome.status.code(), Some(1), "{}", outcome.stderr);
    assert!(outcome.stderr.contains("warning: rank 0 (pid "), "{}", outcome.stderr);
    assert!(outcome.stderr.contains("without calling MPI_Finalize (no PMI finalize) while other ranks were still running, and still were 1 s later"), "{}", outcome.stderr);
    assert!(outcome.elapsed >= Duration::from_millis(900) && outcome.elapsed < Duration::from_secs(5), "took {:?}", outcome.elapsed);

    // 0: the job fails at once.
    let outcome = run_script_waiting(2, "0", &script);
    assert_eq!(outcome.status.code(), Some(1), "{}", outcome.stderr);
    assert!(outcome.elapsed < Duration::from_secs(3), "took {:?}", outcome.elapsed);

    let finalized = format!(r#"{PMI_IN_BASH} pmi "cmd=finalize"; [ "$PMI_RANK" = 0 ] || sleep 0.3"#);
    let outcome = run_script(2, "bash", &finalized);
    assert!(outcome.status.success(), "{}", outcome.stderr);
}

#[test]
fn ranks_that_all_end_without_finalize_in_time_are_a_warning() {
    // Rank 0 leaves first; rank 1 ends cleanly 0.3 s later, also without MPI_Finalize.
    let script = format!(r#"{PMI_IN_BASH} [ "$PMI_RANK" = 0 ] || sleep 0.3; echo "rank $PMI_RANK done""#);
    let outcome = run_script(2, "bash", &script);
    assert!(outcome.status.success(), "{}", outcome.stderr);
    assert!(outcome.stderr.contains("warning: rank 0 (pid "), "{}", outcome.stderr);
    assert!(outcome.stderr.contains("have 10 s to end (BRAID_UNFINALIZED_WAIT_S)"), "{}", outcome.stderr);
    assert_eq!(sorted_lines(&outcome.stdout), ["rank 0 done", "rank 1 done"], "{}", outcome.stderr);

    // A rank that fails meanwhile is reported after the one that left, which sets the status.
    let failing = format!(r#"{PMI_IN_BASH} [ "$PMI_RANK" = 0 ] && exit 0; sleep 0.3; exit 5"#);
    let outcome = run_script(2, "bash", &failing);
    assert_eq!(outcome.status.code(), Some(1), "{}", outcome.stderr);
    let left = outcome.stderr.find("rank 0 (pid ").expect("rank 0 named");
    let failed = outcome.stderr.find("exited with code 5").expect("rank 1's exit reported");
    assert!(left < failed, "{}", outcome.stderr);
}

#[test]
fn a_failure_after_finalize_spares_finalized_ranks_and_stops_the_others_after_a_second() {
    // Rank 1 fails after its finalize; rank 2 has finalized and still prints for a while; rank 0
    // never finalizes and is stopped once the wait for its finalize is over.
    let script = format!(
        r#"{PMI_IN_BASH} case $PMI_RANK in
            0) exec sleep 10 ;;
            1) pmi "cmd=finalize"; exit 3 ;;
            2) pmi "cmd=finalize"; sleep 0.5; echo "rank 2 after finalize"; exit 0 ;;
        esac"#
    );
    let outcome = run_script(3, "bash", &script);
    assert_eq!(outcome.status.code(), Some(3), "{}", outcome.stderr);
    assert!(outcome.stderr.contains("exited with code 3 after MPI_Finalize"), "{}", outcome.stderr);
    assert_eq!(outcome.stdout, "rank 2 after finalize\n", "{}", outcome.stderr);
    assert!(outcome.elapsed >= Duration::from_millis(900) && outcome.elapsed < Duration::from_secs(4), "took {:?}", outcome.elapsed);
}

#[test]
fn shared_memory_files_of_the_job_are_removed_after_any_ending() {
    // Each rank creates a file the way the shm transport names its segments, prints the job name, and
    // then either finalizes normally (first job) or rank 1 is killed (second job).
    let create = format!(r#"{PMI_IN_BASH} touch "/dev/shm/braid-$KVS-$PMI_RANK"; echo "$KVS"; pmi "cmd=barrier_in";"#);
    let normal = run_script(2, "bash", &format!(r#"{create} pmi "cmd=finalize""#));
    let crashed = run_script(2, "bash", &format!(r#"{create} if [ "$PMI_RANK" = 1 ]; then kill -9 $$; fi; sleep 10"#));
    let names: Vec<String> = [&normal, &crashed].iter().map(|outcome| outcome.stdout.lines().next().unwrap_or("").to_string()).collect();
    let guard = ShmGuard(names.clone());
    assert!(names.iter().all(|name| name.starts_with("kvs_")), "job names: {names:?}; stderr: {}", crashed.stderr);
    assert_ne!(names[0], names[1], "job names must be unique");
    assert!(normal.status.success(), "{}", normal.stderr);
    assert_eq!(crashed.status.code(), Some(128 + 9), "{}", crashed.stderr);
    assert_eq!(guard.leftovers(), Vec::<String>::new());
}

#[test]
fn tag_output_prefixes_every_line_with_its_rank() {
    let outcome = run(&["run", "-n", "2", "--tag-output", "sh", "-c", r#"echo "out $PMI_RANK"; echo "err $PMI_RANK" >&2; printf 'no newline'"#]);
    assert!(outcome.status.success(), "{}", outcome.stderr);
    assert_eq!(sorted_lines(&outcome.stdout), vec!["[0] no newline", "[0] out 0", "[1] no newline", "[1] out 1"]);
    assert_eq!(sorted_lines(&outcome.stderr), vec!["[0] err 0", "[1] err 1"]);
}

#[test]
fn lines_from_different_ranks_never_mix() {
    let outcome = run_script(2, "sh", r#"i=0; while [ $i -lt 200 ]; do echo "rank-$PMI_RANK-line-$i-$PMI_RANK$PMI_RANK$PMI_RANK"; i=$((i+1)); done"#);
    assert!(outcome.status.success(), "{}", outcome.stderr);
    assert_eq!(outcome.stdout.lines().count(), 400);
    for line in outcome.stdout.lines() {
        let rank = &line[5..6];
        assert!(line.ends_with(&rank.repeat(3)), "mixed line: {line:?}");
    }
}

#[test]
fn ranks_need_no_stdin_and_rank_zero_reads_piped_input() {
    let outcome = run_script(2, "sh", r#"cat; echo "done $PMI_RANK""#);
    assert!(outcome.status.success(), "{}", outcome.stderr);
    assert_eq!(sorted_lines(&outcome.stdout), vec!["done 0", "done 1"]);

    let started = Instant::now();
    let mut child = braid().args(["run", "-n", "2", "sh", "-c", r#"read line; echo "$PMI_RANK got [$line]""#]).stdin(Stdio::piped()).spawn().unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    }
    let outcome = finish(child, started);
    assert!(outcome.status.success(), "{}", outcome.stderr);
    assert_eq!(sorted_lines(&outcome.stdout), vec!["0 got [hello]", "1 got []"]);
}

#[test]
fn signals_sent_to_braid_run_reach_every_rank() {
    let script = r#"trap 'echo "usr1 $PMI_RANK"' USR1; trap 'echo "term $PMI_RANK"; exit 0' TERM; echo ready; while :; do sleep 0.05; done"#;
    let started = Instant::now();
    let mut child = braid().args(["run", "-n", "2", "sh", "-c", script]).spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    let mut read_line = |lines: &mut Vec<String>| {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        lines.push(line.trim_end().to_string());
    };
    read_line(&mut lines);
    read_line(&mut lines);
    assert_eq!(lines, vec!["ready", "ready"]);
    signal::send(child.id(), libc::SIGUSR1).unwrap();
    read_line(&mut lines);
    read_line(&mut lines);
    signal::send(child.id(), libc::SIGTERM).unwrap();
    read_line(&mut lines);
    read_line(&mut lines);
    let outcome = finish(child, started);
    assert!(outcome.status.success(), "{}", outcome.stderr);
    assert_eq!(sorted_lines(&lines[2..].join("\n")), vec!["term 0", "term 1", "usr1 0", "usr1 1"]);
}

#[test]
fn ranks_are_bound_to_distinct_cores_unless_oversubscribed() {
    let usable = affinity::calling_thread().unwrap();
    let topology = Topology::detect().unwrap();
    let usable_cores: Vec<Vec<usize>> =
        topology.cores.iter().map(|core| core.cpus.iter().copied().filter(|cpu| usable.contains(cpu)).collect::<Vec<usize>>()).filter(|cpus| !cpus.is_empty()).collect();
    let allowed = |outcome: &Outcome| -> Vec<Vec<usize>> {
        assert!(outcome.status.success(), "{}", outcome.stderr);
        outcome.stdout.lines().map(|line| parse_cpu_list(line.split(':').nth(1).unwrap().trim()).unwrap()).collect()
    };
    let show = "grep Cpus_allowed_list /proc/self/status";

    let bound_ranks = usable_cores.len().min(2);
    let bound = allowed(&run_script(bound_ranks as u32, "sh", show));
    assert_eq!(bound.len(), bound_ranks);
    for cpus in &bound {
        assert!(usable_cores.contains(cpus), "{cpus:?} is not one usable core of {usable_cores:?}");
    }
    if bound_ranks == 2 {
        assert_ne!(bound[0], bound[1], "two ranks were bound to the same core");
    }

    let oversubscribed = allowed(&run_script(usable_cores.len() as u32 + 1, "sh", show));
    assert!(oversubscribed.iter().all(|cpus| *cpus == usable), "{oversubscribed:?} vs {usable:?}");
    let unbound = allowed(&run(&["run", "-n", "1", "--bind-to", "none", "sh", "-c", show]));
    assert_eq!(unbound, vec![usable.clone()]);

    let refused = run(&["run", "-n", &(usable_cores.len() + 1).to_string(), "--bind-to", "core", "true"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(refused.stderr.contains("cannot bind each rank to its own core"), "{}", refused.stderr);
}

#[test]
fn pmi_hello_exchanges_values_under_braid_run() {
    let profile_dir = PathBuf::from(env!("CARGO_BIN_EXE_braid")).parent().unwrap().to_path_buf();
    let example = profile_dir.join("examples").join("pmi_hello");
    if !example.exists() {
        let status = Command::new(env!("CARGO")).args(["build", "--quiet", "-p", "braid-pmi", "--example", "pmi_hello"]).status().unwrap();
        assert!(status.success(), "building the pmi_hello example failed");
    }
    let outcome = run(&["run", "-n", "3", example.to_str().unwrap()]);
    assert!(outcome.status.success(), "{}", outcome.stderr);
    assert_eq!(sorted_lines(&outcome.stdout), vec!["pmi_hello: rank 0 of 3 read all 3 values", "pmi_hello: rank 1 of 3 read all 3 values", "pmi_hello: rank 2 of 3 read all 3 values"]);
}

#[test]
fn a_missing_program_is_reported_with_the_shell_code() {
    let outcome = run(&["run", "-n", "2", "/nonexistent/braid-test-program"]);
    assert_eq!(outcome.status.code(), Some(127));
    assert!(outcome.stderr.contains("cannot start rank 0: /nonexistent/braid-test-program"), "{}", outcome.stderr);
}

#[test]
fn the_tools_print_the_machine_and_the_settings() {
    let topology = run(&["topology"]);
    assert!(topology.status.success(), "{}", topology.stderr);
    assert!(topology.stdout.contains("package 0") && topology.stdout.contains("core 0") && topology.stdout.contains("caches:"), "{}", topology.stdout);
    let config = run(&["config"]);
    assert!(config.status.success(), "{}", config.stderr);
    for setting in braid_config::SETTINGS {
        assert!(config.stdout.contains(setting.variable), "{} missing", setting.variable);
    }
    let help = run(&["run", "--help"]);
    assert!(help.stdout.contains("--map-by") && help.stdout.contains("--bind-to") && help.stdout.contains("--tag-output"));
}
