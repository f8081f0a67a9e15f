//! `braid report DIR`: a profiled job's profile as a terminal summary and a self-contained HTML
//! page (DIR/report.html, plots as inline SVG).

mod advice;
mod html;

use std::path::Path;
use std::process::ExitCode;

use braid_sys::topology::format_cpu_list;

use crate::profile::merge::Profile;
use crate::profile::{self};

pub fn run(dir: &Path) -> ExitCode {
    let profile = match profile::merge_directory(dir) {
        Ok(merged) => merged,
        Err(message) => {
            eprintln!("braid report: {message}");
            return ExitCode::FAILURE;
        }
    };
    let page = dir.join("report.html");
    if let Err(e) = std::fs::write(&page, html::page(&profile)) {
        eprintln!("braid report: cannot write {}: {e}", page.display());
        return ExitCode::FAILURE;
    }
    print!("{}", summary(&profile));
    println!("Report: {}", page.display());
    ExitCode::SUCCESS
}

/// Ranks as a short list: "0-3, 6" (the kernel's CPU-list form, spaced for reading).
pub fn rank_list(ranks: &[usize]) -> String {
    format_cpu_list(ranks).replace(',', ", ")
}

/// Bytes with a binary unit.
pub fn bytes_text(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

fn percent(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

/// The node of each rank (index into `profile.nodes`), `None` for a rank that left no file.
pub fn node_of_rank(profile: &Profile) -> Vec<Option<usize>> {
    let mut nodes = vec![None; profile.size];
    for rank in &profile.ranks {
        nodes[rank.rank] = profile.nodes.iter().position(|node| node == &rank.node);
    }
    nodes
}

/// Per node (as in `profile.nodes`), the bytes its ranks sent within it and to other nodes (a
/// rank that left no file counts as on another node; its own row is empty).
pub fn intra_inter_per_node(profile: &Profile) -> Vec<(u64, u64)> {
    let nodes = node_of_rank(profile);
    let mut totals = vec![(0, 0); profile.nodes.len()];
    for (from, row) in profile.bytes.iter().enumerate() {
        let Some(node) = nodes[from] else { continue };
        for (to, &bytes) in row.iter().enumerate() {
            if nodes[to] == Some(node) {
                totals[node].0 += bytes;
            } else {
                totals[node].1 += bytes;
            }
        }
    }
    totals
}

/// Bytes sent within nodes and across them, over the job.
pub fn intra_inter(profile: &Profile) -> (u64, u64) {
    intra_inter_per_node(profile).iter().fold((0, 0), |(intra, inter), &(a, b)| (intra + a, inter + b))
}

/// The MPI functions over all ranks, by time spent: (name, calls, time, bytes).
pub fn top_functions(profile: &Profile) -> Vec<(String, u64, f64, u64)> {
    let mut totals: Vec<(String, u64, f64, u64)> = Vec::new();
    for entry in &profile.functions {
        match totals.iter_mut().find(|total| total.0 == entry.stats.name) {
            Some(total) => {
                total.1 += entry.stats.calls;
                total.2 += entry.stats.time;
                total.3 += entry.stats.bytes;
            }
            None => totals.push((entry.stats.name.clone(), entry.stats.calls, entry.stats.time, entry.stats.bytes)),
        }
    }
    totals.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    totals
}

/// The terminal summary.
pub fn summary(profile: &Profile) -> String {
    let mut text = String::new();
    let present = profile.ranks.len();
    text += &format!("Profile of {present} of {} rank(s) on {} node(s); {}\n", profile.size, profile.nodes.len(), profile.library);
    for (index, node) in profile.nodes.iter().enumerate() {
        let ranks: Vec<usize> = profile.ranks.iter().filter(|rank| &rank.node == node).map(|rank| rank.rank).collect();
        text += &format!("  node {index} {node}: ranks {}\n", rank_list(&ranks));
    }
    if !profile.missing_ranks.is_empty() {
        text += &format!("Missing: rank(s) {} left no profile (they did not reach MPI_Finalize)\n", rank_list(&profile.missing_ranks));
    }
    let wall: f64 = profile.ranks.iter().map(|rank| rank.wall_time).sum();
    let mpi: f64 = profile.ranks.iter().map(|rank| rank.mpi_time).sum();
    let longest = profile.ranks.iter().map(|rank| rank.wall_time).fold(0.0, f64::max);
    text += &format!("Time: {longest:.3} s per rank at most; inside MPI {:.1}% of the ranks' time", percent(mpi, wall));
    let blocked: Option<f64> = profile.ranks.iter().map(|rank| rank.blocked_time).sum();
    if let Some(blocked) = blocked {
        text += &format!(", of which waiting asleep or yielding {:.1}%", percent(blocked, wall));
    }
    text.push('\n');
    let total: u64 = profile.bytes.iter().flatten().sum();
    let messages: u64 = profile.messages.iter().flatten().sum();
    let (intra, inter) = intra_inter(profile);
    text += &format!(
        "Traffic ({}): {} in {messages} message(s); within nodes {:.1}%, across nodes {:.1}%\n",
        if profile.matrix_source == "engine" { "every message, collectives' included" } else { "point-to-point calls" },
        bytes_text(total as f64),
        percent(intra as f64, total as f64),
        percent(inter as f64, total as f64)
    );
    if !profile.bytes_by_transport.is_empty() {
        let split: Vec<String> = profile.bytes_by_transport.iter().map(|(class, matrix)| format!("{class} {}", bytes_text(matrix.iter().flatten().sum::<u64>() as f64))).collect();
        text += &format!("  by transport: {}\n", split.join(", "));
    }
    let functions = top_functions(profile);
    if !functions.is_empty() {
        text += "Top MPI functions (all ranks):\n";
        for (name, calls, time, bytes) in functions.iter().take(5) {
            text += &format!("  {name:<24} {time:>9.4} s {:>5.1}% of MPI time  {calls:>9} calls  {:>10}\n", percent(*time, mpi), bytes_text(*bytes as f64));
        }
    }
    for node in &profile.rails {
        for (rail, name) in node.rails.iter().enumerate() {
            text += &format!("Rail {name} of {}: sent {} by {} rank(s), active {:.2} s\n", node.node, bytes_text(node.bytes_sent[rail] as f64), node.ranks_using[rail], node.active_time[rail]);
        }
    }
    text += &format!("Advice: {}\n", advice::advice(profile));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lists_join_runs() {
        assert_eq!(rank_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3, 6, 8-9");
        assert_eq!(rank_list(&[]), "");
    }

    #[test]
    fn byte_counts_take_a_binary_unit() {
        assert_eq!(bytes_text(512.0), "512 B");
        assert_eq!(bytes_text(1536.0), "1.5 KiB");
        assert_eq!(bytes_text(3.0 * 1024.0 * 1024.0 * 1024.0), "3.0 GiB");
    }
}
