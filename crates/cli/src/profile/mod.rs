//! Job profiles: `braid run --profile DIR` preloads the profiler (libbraidprof.so, built from
//! profiler/) into every rank, which writes DIR/rank-N.json at MPI_Finalize; the ranks' files are
//! then merged into DIR/profile.json (docs/profile-format.md), with the matrices also as CSV,
//! Open MPI's `.mat` and `.prof` files.

pub mod merge;
pub mod rank_file;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use merge::{Matrix, Profile};
use rank_file::RankFile;

/// The profiler library's file name, beside the `braid` executable.
pub const LIBRARY: &str = "libbraidprof.so";

/// The environment that makes a rank profile itself into `dir`: the profiler preloaded in front
/// of whatever LD_PRELOAD already holds, and BRAID_PROFILE.
pub fn rank_environment(dir: &Path) -> Result<Vec<(OsString, OsString)>, String> {
    let library = std::env::current_exe().map_err(|e| format!("cannot find the braid executable: {e}"))?.with_file_name(LIBRARY);
    if !library.is_file() {
        return Err(format!("the profiler library {} is missing (cargo build --release builds it)", library.display()));
    }
    let mut preload = OsString::from(library.as_os_str());
    if let Some(existing) = std::env::var_os("LD_PRELOAD").filter(|existing| !existing.is_empty()) {
        preload.push(":");
        preload.push(existing);
    }
    Ok(vec![("LD_PRELOAD".into(), preload), ("BRAID_PROFILE".into(), dir.as_os_str().to_owned())])
}

/// Makes `dir` ready for a job's profile before any rank starts: created if need be, checked
/// writable, and emptied of an earlier job's rank files. Returns it as an absolute path.
pub fn prepare(dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the profile directory {}: {e}", dir.display()))?;
    let dir = std::fs::canonicalize(dir).map_err(|e| format!("cannot resolve {}: {e}", dir.display()))?;
    let probe = dir.join(".braid-write-check");
    std::fs::write(&probe, b"").map_err(|e| format!("cannot write into the profile directory {}: {e}", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    for (_, path) in rank_files(&dir)? {
        std::fs::remove_file(&path).map_err(|e| format!("cannot remove the earlier profile {}: {e}", path.display()))?;
    }
    Ok(dir)
}

/// The rank files in `dir`, as (rank, path), in rank order.
pub fn rank_files(dir: &Path) -> Result<Vec<(usize, PathBuf)>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read the profile directory {}: {e}", dir.display()))?;
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(rank) = name.strip_prefix("rank-").and_then(|rest| rest.strip_suffix(".json")).and_then(|rank| rank.parse::<usize>().ok()) {
            found.push((rank, entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

/// Reads every rank file of `dir`. Fails, naming the file, on one that cannot be read or is not
/// a rank file of the same job as the others.
pub fn load(dir: &Path) -> Result<Vec<RankFile>, String> {
    let found = rank_files(dir)?;
    if found.is_empty() {
        let merged = dir.join("profile.json").is_file();
        return Err(if merged {
            format!("{} holds a profile.json but no rank files (rank-N.json) to make it from", dir.display())
        } else {
            format!("{} holds no rank files (rank-N.json): no rank of a profiled job reached MPI_Finalize there", dir.display())
        });
    }
    let mut files: Vec<RankFile> = Vec::with_capacity(found.len());
    for (rank, path) in found {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let file = RankFile::parse(&text).map_err(|e| format!("{} (rank {rank}): {e}", path.display()))?;
        if file.rank != rank {
            return Err(format!("{} says it is rank {}", path.display(), file.rank));
        }
        if let Some(first) = files.first() {
            if first.size != file.size {
                return Err(format!("{} is from a job of {} ranks, rank {}'s file from one of {}: the directory mixes jobs", path.display(), file.size, first.rank, first.size));
            }
        }
        files.push(file);
    }
    Ok(files)
}

fn matrix_csv(matrix: &Matrix) -> String {
    let n = matrix.len();
    let mut text = String::from("from\\to");
    for column in 0..n {
        text += &format!(",{column}");
    }
    text.push('\n');
    for (row, values) in matrix.iter().enumerate() {
        text += &row.to_string();
        for value in values {
            text += &format!(",{value}");
        }
        text.push('\n');
    }
    text
}

/// The matrix made symmetric (i to j plus j to i), as n lines of n integers: what Open MPI's
/// monitoring tools write and TreeMatch reads.
pub fn mat_text(matrix: &Matrix) -> String {
    let mut text = String::new();
    for (i, row) in matrix.iter().enumerate() {
        let row: Vec<String> = row.iter().enumerate().map(|(j, &value)| (value + matrix[j][i]).to_string()).collect();
        text += &row.join(" ");
        text.push('\n');
    }
    text
}

/// Writes profile.json and the other formats into `dir`; returns the files written.
pub fn write_outputs(dir: &Path, profile: &Profile, files: &[RankFile]) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    let mut put = |name: &str, text: String| -> Result<(), String> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(path);
        Ok(())
    };
    put("profile.json", serde_json::to_string_pretty(profile).map_err(|e| e.to_string())? + "\n")?;
    put("bytes.csv", matrix_csv(&profile.bytes))?;
    put("messages.csv", matrix_csv(&profile.messages))?;
    for (class, matrix) in &profile.bytes_by_transport {
        put(&format!("bytes-{class}.csv"), matrix_csv(matrix))?;
    }
    put("bytes.mat", mat_text(&profile.bytes))?;
    put("messages.mat", mat_text(&profile.messages))?;
    let mut functions = String::from("rank,phase,function,calls,time_s,bytes\n");
    for phase in &profile.phases {
        for entry in &phase.functions {
            functions += &format!("{},{},{},{},{:.9},{}\n", entry.rank, phase.name, entry.stats.name, entry.stats.calls, entry.stats.time, entry.stats.bytes);
        }
    }
    put("functions.csv", functions)?;
    let mut ranks = String::from("rank,node,pid,wall_time_s,mpi_time_s,blocked_time_s,cpus_seen\n");
    for rank in &profile.ranks {
        let blocked = rank.blocked_time.map_or(String::new(), |time| format!("{time:.9}"));
        let cpus: Vec<String> = rank.cpus_seen.iter().map(u32::to_string).collect();
        ranks += &format!("{},{},{},{:.9},{:.9},{blocked},{}\n", rank.rank, rank.node, rank.pid, rank.wall_time, rank.mpi_time, cpus.join(" "));
    }
    put("ranks.csv", ranks)?;
    for file in files {
        put(&format!("rank-{}.prof", file.rank), merge::monitoring_lines(file))?;
    }
    Ok(written)
}

/// Merges the rank files of `dir` and writes the job's profile there.
pub fn merge_directory(dir: &Path) -> Result<Profile, String> {
    let files = load(dir)?;
    let profile = merge::merge(&files);
    write_outputs(dir, &profile, &files)?;
    Ok(profile)
}
