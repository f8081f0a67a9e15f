//! What `braid place` reads: a profiled job's directory, or a traffic matrix in the `.mat` form
//! Open MPI's monitoring tools write and TreeMatch reads.

use std::path::Path;

use crate::profile::{self, merge};

/// A job's bytes matrix (row i: what rank i sent to each rank) and where it came from.
pub struct Measured {
    pub bytes: Vec<Vec<u64>>,
    /// Messages, like `bytes` (none in a `.mat` file).
    pub messages: Option<Vec<Vec<u64>>>,
    /// Per rank, its seconds outside MPI (computing), where the profile has them.
    pub compute_seconds: Option<Vec<f64>>,
    /// Ranks whose traffic is unknown (they left no profile).
    pub missing_ranks: Vec<usize>,
}

/// Reads `path`: a profile directory (its rank files, or its profile.json) or a `.mat` file.
pub fn read(path: &Path) -> Result<Measured, String> {
    if path.is_dir() {
        return read_profile(path);
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let bytes = parse_mat(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Measured { bytes, messages: None, compute_seconds: None, missing_ranks: Vec::new() })
}

fn read_profile(dir: &Path) -> Result<Measured, String> {
    let merged = dir.join("profile.json");
    if profile::rank_files(dir)?.is_empty() && merged.is_file() {
        return read_merged(&merged);
    }
    let files = profile::load(dir)?;
    let profile = merge::merge(&files);
    let mut compute = vec![0.0; profile.size];
    for rank in &profile.ranks {
        if let Some(seconds) = compute.get_mut(rank.rank) {
            *seconds = (rank.wall_time - rank.mpi_time).max(0.0);
        }
    }
    Ok(Measured { bytes: profile.bytes, messages: Some(profile.messages), compute_seconds: Some(compute), missing_ranks: profile.missing_ranks })
}

/// The `bytes` matrix of a merged profile.json.
fn read_merged(path: &Path) -> Result<Measured, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    if json["schema"] != merge::SCHEMA {
        return Err(format!("{}: not a Braid profile (schema {}, expected {})", path.display(), json["schema"], merge::SCHEMA));
    }
    let bytes = json_matrix(path, &json, "bytes")?;
    let messages = json_matrix(path, &json, "messages").ok();
    let compute_seconds = json["ranks"].as_array().map(|ranks| {
        let mut compute = vec![0.0; bytes.len()];
        for rank in ranks {
            let (index, wall, inside) = (rank["rank"].as_u64(), rank["wall_time"].as_f64(), rank["mpi_time"].as_f64());
            if let (Some(index), Some(wall), Some(inside)) = (index, wall, inside) {
                if let Some(seconds) = compute.get_mut(index as usize) {
                    *seconds = (wall - inside).max(0.0);
                }
            }
        }
        compute
    });
    let missing_ranks = json["missing_ranks"].as_array().map(|ranks| ranks.iter().filter_map(|rank| rank.as_u64()).map(|rank| rank as usize).collect()).unwrap_or_default();
    Ok(Measured { bytes, messages, compute_seconds, missing_ranks })
}

/// The matrix `name` of a merged profile.
fn json_matrix(path: &Path, json: &serde_json::Value, name: &str) -> Result<Vec<Vec<u64>>, String> {
    let rows = json[name].as_array().ok_or_else(|| format!("{}: no {name} matrix", path.display()))?;
    rows.iter()
        .enumerate()
        .map(|(row, values)| {
            let values = values.as_array().ok_or_else(|| format!("{}: {name} row {row} is not a list", path.display()))?;
            values.iter().map(|value| value.as_u64().ok_or_else(|| format!("{}: {name} row {row} holds {value}, not a count", path.display()))).collect()
        })
        .collect()
}

impl Measured {
    /// The ranks in the order they take cores when some cores do the network's work (taken
    /// last): those that compute most first, then, among equals, those that communicate least
    /// (bytes plus `message_cost` per message, sent and received).
    pub fn rank_order(&self, message_cost: u64) -> Vec<usize> {
        let cost = self.cost(message_cost);
        let traffic = |rank: usize| -> u64 { cost[rank].iter().sum::<u64>() + cost.iter().map(|row| row[rank]).sum::<u64>() };
        let compute = |rank: usize| self.compute_seconds.as_ref().and_then(|seconds| seconds.get(rank).copied()).unwrap_or(0.0);
        let mut order: Vec<usize> = (0..cost.len()).collect();
        order.sort_by(|&a, &b| compute(b).total_cmp(&compute(a)).then(traffic(a).cmp(&traffic(b))));
        order
    }

    /// What each pair costs: its bytes plus `message_cost` bytes per message.
    pub fn cost(&self, message_cost: u64) -> Vec<Vec<u64>> {
        let mut cost = self.bytes.clone();
        if let Some(messages) = &self.messages {
            for (row, counts) in cost.iter_mut().zip(messages) {
                for (cell, count) in row.iter_mut().zip(counts) {
                    *cell = cell.saturating_add(count.saturating_mul(message_cost));
                }
            }
        }
        cost
    }
}

/// A `.mat` matrix: n lines of n whole numbers (blank lines and `#` comments skipped).
pub fn parse_mat(text: &str) -> Result<Vec<Vec<u64>>, String> {
    let mut rows = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let row = line
            .split_whitespace()
            .map(|field| {
                field
                    .parse::<f64>()
                    .ok()
                    .filter(|value| value.is_finite() && *value >= 0.0)
                    .map(|value| value.round() as u64)
                    .ok_or_else(|| format!("line {}: {field:?} is not a byte count", number + 1))
            })
            .collect::<Result<Vec<u64>, String>>()?;
        rows.push(row);
    }
    if rows.is_empty() {
        return Err("no matrix: the file has no rows".to_string());
    }
    let size = rows.len();
    if let Some((index, row)) = rows.iter().enumerate().find(|(_, row)| row.len() != size) {
        return Err(format!("not a square matrix: {size} rows, but row {} has {} entries", index + 1, row.len()));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mat_files_are_square_whole_numbers() {
        assert_eq!(parse_mat("0 5\n# note\n\n5 0\n").unwrap(), [[0, 5], [5, 0]]);
        // TreeMatch's matrices may hold decimals.
        assert_eq!(parse_mat("0 2.6\n2.4 0").unwrap(), [[0, 3], [2, 0]]);
        assert!(parse_mat("0 1\n1").unwrap_err().contains("row 2 has 1"));
        assert!(parse_mat("0 x\n1 0").unwrap_err().contains("line 1: \"x\""));
        assert!(parse_mat("0 -1\n1 0").is_err());
        assert!(parse_mat("\n").unwrap_err().contains("no rows"));
    }
}
