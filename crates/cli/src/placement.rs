//! Where each rank runs: ranks are spread over the usable cores by `--map-by`, then bound to their
//! core, package or NUMA node by `--bind-to` (by default to their core, unless oversubscribed).
//! Cores that do a NIC's work (its interrupts, its steered receive processing) are left out when
//! the other cores are enough, and taken last otherwise, by the ranks that communicate most.

use braid_sys::topology::Topology;
use clap::ValueEnum;

/// How consecutive ranks are spread over the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MapBy {
    /// Fill cores in order: rank r goes to core r (wrapping when oversubscribed).
    Core,
    /// Round-robin over packages (sockets), then over the cores of each.
    Socket,
    /// Round-robin over NUMA nodes, then over the cores of each.
    Numa,
    /// Round-robin over the cluster's nodes (with --cluster); the cores are then filled in order.
    Node,
}

/// What a rank is bound to once mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BindTo {
    /// The hardware threads of its core.
    Core,
    /// Every usable CPU of its package (socket).
    Socket,
    /// Every usable CPU of its NUMA node.
    Numa,
    /// Not bound: any CPU the launcher may use.
    None,
}

/// One usable core: the CPUs of it this process may use.
struct UsableCore {
    cpus: Vec<usize>,
    package: usize,
    numa_node: usize,
}

/// The network's share of the cores: the CPUs that do a NIC's work, and the order in which ranks
/// take cores (the first take the cores without network work).
#[derive(Debug, Clone, Default)]
pub struct NetworkCores {
    pub cpus: Vec<usize>,
    /// Every rank once; empty: rank order.
    pub rank_order: Vec<usize>,
}

/// The CPUs each rank is bound to (`None`: unbound), one entry per rank.
pub fn place(topology: &Topology, usable: &[usize], ranks: u32, map_by: MapBy, bind_to: Option<BindTo>, network: &NetworkCores) -> Result<Vec<Option<Vec<usize>>>, String> {
    let all: Vec<UsableCore> = topology
        .cores
        .iter()
        .map(|core| UsableCore { cpus: core.cpus.iter().copied().filter(|cpu| usable.contains(cpu)).collect(), package: core.package, numa_node: core.numa_node })
        .filter(|core| !core.cpus.is_empty())
        .collect();
    let (mut cores, busy): (Vec<UsableCore>, Vec<UsableCore>) = all.into_iter().partition(|core| !core.cpus.iter().any(|cpu| network.cpus.contains(cpu)));
    if cores.len() < ranks as usize {
        cores.extend(busy);
    }
    let bind_to = bind_to.unwrap_or(if ranks as usize <= cores.len() { BindTo::Core } else { BindTo::None });
    if bind_to == BindTo::None {
        return Ok(vec![None; ranks as usize]);
    }
    if cores.is_empty() {
        return Err("no usable core found in /sys; use --bind-to none".to_string());
    }
    if bind_to == BindTo::Core && ranks as usize > cores.len() {
        return Err(format!("{ranks} ranks but only {} usable cores: cannot bind each rank to its own core (use --bind-to none, or fewer ranks)", cores.len()));
    }
    let domain_of = |core: &UsableCore| match map_by {
        MapBy::Core | MapBy::Node => 0,
        MapBy::Socket => core.package,
        MapBy::Numa => core.numa_node,
    };
    let mut domains: Vec<(usize, Vec<usize>)> = Vec::new();
    for (index, core) in cores.iter().enumerate() {
        match domains.iter_mut().find(|(domain, _)| *domain == domain_of(core)) {
            Some((_, members)) => members.push(index),
            None => domains.push((domain_of(core), vec![index])),
        }
    }
    let turn_of = |rank: usize| network.rank_order.iter().position(|&other| other == rank).unwrap_or(rank);
    let placements = (0..ranks as usize)
        .map(|rank| {
            let turn = turn_of(rank);
            let members = &domains[turn % domains.len()].1;
            let core = &cores[members[(turn / domains.len()) % members.len()]];
            let cpus: Vec<usize> = match bind_to {
                BindTo::Core | BindTo::None => core.cpus.clone(),
                BindTo::Socket => cores.iter().filter(|other| other.package == core.package).flat_map(|other| other.cpus.iter().copied()).collect(),
                BindTo::Numa => cores.iter().filter(|other| other.numa_node == core.numa_node).flat_map(|other| other.cpus.iter().copied()).collect(),
            };
            let mut cpus = cpus;
            cpus.sort_unstable();
            Some(cpus)
        })
        .collect();
    Ok(placements)
}

/// The node of each rank on a cluster of `nodes` nodes with at most `per_node` ranks each: blocks
/// of `per_node` consecutive ranks per node, or round-robin when `cyclic`.
pub fn assign_nodes(ranks: u32, nodes: usize, per_node: u32, cyclic: bool) -> Result<Vec<usize>, String> {
    if per_node == 0 {
        return Err("--ppn must be at least 1".to_string());
    }
    let capacity = nodes as u64 * u64::from(per_node);
    if u64::from(ranks) > capacity {
        return Err(format!("{ranks} ranks do not fit on {nodes} node(s) with --ppn {per_node} (at most {capacity})"));
    }
    Ok((0..ranks as usize).map(|rank| if cyclic { rank % nodes } else { rank / per_node as usize }).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_filled_in_blocks_or_round_robin() {
        assert_eq!(assign_nodes(4, 2, 2, false).unwrap(), vec![0, 0, 1, 1]);
        assert_eq!(assign_nodes(3, 2, 2, false).unwrap(), vec![0, 0, 1]);
        assert_eq!(assign_nodes(5, 3, 2, true).unwrap(), vec![0, 1, 2, 0, 1]);
        assert!(assign_nodes(5, 2, 2, false).unwrap_err().contains("at most 4"));
        assert!(assign_nodes(1, 2, 0, false).is_err());
    }
    use braid_sys::topology::{Core, Cpu, NumaNode};

    /// Two packages (= NUMA nodes) of two cores of two hardware threads: cores {0,4} {1,5} | {2,6} {3,7}.
    fn two_sockets() -> Topology {
        let cores: Vec<Core> = (0..4).map(|core| Core { package: core / 2, numa_node: core / 2, cpus: vec![core, core + 4] }).collect();
        let cpus = (0..8).map(|id| Cpu { id, core: id % 4, package: (id % 4) / 2, numa_node: (id % 4) / 2 }).collect();
        let numa_nodes = vec![NumaNode { id: 0, cpus: vec![0, 1, 4, 5] }, NumaNode { id: 1, cpus: vec![2, 3, 6, 7] }];
        Topology { cpus, cores, caches: Vec::new(), numa_nodes }
    }

    fn all() -> Vec<usize> {
        (0..8).collect()
    }

    #[test]
    fn by_core_fills_cores_in_order_and_binds_by_default() {
        let placement = place(&two_sockets(), &all(), 3, MapBy::Core, None, &NetworkCores::default()).unwrap();
        assert_eq!(placement, vec![Some(vec![0, 4]), Some(vec![1, 5]), Some(vec![2, 6])]);
    }

    #[test]
    fn by_socket_alternates_packages() {
        let placement = place(&two_sockets(), &all(), 4, MapBy::Socket, Some(BindTo::Core), &NetworkCores::default()).unwrap();
        assert_eq!(placement, vec![Some(vec![0, 4]), Some(vec![2, 6]), Some(vec![1, 5]), Some(vec![3, 7])]);
        let to_socket = place(&two_sockets(), &all(), 2, MapBy::Numa, Some(BindTo::Socket), &NetworkCores::default()).unwrap();
        assert_eq!(to_socket, vec![Some(vec![0, 1, 4, 5]), Some(vec![2, 3, 6, 7])]);
    }

    #[test]
    fn oversubscription_unbinds_by_default_and_refuses_core_binding() {
        assert_eq!(place(&two_sockets(), &all(), 5, MapBy::Core, None, &NetworkCores::default()).unwrap(), vec![None; 5]);
        assert!(place(&two_sockets(), &all(), 5, MapBy::Core, Some(BindTo::Core), &NetworkCores::default()).unwrap_err().contains("5 ranks"));
        let wrapped = place(&two_sockets(), &all(), 6, MapBy::Socket, Some(BindTo::Socket), &NetworkCores::default()).unwrap();
        assert_eq!(wrapped[4], Some(vec![0, 1, 4, 5]));
    }

    #[test]
    fn network_cores_are_left_out_when_the_others_are_enough_and_taken_last_otherwise() {
        // CPU 4 (core 0's second thread) takes a NIC's interrupts.
        let network = NetworkCores { cpus: vec![4], rank_order: Vec::new() };
        let placement = place(&two_sockets(), &all(), 3, MapBy::Core, None, &network).unwrap();
        assert_eq!(placement, vec![Some(vec![1, 5]), Some(vec![2, 6]), Some(vec![3, 7])]);
        let full = place(&two_sockets(), &all(), 4, MapBy::Core, None, &network).unwrap();
        assert_eq!(full[3], Some(vec![0, 4]), "the last rank takes the network core");
        // Rank 0 communicates most: it takes the network core, the others stay off it.
        let by_traffic = NetworkCores { cpus: vec![4], rank_order: vec![1, 2, 3, 0] };
        let full = place(&two_sockets(), &all(), 4, MapBy::Core, None, &by_traffic).unwrap();
        assert_eq!((full[0].clone(), full[1].clone()), (Some(vec![0, 4]), Some(vec![1, 5])));
    }

    #[test]
    fn only_usable_cpus_are_used() {
        let placement = place(&two_sockets(), &[2, 3, 6], 2, MapBy::Core, None, &NetworkCores::default()).unwrap();
        assert_eq!(placement, vec![Some(vec![2, 6]), Some(vec![3])]);
        assert_eq!(place(&two_sockets(), &[2, 3, 6], 3, MapBy::Core, None, &NetworkCores::default()).unwrap(), vec![None; 3]);
        assert_eq!(place(&two_sockets(), &all(), 2, MapBy::Core, Some(BindTo::None), &NetworkCores::default()).unwrap(), vec![None, None]);
    }
}
