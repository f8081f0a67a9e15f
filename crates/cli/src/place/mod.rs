//! `braid place`: a placement of a profiled job's ranks on nodes (blocked, cyclic, or by its
//! measured pattern), with the share of bytes each policy would send across nodes.

pub mod file;
pub mod input;

use std::path::{Path, PathBuf};

use std::process::ExitCode;

use braid_mapping::Traffic;
use clap::ValueEnum;

use crate::cluster::Cluster;
use crate::report::{bytes_text, rank_list};
use file::{Format, Placement};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Policy {
    /// Keep the ranks that exchange most on one node (a balanced partition of the bytes matrix),
    /// heavy talkers on neighbouring cores.
    Pattern,
    /// Consecutive ranks fill a node, then the next (`--map-by core`).
    Blocked,
    /// Rank r on node r mod nodes (`--map-by node`).
    Cyclic,
}

const POLICIES: [Policy; 3] = [Policy::Blocked, Policy::Cyclic, Policy::Pattern];

impl Policy {
    fn name(self) -> &'static str {
        match self {
            Policy::Pattern => "pattern",
            Policy::Blocked => "blocked",
            Policy::Cyclic => "cyclic",
        }
    }
}

#[derive(clap::Args)]
pub struct PlaceArgs {
    /// A profiled job's directory (`braid run --profile DIR`), or a traffic matrix as a `.mat`
    /// file (n lines of n numbers, as Open MPI's monitoring tools and TreeMatch write).
    #[arg(value_name = "PROFILE")]
    input: PathBuf,
    /// Place on the nodes of this virtual cluster.
    #[arg(long, value_name = "NAME", conflicts_with = "hosts", required_unless_present = "hosts")]
    cluster: Option<String>,
    /// Place on these hosts (comma-separated).
    #[arg(long, value_name = "H1,H2,...")]
    hosts: Option<String>,
    /// Ranks per node, at most.
    #[arg(long, value_name = "P")]
    ppn: u32,
    #[arg(long, value_enum, default_value = "pattern")]
    policy: Policy,
    /// Write the placement here [default: standard output, with the comparison on standard error].
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "braid")]
    format: Format,
    /// What one message costs beyond its bytes, in bytes: what a node's rails carry during one
    /// message's latency [default: from the cluster's sampled rail profiles (`braid sample`),
    /// else 1024, about 10 us at 1 Gbit/s]. Messages count only from a profile.
    #[arg(long, value_name = "BYTES")]
    message_cost: Option<u64>,
    /// The pattern placement is written only when it lowers the predicted cost of the traffic
    /// across nodes by this much against the better of blocked and cyclic; otherwise that one is.
    #[arg(long, value_name = "PERCENT", default_value_t = DEFAULT_MIN_GAIN)]
    min_gain: f64,
}

/// `--message-cost`'s default: about one message's latency on a 1 Gbit/s Ethernet rail.
pub const DEFAULT_MESSAGE_COST: u64 = 1024;
/// `--min-gain`'s default: predictions closer than this are within what a run's noise and the
/// costs the bytes do not show (CPU sharing, message sizes) decide.
pub const DEFAULT_MIN_GAIN: f64 = 5.0;

pub fn run(args: &PlaceArgs) -> ExitCode {
    match place(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("braid place: {message}");
            ExitCode::from(2)
        }
    }
}

fn place(args: &PlaceArgs) -> Result<(), String> {
    let nodes = node_names(args.cluster.as_deref(), args.hosts.as_deref())?;
    let measured = input::read(&args.input)?;
    if !measured.missing_ranks.is_empty() {
        eprintln!("braid place: warning: rank(s) {} left no profile; their traffic counts as none", rank_list(&measured.missing_ranks));
    }
    if !(0.0..100.0).contains(&args.min_gain) {
        return Err(format!("--min-gain {} must be a percentage from 0 up to 100", args.min_gain));
    }
    let (message_cost, cost_source) = match (args.message_cost, &args.cluster) {
        (Some(cost), _) => (cost, "--message-cost".to_string()),
        (None, Some(name)) => match rail_message_cost(&Cluster::load(name)?, Path::new(&rail_profile_dir())) {
            Some(rails) => (rails.message_cost, format!("the rails' sampled profiles: {:.1} us latency, {:.0} MB/s per node", rails.latency_ns / 1e3, rails.bytes_per_second / 1e6)),
            None => (DEFAULT_MESSAGE_COST, "the default: no sampled rail profile (braid sample --cluster)".to_string()),
        },
        (None, None) => (DEFAULT_MESSAGE_COST, "the default".to_string()),
    };
    let bytes = Traffic::from_matrix(&measured.bytes)?;
    let cost = Traffic::from_matrix(&measured.cost(message_cost))?;
    let messages = measured.messages.as_deref().map(Traffic::from_matrix).transpose()?;
    let capacities = vec![args.ppn as usize; nodes.len()];
    let placements = POLICIES.iter().map(|&policy| Ok((policy, placement(&cost, &nodes, &capacities, policy, args.min_gain)?))).collect::<Result<Vec<_>, String>>()?;
    let mut comparison = format!("{} ranks on {} node(s) of at most {}; bytes between ranks: {}\n", bytes.size(), nodes.len(), args.ppn, bytes_text(bytes.total() as f64));
    if measured.messages.is_some() {
        comparison += &format!("a message counts as {message_cost} bytes ({cost_source})\n");
    }
    comparison += "policy     bytes across nodes   share   messages across\n";
    for (policy, placement) in &placements {
        let across = bytes.crossing(&placement.node_of_rank);
        let messages_across = messages.as_ref().map_or("-".to_string(), |messages| format!("{:.1}%", share(messages.crossing(&placement.node_of_rank), messages.total())));
        let chosen = if *policy == args.policy { "  <- written" } else { "" };
        let same = match *policy {
            Policy::Pattern => placements
                .iter()
                .find(|(other, other_placement)| *other != Policy::Pattern && other_placement.node_of_rank == placement.node_of_rank)
                .map(|(other, _)| format!(" (= {})", other.name())),
            _ => None,
        };
        comparison += &format!("{:<10} {:>18}  {:>5.1}%  {messages_across:>15}{}{chosen}\n", policy.name(), bytes_text(across as f64), share(across, bytes.total()), same.unwrap_or_default());
    }
    let chosen = &placements.iter().find(|(policy, _)| *policy == args.policy).expect("every policy is computed").1;
    let note = format!("{} placement of {} on {} node(s), at most {} per node", args.policy.name(), args.input.display(), nodes.len(), args.ppn);
    let text = chosen.text(args.format, &note);
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            print!("{comparison}");
            println!("Placement ({}): {}", args.policy.name(), path.display());
        }
        None => {
            eprint!("{comparison}");
            print!("{text}");
        }
    }
    Ok(())
}

/// The rails of a cluster as `braid place` weighs them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RailCost {
    /// One message's latency times the bandwidth, in bytes.
    pub message_cost: u64,
    pub latency_ns: f64,
    pub bytes_per_second: f64,
}

/// Where sampled rail profiles are cached (BRAID_PROFILE_DIR).
fn rail_profile_dir() -> String {
    braid_config::Config::from_env().map(|config| config.profile_dir).unwrap_or_else(|_| "/var/tmp/braid/profiles".to_string())
}

/// `cluster`'s rails from the profiles `braid sample` cached in `dir`: per node, its rails
/// together (their lowest latency, their summed bandwidth), averaged over the nodes that have
/// profiles. `None` when none has.
pub fn rail_message_cost(cluster: &Cluster, dir: &Path) -> Option<RailCost> {
    let files: Vec<PathBuf> = std::fs::read_dir(dir).ok()?.flatten().map(|entry| entry.path()).collect();
    let mut nodes = Vec::new();
    for node in &cluster.nodes {
        let prefix = format!("netns-{}-", node.namespace);
        let profiles: Vec<_> =
            files.iter().filter(|path| path.file_name().is_some_and(|name| name.to_string_lossy().starts_with(&prefix))).filter_map(|path| braid_transport::profile_cache::load(path).ok()).collect();
        if !profiles.is_empty() {
            let latency = profiles.iter().map(|profile| profile.predict(0)).fold(f64::INFINITY, f64::min);
            let bandwidth: f64 = profiles.iter().map(|profile| profile.bandwidth()).filter(|bandwidth| bandwidth.is_finite()).sum();
            nodes.push((latency, bandwidth));
        }
    }
    if nodes.is_empty() {
        return None;
    }
    let latency_ns = nodes.iter().map(|node| node.0).sum::<f64>() / nodes.len() as f64;
    let bytes_per_second = nodes.iter().map(|node| node.1).sum::<f64>() / nodes.len() as f64;
    Some(RailCost { message_cost: (latency_ns * 1e-9 * bytes_per_second).round() as u64, latency_ns, bytes_per_second })
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The nodes of virtual cluster `cluster`, or the comma-separated `hosts`.
pub fn node_names(cluster: Option<&str>, hosts: Option<&str>) -> Result<Vec<String>, String> {
    match (cluster, hosts) {
        (Some(name), _) => Ok(Cluster::load(name)?.nodes.iter().map(|node| node.namespace.clone()).collect()),
        (None, Some(list)) => {
            let hosts: Vec<String> = list.split(',').map(str::trim).map(str::to_string).collect();
            match hosts.iter().any(String::is_empty) {
                true => Err(format!("{list:?} names an empty host")),
                false => Ok(hosts),
            }
        }
        (None, None) => Err("name the nodes: --cluster NAME or --hosts H1,H2,...".to_string()),
    }
}

/// `policy`'s placement of `traffic`'s ranks (weighted by their cost) on `nodes` holding
/// `capacities` ranks each. The pattern placement stands only if it lowers the cost across nodes
/// by `min_gain` percent against the better of blocked and cyclic (blocked on a tie).
pub fn placement(traffic: &Traffic, nodes: &[String], capacities: &[usize], policy: Policy, min_gain: f64) -> Result<Placement, String> {
    let size = traffic.size();
    let node_of_rank = match policy {
        Policy::Blocked => braid_mapping::blocked(size, capacities)?,
        Policy::Cyclic => braid_mapping::cyclic(size, capacities)?,
        Policy::Pattern => {
            let (blocked, cyclic) = (braid_mapping::blocked(size, capacities)?, braid_mapping::cyclic(size, capacities)?);
            let better = if traffic.crossing(&cyclic) < traffic.crossing(&blocked) { cyclic } else { blocked };
            let pattern = braid_mapping::by_pattern(traffic, capacities)?;
            let worth_it = (traffic.crossing(&pattern) as f64) < traffic.crossing(&better) as f64 * (1.0 - min_gain / 100.0);
            if worth_it {
                pattern
            } else {
                better
            }
        }
    };
    let mut slot_of_rank = vec![0; size];
    for node in 0..nodes.len() {
        let members: Vec<usize> = (0..size).filter(|&rank| node_of_rank[rank] == node).collect();
        let order = match policy {
            Policy::Pattern => braid_mapping::order_within(traffic, &members),
            Policy::Blocked | Policy::Cyclic => members,
        };
        for (slot, rank) in order.into_iter().enumerate() {
            slot_of_rank[rank] = slot;
        }
    }
    Ok(Placement { nodes: nodes.to_vec(), node_of_rank, slot_of_rank })
}

/// The job profiled in `profile` (`--map-by pattern:DIR`), which must be of `ranks` ranks.
pub fn read_profile(profile: &Path, ranks: u32) -> Result<input::Measured, String> {
    let measured = input::read(profile)?;
    if measured.bytes.len() != ranks as usize {
        return Err(format!("{} profiles a job of {} ranks, not {ranks}", profile.display(), measured.bytes.len()));
    }
    Ok(measured)
}

/// The pattern placement of a profiled job on `nodes` holding `per_node` ranks each.
pub fn pattern_placement(measured: &input::Measured, nodes: &[String], per_node: u32) -> Result<Placement, String> {
    let traffic = Traffic::from_matrix(&measured.cost(DEFAULT_MESSAGE_COST))?;
    placement(&traffic, nodes, &vec![per_node as usize; nodes.len()], Policy::Pattern, DEFAULT_MIN_GAIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    #[test]
    fn the_pattern_placement_stands_only_when_it_gains_enough() {
        // 0-2 and 1-3 heavy: blocked splits both, the pattern keeps them.
        let heavy = Traffic::from_edges(4, [(0, 2, 100), (1, 3, 100), (0, 1, 1)]);
        let placed = placement(&heavy, &nodes(), &[2, 2], Policy::Pattern, 5.0).unwrap();
        assert_eq!(heavy.crossing(&placed.node_of_rank), 1);
        // A ring of 4: every placement of 2 + 2 cuts two links; the pattern keeps blocked.
        let ring = Traffic::from_edges(4, [(0, 1, 10), (1, 2, 10), (2, 3, 10), (3, 0, 10), (0, 2, 1)]);
        assert_eq!(placement(&ring, &nodes(), &[2, 2], Policy::Pattern, 5.0).unwrap().node_of_rank, [0, 0, 1, 1]);
        // {0,3} {1,2} cuts 80 where blocked and cyclic cut 82: under 5% is not enough.
        let slight = Traffic::from_edges(4, [(0, 1, 20), (0, 2, 20), (1, 3, 20), (2, 3, 20), (0, 3, 21), (1, 2, 21)]);
        assert_eq!(placement(&slight, &nodes(), &[2, 2], Policy::Pattern, 5.0).unwrap().node_of_rank, [0, 0, 1, 1]);
        let keen = placement(&slight, &nodes(), &[2, 2], Policy::Pattern, 0.0).unwrap();
        assert_eq!(slight.crossing(&keen.node_of_rank), 80);
        // When cyclic is the better deal, it is kept.
        let pairs = Traffic::from_edges(4, [(0, 2, 10), (1, 3, 10), (0, 1, 1)]);
        assert_eq!(placement(&pairs, &nodes(), &[2, 2], Policy::Pattern, 50.0).unwrap().node_of_rank, [0, 1, 0, 1]);
    }

    #[test]
    fn the_message_cost_comes_from_each_nodes_rails() {
        let dir = std::env::temp_dir().join(format!("braid-place-rails-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cluster = Cluster::plan("pc", 2, &[1_000_000_000, 1_000_000_000], 1500).unwrap();
        assert_eq!(rail_message_cost(&cluster, &dir), None);
        // Node 0: two rails of 10 us and 100 MB/s; node 1: one rail of 20 us and 100 MB/s.
        let rail = |latency: f64| braid_lane::Profile::from_model(latency, 1e8, 1 << 20);
        braid_transport::profile_cache::save(&rail(10_000.0), &dir.join("netns-braid-pc-n0-rail0-a.profile")).unwrap();
        braid_transport::profile_cache::save(&rail(12_000.0), &dir.join("netns-braid-pc-n0-rail1-a.profile")).unwrap();
        braid_transport::profile_cache::save(&rail(20_000.0), &dir.join("netns-braid-pc-n1-rail0-a.profile")).unwrap();
        braid_transport::profile_cache::save(&rail(1.0), &dir.join("netns-braid-pc-n10-rail0-a.profile")).unwrap();
        let cost = rail_message_cost(&cluster, &dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!((cost.latency_ns - 15_000.0).abs() < 100.0, "{cost:?}");
        assert!((cost.bytes_per_second - 1.5e8).abs() < 1e6, "{cost:?}");
        assert!((2200..=2300).contains(&cost.message_cost), "{cost:?}");
    }

    #[test]
    fn messages_add_their_cost_to_the_bytes() {
        let measured = input::Measured { bytes: vec![vec![0, 10], vec![0, 0]], messages: Some(vec![vec![0, 2], vec![1, 0]]), compute_seconds: None, missing_ranks: Vec::new() };
        assert_eq!(measured.cost(100), [[0, 210], [100, 0]]);
    }

    #[test]
    fn ranks_that_compute_most_take_cores_first_then_those_that_communicate_least() {
        let bytes = vec![vec![0, 50, 1], vec![50, 0, 0], vec![1, 0, 0]];
        let measured = input::Measured { bytes: bytes.clone(), messages: None, compute_seconds: Some(vec![1.0, 3.0, 1.0]), missing_ranks: Vec::new() };
        assert_eq!(measured.rank_order(0), [1, 2, 0]);
        let unknown = input::Measured { bytes, messages: None, compute_seconds: None, missing_ranks: Vec::new() };
        assert_eq!(unknown.rank_order(0), [2, 1, 0]);
    }
}
