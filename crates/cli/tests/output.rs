//! The ranks' output through `braid run`, with MPI programs: whole lines however long and however
//! slow or non-blocking the launcher's stdout is, and nothing lost when the job ends with a
//! failure after MPI_Finalize.

mod common;

use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::{Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use braid_sys::signal;

use common::*;

/// Runs `braid ARGS`, reading its output while it runs (the output here outgrows a pipe's buffer);
/// kills it and fails past [`COMMAND_LIMIT`].
fn run_reading(args: &[&str]) -> Output {
    let child = braid().args(args).spawn().unwrap();
    let pid = child.id();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || sender.send(child.wait_with_output().unwrap()));
    match receiver.recv_timeout(COMMAND_LIMIT) {
        Ok(output) => output,
        Err(_) => {
            let _ = signal::send(pid, libc::SIGKILL);
            panic!("braid {} did not finish in {COMMAND_LIMIT:?}", args.join(" "));
        }
    }
}

/// Checks that `stdout` holds exactly the lines `long_lines LINES` prints on each of `ranks` ranks.
fn assert_whole_long_lines(stdout: &str, ranks: u32, lines: usize) {
    let lengths = [80, 5000, 70000];
    let mut seen = vec![vec![false; lines]; ranks as usize];
    for line in stdout.lines() {
        let mut fields = line.splitn(3, ' ');
        let (Some(rank), Some(index), Some(run)) = (fields.next(), fields.next(), fields.next()) else {
            panic!("a cut line: {:?}", &line[..line.len().min(100)]);
        };
        let (rank, index): (usize, usize) = (rank.parse().unwrap(), index.parse().unwrap());
        let letter = (b'a' + rank as u8) as char;
        assert!(run.len() == lengths[index % 3] && run.chars().all(|c| c == letter), "rank {rank} line {index} arrived cut or mixed ({} bytes)", run.len());
        assert!(!seen[rank][index], "rank {rank} line {index} arrived twice");
        seen[rank][index] = true;
    }
    for (rank, lines) in seen.iter().enumerate() {
        let missing = lines.iter().filter(|seen| !**seen).count();
        assert_eq!(missing, 0, "{missing} lines of rank {rank} are missing");
    }
}

#[test]
fn long_lines_of_many_ranks_arrive_whole() {
    require_mpi_programs();
    let scratch = Scratch::new("long-lines");
    let long_lines = scratch.program("long_lines");
    let output = run_reading(&["run", "-n", "8", long_lines.to_str().unwrap(), "30"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_whole_long_lines(&text(&output.stdout), 8, 30);
}

#[test]
fn a_non_blocking_slow_stdout_loses_nothing() {
    require_mpi_programs();
    let scratch = Scratch::new("slow-stdout");
    let long_lines = scratch.program("long_lines");
    // The launcher's stdout is non-blocking (as when a terminal or pipe is shared with a program
    // that set O_NONBLOCK) and read slowly: its writes keep meeting a full buffer.
    let (mut reader, writer) = UnixStream::pair().unwrap();
    writer.set_nonblocking(true).unwrap();
    let child = braid().args(["run", "-n", "4", long_lines.to_str().unwrap(), "12"]).stdout(Stdio::from(OwnedFd::from(writer))).spawn().unwrap();
    let slow_reader = std::thread::spawn(move || {
        let mut received = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            std::thread::sleep(Duration::from_millis(1));
            match reader.read(&mut chunk).unwrap() {
                0 => return received,
                read => received.extend_from_slice(&chunk[..read]),
            }
        }
    });
    let output = finish(child, "braid run long_lines with a non-blocking stdout");
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_whole_long_lines(&text(&slow_reader.join().unwrap()), 4, 12);
}

#[test]
fn a_rank_failing_after_finalize_loses_no_output_of_the_others() {
    require_mpi_programs();
    let scratch = Scratch::new("fail-after-finalize");
    let fail_after_finalize = scratch.program("fail_after_finalize");
    for ranks in ["2", "3"] {
        let output = run_reading(&["run", "-n", ranks, fail_after_finalize.to_str().unwrap(), "5000"]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(3), "{stderr}");
        assert!(stderr.contains("braid run: rank 1 (pid ") && stderr.contains("exited with code 3 after MPI_Finalize"), "{stderr}");
        let stdout = text(&output.stdout);
        let expected: Vec<String> = (0..5000).map(|line| format!("rank 0 line {line} of 5000")).collect();
        let received: Vec<&str> = stdout.lines().collect();
        assert_eq!(received.len(), expected.len(), "{} of rank 0's 5000 lines arrived; stderr: {stderr}", received.len());
        assert!(received.iter().zip(&expected).all(|(got, wanted)| got == wanted), "rank 0's lines arrived changed or out of order");
    }
}
