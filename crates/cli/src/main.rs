//! `braid`: the job launcher (`braid run`) and tools to inspect the machine and the settings.

mod launcher;
mod output;
mod placement;

use std::ffi::OsString;
use std::process::ExitCode;

use braid_sys::affinity;
use braid_sys::topology::{format_cpu_list, Cache, Topology};
use clap::{Parser, Subcommand};

use crate::launcher::JobRequest;
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
    #[command(
        after_help = "Each rank gets PMI_FD, PMI_RANK and PMI_SIZE (PMI-1, as with MPICH's Hydra) and \
BRAID_LOCAL_RANK / BRAID_LOCAL_SIZE.\n\
Ranks are bound to a core each when there are enough usable cores, and unbound otherwise.\n\
If a rank fails (non-zero exit, a signal, MPI_Abort), the others are stopped (SIGTERM, then SIGKILL \
after 1 s) and braid run exits with that rank's code (128 + signal for a signal).\n\
SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 are passed on to every rank.\n\n\
Examples:\n  braid run -n 4 ./ring\n  braid run -n 8 --map-by socket --tag-output ./app --size 1m"
    )]
    Run(RunArgs),
    /// Print this machine's layout: packages, NUMA nodes, cores and caches.
    Topology,
    /// Print every BRAID_* setting with its default and meaning, and check the current environment.
    Config,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Number of ranks to start.
    #[arg(short = 'n', long = "np", value_name = "N")]
    ranks: u32,

    /// How consecutive ranks are spread over the cores.
    #[arg(long, value_enum, default_value = "core", value_name = "POLICY")]
    map_by: MapBy,

    /// What each rank is bound to [default: core when N <= usable cores, else none].
    #[arg(long, value_enum, value_name = "UNIT")]
    bind_to: Option<BindTo>,

    /// Prefix every output line with the rank that wrote it, as `[rank] `.
    #[arg(long)]
    tag_output: bool,

    /// The program to start, then its arguments.
    #[arg(value_name = "PROGRAM", required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Commands::Run(args) => {
            let mut command = args.command.into_iter();
            let program = command.next().unwrap_or_default();
            let request = JobRequest { ranks: args.ranks, map_by: args.map_by, bind_to: args.bind_to, tag_output: args.tag_output, program, args: command.collect() };
            ExitCode::from(launcher::run(request).clamp(0, 255) as u8)
        }
        Commands::Topology => print_topology(),
        Commands::Config => print_config(),
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
    println!(
        "{} package(s), {} NUMA node(s), {} core(s), {} CPU(s): {}",
        packages.len(),
        topology.numa_nodes.len(),
        topology.cores.len(),
        all_cpus.len(),
        format_cpu_list(&all_cpus)
    );
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
    ExitCode::SUCCESS
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
