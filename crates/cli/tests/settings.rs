//! Bad BRAID_* settings: `braid run` refuses them before any rank starts, with the accepted values;
//! a rank started otherwise (by hand, or under another launcher) ends in MPI_Init, with the
//! message, instead of going on.

mod common;

use std::process::Command;

use common::*;

#[test]
fn braid_run_refuses_a_bad_setting_before_starting_a_rank() {
    let scratch = Scratch::new("bad-setting");
    let marker = scratch.0.join("started");
    let command = format!("touch {}", marker.display());
    let cases = [
        ("BRAID_WAIT", "sometimes", "expected one of auto, poll, block"),
        ("BRAID_SHM_RING_CELLS", "100", "expected a power of two >= 8"),
        ("BRAID_SHM_POOL_BUFFERS", "1", "expected an integer >= 2"),
        ("BRAID_RATE_SMOOTHING", "2", "expected a number greater than 0 and at most 1"),
    ];
    for (variable, value, expected) in cases {
        let output = finish(braid().args(["run", "-n", "2", "sh", "-c", &command]).env(variable, value).spawn().unwrap(), "braid run with a bad setting");
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&format!("braid run: {variable}={value:?} is not valid: {expected}")), "{stderr}");
        assert!(stderr.contains("no rank was started"), "{stderr}");
        assert!(!marker.exists(), "a rank was started with {variable}={value}");
    }
}

#[test]
fn a_misspelt_setting_is_warned_about_and_the_job_runs() {
    let output = finish(braid().args(["run", "-n", "1", "echo", "ran"]).env("BRAID_EAGER_MAXX", "4k").spawn().unwrap(), "braid run with a misspelt setting");
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "ran\n");
    assert!(text(&output.stderr).contains("braid run: warning: BRAID_EAGER_MAXX is not a Braid setting (did you mean BRAID_EAGER_MAX?)"), "{}", text(&output.stderr));

    let config = finish(braid().arg("config").env("BRAID_EAGER_MAXX", "4k").spawn().unwrap(), "braid config");
    assert!(config.status.success());
    assert!(text(&config.stderr).contains("BRAID_EAGER_MAXX is not a Braid setting"), "{}", text(&config.stderr));
}

/// The exit status of a process whose MPI_Init failed: the error class, MPI_ERR_OTHER.
const MPI_ERR_OTHER: i32 = 15;

#[test]
fn mpi_init_with_a_bad_setting_ends_the_process_with_the_message() {
    require_mpi_programs();
    let scratch = Scratch::new("init-failure");
    let program = scratch.program("init_then_print");
    for variant in ["plain", "thread"] {
        // Started by hand: a singleton, with no launcher to check the settings first.
        let mut command = Command::new(&program);
        command.arg(variant).env("BRAID_WAIT", "sometimes");
        let output = finish(command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap(), "a singleton with a bad setting");
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(MPI_ERR_OTHER), "{variant}: {stderr}");
        let function = if variant == "thread" { "MPI_Init_thread" } else { "MPI_Init" };
        assert!(stderr.contains(&format!("Braid: {function}: ")) && stderr.contains("BRAID_WAIT=\"sometimes\" is not valid: expected one of auto, poll, block"), "{stderr}");
        assert_eq!(text(&output.stdout), "before MPI_Init\n", "the program went on after a failed {function}");
    }

    // Under a launcher that does not check (here braid run with the setting changed behind it).
    let output = run(&["run", "-n", "2", "env", "BRAID_SHM_RING_CELLS=3", program.to_str().unwrap()]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(MPI_ERR_OTHER), "{stderr}");
    assert!(stderr.contains("BRAID_SHM_RING_CELLS=\"3\" is not valid: expected a power of two >= 8"), "{stderr}");
    assert!(stderr.contains("exited with code 15"), "{stderr}");
    assert!(!text(&output.stdout).contains("after MPI_Init"), "a rank went on after a failed MPI_Init");
}
