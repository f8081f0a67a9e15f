//! Hostile input to the readers of what users and other programs hand to `braid`: placement
//! files, `.mat` matrices and the profiler's rank files. Whatever the text, reading answers with a
//! value or an error and never panics; what is read is then used (merged, turned into costs)
//! without panicking either. The case count follows PROPTEST_CASES (scripts/fuzz runs 10^7).

use proptest::prelude::*;

use crate::place::file::Placement;
use crate::place::input::parse_mat;
use crate::profile::merge;
use crate::profile::rank_file::RankFile;

const RANK_0: &str = include_str!("../tests/data/profile-rank-0.json");
const RANK_1: &str = include_str!("../tests/data/profile-rank-1.json");

/// `text` with `edits` applied: each (position, byte) replaces the character there, or, with a
/// byte of 0, deletes a stretch; the result is cut back to valid UTF-8.
fn mutated(text: &str, edits: &[(usize, u8)]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for &(position, byte) in edits {
        if bytes.is_empty() {
            break;
        }
        let at = position % bytes.len();
        match byte {
            0 => {
                let end = (at + 1 + position % 17).min(bytes.len());
                bytes.drain(at..end);
            }
            b'9' => bytes.splice(at..at, b"99999999999999999999".iter().copied()).for_each(drop),
            b'-' => bytes.insert(at, b'-'),
            other => bytes[at] = other,
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

proptest! {
    #[test]
    fn placement_files_are_read_or_refused(text in "(# braid placement/1: rank node slot\n)?([0-9n# ]{0,12}\n){0,8}", nodes in 1usize..4) {
        let known: Vec<String> = (0..nodes).map(|node| format!("n{node}")).collect();
        if let Ok(placement) = Placement::parse(&text, &known) {
            prop_assert!(placement.node_of_rank.iter().all(|&node| node < nodes));
            let _ = placement.busiest_node();
        }
    }

    #[test]
    fn matrices_are_read_or_refused(text in "([0-9eE.+\\- #a]{0,16}\n){0,6}") {
        if let Ok(matrix) = parse_mat(&text) {
            prop_assert!(matrix.iter().all(|row| row.len() == matrix.len()));
        }
    }

    #[test]
    fn damaged_rank_files_are_read_or_refused_and_merge(edits in proptest::collection::vec((any::<usize>(), prop_oneof![Just(0u8), Just(b'9'), Just(b'-'), Just(b'"'), Just(b','), any::<u8>()]), 1..6)) {
        let damaged = mutated(RANK_0, &edits);
        let intact = RankFile::parse(RANK_1).expect("the intact rank file reads");
        if let Ok(file) = RankFile::parse(&damaged) {
            let profile = merge::merge(&[file, intact.clone()]);
            let _ = merge::monitoring_lines(&intact);
            prop_assert!(profile.bytes.len() == profile.size);
        }
    }
}
