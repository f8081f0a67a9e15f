//! `braid cluster`: a virtual cluster on this machine. Each node is a network namespace
//! `braid-NAME-nK`; a switch namespace `braid-NAME-sw` holds one bridge per network (management and
//! each rail), so nothing is added to the root namespace. Every node has the same interface names:
//! `mgmt` and `rail0`, `rail1`, ... Rails are shaped with `tc tbf` on both ends of every link.

use std::path::{Path, PathBuf};
use std::process::Command;

use braid_sys::netns;
use serde::{Deserialize, Serialize};

/// Where the description of each cluster is kept (`NAME.json`), for status, down and run.
pub const RECORDS: &str = "/run/braid/clusters";
/// The management network's interface name on every node (launchers, PMI, daemons; not shaped).
pub const MANAGEMENT: &str = "mgmt";
/// First two bytes of every cluster address: network i is 10.213.i.0/24, node k is .(k+1).
const ADDRESS_PREFIX: &str = "10.213";
pub const MOST_NODES: u32 = 254;
pub const MOST_RAILS: usize = 32;
/// How long a packet may wait in a rail's shaper before being dropped: room for TCP to fill the
/// link without an unbounded queue.
const SHAPER_LATENCY: &str = "50ms";
/// The shaper's bucket: one millisecond at the rail's rate (so short messages are shaped too)
/// but never fewer than this many full frames (so a single frame always fits).
const SHAPER_MIN_FRAMES: u64 = 8;
const ETHERNET_HEADER_BYTES: u64 = 14;
const LONGEST_NAME: usize = 24;

/// A cluster as built: everything `status`, `down` and `run --cluster` need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    pub name: String,
    /// The namespace holding the bridges.
    pub switch: String,
    pub mtu: u32,
    /// The management network first, then the rails in order.
    pub networks: Vec<Network>,
    pub nodes: Vec<Node>,
    /// The CPUs every node's rails steer their receive processing to (RPS): the nodes' network
    /// cores. Empty: the kernel's default (processed where the packet arrives).
    #[serde(default)]
    pub rx_cpus: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Network {
    /// The interface name on every node (`mgmt`, `rail0`, ...).
    pub interface: String,
    /// The bridge in the switch namespace.
    pub bridge: String,
    /// `10.213.i.0/24`.
    pub subnet: String,
    /// The shaped rate in bits per second; `None` for the (unshaped) management network.
    pub rate_bits_per_second: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub namespace: String,
    /// This node's address on each network, in the order of `Cluster::networks`.
    pub addresses: Vec<String>,
}

impl Cluster {
    /// The cluster `up` would build: names and addresses only, nothing is touched.
    pub fn plan(name: &str, nodes: u32, rail_rates: &[u64], mtu: u32) -> Result<Cluster, String> {
        check_name(name)?;
        if nodes == 0 || nodes > MOST_NODES {
            return Err(format!("--nodes must be between 1 and {MOST_NODES}"));
        }
        if rail_rates.is_empty() || rail_rates.len() > MOST_RAILS {
            return Err(format!("--rails must list between 1 and {MOST_RAILS} rates"));
        }
        if !(576..=65535).contains(&mtu) {
            return Err(format!("--mtu {mtu}: must be between 576 and 65535"));
        }
        let rates = std::iter::once(None).chain(rail_rates.iter().map(|&rate| Some(rate)));
        let networks: Vec<Network> = rates
            .enumerate()
            .map(|(index, rate)| {
                let interface = if index == 0 { MANAGEMENT.to_string() } else { format!("rail{}", index - 1) };
                Network { bridge: format!("br-{interface}"), interface, subnet: format!("{ADDRESS_PREFIX}.{index}.0/24"), rate_bits_per_second: rate }
            })
            .collect();
        let nodes = (0..nodes)
            .map(|node| Node { namespace: format!("braid-{name}-n{node}"), addresses: (0..networks.len()).map(|index| format!("{ADDRESS_PREFIX}.{index}.{}", node + 1)).collect() })
            .collect();
        Ok(Cluster { name: name.to_string(), switch: format!("braid-{name}-sw"), mtu, networks, nodes, rx_cpus: Vec::new() })
    }

    /// Steers the rails' receive processing to `cpus` (none: the default), which must be CPUs
    /// of this machine.
    pub fn set_rx_cpus(&mut self, cpus: Vec<usize>) -> Result<(), String> {
        let online = braid_sys::topology::Topology::detect().map(|topology| topology.cpus.iter().map(|cpu| cpu.id).collect::<Vec<usize>>()).unwrap_or_default();
        if let Some(bad) = cpus.iter().find(|cpu| !online.is_empty() && !online.contains(cpu)) {
            return Err(format!("--rx-cpus names CPU {bad}, which this machine does not have (its CPUs: {})", braid_sys::topology::format_cpu_list(&online)));
        }
        self.rx_cpus = cpus;
        Ok(())
    }

    /// Reads the description `up` recorded.
    pub fn load(name: &str) -> Result<Cluster, String> {
        check_name(name)?;
        let path = record_path(name);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("no cluster named {name} (no {}; see braid cluster list)", path.display()));
            }
            Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
        };
        serde_json::from_str(&text).map_err(|error| format!("{} is not a cluster description: {error}", path.display()))
    }

    /// The rails (every network but the management one).
    pub fn rails(&self) -> &[Network] {
        &self.networks[1..]
    }

    /// The rails' interface names, as BRAID_RAILS takes them.
    pub fn rail_interfaces(&self) -> Vec<String> {
        self.rails().iter().map(|rail| rail.interface.clone()).collect()
    }

    /// Node `node`'s address on the network whose interface is `interface`.
    pub fn address(&self, node: usize, interface: &str) -> Option<&str> {
        let index = self.networks.iter().position(|network| network.interface == interface)?;
        self.nodes.get(node).map(|node| node.addresses[index].as_str())
    }

    fn namespaces(&self) -> Vec<String> {
        std::iter::once(self.switch.clone()).chain(self.nodes.iter().map(|node| node.namespace.clone())).collect()
    }
}

fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty() && name.len() <= LONGEST_NAME && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(format!("invalid cluster name {name:?}: use 1 to {LONGEST_NAME} letters, digits, '_' or '-'"))
    }
}

fn record_path(name: &str) -> PathBuf {
    Path::new(RECORDS).join(format!("{name}.json"))
}

/// Whether namespace `namespace` is one a cluster named `name` creates (`braid-NAME-sw`, `braid-NAME-nK`).
fn belongs_to(namespace: &str, name: &str) -> bool {
    let Some(rest) = namespace.strip_prefix("braid-").and_then(|rest| rest.strip_prefix(name)).and_then(|rest| rest.strip_prefix('-')) else {
        return false;
    };
    rest == "sw" || rest.strip_prefix('n').is_some_and(|digits| !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
}

/// A rate as `tc` writes it: a number and `bit`, `kbit`, `mbit`, `gbit` or `tbit` (powers of 1000).
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let units = [("tbit", 1_000_000_000_000u64), ("gbit", 1_000_000_000), ("mbit", 1_000_000), ("kbit", 1_000), ("bit", 1)];
    let invalid = || format!("invalid rate {text:?}: write it like 2gbit, 250mbit or 500kbit");
    let (number, scale) = units.iter().find_map(|(unit, scale)| lower.strip_suffix(unit).map(|number| (number, *scale))).ok_or_else(invalid)?;
    let value: f64 = number.parse().map_err(|_| invalid())?;
    let bits = value * scale as f64;
    if !(8_000.0..=1e13).contains(&bits) {
        return Err(format!("rate {text:?} is out of range (8kbit to 10tbit)"));
    }
    Ok(bits.round() as u64)
}

/// A rate in `tc`'s units, as short as it can be written exactly.
pub fn format_rate(bits: u64) -> String {
    for (unit, scale) in [("tbit", 1_000_000_000_000u64), ("gbit", 1_000_000_000), ("mbit", 1_000_000), ("kbit", 1_000)] {
        if bits >= scale && bits.is_multiple_of(scale) {
            return format!("{}{unit}", bits / scale);
        }
    }
    format!("{bits}bit")
}

/// The token bucket size in bytes for a rail of `bits` per second and frames of `mtu`.
fn shaper_burst(bits: u64, mtu: u32) -> u64 {
    (bits / 8 / 1000).max(SHAPER_MIN_FRAMES * (u64::from(mtu) + ETHERNET_HEADER_BYTES))
}

/// Runs `program args`; a clear error when it is missing or fails.
fn run_tool(program: &str, args: &[&str]) -> Result<(), String> {
    let output = Command::new(program).args(args).output().map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => format!("`{program}` is not installed (scripts/setup installs iproute2 and ethtool)"),
        _ => format!("cannot run `{program}`: {error}"),
    })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(format!("`{program} {}` failed: {}", args.join(" "), stderr.trim()))
}

/// The namespaces made so far by `up`; removed again unless `up` completes.
struct Undo {
    namespaces: Vec<String>,
    record: Option<PathBuf>,
}

impl Drop for Undo {
    fn drop(&mut self) {
        for namespace in self.namespaces.iter().rev() {
            let _ = run_tool("ip", &["netns", "delete", namespace]);
        }
        if let Some(record) = &self.record {
            let _ = std::fs::remove_file(record);
        }
    }
}

fn require_privileges() -> Result<(), String> {
    if netns::can_manage() {
        Ok(())
    } else {
        Err("managing network namespaces needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)".to_string())
    }
}

/// The namespaces of cluster `name` that exist now.
fn existing_namespaces(name: &str) -> Result<Vec<String>, String> {
    let all = netns::list().map_err(|error| format!("cannot list {}: {error}", netns::NAMED_NAMESPACES))?;
    Ok(all.into_iter().filter(|namespace| belongs_to(namespace, name)).collect())
}

/// Builds the cluster, records it, and removes cached profiles of its rails. On failure, removes
/// everything it made.
pub fn up(plan: &Cluster, profile_dir: &str) -> Result<usize, String> {
    require_privileges()?;
    let name = &plan.name;
    let leftovers = existing_namespaces(name)?;
    if record_path(name).exists() || !leftovers.is_empty() {
        return Err(format!("cluster {name} already exists (braid cluster down {name} removes it)"));
    }
    let mut undo = Undo { namespaces: Vec::new(), record: None };
    build(plan, &mut undo)?;
    std::fs::create_dir_all(RECORDS).map_err(|error| format!("cannot create {RECORDS}: {error}"))?;
    undo.record = Some(record_path(name));
    write_record(plan)?;
    undo.namespaces.clear();
    undo.record = None;
    Ok(clear_profiles(plan, Path::new(profile_dir)))
}

/// Writes the description of `cluster` where `status`, `down` and `run --cluster` read it.
fn write_record(cluster: &Cluster) -> Result<(), String> {
    let record = record_path(&cluster.name);
    let text = serde_json::to_string_pretty(cluster).map_err(|error| format!("cannot describe the cluster: {error}"))?;
    std::fs::write(&record, text + "\n").map_err(|error| format!("cannot write {}: {error}", record.display()))
}

/// The switch namespace's end of node `node`'s link on the network whose interface is `interface`.
fn switch_port(node: usize, interface: &str) -> String {
    format!("n{node}-{interface}")
}

fn build(cluster: &Cluster, undo: &mut Undo) -> Result<(), String> {
    let switch = cluster.switch.as_str();
    add_namespace(switch, undo)?;
    for network in &cluster.networks {
        run_tool("ip", &["-n", switch, "link", "add", &network.bridge, "type", "bridge"])?;
        run_tool("ip", &["-n", switch, "link", "set", &network.bridge, "up"])?;
    }
    let mtu = cluster.mtu.to_string();
    for (index, node) in cluster.nodes.iter().enumerate() {
        let namespace = node.namespace.as_str();
        add_namespace(namespace, undo)?;
        for (network, address) in cluster.networks.iter().zip(&node.addresses) {
            let interface = network.interface.as_str();
            let port = switch_port(index, interface);
            run_tool("ip", &["-n", switch, "link", "add", &port, "mtu", &mtu, "type", "veth", "peer", "name", interface, "mtu", &mtu, "netns", namespace])?;
            run_tool("ip", &["-n", switch, "link", "set", &port, "master", &network.bridge, "up"])?;
            run_tool("ip", &["-n", namespace, "address", "add", &format!("{address}/24"), "dev", interface])?;
            run_tool("ip", &["-n", namespace, "link", "set", interface, "up"])?;
            if let Some(rate) = network.rate_bits_per_second {
                shape(namespace, interface, rate, cluster.mtu)?;
                shape(switch, &port, rate, cluster.mtu)?;
                if !cluster.rx_cpus.is_empty() {
                    steer_receive(namespace, interface, &cluster.rx_cpus)?;
                }
            }
        }
    }
    Ok(())
}

/// Changes the rate of rail `interface` of the built cluster `name` to `bits` per second, on both
/// ends of every node's link, and records it. Cached rail profiles are kept on purpose: jobs keep
/// using what was sampled before, as on a real cluster when other traffic takes a rail's share
/// (`braid sample --force` samples again). Returns the updated description.
pub fn reshape(name: &str, interface: &str, bits: u64) -> Result<Cluster, String> {
    require_privileges()?;
    let mut cluster = Cluster::load(name)?;
    let Some(index) = cluster.networks.iter().position(|network| network.interface == interface && network.rate_bits_per_second.is_some()) else {
        return Err(format!("cluster {name} has no rail {interface} (its rails: {})", cluster.rail_interfaces().join(", ")));
    };
    let problems = problems(&cluster);
    if !problems.is_empty() {
        return Err(format!("cluster {name} is damaged ({}); braid cluster down {name}, then up again", problems.join("; ")));
    }
    for (node_index, node) in cluster.nodes.iter().enumerate() {
        set_rate(&node.namespace, interface, bits, cluster.mtu)?;
        set_rate(&cluster.switch, &switch_port(node_index, interface), bits, cluster.mtu)?;
    }
    cluster.networks[index].rate_bits_per_second = Some(bits);
    write_record(&cluster).map_err(|error| format!("{interface} is reshaped, but its record is not: {error}"))?;
    Ok(cluster)
}

/// Steers what `device` receives to `cpus` (RPS on each of its receive queues). `ip netns exec`
/// mounts the namespace's own /sys, where its devices' queues are.
fn steer_receive(namespace: &str, device: &str, cpus: &[usize]) -> Result<(), String> {
    let mask = braid_sys::network_cores::format_cpu_mask(cpus);
    let script = format!("for queue in /sys/class/net/{device}/queues/rx-*; do echo {mask} > $queue/rps_cpus || exit 1; done");
    run_tool("ip", &["netns", "exec", namespace, "sh", "-c", &script])
}

fn add_namespace(namespace: &str, undo: &mut Undo) -> Result<(), String> {
    run_tool("ip", &["netns", "add", namespace])?;
    undo.namespaces.push(namespace.to_string());
    run_tool("ip", &["-n", namespace, "link", "set", "lo", "up"])?;
    // No IPv6: its neighbour and multicast chatter would be the only stray traffic on the rails.
    // A kernel without IPv6 has nothing to turn off, so a failure here changes nothing.
    let _ = run_tool("ip", &["netns", "exec", namespace, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]);
    Ok(())
}

/// Shapes what `device` sends; offloads off so the shaper sees wire-sized packets.
fn shape(namespace: &str, device: &str, bits: u64, mtu: u32) -> Result<(), String> {
    run_tool("ip", &["netns", "exec", namespace, "ethtool", "-K", device, "tso", "off", "gso", "off", "gro", "off"])?;
    set_rate(namespace, device, bits, mtu)
}

/// Puts (or replaces) the shaper of what `device` sends.
fn set_rate(namespace: &str, device: &str, bits: u64, mtu: u32) -> Result<(), String> {
    let rate = format!("{bits}bit");
    let burst = shaper_burst(bits, mtu).to_string();
    run_tool("tc", &["-n", namespace, "qdisc", "replace", "dev", device, "root", "tbf", "rate", &rate, "burst", &burst, "latency", SHAPER_LATENCY])
}

/// How the identity of a rail sampled inside a named network namespace starts (the TCP
/// transport's rail identity: `netns-<name>-<interface>-<address>...`).
const NAMESPACED_PROFILE_PREFIX: &str = "netns-";

/// Removes cached rail profiles this cluster's rails could be mistaken for: files in `dir` whose
/// name contains one of this cluster's namespace names (a rail identity starts with the
/// namespace it was sampled in), or, for identities without a namespace, `<interface>-10.213.<network>.`
/// (any virtual cluster's node on that rail). Profiles of other clusters' namespaces stay, so
/// clusters built side by side keep theirs. Returns how many were removed.
fn clear_profiles(cluster: &Cluster, dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let rail_markers: Vec<String> = cluster.networks.iter().enumerate().skip(1).map(|(index, rail)| format!("{}-{ADDRESS_PREFIX}.{index}.", rail.interface)).collect();
    let namespaces = cluster.namespaces();
    let mut removed = 0;
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(file_name) = file_name.to_str() else { continue };
        let namespaced = file_name.starts_with(NAMESPACED_PROFILE_PREFIX);
        let stale = namespaces.iter().any(|namespace| mentions(file_name, namespace)) || (!namespaced && rail_markers.iter().any(|marker| file_name.contains(marker.as_str())));
        if stale && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether `text` names `namespace` (and not a longer one such as `braid-lab-n10` for `braid-lab-n1`).
fn mentions(text: &str, namespace: &str) -> bool {
    text.match_indices(namespace).any(|(at, _)| !text[at + namespace.len()..].starts_with(|c: char| c.is_ascii_digit()))
}

/// Removes every namespace of cluster `name` (recorded or found) and its record. Tolerates a
/// cluster that was half built or half removed. Returns the namespaces removed.
pub fn down(name: &str) -> Result<Vec<String>, String> {
    check_name(name)?;
    require_privileges()?;
    let record = record_path(name);
    let mut namespaces = existing_namespaces(name)?;
    if let Ok(cluster) = Cluster::load(name) {
        for namespace in cluster.namespaces() {
            if netns::exists(&namespace) && !namespaces.contains(&namespace) {
                namespaces.push(namespace);
            }
        }
    }
    if namespaces.is_empty() && !record.exists() {
        return Err(format!("no cluster named {name}"));
    }
    let mut failures = Vec::new();
    for namespace in &namespaces {
        if let Err(error) = run_tool("ip", &["netns", "delete", namespace]) {
            if netns::exists(namespace) {
                failures.push(error);
            }
        }
    }
    if let Err(error) = std::fs::remove_file(&record) {
        if error.kind() != std::io::ErrorKind::NotFound {
            failures.push(format!("cannot remove {}: {error}", record.display()));
        }
    }
    if failures.is_empty() {
        Ok(namespaces)
    } else {
        Err(failures.join("; "))
    }
}

/// The names of the recorded clusters, sorted.
pub fn recorded() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(RECORDS) else { return Vec::new() };
    let mut names: Vec<String> = entries.flatten().filter_map(|entry| entry.file_name().to_str()?.strip_suffix(".json").map(str::to_string)).collect();
    names.sort();
    names
}

/// Namespaces named `braid-*-sw` / `braid-*-nK` that belong to no recorded cluster.
pub fn strays() -> Vec<String> {
    let clusters = recorded();
    let all = netns::list().unwrap_or_default();
    all.into_iter().filter(|namespace| namespace.starts_with("braid-")).filter(|namespace| !clusters.iter().any(|name| belongs_to(namespace, name))).collect()
}

/// What is wrong with a built cluster now (missing namespaces, interfaces down, shaping gone).
pub fn problems(cluster: &Cluster) -> Vec<String> {
    let mut problems = Vec::new();
    if !netns::exists(&cluster.switch) {
        problems.push(format!("switch namespace {} is missing", cluster.switch));
    }
    for node in &cluster.nodes {
        if !netns::exists(&node.namespace) {
            problems.push(format!("node namespace {} is missing", node.namespace));
            continue;
        }
        for network in &cluster.networks {
            let link = tool_output("ip", &["-n", &node.namespace, "-o", "link", "show", "dev", &network.interface]);
            if !link.as_deref().is_ok_and(|text| text.contains(",UP") || text.contains("<UP")) {
                problems.push(format!("{}: {} is missing or down", node.namespace, network.interface));
                continue;
            }
            if network.rate_bits_per_second.is_some() {
                let qdisc = tool_output("tc", &["-n", &node.namespace, "qdisc", "show", "dev", &network.interface]);
                if !qdisc.as_deref().is_ok_and(|text| text.contains("tbf")) {
                    problems.push(format!("{}: {} is not shaped", node.namespace, network.interface));
                }
            }
        }
    }
    problems
}

fn tool_output(program: &str, args: &[&str]) -> Result<String, String> {
    let output = Command::new(program).args(args).output().map_err(|error| format!("cannot run `{program}`: {error}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_string());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The human description `status` prints.
pub fn describe(cluster: &Cluster) -> String {
    let mut text = format!("cluster {}: {} node(s), {} rail(s), MTU {}, switch namespace {}\n", cluster.name, cluster.nodes.len(), cluster.rails().len(), cluster.mtu, cluster.switch);
    text += &format!("  {:<10} {:<16} {}\n", "network", "subnet", "rate (shaped both ways)");
    for network in &cluster.networks {
        let rate = network.rate_bits_per_second.map_or_else(|| "unshaped".to_string(), format_rate);
        text += &format!("  {:<10} {:<16} {rate}\n", network.interface, network.subnet);
    }
    let width = cluster.nodes.iter().map(|node| node.namespace.len()).max().unwrap_or(0).max("node".len());
    text += &format!("  {:<width$}", "node");
    for network in &cluster.networks {
        text += &format!(" {:<12}", network.interface);
    }
    text.truncate(text.trim_end().len());
    text.push('\n');
    for (index, node) in cluster.nodes.iter().enumerate() {
        text += &format!("  {:<width$}", node.namespace);
        for network in &cluster.networks {
            text += &format!(" {:<12}", cluster.address(index, &network.interface).unwrap_or("-"));
        }
        text.truncate(text.trim_end().len());
        text.push('\n');
    }
    if !cluster.rx_cpus.is_empty() {
        text += &format!("  the rails' receive processing runs on CPU(s) {} (RPS): the nodes' network cores\n", braid_sys::topology::format_cpu_list(&cluster.rx_cpus));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_in_tc_units_and_print_back() {
        assert_eq!(parse_rate("2gbit").unwrap(), 2_000_000_000);
        assert_eq!(parse_rate("250Mbit").unwrap(), 250_000_000);
        assert_eq!(parse_rate("1.5gbit").unwrap(), 1_500_000_000);
        assert_eq!(parse_rate("500kbit").unwrap(), 500_000);
        for bad in ["2g", "fast", "gbit", "-1mbit", "1kbit", "100tbit", ""] {
            assert!(parse_rate(bad).is_err(), "{bad:?}");
        }
        assert_eq!(format_rate(2_000_000_000), "2gbit");
        assert_eq!(format_rate(250_000_000), "250mbit");
        assert_eq!(format_rate(1_500_000_000), "1500mbit");
        assert_eq!(format_rate(12_345), "12345bit");
    }

    #[test]
    fn the_plan_names_every_node_and_network() {
        let cluster = Cluster::plan("lab", 3, &[2_000_000_000, 1_000_000_000], 1500).unwrap();
        assert_eq!(cluster.switch, "braid-lab-sw");
        assert_eq!(cluster.nodes.iter().map(|node| node.namespace.as_str()).collect::<Vec<_>>(), ["braid-lab-n0", "braid-lab-n1", "braid-lab-n2"]);
        assert_eq!(cluster.rail_interfaces(), ["rail0", "rail1"]);
        assert_eq!(cluster.networks[0].interface, "mgmt");
        assert_eq!(cluster.networks[0].rate_bits_per_second, None);
        assert_eq!(cluster.networks[2].subnet, "10.213.2.0/24");
        assert_eq!(cluster.address(0, "mgmt"), Some("10.213.0.1"));
        assert_eq!(cluster.address(2, "rail0"), Some("10.213.1.3"));
        assert_eq!(cluster.address(1, "rail1"), Some("10.213.2.2"));
        assert_eq!(cluster.address(3, "rail0"), None);
        let text = serde_json::to_string(&cluster).unwrap();
        assert_eq!(serde_json::from_str::<Cluster>(&text).unwrap(), cluster);
    }

    #[test]
    fn bad_plans_are_refused() {
        assert!(Cluster::plan("a/b", 2, &[1_000_000], 1500).is_err());
        assert!(Cluster::plan("", 2, &[1_000_000], 1500).is_err());
        assert!(Cluster::plan("lab", 0, &[1_000_000], 1500).is_err());
        assert!(Cluster::plan("lab", 255, &[1_000_000], 1500).is_err());
        assert!(Cluster::plan("lab", 2, &[], 1500).is_err());
        assert!(Cluster::plan("lab", 2, &[1_000_000], 100).is_err());
        assert!(Cluster::plan("lab", 254, &[1_000_000; 32], 9000).is_ok());
    }

    #[test]
    fn namespaces_belong_to_their_cluster_only() {
        assert!(belongs_to("braid-lab-sw", "lab"));
        assert!(belongs_to("braid-lab-n12", "lab"));
        assert!(!belongs_to("braid-lab-n", "lab"));
        assert!(!belongs_to("braid-lab-n1-n0", "lab"));
        assert!(belongs_to("braid-lab-n1-n0", "lab-n1"));
        assert!(!belongs_to("braid-lab2-n0", "lab"));
        assert!(!belongs_to("other-lab-n0", "lab"));
    }

    #[test]
    fn the_shaper_bucket_holds_a_millisecond_and_several_frames() {
        assert_eq!(shaper_burst(2_000_000_000, 1500), 250_000);
        assert_eq!(shaper_burst(100_000_000, 1500), 12_500);
        assert_eq!(shaper_burst(10_000_000, 1500), 8 * 1514);
        assert_eq!(shaper_burst(100_000_000, 9000), 8 * 9014);
    }

    #[test]
    fn only_this_clusters_rail_profiles_are_cleared() {
        let dir = std::env::temp_dir().join(format!("braid-cluster-profiles-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cluster = Cluster::plan("lab", 2, &[2_000_000_000, 1_000_000_000], 1500).unwrap();
        let stale = [
            "rail0-10.213.1.1.profile",
            "rail1-10.213.2.2-1500.profile",
            "tcp-braid-lab-n0-rail0.profile",
            "braid-lab-n1.rail1.profile",
            "netns-braid-lab-n0-rail0-10.213.1.1-net10.213.1.0_24-mtu1500.profile",
        ];
        let kept = [
            "eth0-192.168.1.5.profile",
            "rail0-10.213.2.1.profile",
            "braid-lab2-n0-rail0.profile",
            "braid-lab-n10-rail0.profile",
            "mgmt-10.213.0.1.profile",
            "netns-braid-lab2-n0-rail0-10.213.1.1-net10.213.1.0_24-mtu1500.profile",
        ];
        for file in stale.iter().chain(&kept) {
            std::fs::write(dir.join(file), "0 1\n").unwrap();
        }
        assert_eq!(clear_profiles(&cluster, &dir), stale.len());
        for file in kept {
            assert!(dir.join(file).exists(), "{file} was removed");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
