//! Which ranks share this node, and whether they outnumber the CPUs they may run on: the fact that
//! chooses between polling and blocking (a spinning rank on a shared core steals the time of the
//! rank it waits for). Exchanged once through the bootstrap at start-up.

use braid_pmi::Bootstrap;
use braid_sys::{affinity, process, topology};

use crate::EngineError;

pub(crate) struct NodeInfo {
    /// Job ranks on this node, in rank order.
    pub(crate) ranks: Vec<u32>,
    /// The node of every job rank, numbered in order of each node's lowest rank.
    pub(crate) node_of: Vec<u32>,
    /// The ranks on this machine outnumber the distinct CPUs in the union of their affinity masks
    /// (the nodes of a virtual cluster are one machine's network namespaces: they share its CPUs).
    pub(crate) oversubscribed: bool,
    /// CPUs of this node that could run helper threads (chunk-submission offload) without taking
    /// one of the node's ranks' (on a virtual cluster, the other nodes' ranks share them too).
    pub(crate) spare: SpareCpus,
    /// The CPU set of each of this node's ranks, in the order of `ranks`.
    pub(crate) masks: Vec<Vec<usize>>,
}

/// CPUs of a node left to helper threads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SpareCpus {
    /// How many CPUs the node's ranks leave free.
    pub(crate) count: usize,
    /// Which ones, when every rank is bound to a single CPU (empty when the ranks float over
    /// shared masks: then the free ones are not known, only how many there are).
    pub(crate) cpus: Vec<usize>,
}

impl NodeInfo {
    /// CPUs where a helper thread could work now without taking one from a running rank of this
    /// machine: the node's spare CPUs (all of `me`'s when they are only counted), or else those of
    /// `peer` when `peer_asleep` (a rank of this node, other than `me`, that sleeps in a blocking
    /// call). None on an oversubscribed machine, or when neither applies.
    pub(crate) fn idle_cpus(&self, me: u32, peer: u32, peer_asleep: impl FnOnce() -> bool) -> Option<&[usize]> {
        if self.oversubscribed {
            return None;
        }
        let mask_of = |rank: u32| self.ranks.iter().position(|&local| local == rank).map(|local| &self.masks[local][..]);
        if self.spare.count > 0 {
            return if self.spare.cpus.is_empty() { mask_of(me) } else { Some(&self.spare.cpus) };
        }
        if peer == me || !peer_asleep() {
            return None;
        }
        mask_of(peer)
    }
}

/// Names this node: machine, boot and network namespace (see `process::node_identity`).
fn node_identity() -> Result<String, EngineError> {
    process::node_identity().map_err(|error| EngineError::Init(format!("cannot identify this node: {error}")))
}

fn bootstrap_error(error: braid_pmi::BootstrapError) -> EngineError {
    EngineError::Init(error.to_string())
}

/// Publishes this rank's node and CPU set, and learns everybody's (collective).
pub(crate) fn exchange(bootstrap: &mut dyn Bootstrap) -> Result<NodeInfo, EngineError> {
    let rank = bootstrap.rank();
    let identity = node_identity()?;
    let cpus = affinity::calling_thread().map_err(|error| EngineError::Init(format!("cannot read the CPU affinity: {error}")))?;
    bootstrap.put(&format!("braid-node-{rank}"), &identity).map_err(bootstrap_error)?;
    bootstrap.put(&format!("braid-cpus-{rank}"), &topology::format_cpu_list(&cpus)).map_err(bootstrap_error)?;
    bootstrap.fence().map_err(bootstrap_error)?;
    let mut ranks = Vec::new();
    // The CPU sets of the ranks on this machine, whatever their network namespace, and on this node.
    let mut masks = Vec::new();
    let mut node_masks = Vec::new();
    let mut identities: Vec<String> = Vec::new();
    let mut node_of = Vec::new();
    for peer in 0..bootstrap.size() {
        let (peer_identity, peer_cpus) = if peer == rank {
            (identity.clone(), cpus.clone())
        } else {
            let peer_identity = bootstrap.get(&format!("braid-node-{peer}")).map_err(bootstrap_error)?;
            let text = bootstrap.get(&format!("braid-cpus-{peer}")).map_err(bootstrap_error)?;
            let peer_cpus = topology::parse_cpu_list(&text).ok_or_else(|| EngineError::Init(format!("rank {peer} published a malformed CPU list {text:?}")))?;
            (peer_identity, peer_cpus)
        };
        node_of.push(match identities.iter().position(|known| *known == peer_identity) {
            Some(node) => node as u32,
            None => {
                identities.push(peer_identity.clone());
                (identities.len() - 1) as u32
            }
        });
        if peer_identity == identity {
            ranks.push(peer);
            node_masks.push(peer_cpus.clone());
        }
        if machine(&peer_identity) == machine(&identity) {
            masks.push(peer_cpus);
        }
    }
    let online: Vec<usize> = topology::Topology::detect().map(|topology| topology.cpus.iter().map(|cpu| cpu.id).collect()).unwrap_or_default();
    Ok(NodeInfo { oversubscribed: oversubscribed(&masks), spare: spare_cpus(&node_masks, &online), ranks, node_of, masks: node_masks })
}

/// The machine part of a node identity: without its network namespace.
fn machine(identity: &str) -> &str {
    identity.rsplit_once(":net").map_or(identity, |(machine, _)| machine)
}

/// The CPUs `masks.len()` ranks leave free on a node with `online` CPUs.
fn spare_cpus(masks: &[Vec<usize>], online: &[usize]) -> SpareCpus {
    let mut union: Vec<usize> = masks.iter().flatten().copied().collect();
    union.sort_unstable();
    union.dedup();
    if masks.iter().all(|mask| mask.len() == 1) {
        let cpus: Vec<usize> = online.iter().copied().filter(|cpu| !union.contains(cpu)).collect();
        return SpareCpus { count: cpus.len(), cpus };
    }
    SpareCpus { count: union.len().saturating_sub(masks.len()), cpus: Vec::new() }
}

/// Whether `masks.len()` ranks (one CPU set each) outnumber the distinct CPUs they share.
fn oversubscribed(masks: &[Vec<usize>]) -> bool {
    let mut union: Vec<usize> = masks.iter().flatten().copied().collect();
    union.sort_unstable();
    union.dedup();
    masks.len() > union.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nodes_of_a_virtual_cluster_are_one_machine() {
        assert_eq!(machine("host:boot-id:net4026531840"), "host:boot-id");
        assert_eq!(machine("host:boot-id:net4026531840"), machine("host:boot-id:net4026532001"));
        assert_ne!(machine("host:boot-id:net1"), machine("other:boot-id:net1"));
    }

    #[test]
    fn ranks_beyond_the_union_of_their_cpus_oversubscribe() {
        assert!(!oversubscribed(&[vec![0, 1], vec![0, 1]]));
        assert!(oversubscribed(&[vec![0, 1], vec![0, 1], vec![1]]));
        assert!(!oversubscribed(&[vec![0], vec![1], vec![2]]));
        assert!(oversubscribed(&[vec![3], vec![3]]));
    }

    #[test]
    fn spare_cpus_are_named_when_ranks_are_bound_and_counted_when_they_float() {
        let online = [0, 1, 2, 3];
        assert_eq!(spare_cpus(&[vec![0], vec![2]], &online), SpareCpus { count: 2, cpus: vec![1, 3] });
        assert_eq!(spare_cpus(&[vec![0, 1, 2, 3], vec![0, 1, 2, 3]], &online), SpareCpus { count: 2, cpus: vec![] });
        assert_eq!(spare_cpus(&[vec![0, 1], vec![0, 1], vec![0, 1]], &online), SpareCpus { count: 0, cpus: vec![] });
        assert_eq!(spare_cpus(&[vec![0], vec![1], vec![2], vec![3]], &online), SpareCpus::default());
    }

    fn node(oversubscribed: bool, spare: SpareCpus, masks: Vec<Vec<usize>>) -> NodeInfo {
        let ranks = (0..masks.len() as u32).collect();
        NodeInfo { ranks, node_of: vec![0; masks.len()], oversubscribed, spare, masks }
    }

    #[test]
    fn a_helper_takes_spare_cpus_else_a_sleeping_peers_never_a_busy_ones() {
        let bound = node(false, SpareCpus::default(), vec![vec![0], vec![1]]);
        assert_eq!(bound.idle_cpus(0, 1, || true), Some(&[1][..]));
        assert_eq!(bound.idle_cpus(0, 1, || false), None);
        assert_eq!(bound.idle_cpus(0, 0, || true), None);
        assert_eq!(bound.idle_cpus(0, 7, || true), None, "not a rank of this node");
        let spare = node(false, SpareCpus { count: 2, cpus: vec![2, 3] }, vec![vec![0], vec![1]]);
        assert_eq!(spare.idle_cpus(0, 1, || false), Some(&[2, 3][..]));
        let floating = node(false, SpareCpus { count: 1, cpus: vec![] }, vec![vec![0, 1, 2], vec![0, 1, 2]]);
        assert_eq!(floating.idle_cpus(1, 0, || false), Some(&[0, 1, 2][..]));
        let crowded = node(true, SpareCpus::default(), vec![vec![0], vec![0]]);
        assert_eq!(crowded.idle_cpus(0, 1, || true), None);
    }

    #[test]
    fn threads_of_one_process_share_a_node() {
        let jobs = braid_pmi::threads::ThreadBootstrap::job("braid-engine-node-test", 3);
        let handles: Vec<_> = jobs.into_iter().map(|mut bootstrap| std::thread::spawn(move || exchange(&mut bootstrap).unwrap())).collect();
        for handle in handles {
            let info = handle.join().unwrap();
            assert_eq!(info.ranks, vec![0, 1, 2]);
            assert_eq!(info.node_of, vec![0, 0, 0]);
            let cpus = affinity::calling_thread().unwrap().len();
            assert_eq!(info.oversubscribed, 3 > cpus);
        }
    }
}
