//! `braid`: the job launcher (`braid run`) and tools to inspect the machine and the settings.

mod cluster;
#[cfg(test)]
mod hostile_input;
mod launcher;
mod output;
mod place;
mod placement;
mod preflight;
mod probe;
mod profile;
mod report;
mod sample;
mod slurm;

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use braid_sys::affinity;
use braid_sys::topology::{format_cpu_list, Cache, Topology};
use clap::{Parser, Subcommand};

use crate::cluster::Cluster;
use crate::launcher::{HostLayout, JobRequest, NodeLayout};
use crate::placement::{BindTo, MapBy};

#[derive(Parser)]
#[command(name = "braid", version, about = "Braid: a multicore-aware MPI library — launcher and tools")]
struct Cli {
    #[command(subcommand)]
    command: Commands,
}

#[derive(Subcommand)]
enum Commands {
    /// Start PROGRAM as N ranks of one MPI job on this machine.
    #[command(after_help = "Each rank gets PMI_FD, PMI_RANK and PMI_SIZE (PMI-1, as with MPICH's Hydra) and \
BRAID_LOCAL_RANK / BRAID_LOCAL_SIZE.\n\
Ranks are bound to a core each when there are enough usable cores, and unbound otherwise.\n\
If a rank fails (non-zero exit, a signal, MPI_Abort), the others are stopped (SIGTERM, then SIGKILL \
after 1 s) and braid run exits with that rank's code (128 + signal for a signal). A rank that fails \
after MPI_Finalize stops no rank that has called MPI_Finalize too: those end on their own, their \
output complete; the others get 1 s to reach it.\n\
The BRAID_* settings are checked before any rank starts: a bad value ends braid run with status 2.\n\
MPIEXEC_TIMEOUT=S limits the job to S seconds (0 or unset: no limit), as with MPICH and Open MPI: \
past it every rank is stopped and braid run exits with status 255, as MPICH's mpiexec does.\n\
Options come before PROGRAM: the first argument that is not an option (or the one after --) is \
PROGRAM, and everything after it is PROGRAM's.\n\
SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 are passed on to every rank.\n\n\
With --cluster, ranks run inside the cluster's nodes (network namespaces), --ppn per node, in \
blocks (--map-by node: round-robin), with BRAID_RAILS set to the cluster's rails unless BRAID_RAILS \
names interfaces; every node shares this machine's cores.\n\n\
With --hosts, rank r on host H is started as `AGENT H '<command>'` (AGENT: --launch-agent, default \
ssh), where the command enters this directory and execs PROGRAM with PMI_PORT (this machine's \
address toward H and a port braid run listens on), PMI_ID, BRAID_LOCAL_RANK, BRAID_LOCAL_SIZE and \
every BRAID_* variable of this environment. The agent stands for the rank: its output, its exit \
status and its pid are the rank's, and ending the job signals the agent. Ranks are not bound. \
Remote processes end with ssh only when ssh has a terminal: use --launch-agent \"ssh -tt\" (plain \
ssh may leave ranks running when the job is ended).\n\n\
Inside a Slurm allocation (SLURM_JOB_ID and SLURM_JOB_NODELIST set, as in salloc and sbatch) the \
ranks run on the allocation's nodes, each started as a job step by `srun --mpi=none --overlap \
--nodes=1 --ntasks=1 --nodelist NODE sh -c '<command>'`, as with --hosts; --launcher local keeps \
them on this machine.\n\n\
Examples:\n  braid run -n 4 ./ring\n  braid run -n 8 --map-by socket --tag-output ./app --size 1m\n  \
braid run --cluster lab -n 4 --ppn 2 ./app\n  \
braid run --hosts node1,node2 --ppn 2 -n 4 --launch-agent \"ssh -tt\" ./app")]
    Run(RunArgs),
    /// Build, inspect and remove virtual clusters: nodes are network namespaces joined by shaped rails.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// One TCP stream between namespaces, to check a network and its rate (for tests).
    #[command(subcommand, hide = true)]
    NetProbe(ProbeCommand),
    /// Profile every rail of virtual cluster NAME (cached per rail; reused unless --force).
    Sample {
        /// The cluster whose rails are sampled (one rank on each of its first two nodes).
        #[arg(long, value_name = "NAME")]
        cluster: String,
        /// Measure again even where a cached profile exists.
        #[arg(long)]
        force: bool,
    },
    /// One rank of `braid sample` (started by it).
    #[command(hide = true)]
    SampleRank {
        #[arg(long)]
        force: bool,
    },
    /// Merge the rank files of a profiled job in DIR (braid run --profile, or BRAID_PROFILE with
    /// the profiler preloaded under another launcher) into DIR/profile.json, write DIR/report.html
    /// and print a summary.
    Report {
        /// The profile directory.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Place a profiled job's ranks on nodes: blocked, cyclic, or by its measured pattern (the
    /// ranks that exchange most share a node), comparing the bytes each would send across nodes.
    #[command(after_help = "PROFILE is a directory of `braid run --profile` (or BRAID_PROFILE under another launcher), \
or a `.mat` matrix (n lines of n byte counts, as Open MPI's monitoring tools write), so a job profiled under another \
MPI can be placed too.\n\n\
The placement runs with `braid run --placement FILE` (with the same --cluster or --hosts), or in one step with \
`braid run --map-by pattern:PROFILE`. --format openmpi-rankfile, slurm and hydra write the same placement for \
`mpirun --rankfile`, `srun --distribution=arbitrary` (SLURM_HOSTFILE) and `mpiexec -f`.\n\n\
Example:\n  braid run --profile prof --cluster lab -n 8 --ppn 2 ./app\n  braid place prof --cluster lab --ppn 2 -o app.placement\n  \
braid run --placement app.placement --cluster lab -n 8 --ppn 2 ./app")]
    Place(place::PlaceArgs),
    /// Print this machine's layout: packages, NUMA nodes, cores and caches.
    Topology,
    /// Print every BRAID_* setting with its default and meaning, and check the current environment.
    Config {
        /// Print the settings as the Markdown page docs/settings.md instead.
        #[arg(long)]
        markdown: bool,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// Number of ranks to start.
    // Hyphen values reach the parser, which names a misplaced option instead of a missing N.
    #[arg(short = 'n', long = "np", value_name = "N", allow_hyphen_values = true, value_parser = parse_rank_count)]
    ranks: u32,

    /// How consecutive ranks are spread: core, socket, numa (over this machine's cores), node
    /// (round-robin over the nodes of --cluster or --hosts), or pattern:PROFILE_DIR (the nodes
    /// that keep the most of a profiled job's traffic inside nodes, as `braid place` computes;
    /// on one node, heavy talkers on neighbouring cores).
    #[arg(long, default_value = "core", value_name = "POLICY", value_parser = parse_map_by)]
    map_by: MapChoice,

    /// Cores that take a NIC's interrupts or its steered receive processing (see `braid
    /// topology`; on a virtual cluster, its --rx-cpus): avoid leaves them out when the other
    /// cores are enough and gives them last otherwise (with --map-by pattern:, to the ranks that
    /// communicate most); ignore treats them like the others.
    #[arg(long, value_enum, default_value = "avoid", value_name = "POLICY")]
    network_cores: NetworkCoresPolicy,

    /// Run each rank on the node a placement file names (written by `braid place`), with
    /// --cluster or --hosts.
    #[arg(long, value_name = "FILE", conflicts_with = "map_by")]
    placement: Option<PathBuf>,

    /// What each rank is bound to [default: core when N <= usable cores, else none].
    #[arg(long, value_enum, value_name = "UNIT")]
    bind_to: Option<BindTo>,

    /// Prefix every output line with the rank that wrote it, as `[rank] `.
    #[arg(long)]
    tag_output: bool,

    /// Run the ranks on the nodes of this virtual cluster (see `braid cluster`).
    #[arg(long, value_name = "NAME")]
    cluster: Option<String>,

    /// Ranks per node, with --cluster or --hosts [default: N over the number of nodes, rounded up].
    #[arg(long, value_name = "P")]
    ppn: Option<u32>,

    /// Run the ranks on these hosts (comma-separated), started through the launch agent.
    #[arg(long, value_name = "H1,H2,...")]
    hosts: Option<String>,

    /// With --hosts: the command that runs a command on a host, given the host and the command
    /// (split on whitespace) [default: ssh].
    #[arg(long, value_name = "CMD")]
    launch_agent: Option<String>,

    /// What starts the ranks: auto (srun inside a Slurm allocation, on its nodes; else this
    /// machine), local (this machine), slurm (srun; an error outside an allocation).
    #[arg(long, value_enum, default_value = "auto", value_name = "LAUNCHER")]
    launcher: slurm::LauncherChoice,

    /// Profile the job into DIR: every rank's MPI calls, time and traffic, merged at the end into
    /// DIR/profile.json (see `braid report`) [default: BRAID_PROFILE, if set].
    #[arg(long, value_name = "DIR")]
    profile: Option<PathBuf>,

    /// The program to start, then its arguments: options end at the first argument that is not
    /// one (or at `--`); what follows is the program's.
    #[arg(value_name = "PROGRAM", required = true, trailing_var_arg = true)]
    command: Vec<OsString>,
}

/// `--network-cores`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum NetworkCoresPolicy {
    Avoid,
    Ignore,
}

/// The cores ranks bound on this machine avoid, and the order in which they take cores.
fn network_cores(args: &RunArgs, measured: Option<&place::input::Measured>) -> Result<placement::NetworkCores, String> {
    if args.hosts.is_some() {
        return Ok(placement::NetworkCores::default());
    }
    let cpus = match &args.cluster {
        _ if args.network_cores == NetworkCoresPolicy::Ignore => Vec::new(),
        Some(name) => Cluster::load(name)?.rx_cpus,
        None => {
            let interfaces = braid_sys::network_cores::interfaces().unwrap_or_default();
            let mut cpus: Vec<usize> = interfaces.iter().filter_map(|interface| braid_sys::network_cores::detect(interface).ok()).flat_map(|cores| cores.cpus()).collect();
            cpus.sort_unstable();
            cpus.dedup();
            cpus
        }
    };
    // The rule of the protocol-stack study: the ranks that compute most and communicate least
    // stay off them (known from a profile).
    let rank_order = match measured {
        Some(measured) if args.cluster.is_some() => measured.rank_order(place::DEFAULT_MESSAGE_COST),
        // On one node: heavy talkers on neighbouring cores, which share the nearest caches.
        Some(measured) => braid_mapping::order_within(&braid_mapping::Traffic::from_matrix(&measured.cost(place::DEFAULT_MESSAGE_COST))?, &(0..args.ranks as usize).collect::<Vec<_>>()),
        None => Vec::new(),
    };
    Ok(placement::NetworkCores { cpus, rank_order })
}

/// CPUs named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CpuList(Vec<usize>);

/// A CPU list argument (`0-3,8`).
fn parse_cpu_list_argument(text: &str) -> Result<CpuList, String> {
    braid_sys::topology::parse_cpu_list(text).filter(|cpus| !cpus.is_empty()).map(CpuList).ok_or_else(|| format!("{text:?} is not a CPU list (such as 0 or 0-1,4)"))
}

/// What `--map-by` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum MapChoice {
    Fixed(MapBy),
    /// The pattern placement of the job profiled in this directory (or `.mat` file).
    Pattern(PathBuf),
}

impl MapChoice {
    /// The spread over one node's cores.
    fn within_node(&self) -> MapBy {
        match self {
            MapChoice::Fixed(MapBy::Node) | MapChoice::Pattern(_) => MapBy::Core,
            MapChoice::Fixed(map_by) => *map_by,
        }
    }
}

fn parse_map_by(text: &str) -> Result<MapChoice, String> {
    if let Some(profile) = text.strip_prefix("pattern:") {
        return match profile.is_empty() {
            true => Err("pattern: needs the profiled job's directory, as in pattern:./profile".to_string()),
            false => Ok(MapChoice::Pattern(PathBuf::from(profile))),
        };
    }
    <MapBy as clap::ValueEnum>::from_str(text, true).map(MapChoice::Fixed).map_err(|_| format!("expected core, socket, numa, node or pattern:PROFILE_DIR, not {text:?}"))
}

/// The value of `-n`: a whole number of ranks, at least 1. An option in its place (`-n --tag-output 2`)
/// is named as such.
fn parse_rank_count(text: &str) -> Result<u32, String> {
    match text.parse::<i64>() {
        Ok(count) if count >= 1 => u32::try_from(count).map_err(|_| format!("at most {} ranks can be started", u32::MAX)),
        Ok(_) => Err("the number of ranks must be at least 1".to_string()),
        Err(_) if text.starts_with('-') => Err(format!("{text} is an option, but -n must be followed by the number of ranks (e.g. -n 4 {text} ...)")),
        Err(_) => Err("expected the number of ranks, a whole number of at least 1".to_string()),
    }
}

#[derive(Subcommand)]
enum ClusterCommand {
    /// Build cluster NAME: nodes `braid-NAME-nK` with interfaces `mgmt` and `rail0`, `rail1`, ...
    #[command(after_help = "Addresses: mgmt 10.213.0.K+1/24, railR 10.213.R+1.K+1/24 on node K. Each rail is shaped with \
tc tbf on both ends of every link, offloads off. Cached rail profiles of these rails are removed.\n\n\
Example:\n  braid cluster up lab --nodes 2 --rails 2gbit,1gbit")]
    Up {
        name: String,
        /// Number of nodes.
        #[arg(long, value_name = "N")]
        nodes: u32,
        /// Each rail's rate, in tc units (2gbit, 250mbit, 500kbit), comma-separated.
        #[arg(long, value_name = "RATES", required = true, value_delimiter = ',', value_parser = cluster::parse_rate)]
        rails: Vec<u64>,
        /// MTU of every link.
        #[arg(long, default_value_t = 1500)]
        mtu: u32,
        /// Steer every node's receive processing on its rails to these CPUs (RPS), making them the
        /// nodes' network cores, as a NIC's interrupt CPUs are on a real node (e.g. 0 or 0-1).
        #[arg(long, value_name = "LIST", value_parser = parse_cpu_list_argument)]
        rx_cpus: Option<CpuList>,
    },
    /// Change one rail's rate on a built cluster NAME (both ends of every link); rail profiles are kept.
    #[command(after_help = "Jobs keep the rail profiles sampled before, as on a real cluster when other traffic takes a \
rail's share: this is how to test what Braid does with a rail slower than it measured. `braid sample --cluster NAME --force` \
samples the rails again.\n\n\
Example:\n  braid cluster shape lab --rail rail1 --rate 5mbit")]
    Shape {
        name: String,
        /// The rail's interface name (rail0, rail1, ...).
        #[arg(long, value_name = "RAIL")]
        rail: String,
        /// Its new rate, in tc units (2gbit, 250mbit, 500kbit).
        #[arg(long, value_name = "RATE", value_parser = cluster::parse_rate)]
        rate: u64,
    },
    /// Remove cluster NAME: its namespaces (with their links) and its record; half-built ones too.
    Down { name: String },
    /// Describe cluster NAME (default: every cluster) and check that it is intact.
    Status { name: Option<String> },
    /// List the clusters, and braid-* namespaces that belong to none.
    List,
}

#[derive(Subcommand)]
enum ProbeCommand {
    /// Accept one connection, read it to the end, print the bytes and the rate.
    Listen {
        #[arg(long)]
        netns: Option<String>,
        address: SocketAddr,
    },
    /// Connect and send for a while.
    Send {
        #[arg(long)]
        netns: Option<String>,
        address: SocketAddr,
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) if error.kind() == clap::error::ErrorKind::UnknownArgument => {
            eprint!("{}", unknown_option_message(&error));
            return ExitCode::from(2);
        }
        Err(error) => error.exit(),
    };
    match cli.command {
        Commands::Run(args) => run_job(args),
        Commands::Cluster(command) => manage_cluster(command),
        Commands::NetProbe(command) => {
            let outcome = match command {
                ProbeCommand::Listen { netns, address } => probe::listen(netns.as_deref(), address),
                ProbeCommand::Send { netns, address, seconds } => probe::send(netns.as_deref(), address, seconds),
            };
            finish("braid net-probe", outcome)
        }
        Commands::Sample { cluster, force } => sample::run(&cluster, force),
        Commands::SampleRank { force } => sample::sample_rank(force),
        Commands::Report { dir } => report::run(&dir),
        Commands::Place(args) => place::run(&args),
        Commands::Topology => print_topology(),
        Commands::Config { markdown: true } => {
            print!("{}", braid_config::settings_markdown());
            ExitCode::SUCCESS
        }
        Commands::Config { markdown: false } => print_config(),
    }
}

/// Says that an option is unknown, with the usage: clap's "unexpected argument" does not tell the
/// user that options end where the program starts.
fn unknown_option_message(error: &clap::Error) -> String {
    use clap::error::ContextKind;
    let option = error.get(ContextKind::InvalidArg).map(ToString::to_string).unwrap_or_default();
    let usage = error.get(ContextKind::Usage).map(|usage| usage.to_string()).unwrap_or_default();
    // Only `braid run` takes a program, the subcommand whose usage names PROGRAM.
    let where_options_end = if usage.contains("<PROGRAM>") {
        format!("Options come before the program, which starts at the first argument that is not an option or after '--' (to run a program named '{option}': -- {option}).\n\n")
    } else {
        String::new()
    };
    format!("error: unknown option '{option}'\n\n{where_options_end}{usage}\n\nFor more information, try '--help'.\n")
}

fn finish(what: &str, outcome: Result<(), String>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{what}: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run_job(args: RunArgs) -> ExitCode {
    let usage_error = |message: String| {
        eprintln!("braid run: {message}");
        ExitCode::from(2)
    };
    // Every rank would fail in MPI_Init on a bad setting: say so once, before starting any.
    let names: Vec<String> = std::env::vars_os().filter_map(|(name, _)| name.into_string().ok()).collect();
    match preflight::check_settings(|name| std::env::var(name).ok(), names.iter().map(String::as_str)) {
        Ok(warnings) => warnings.iter().for_each(|warning| eprintln!("braid run: warning: {warning}")),
        Err(message) => return usage_error(format!("{message}; no rank was started")),
    }
    let timeout = match preflight::job_timeout(std::env::var(preflight::TIMEOUT_VARIABLE).ok().as_deref()) {
        Ok(timeout) => timeout,
        Err(message) => return usage_error(format!("{message}; no rank was started")),
    };
    if args.cluster.is_some() && args.hosts.is_some() {
        return usage_error("--cluster and --hosts cannot be used together".to_string());
    }
    if args.launch_agent.is_some() && args.hosts.is_none() {
        return usage_error("--launch-agent needs --hosts".to_string());
    }
    if args.launcher == slurm::LauncherChoice::Slurm && (args.hosts.is_some() || args.cluster.is_some()) {
        return usage_error("--launcher slurm runs the ranks on the allocation's nodes: it cannot be used with --hosts or --cluster".to_string());
    }
    // A profiled pattern (--map-by pattern:DIR) is read once, for the nodes and for the cores.
    let measured = match &args.map_by {
        MapChoice::Pattern(profile) => match place::read_profile(profile, args.ranks) {
            Ok(measured) => Some(measured),
            Err(message) => return usage_error(message),
        },
        MapChoice::Fixed(_) => None,
    };
    let hosts = match &args.hosts {
        Some(list) => match host_layout(list, &args, measured.as_ref()) {
            Ok(layout) => Some(layout),
            Err(message) => return usage_error(message),
        },
        None if args.cluster.is_some() => None,
        None => match slurm_layout(&args, measured.as_ref()) {
            Ok(layout) => layout,
            Err(message) => return usage_error(format!("{message}; no rank was started")),
        },
    };
    let nodes = match &args.cluster {
        Some(name) => match cluster_layout(name, &args, measured.as_ref()) {
            Ok(layout) => Some(layout),
            Err(message) => return usage_error(message),
        },
        None if hosts.is_some() => None,
        None if args.ppn.is_some() => return usage_error("--ppn needs --cluster or --hosts".to_string()),
        None if args.map_by == MapChoice::Fixed(MapBy::Node) => return usage_error("--map-by node needs --cluster or --hosts".to_string()),
        None if args.placement.is_some() => return usage_error("--placement places ranks on nodes: it needs --cluster or --hosts".to_string()),
        None => None,
    };
    let profile_dir = match args.profile.clone().or_else(|| std::env::var_os("BRAID_PROFILE").filter(|dir| !dir.is_empty()).map(PathBuf::from)) {
        Some(dir) => match profile::prepare(&dir) {
            Ok(dir) => Some(dir),
            Err(message) => return usage_error(format!("{message}; no rank was started")),
        },
        None => None,
    };
    let rank_environment = match profile_dir.as_deref().map(profile::rank_environment).transpose() {
        Ok(environment) => environment.unwrap_or_default(),
        Err(message) => return usage_error(format!("{message}; no rank was started")),
    };
    let network_cores = match network_cores(&args, measured.as_ref()) {
        Ok(cores) => cores,
        Err(message) => return usage_error(message),
    };
    let mut command = args.command.into_iter();
    let program = command.next().unwrap_or_default();
    // Checked above, with every other setting.
    let unfinalized_wait = Duration::from_secs(braid_config::Config::from_env().map_or(0, |config| u64::from(config.unfinalized_wait_s)));
    let request = JobRequest {
        ranks: args.ranks,
        map_by: args.map_by.within_node(),
        bind_to: args.bind_to,
        tag_output: args.tag_output,
        program,
        args: command.collect(),
        nodes,
        hosts,
        timeout,
        unfinalized_wait,
        rank_environment,
        network_cores,
    };
    let status = launcher::run(request);
    if let Some(dir) = &profile_dir {
        merge_profile(dir);
    }
    ExitCode::from(status.clamp(0, 255) as u8)
}

/// Merges a profiled job's rank files, saying what was written and which ranks left none.
fn merge_profile(dir: &Path) {
    match profile::merge_directory(dir) {
        Ok(profile) => {
            eprintln!("braid run: profile of {} rank(s) in {} (braid report {} draws it)", profile.size - profile.missing_ranks.len(), dir.join("profile.json").display(), dir.display());
            if !profile.missing_ranks.is_empty() {
                eprintln!("braid run: warning: rank(s) {} left no profile (they did not reach MPI_Finalize)", report::rank_list(&profile.missing_ranks));
            }
        }
        Err(message) => eprintln!("braid run: no profile: {message}"),
    }
}

fn cluster_layout(name: &str, args: &RunArgs, measured: Option<&place::input::Measured>) -> Result<NodeLayout, String> {
    let cluster = Cluster::load(name)?;
    let namespaces: Vec<String> = cluster.nodes.iter().map(|node| node.namespace.clone()).collect();
    let node_of_rank = node_assignment(args, &namespaces, measured)?;
    Ok(NodeLayout { namespaces, node_of_rank, rails: cluster.rail_interfaces() })
}

fn host_layout(list: &str, args: &RunArgs, measured: Option<&place::input::Measured>) -> Result<HostLayout, String> {
    let hosts: Vec<String> = list.split(',').map(str::trim).map(str::to_string).collect();
    if hosts.iter().any(String::is_empty) {
        return Err(format!("--hosts {list:?} names an empty host"));
    }
    let agent: Vec<String> = args.launch_agent.as_deref().unwrap_or("ssh").split_whitespace().map(str::to_string).collect();
    if agent.is_empty() {
        return Err("--launch-agent is empty".to_string());
    }
    remote_layout(args, measured, hosts, agent, false, "--bind-to cannot be used with --hosts: remote ranks are not bound")
}

/// Ranks on `hosts`, each started through `agent` (given the host, then `sh -c` where
/// `through_shell`, then the command); `bind_refusal` is the error for --bind-to, as remote
/// ranks are not bound.
fn remote_layout(args: &RunArgs, measured: Option<&place::input::Measured>, hosts: Vec<String>, agent: Vec<String>, through_shell: bool, bind_refusal: &str) -> Result<HostLayout, String> {
    if args.bind_to.is_some_and(|unit| unit != BindTo::None) {
        return Err(bind_refusal.to_string());
    }
    let node_of_rank = node_assignment(args, &hosts, measured)?;
    Ok(HostLayout { hosts, node_of_rank, agent, through_shell })
}

/// Inside a Slurm allocation (unless --launcher local): the allocation's nodes, each rank started
/// by srun as a job step.
fn slurm_layout(args: &RunArgs, measured: Option<&place::input::Measured>) -> Result<Option<HostLayout>, String> {
    let Some(nodes) = slurm::launch_nodes(args.launcher, |name| std::env::var(name).ok())? else { return Ok(None) };
    let agent = slurm::SRUN_AGENT.iter().map(|word| word.to_string()).collect();
    remote_layout(args, measured, nodes, agent, true, "--bind-to cannot be used when srun starts the ranks (use --launcher local, or srun's own --cpu-bind)").map(Some)
}

/// The node (index into `nodes`) of each rank: from --placement, from the profiled pattern, or
/// dealt blocked or round-robin, at most --ppn per node.
/// `measured`: the profile --map-by pattern: names, read by [`place::read_profile`].
fn node_assignment(args: &RunArgs, nodes: &[String], measured: Option<&place::input::Measured>) -> Result<Vec<usize>, String> {
    let per_node = args.ppn.unwrap_or_else(|| args.ranks.div_ceil(nodes.len() as u32));
    if let Some(path) = &args.placement {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the placement {}: {e}", path.display()))?;
        let placement = place::file::Placement::parse(&text, nodes).map_err(|e| format!("placement {}: {e}", path.display()))?;
        if placement.node_of_rank.len() != args.ranks as usize {
            return Err(format!("placement {} places {} ranks, but -n asks for {}", path.display(), placement.node_of_rank.len(), args.ranks));
        }
        let (most, node) = placement.busiest_node();
        if args.ppn.is_some_and(|ppn| most > ppn as usize) {
            return Err(format!("placement {} puts {most} ranks on {}, more than --ppn {per_node} allows", path.display(), nodes[node]));
        }
        return Ok(placement.node_of_rank);
    }
    match measured {
        Some(measured) => Ok(place::pattern_placement(measured, nodes, per_node)?.node_of_rank),
        None => placement::assign_nodes(args.ranks, nodes.len(), per_node, args.map_by == MapChoice::Fixed(MapBy::Node)),
    }
}

fn manage_cluster(command: ClusterCommand) -> ExitCode {
    match command {
        ClusterCommand::Up { name, nodes, rails, mtu, rx_cpus } => {
            let outcome = Cluster::plan(&name, nodes, &rails, mtu).and_then(|mut plan| {
                plan.set_rx_cpus(rx_cpus.map(|list| list.0).unwrap_or_default())?;
                let profile_dir = braid_config::Config::from_env().map_err(|error| error.to_string())?.profile_dir;
                let cleared = cluster::up(&plan, &profile_dir)?;
                print!("{}", cluster::describe(&plan));
                if cleared > 0 {
                    println!("removed {cleared} cached rail profile(s) from {profile_dir}");
                }
                Ok(())
            });
            finish("braid cluster up", outcome)
        }
        ClusterCommand::Shape { name, rail, rate } => {
            finish("braid cluster shape", cluster::reshape(&name, &rail, rate).map(|_| println!("cluster {name}: {rail} now shaped at {} both ways (rail profiles kept)", cluster::format_rate(rate))))
        }
        ClusterCommand::Down { name } => finish("braid cluster down", cluster::down(&name).map(|removed| println!("cluster {name} removed ({} namespace(s))", removed.len()))),
        ClusterCommand::Status { name } => cluster_status(name),
        ClusterCommand::List => {
            for name in cluster::recorded() {
                match Cluster::load(&name) {
                    Ok(cluster) => {
                        let rates: Vec<String> = cluster.rails().iter().filter_map(|rail| rail.rate_bits_per_second.map(cluster::format_rate)).collect();
                        println!("{name}: {} node(s), rails {}", cluster.nodes.len(), rates.join(","));
                    }
                    Err(error) => println!("{name}: unreadable ({error})"),
                }
            }
            let strays = cluster::strays();
            if !strays.is_empty() {
                println!("namespaces of no recorded cluster: {}", strays.join(" "));
            }
            ExitCode::SUCCESS
        }
    }
}

/// Describes the named cluster (or every one) and checks it; fails when one is damaged or unknown.
fn cluster_status(name: Option<String>) -> ExitCode {
    let names = match name {
        Some(name) => vec![name],
        None => cluster::recorded(),
    };
    if names.is_empty() {
        println!("no clusters");
    }
    let mut intact = true;
    for name in names {
        match Cluster::load(&name) {
            Ok(cluster) => {
                print!("{}", cluster::describe(&cluster));
                let problems = cluster::problems(&cluster);
                for problem in &problems {
                    println!("  problem: {problem}");
                }
                println!("  state: {}", if problems.is_empty() { "intact" } else { "damaged (braid cluster down, then up again)" });
                intact &= problems.is_empty();
            }
            Err(error) => {
                eprintln!("braid cluster status: {error}");
                intact = false;
            }
        }
    }
    if intact {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn print_topology() -> ExitCode {
    let topology = match Topology::detect() {
        Ok(topology) => topology,
        Err(error) => {
            eprintln!("braid topology: cannot read /sys: {error}");
            return ExitCode::FAILURE;
        }
    };
    let packages = topology.packages();
    let all_cpus: Vec<usize> = topology.cpus.iter().map(|cpu| cpu.id).collect();
    println!("{} package(s), {} NUMA node(s), {} core(s), {} CPU(s): {}", packages.len(), topology.numa_nodes.len(), topology.cores.len(), all_cpus.len(), format_cpu_list(&all_cpus));
    if let Ok(usable) = affinity::calling_thread() {
        println!("usable by this process: {} CPU(s): {}", usable.len(), format_cpu_list(&usable));
    }
    for package in packages {
        println!("package {package}: CPUs {}", format_cpu_list(&topology.package_cpus(package)));
        for node in topology.numa_nodes.iter().filter(|node| topology.cpu(node.cpus[0]).is_some_and(|cpu| cpu.package == package)) {
            println!("  NUMA node {}: CPUs {}", node.id, format_cpu_list(&node.cpus));
        }
        for (index, core) in topology.cores.iter().enumerate().filter(|(_, core)| core.package == package) {
            println!("  core {index}: CPUs {} (NUMA node {})", format_cpu_list(&core.cpus), core.numa_node);
        }
    }
    println!("caches:");
    let mut groups: Vec<Vec<&Cache>> = Vec::new();
    for cache in &topology.caches {
        match groups.iter_mut().find(|group| group[0].level == cache.level && group[0].kind == cache.kind && group[0].size_bytes == cache.size_bytes) {
            Some(group) => group.push(cache),
            None => groups.push(vec![cache]),
        }
    }
    for group in groups {
        let first = group[0];
        let sharing: Vec<String> = group.iter().map(|cache| format_cpu_list(&cache.cpus)).collect();
        println!(
            "  L{} {:<11} {:>9} x{:<3} {}-byte lines, CPUs sharing each: {}",
            first.level,
            first.kind.to_string(),
            human_size(first.size_bytes),
            group.len(),
            first.line_bytes,
            sharing.join(" | ")
        );
    }
    print!("{}", network_cores_text());
    ExitCode::SUCCESS
}

/// `braid topology`'s lines on the CPUs that do each interface's work.
fn network_cores_text() -> String {
    let Ok(interfaces) = braid_sys::network_cores::interfaces() else {
        return "network cores: cannot list the interfaces (/sys/class/net)\n".to_string();
    };
    let mut text = String::from("network cores (a NIC's interrupts, RPS receive steering and XPS):\n");
    for interface in interfaces {
        let Ok(cores) = braid_sys::network_cores::detect(&interface) else { continue };
        let interrupts: Vec<String> = cores.interrupts.iter().map(|interrupt| format!("{} {} on CPU {}", interrupt.number, interrupt.name, format_cpu_list(&interrupt.cpus))).collect();
        let list = |cpus: &[usize]| if cpus.is_empty() { "none".to_string() } else { format_cpu_list(cpus) };
        text += &format!(
            "  {interface}: interrupts {}; RPS {}; XPS {}; network CPUs: {}\n",
            if interrupts.is_empty() { "none".to_string() } else { interrupts.join(", ") },
            list(&cores.rps_cpus),
            list(&cores.xps_cpus),
            list(&cores.cpus())
        );
    }
    text
}

fn human_size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn print_config() -> ExitCode {
    let width = braid_config::SETTINGS.iter().map(|setting| setting.variable.len()).max().unwrap_or(0);
    let default_width = braid_config::SETTINGS.iter().map(|setting| setting.default.len()).max().unwrap_or(0).max("DEFAULT".len());
    println!("{:<width$}  {:<default_width$}  MEANING", "VARIABLE", "DEFAULT");
    for setting in braid_config::SETTINGS {
        println!("{:<width$}  {:<default_width$}  {}", setting.variable, setting.default, setting.meaning);
    }
    let names: Vec<String> = std::env::vars_os().filter_map(|(name, _)| name.into_string().ok()).collect();
    for unknown in braid_config::unknown_variables(names.iter().map(String::as_str)) {
        eprintln!("braid config: warning: {unknown}");
    }
    match braid_config::Config::from_env() {
        Ok(_) => {
            println!("\nThe current environment's BRAID_* settings are valid.");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("\nbraid config: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        <Cli as clap::CommandFactory>::command().debug_assert();
    }

    #[test]
    fn map_by_takes_a_policy_or_a_profile() {
        assert_eq!(parse_map_by("node"), Ok(MapChoice::Fixed(MapBy::Node)));
        assert_eq!(parse_map_by("pattern:prof"), Ok(MapChoice::Pattern(PathBuf::from("prof"))));
        assert!(parse_map_by("pattern:").unwrap_err().contains("needs the profiled job's directory"));
        assert!(parse_map_by("diagonal").unwrap_err().contains("expected core, socket, numa, node or pattern:PROFILE_DIR"));
        assert_eq!(parse_cpu_list_argument("0-1,3"), Ok(CpuList(vec![0, 1, 3])));
        assert!(parse_cpu_list_argument("x").is_err());
    }
}
