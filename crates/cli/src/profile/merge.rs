//! The job's profile (`braid-profile/1`, docs/profile-format.md), made from the ranks' files.

use std::collections::BTreeMap;

use serde::Serialize;

use super::rank_file::{FunctionStats, RankFile, SIZE_BUCKETS};

pub const SCHEMA: &str = "braid-profile/1";
/// Width of a bin of the rails' timelines, in seconds.
pub const TIMELINE_BIN: f64 = 0.01;

/// An n x n matrix: row i is what rank i sent, column j what went to rank j.
pub type Matrix = Vec<Vec<u64>>;

#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    pub schema: &'static str,
    pub library: String,
    /// Ranks in the job.
    pub size: usize,
    /// Ranks that left no file (they did not reach MPI_Finalize); their rows are zero.
    pub missing_ranks: Vec<usize>,
    /// "engine" (every message the engine carried, the collectives' own included) or "calls"
    /// (the point-to-point calls only, where the library has no per-peer counters).
    pub matrix_source: String,
    /// Node names, in the order their first rank appears.
    pub nodes: Vec<String>,
    pub ranks: Vec<RankSummary>,
    pub bytes: Matrix,
    pub messages: Matrix,
    /// The same split by what carried each message: "self", "shm", "rails" (engine only).
    pub bytes_by_transport: BTreeMap<String, Matrix>,
    pub messages_by_transport: BTreeMap<String, Matrix>,
    pub phases: Vec<PhaseSummary>,
    /// Every rank's MPI functions over the whole run, phases added up.
    pub functions: Vec<RankFunction>,
    /// Per node: its rails' traffic (Braid's engine only).
    pub rails: Vec<NodeRails>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RankSummary {
    pub rank: usize,
    pub node: String,
    pub pid: u32,
    pub cpus_allowed: Vec<u32>,
    pub cpus_seen: Vec<u32>,
    pub wall_time: f64,
    pub mpi_time: f64,
    pub blocked_time: Option<f64>,
    pub protocol: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PhaseSummary {
    pub name: String,
    /// Longest time any rank spent in the phase.
    pub wall_time: f64,
    /// Per rank present, its time inside MPI during the phase.
    pub mpi_time: Vec<f64>,
    pub bytes: Matrix,
    pub messages: Matrix,
    pub functions: Vec<RankFunction>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RankFunction {
    pub rank: usize,
    #[serde(flatten)]
    pub stats: FunctionStats,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeRails {
    pub node: String,
    /// The rails, as the engine names them (tcp:<interface>).
    pub rails: Vec<String>,
    /// Bytes the node's ranks handed to each rail.
    pub bytes_sent: Vec<u64>,
    pub bytes_received: Vec<u64>,
    /// How many of the node's ranks sent over each rail.
    pub ranks_using: Vec<usize>,
    /// Time in which each rail carried some of the node's traffic, at the timeline's resolution.
    pub active_time: Vec<f64>,
    /// Bytes sent per rail in consecutive bins of `bin` seconds from the ranks' MPI_Init.
    pub bin: f64,
    pub timeline: Vec<Vec<u64>>,
}

/// What class of transport an engine transport name belongs to.
pub fn transport_class(name: &str) -> &str {
    match name {
        "self" | "shm" => name,
        _ if name.starts_with("tcp:") => "rails",
        _ => name,
    }
}

fn square(n: usize) -> Matrix {
    vec![vec![0; n]; n]
}

fn add_function(list: &mut Vec<RankFunction>, rank: usize, stats: &FunctionStats) {
    match list.iter_mut().find(|entry| entry.rank == rank && entry.stats.name == stats.name) {
        Some(entry) => {
            entry.stats.calls += stats.calls;
            entry.stats.time += stats.time;
            entry.stats.bytes += stats.bytes;
            for (total, count) in entry.stats.sizes.iter_mut().zip(&stats.sizes) {
                *total += count;
            }
        }
        None => list.push(RankFunction { rank, stats: stats.clone() }),
    }
}

/// The job's profile from the files of the ranks that wrote one (all of one job: the caller
/// checked that their sizes agree and that no rank appears twice).
pub fn merge(files: &[RankFile]) -> Profile {
    let size = files.first().map_or(0, |file| file.size);
    let engine = !files.is_empty() && files.iter().all(|file| file.matrix_source == "engine");
    let present: Vec<usize> = files.iter().map(|file| file.rank).collect();
    let missing_ranks = (0..size).filter(|rank| !present.contains(rank)).collect();
    let mut nodes: Vec<String> = Vec::new();
    let mut ordered: Vec<&RankFile> = files.iter().collect();
    ordered.sort_by_key(|file| file.rank);
    for file in &ordered {
        if !nodes.contains(&file.node) {
            nodes.push(file.node.clone());
        }
    }
    let (mut bytes, mut messages) = (square(size), square(size));
    let mut bytes_by_transport: BTreeMap<String, Matrix> = BTreeMap::new();
    let mut messages_by_transport: BTreeMap<String, Matrix> = BTreeMap::new();
    let mut phases: Vec<PhaseSummary> = Vec::new();
    let mut functions = Vec::new();
    for file in &ordered {
        let carriers: Option<Vec<String>> = file.transports.as_ref().and_then(|transports| {
            let names: Vec<&str> = transports.names.split(',').collect();
            transports.peer_transport.as_ref().map(|peers| peers.iter().map(|&t| transport_class(names[t as usize]).to_string()).collect())
        });
        for phase in &file.phases {
            let (row_bytes, row_messages) = match (engine, &phase.engine_bytes, &phase.engine_messages) {
                (true, Some(b), Some(m)) => (b, m),
                _ => (&phase.call_bytes, &phase.call_messages),
            };
            let index = match phases.iter().position(|summary| summary.name == phase.name) {
                Some(index) => index,
                None => {
                    phases.push(PhaseSummary { name: phase.name.clone(), wall_time: 0.0, mpi_time: Vec::new(), bytes: square(size), messages: square(size), functions: Vec::new() });
                    phases.len() - 1
                }
            };
            let summary = &mut phases[index];
            summary.wall_time = summary.wall_time.max(phase.wall_time);
            summary.mpi_time.push(phase.mpi_time);
            for peer in 0..size {
                summary.bytes[file.rank][peer] += row_bytes[peer];
                summary.messages[file.rank][peer] += row_messages[peer];
                bytes[file.rank][peer] += row_bytes[peer];
                messages[file.rank][peer] += row_messages[peer];
                if let (true, Some(carriers)) = (engine, &carriers) {
                    bytes_by_transport.entry(carriers[peer].clone()).or_insert_with(|| square(size))[file.rank][peer] += row_bytes[peer];
                    messages_by_transport.entry(carriers[peer].clone()).or_insert_with(|| square(size))[file.rank][peer] += row_messages[peer];
                }
            }
            for stats in &phase.functions {
                add_function(&mut summary.functions, file.rank, stats);
                add_function(&mut functions, file.rank, stats);
            }
        }
    }
    let ranks = ordered
        .iter()
        .map(|file| RankSummary {
            rank: file.rank,
            node: file.node.clone(),
            pid: file.pid,
            cpus_allowed: file.cpus_allowed.clone(),
            cpus_seen: file.cpus_seen.clone(),
            wall_time: file.wall_time,
            mpi_time: file.mpi_time,
            blocked_time: file.blocked_time,
            protocol: file.protocol.clone(),
        })
        .collect();
    let rails = nodes.iter().filter_map(|node| node_rails(node, ordered.iter().copied().filter(|file| &file.node == node))).collect();
    Profile {
        schema: SCHEMA,
        library: ordered.first().map(|file| file.library.clone()).unwrap_or_default(),
        size,
        missing_ranks,
        matrix_source: if engine { "engine" } else { "calls" }.to_string(),
        nodes,
        ranks,
        bytes,
        messages,
        bytes_by_transport,
        messages_by_transport,
        phases,
        functions,
        rails,
    }
}

/// The rails of one node: their totals and timelines, added up over the node's ranks.
fn node_rails<'a>(node: &str, files: impl Iterator<Item = &'a RankFile>) -> Option<NodeRails> {
    let mut rails = NodeRails {
        node: node.to_string(),
        rails: Vec::new(),
        bytes_sent: Vec::new(),
        bytes_received: Vec::new(),
        ranks_using: Vec::new(),
        active_time: Vec::new(),
        bin: TIMELINE_BIN,
        timeline: Vec::new(),
    };
    for file in files {
        let Some(transports) = &file.transports else { continue };
        for (index, name) in transports.names.split(',').enumerate() {
            if transport_class(name) != "rails" {
                continue;
            }
            let rail = match rails.rails.iter().position(|known| known == name) {
                Some(rail) => rail,
                None => {
                    rails.rails.push(name.to_string());
                    rails.bytes_sent.push(0);
                    rails.bytes_received.push(0);
                    rails.ranks_using.push(0);
                    rails.timeline.push(Vec::new());
                    rails.rails.len() - 1
                }
            };
            rails.bytes_sent[rail] += transports.bytes_sent[index];
            rails.bytes_received[rail] += transports.bytes_received[index];
            rails.ranks_using[rail] += usize::from(transports.bytes_sent[index] > 0);
            let points: Vec<(f64, u64)> = transports.timeline.iter().map(|sample| (sample.time, sample.sent[index])).collect();
            spread_into_bins(&points, TIMELINE_BIN, &mut rails.timeline[rail]);
        }
    }
    rails.active_time = rails.timeline.iter().map(|bins| bins.iter().filter(|&&bytes| bytes > 0).count() as f64 * TIMELINE_BIN).collect();
    (!rails.rails.is_empty()).then_some(rails)
}

/// Adds a cumulative counter sampled at `points` (time, total) into `bins` of width `bin`: what
/// grew between two samples is spread evenly over the time between them.
pub fn spread_into_bins(points: &[(f64, u64)], bin: f64, bins: &mut Vec<u64>) {
    for pair in points.windows(2) {
        let ((start, before), (end, after)) = (pair[0], pair[1]);
        let grown = after.saturating_sub(before);
        if grown == 0 {
            continue;
        }
        let first = (start.max(0.0) / bin) as usize;
        let last = ((end.max(start) / bin) as usize).max(first);
        if bins.len() <= last {
            bins.resize(last + 1, 0);
        }
        if first == last || end <= start {
            bins[first] += grown;
            continue;
        }
        let span = end - start;
        let mut given = 0;
        for (index, slot) in bins.iter_mut().enumerate().take(last + 1).skip(first) {
            let from = (index as f64 * bin).max(start);
            let to = ((index + 1) as f64 * bin).min(end);
            let share = if index == last { grown - given } else { (((grown as f64) * (to - from).max(0.0) / span).round() as u64).min(grown - given) };
            *slot += share;
            given += share;
        }
    }
}

/// Rank `rank`'s lines in Open MPI's monitoring format (its `.prof` files): `E` lines for the
/// point-to-point messages its calls sent to each rank, with their size histogram, and `I`
/// lines for what else the engine carried for it (the collectives' internal messages).
pub fn monitoring_lines(file: &RankFile) -> String {
    let size = file.size;
    let (mut call_bytes, mut call_messages) = (vec![0u64; size], vec![0u64; size]);
    let (mut engine_bytes, mut engine_messages) = (vec![0u64; size], vec![0u64; size]);
    let mut histograms = vec![vec![0u64; SIZE_BUCKETS]; size];
    let mut engine = false;
    for phase in &file.phases {
        for peer in 0..size {
            call_bytes[peer] += phase.call_bytes[peer];
            call_messages[peer] += phase.call_messages[peer];
        }
        for peer in &phase.call_sizes {
            for (total, count) in histograms[peer.peer].iter_mut().zip(&peer.sizes) {
                *total += count;
            }
        }
        if let (Some(b), Some(m)) = (&phase.engine_bytes, &phase.engine_messages) {
            engine = true;
            for peer in 0..size {
                engine_bytes[peer] += b[peer];
                engine_messages[peer] += m[peer];
            }
        }
    }
    let histogram = |counts: &[u64]| counts.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let mut text = String::from("# POINT TO POINT\n");
    for peer in 0..size {
        if call_messages[peer] > 0 {
            text += &format!("E\t{}\t{peer}\t{} bytes\t{} msgs sent\t{}\n", file.rank, call_bytes[peer], call_messages[peer], histogram(&histograms[peer]));
        }
    }
    if engine {
        text += "# INTERNAL (collectives and protocol)\n";
        let empty = vec![0u64; SIZE_BUCKETS];
        for peer in 0..size {
            let messages = engine_messages[peer].saturating_sub(call_messages[peer]);
            if messages > 0 {
                text += &format!("I\t{}\t{peer}\t{} bytes\t{messages} msgs sent\t{}\n", file.rank, engine_bytes[peer].saturating_sub(call_bytes[peer]), histogram(&empty));
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_between_samples_is_spread_over_the_bins_it_spans() {
        let mut bins = Vec::new();
        spread_into_bins(&[(0.0, 0), (0.03, 300), (0.035, 300), (0.05, 400)], 0.01, &mut bins);
        assert_eq!(bins.iter().sum::<u64>(), 400);
        assert_eq!(&bins[..3], &[100, 100, 100]);
        let mut one = Vec::new();
        spread_into_bins(&[(0.012, 5), (0.013, 12)], 0.01, &mut one);
        assert_eq!(one, vec![0, 7]);
    }

    #[test]
    fn classes_of_transport_names() {
        assert_eq!(transport_class("self"), "self");
        assert_eq!(transport_class("shm"), "shm");
        assert_eq!(transport_class("tcp:rail0"), "rails");
    }
}
