//! `braid sample --cluster NAME`: profiles every rail of a virtual cluster. The parent starts a
//! 2-rank job (one rank per node) running the hidden `braid sample-rank`; rank 0 prints one line
//! per measured size, which the parent turns into a progress bar and, at the end, a table.
//! Profiles are cached per rail identity (what the engine loads at start-up) and reused unless
//! `--force`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitCode, Stdio};

use braid_config::Config;
use braid_engine::sampling::{self, SamplePlan, FULL_LARGEST, FULL_REPETITIONS};
use braid_transport::profile_cache;
use indicatif::{ProgressBar, ProgressStyle};

/// Rank 0's lines to the parent: `braid-sample <rail> <size> <one_way_nanos> <measured|cached>`.
const LINE_PREFIX: &str = "braid-sample";

/// The parent: runs the job, shows progress, prints the table.
pub fn run(cluster: &str, force: bool) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => {
            eprintln!("braid sample: cannot find the braid executable: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut command = Command::new(&exe);
    command.args(["run", "--cluster", cluster, "-n", "2", "--ppn", "1"]).arg(&exe).arg("sample-rank");
    if force {
        command.arg("--force");
    }
    let mut child = match command.stdout(Stdio::piped()).spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!("braid sample: cannot start the sampling job: {error}");
            return ExitCode::FAILURE;
        }
    };
    let sizes = sampling::sizes(FULL_LARGEST).len() as u64;
    let bar = ProgressBar::new(sizes);
    bar.set_style(ProgressStyle::with_template("{prefix:>8} [{bar:40}] {pos}/{len} sizes {msg}").expect("valid template").progress_chars("=> "));
    let mut results: Vec<(String, usize, f64, bool)> = Vec::new();
    let stdout = child.stdout.take().expect("piped stdout");
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [LINE_PREFIX, rail, size, nanos, how] => {
                let (Ok(size), Ok(nanos)) = (size.parse::<usize>(), nanos.parse::<f64>()) else { continue };
                if bar.prefix() != *rail {
                    bar.set_prefix(rail.to_string());
                    bar.set_position(0);
                }
                bar.inc(1);
                bar.set_message(format!("{size} bytes"));
                results.push((rail.to_string(), size, nanos, *how == "cached"));
            }
            _ => bar.println(line),
        }
    }
    bar.finish_and_clear();
    let status = match child.wait() {
        Ok(status) => status,
        Err(error) => {
            eprintln!("braid sample: {error}");
            return ExitCode::FAILURE;
        }
    };
    if !status.success() {
        eprintln!("braid sample: the sampling job failed ({status})");
        return ExitCode::FAILURE;
    }
    print_table(&results);
    ExitCode::SUCCESS
}

fn print_table(results: &[(String, usize, f64, bool)]) {
    let mut rails: Vec<&str> = Vec::new();
    for (rail, ..) in results {
        if !rails.contains(&rail.as_str()) {
            rails.push(rail);
        }
    }
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{:>10}", "size");
    for rail in &rails {
        let cached = results.iter().any(|(name, .., cached)| name == rail && *cached);
        let _ = write!(out, " {:>24}", format!("{rail}{}: us, MB/s", if cached { " (cached)" } else { "" }));
    }
    let _ = writeln!(out);
    for size in sampling::sizes(FULL_LARGEST) {
        let _ = write!(out, "{size:>10}");
        for rail in &rails {
            match results.iter().find(|(name, s, ..)| name == rail && *s == size) {
                Some((_, _, nanos, _)) => {
                    let bandwidth = if *nanos > 0.0 { size as f64 * 1e3 / nanos } else { 0.0 };
                    let _ = write!(out, " {:>13.1} {:>10.1}", nanos / 1e3, bandwidth);
                }
                None => {
                    let _ = write!(out, " {:>24}", "-");
                }
            }
        }
        let _ = writeln!(out);
    }
}

/// One rank of the sampling job (`braid sample-rank`).
pub fn sample_rank(force: bool) -> ExitCode {
    match sample_rails(force) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("braid sample-rank: {error}");
            ExitCode::FAILURE
        }
    }
}

fn sample_rails(force: bool) -> Result<(), String> {
    let config = Config::from_env().map_err(|error| error.to_string())?;
    let mut bootstrap = braid_pmi::client::from_env_or_singleton().map_err(|error| error.to_string())?;
    let (rank, size) = (bootstrap.rank(), bootstrap.size());
    if size != 2 {
        return Err(format!("sampling runs on exactly 2 ranks (one per node), not {size}"));
    }
    let (mut rails, caches) = sampling::tcp_rails(&config).map_err(|error| error.to_string())?;
    if rails.is_empty() {
        return Err("no network rail to sample (see BRAID_RAILS)".to_string());
    }
    for rail in &mut rails {
        rail.connect(bootstrap.as_mut()).map_err(|error| format!("{}: {error}", rail.name()))?;
    }
    let peer = 1 - rank;
    // Each node caches the rails under its own identity: a rail is measured unless both nodes
    // have its profile. Rank 0 decides, so both ranks run the same ping-pongs.
    const PLAN_KEY: &str = "braid-sample-cli-plan";
    let measured: Vec<&str> = caches.iter().map(|cache| if cache.measured { "1" } else { "0" }).collect();
    bootstrap.put(&format!("braid-sample-cli-cached-{rank}"), &measured.join(",")).map_err(|error| error.to_string())?;
    bootstrap.fence().map_err(|error| error.to_string())?;
    if rank == 0 {
        let other = bootstrap.get("braid-sample-cli-cached-1").map_err(|error| error.to_string())?;
        let other_cached: Vec<bool> = other.split(',').map(|flag| flag == "1").collect();
        let plan: Vec<&str> = (0..rails.len()).map(|rail| if force || !caches[rail].measured || !other_cached.get(rail).copied().unwrap_or(false) { "measure" } else { "cached" }).collect();
        bootstrap.put(PLAN_KEY, &plan.join(",")).map_err(|error| error.to_string())?;
    }
    bootstrap.fence().map_err(|error| error.to_string())?;
    let plan = bootstrap.get(PLAN_KEY).map_err(|error| error.to_string())?;
    let stdout = std::io::stdout();
    let mut shared = Vec::new();
    for (index, ((rail, cache), what)) in rails.iter_mut().zip(&caches).zip(plan.split(',')).enumerate() {
        if !rail.reaches(peer) {
            return Err(format!("{} does not reach the other node", rail.name()));
        }
        let name = rail.name().trim_start_matches("tcp:").to_string();
        if what == "cached" {
            if rank == 0 {
                let profile = profile_cache::load(&cache.file).map_err(|error| error.to_string())?;
                for sample in profile.samples() {
                    let _ = writeln!(stdout.lock(), "{LINE_PREFIX} {name} {} {:.0} cached", sample.size, sample.nanos);
                }
            }
            continue;
        }
        let plan = SamplePlan { largest: FULL_LARGEST, repetitions: FULL_REPETITIONS, deadline: None };
        let report = |size: usize, nanos: f64| {
            let mut out = stdout.lock();
            let _ = writeln!(out, "{LINE_PREFIX} {name} {size} {nanos:.0} measured");
            let _ = out.flush();
        };
        if let Some(profile) = sampling::ping_pong(rail.as_mut(), peer, rank == 0, &plan, report).map_err(|error| error.to_string())? {
            profile_cache::save(&profile, &cache.file).map_err(|error| format!("cannot save {}: {error}", cache.file.display()))?;
            bootstrap.put(&format!("braid-sample-cli-profile-{index}"), &sampling::encode_profile(&profile)).map_err(|error| error.to_string())?;
        }
        shared.push(index);
    }
    bootstrap.fence().map_err(|error| error.to_string())?;
    // The other node caches what rank 0 measured, under its own identity of the same link.
    if rank == 1 {
        for index in shared {
            let text = bootstrap.get(&format!("braid-sample-cli-profile-{index}")).map_err(|error| error.to_string())?;
            let profile = sampling::decode_profile(&text).ok_or_else(|| format!("rank 0 shared a malformed profile {text:?}"))?;
            let file = &caches[index].file;
            profile_cache::save(&profile, file).map_err(|error| format!("cannot save {}: {error}", file.display()))?;
        }
    }
    bootstrap.finalize().map_err(|error| error.to_string())
}
