//! `braid run`'s command line: options end at the program (or at `--`), and a wrong option is
//! reported as what it is, with the usage, before anything starts.

mod common;

use common::*;

#[test]
fn an_unknown_option_is_named_with_the_usage_and_nothing_runs() {
    let scratch = Scratch::new("unknown-option");
    let marker = scratch.0.join("started");
    let script = format!("touch {}", marker.display());
    let output = run(&["run", "-n", "2", "--bogus", "sh", "-c", &script]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("error: unknown option '--bogus'"), "{stderr}");
    assert!(stderr.contains("Usage: braid run"), "{stderr}");
    assert!(stderr.contains("-- --bogus"), "the way to run a program of that name is missing: {stderr}");
    assert!(!marker.exists(), "a rank was started");

    let short = run(&["run", "-x", "-n", "2", "true"]);
    assert_eq!(short.status.code(), Some(2));
    assert!(text(&short.stderr).starts_with("error: unknown option '-x'"), "{}", text(&short.stderr));
}

#[test]
fn an_option_in_place_of_the_rank_count_is_named_as_an_option() {
    let output = run(&["run", "-n", "--tag-output", "2", "true"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--tag-output is an option, but -n must be followed by the number of ranks"), "{stderr}");
    assert!(!stderr.contains("none was supplied"), "{stderr}");

    for (count, expected) in [("0", "at least 1"), ("-3", "at least 1"), ("four", "expected the number of ranks")] {
        let output = run(&["run", "-n", count, "true"]);
        assert_eq!(output.status.code(), Some(2));
        assert!(text(&output.stderr).contains(expected), "-n {count}: {}", text(&output.stderr));
    }
}

#[test]
fn the_program_starts_at_the_first_non_option_and_keeps_its_own_options() {
    // Everything after the program is the program's, options of braid run's included.
    let output = run(&["run", "-n", "1", "sh", "-c", r#"printf '%s|' "$@""#, "sh", "--tag-output", "-n", "3", "--bogus"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "--tag-output|-n|3|--bogus|");

    let tagged = run(&["run", "--tag-output", "-n", "2", "--", "sh", "-c", "echo hi"]);
    assert!(tagged.status.success(), "{}", text(&tagged.stderr));
    let mut lines: Vec<String> = text(&tagged.stdout).lines().map(str::to_string).collect();
    lines.sort();
    assert_eq!(lines, vec!["[0] hi", "[1] hi"]);
}

#[test]
fn after_a_double_dash_a_program_may_look_like_an_option() {
    let output = run(&["run", "-n", "1", "--", "--bogus"]);
    assert_eq!(output.status.code(), Some(127), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("cannot start rank 0: --bogus"), "{}", text(&output.stderr));
}
