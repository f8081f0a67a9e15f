//! `braid run` under MPIEXEC_TIMEOUT: a job past its limit is stopped whole and ends with status
//! 255 (as with MPICH's mpiexec); a bad limit is refused before anything starts.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;

/// Status of a job that ran past MPIEXEC_TIMEOUT, as MPICH's Hydra exits.
const TIMED_OUT: i32 = 255;

#[test]
fn a_job_past_its_time_limit_is_stopped_whole() {
    let scratch = Scratch::new("timeout");
    let script = format!(r#"echo $$ > {}/$PMI_RANK; echo "rank $PMI_RANK started"; exec sleep 20"#, scratch.0.display());
    let started = Instant::now();
    let output = finish(braid().args(["run", "-n", "3", "sh", "-c", &script]).env("MPIEXEC_TIMEOUT", "1").spawn().unwrap(), "braid run under MPIEXEC_TIMEOUT=1");
    let elapsed = started.elapsed();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(TIMED_OUT), "{stderr}");
    assert!(stderr.contains("braid run: the job timed out after 1 s (MPIEXEC_TIMEOUT=1)"), "{stderr}");
    assert!(elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(4), "took {elapsed:?}");
    assert_eq!(text(&output.stdout).lines().count(), 3, "the ranks' output before the limit was lost");
    for rank in 0..3 {
        let pid = std::fs::read_to_string(scratch.0.join(rank.to_string())).unwrap();
        assert!(!Path::new(&format!("/proc/{}", pid.trim())).exists(), "rank {rank} (pid {}) survived the job", pid.trim());
    }
}

#[test]
fn a_rank_ignoring_sigterm_is_killed_when_the_job_times_out() {
    let started = Instant::now();
    let output = finish(braid().args(["run", "-n", "2", "sh", "-c", r#"trap "" TERM; sleep 20"#]).env("MPIEXEC_TIMEOUT", "1").spawn().unwrap(), "braid run ignoring SIGTERM");
    assert_eq!(output.status.code(), Some(TIMED_OUT), "{}", text(&output.stderr));
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
}

#[test]
fn a_job_within_its_limit_or_without_one_is_untouched() {
    for limit in ["10", "0", ""] {
        let output = finish(braid().args(["run", "-n", "2", "sh", "-c", "sleep 0.2; echo done"]).env("MPIEXEC_TIMEOUT", limit).spawn().unwrap(), "braid run within its limit");
        assert!(output.status.success(), "MPIEXEC_TIMEOUT={limit:?}: {}", text(&output.stderr));
        assert_eq!(text(&output.stdout), "done\ndone\n");
    }
}

#[test]
fn a_bad_time_limit_is_refused_before_any_rank_starts() {
    let scratch = Scratch::new("bad-timeout");
    let marker = scratch.0.join("started");
    for bad in ["abc", "-5", "1.5"] {
        let command = format!("touch {}", marker.display());
        let output = finish(braid().args(["run", "-n", "2", "sh", "-c", &command]).env("MPIEXEC_TIMEOUT", bad).spawn().unwrap(), "braid run with a bad limit");
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&format!("MPIEXEC_TIMEOUT={bad:?} is not valid: expected the job's time limit in whole seconds")), "{stderr}");
        assert!(stderr.contains("no rank was started"), "{stderr}");
        assert!(!marker.exists(), "a rank was started with MPIEXEC_TIMEOUT={bad:?}");
    }
}
