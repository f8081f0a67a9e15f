//! The node structure of a communicator, and the cost model that says when a collective should use
//! it.
//!
//! A communicator whose ranks span several nodes, with more than one rank on some node, can run a
//! collective in three phases: among each node's ranks (shared memory), among one representative
//! per node (the network), and among each node's ranks again. Whether that beats the flat
//! algorithm depends on the sizes and on the links, so the choice comes from predicted times: the
//! lanes' sampled profiles ([`Profile`]: shared memory within a node, the rails between nodes)
//! applied to the rounds each algorithm would run on this communicator's actual layout, not from
//! fixed cut-offs. The model is I/O-free; the communicator builds it once from the engine's node
//! map and profiles.

use std::sync::Mutex;

use braid_lane::Profile;

use super::{CollTuning, SMALL_ALLREDUCE_RANKS};

/// Which node each rank of a communicator is on, grouped.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeLayout {
    /// The ranks of each node, in rank order; nodes in the order of their lowest rank.
    nodes: Vec<Vec<usize>>,
    /// The index in `nodes` of each rank's node.
    node_of: Vec<usize>,
}

impl NodeLayout {
    /// The layout of ranks whose nodes are named by `node_ids` (any numbering; equal ids share a
    /// node).
    pub fn new(node_ids: &[u32]) -> NodeLayout {
        let mut nodes: Vec<Vec<usize>> = Vec::new();
        let mut ids: Vec<u32> = Vec::new();
        let mut node_of = Vec::with_capacity(node_ids.len());
        for (rank, id) in node_ids.iter().enumerate() {
            let index = match ids.iter().position(|known| known == id) {
                Some(index) => index,
                None => {
                    ids.push(*id);
                    nodes.push(Vec::new());
                    ids.len() - 1
                }
            };
            nodes[index].push(rank);
            node_of.push(index);
        }
        NodeLayout { nodes, node_of }
    }

    /// Whether a hierarchy can help: several nodes, and some node with more than one rank.
    pub fn is_hierarchical(&self) -> bool {
        self.nodes.len() > 1 && self.nodes.len() < self.node_of.len()
    }

    pub fn nodes(&self) -> &[Vec<usize>] {
        &self.nodes
    }

    /// The ranks of `rank`'s node.
    pub fn node_of(&self, rank: usize) -> &[usize] {
        &self.nodes[self.node_of[rank]]
    }

    /// One rank per node, in node order: `root` for its own node, the lowest rank elsewhere.
    pub fn representatives(&self, root: usize) -> Vec<usize> {
        let root_node = self.node_of[root];
        self.nodes.iter().enumerate().map(|(index, members)| if index == root_node { root } else { members[0] }).collect()
    }

    /// Most ranks on one node.
    fn widest(&self) -> usize {
        self.nodes.iter().map(Vec::len).max().unwrap_or(0)
    }

    fn crosses(&self, a: usize, b: usize) -> bool {
        self.node_of[a] != self.node_of[b]
    }
}

/// The links a collective's messages take: within a node and between nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkCosts {
    pub intra: Profile,
    pub inter: Profile,
}

/// Which form of a collective to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Flat,
    Hierarchical,
}

/// Collectives with a hierarchical form. The bytes the model takes: the whole buffer (bcast,
/// reduce, allreduce, reduce_scatter's input vector), or one rank's block (allgather, gather,
/// scatter), or the block for one destination (alltoall).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collective {
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Allgather,
    Gather,
    Scatter,
    ReduceScatter,
    Alltoall,
}

impl Collective {
    pub fn name(self) -> &'static str {
        match self {
            Collective::Barrier => "barrier",
            Collective::Bcast => "bcast",
            Collective::Reduce => "reduce",
            Collective::Allreduce => "allreduce",
            Collective::Allgather => "allgather",
            Collective::Gather => "gather",
            Collective::Scatter => "scatter",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::Alltoall => "alltoall",
        }
    }
}

/// A communicator's layout and links: what chooses between the flat and hierarchical forms.
#[derive(Debug)]
pub struct Hierarchy {
    pub layout: NodeLayout,
    pub costs: LinkCosts,
    /// With BRAID_DEBUG: the (collective, bytes) points whose choice has been printed, each once.
    reported: Option<Mutex<Vec<(Collective, usize)>>>,
}

impl Hierarchy {
    pub fn new(layout: NodeLayout, costs: LinkCosts) -> Hierarchy {
        Hierarchy { layout, costs, reported: None }
    }

    /// Prints each distinct choice of the cost model once (BRAID_DEBUG), so that a sweep can set
    /// the model's predictions beside the measured times.
    pub fn reporting(self) -> Hierarchy {
        Hierarchy { reported: Some(Mutex::new(Vec::new())), ..self }
    }

    /// [`Hierarchy::choose`], printing the choice if this hierarchy reports and it is new.
    pub fn choose_and_report(&self, collective: Collective, bytes: usize, tuning: CollTuning) -> Form {
        let (form, flat, hierarchical) = self.choose(collective, bytes, tuning);
        if let Some(reported) = &self.reported {
            let mut reported = reported.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if !reported.contains(&(collective, bytes)) {
                reported.push((collective, bytes));
                let chosen = if form == Form::Hierarchical { "hierarchical" } else { "flat" };
                eprintln!("braid: coll model: {} {bytes} B: flat {flat:.0} ns, hierarchical {hierarchical:.0} ns: {chosen}", collective.name());
            }
        }
        form
    }

    /// The form predicted to finish first for `bytes` of data per rank under the flat algorithms'
    /// switch points `tuning`, with the predicted nanoseconds of the flat and hierarchical forms.
    pub fn choose(&self, collective: Collective, bytes: usize, tuning: CollTuning) -> (Form, f64, f64) {
        let flat = self.flat_time(collective, bytes, tuning);
        let hierarchical = self.hierarchical_time(collective, bytes, tuning);
        let form = if hierarchical < flat { Form::Hierarchical } else { Form::Flat };
        (form, flat, hierarchical)
    }

    /// One round in which each `(from, to)` of `messages` carries `bytes`: the slowest link. Within
    /// a node a rank handles its own messages one after another, other ranks at the same time;
    /// the messages leaving (or reaching) one node go one after another (its network, and on TCP
    /// its CPUs, serve them in turn).
    fn round(&self, messages: &[(usize, usize)], bytes: usize) -> f64 {
        let mut leaving = vec![0usize; self.layout.nodes.len()];
        let mut arriving = vec![0usize; self.layout.nodes.len()];
        let mut handled = vec![0usize; self.layout.node_of.len()];
        for &(from, to) in messages {
            if self.layout.crosses(from, to) {
                leaving[self.layout.node_of[from]] += 1;
                arriving[self.layout.node_of[to]] += 1;
            } else {
                handled[from] += 1;
                handled[to] += 1;
            }
        }
        let most = leaving.into_iter().chain(arriving).max().unwrap_or(0);
        let inter = most as f64 * self.costs.inter.predict(bytes);
        let intra = handled.into_iter().max().unwrap_or(0) as f64 * self.costs.intra.predict(bytes);
        inter.max(intra)
    }

    /// `steps` rounds in which rank i of `ranks` sends `bytes` to rank i + step (step 1, 2, ...):
    /// a ring (`pairwise` false: always step 1) or a pairwise exchange.
    fn shifts(&self, ranks: &[usize], bytes: usize, pairwise: bool) -> f64 {
        let size = ranks.len();
        (1..size)
            .map(|step| {
                let shift = if pairwise { step } else { 1 };
                let messages: Vec<(usize, usize)> = (0..size).map(|i| (ranks[i], ranks[(i + shift) % size])).collect();
                self.round(&messages, bytes)
            })
            .sum()
    }

    /// A binomial gather to `ranks[0]` (a scatter's is the same rounds reversed): the subtree
    /// under each edge carries its blocks of `block` bytes.
    fn binomial_gather(&self, ranks: &[usize], block: usize) -> f64 {
        let size = ranks.len();
        let mut total = 0.0;
        let mut mask = 1;
        while mask < size {
            let edges: Vec<(usize, usize)> = (0..size).filter(|&r| r % (2 * mask) == 0 && r + mask < size).map(|r| (ranks[r + mask], ranks[r])).collect();
            total += self.round(&edges, mask * block);
            mask <<= 1;
        }
        total
    }

    /// Every rank of each node sends `bytes` to its node's first rank, at once on every node.
    fn to_node_leaders(&self, bytes: usize) -> f64 {
        let messages: Vec<(usize, usize)> = self.layout.nodes.iter().flat_map(|members| members[1..].iter().map(|&member| (member, members[0]))).collect();
        self.round(&messages, bytes)
    }

    /// Both directions of each pair.
    fn exchange(&self, pairs: &[(usize, usize)], bytes: usize) -> f64 {
        let messages: Vec<(usize, usize)> = pairs.iter().flat_map(|&(a, b)| [(a, b), (b, a)]).collect();
        self.round(&messages, bytes)
    }

    /// Recursive doubling over `ranks` (a power-of-two prefix; the others fold in first and out
    /// last), round k exchanging `bytes(k)`; `halving_too` doubles every round (Rabenseifner's
    /// reduce-scatter by halving, then allgather by doubling).
    fn doubling(&self, ranks: &[usize], bytes: impl Fn(usize) -> usize, halving_too: bool) -> f64 {
        let size = ranks.len();
        if size < 2 {
            return 0.0;
        }
        let participants = 1 << (usize::BITS - 1 - size.leading_zeros());
        let extra: Vec<(usize, usize)> = (participants..size).map(|rank| (ranks[rank], ranks[rank - participants])).collect();
        let mut total = if extra.is_empty() { 0.0 } else { 2.0 * self.exchange(&extra, bytes(0)) };
        let mut mask = 1;
        let mut step = 0;
        while mask < participants {
            let pairs: Vec<(usize, usize)> = (0..participants).filter(|&r| r & mask == 0).map(|r| (ranks[r], ranks[r | mask])).collect();
            let once = self.exchange(&pairs, bytes(step));
            total += if halving_too { 2.0 * once } else { once };
            mask <<= 1;
            step += 1;
        }
        total
    }

    /// A binomial tree over `ranks` from `ranks[0]` (a broadcast's; a reduction's is the same
    /// rounds reversed), `bytes` per edge.
    fn binomial(&self, ranks: &[usize], bytes: usize) -> f64 {
        let size = ranks.len();
        let mut total = 0.0;
        let mut mask = 1;
        while mask < size {
            let edges: Vec<(usize, usize)> = (0..size).filter(|&r| r % (2 * mask) == 0 && r + mask < size).map(|r| (ranks[r], ranks[r + mask])).collect();
            total += self.round(&edges, bytes);
            mask <<= 1;
        }
        total
    }

    /// A broadcast over `ranks` as the flat algorithm does it: binomial, or for large buffers a
    /// binomial scatter and a ring allgather.
    fn broadcast(&self, ranks: &[usize], bytes: usize, tuning: CollTuning) -> f64 {
        let size = ranks.len();
        if size < 2 {
            return 0.0;
        }
        if bytes < tuning.bcast_split_min || bytes < size {
            return self.binomial(ranks, bytes);
        }
        let piece = bytes.div_ceil(size);
        let ring: Vec<(usize, usize)> = (0..size).map(|r| (ranks[r], ranks[(r + 1) % size])).collect();
        self.binomial(ranks, bytes / 2) + (size - 1) as f64 * self.round(&ring, piece)
    }

    /// A commutative allreduce over `ranks` as the flat algorithm does it.
    fn allreduce(&self, ranks: &[usize], bytes: usize, tuning: CollTuning) -> f64 {
        let size = ranks.len();
        if (3..=SMALL_ALLREDUCE_RANKS).contains(&size) && bytes <= tuning.allreduce_exchange_max / size {
            let all: Vec<(usize, usize)> = ranks.iter().flat_map(|&a| ranks.iter().filter(move |&&b| b != a).map(move |&b| (a, b))).collect();
            return self.round(&all, bytes);
        }
        if bytes >= tuning.allreduce_split_min {
            return self.doubling(ranks, |step| bytes >> (step + 1), true);
        }
        self.doubling(ranks, |_| bytes, false)
    }

    fn flat_time(&self, collective: Collective, bytes: usize, tuning: CollTuning) -> f64 {
        let all: Vec<usize> = (0..self.layout.node_of.len()).collect();
        match collective {
            Collective::Barrier => self.doubling(&all, |_| 0, false),
            Collective::Bcast => self.broadcast(&all, bytes, tuning),
            Collective::Reduce => self.binomial(&all, bytes),
            Collective::Allreduce => self.allreduce(&all, bytes, tuning),
            Collective::Allgather => self.shifts(&all, bytes, false),
            Collective::Gather | Collective::Scatter => self.binomial_gather(&all, bytes),
            Collective::ReduceScatter => self.shifts(&all, bytes / all.len().max(1), true),
            Collective::Alltoall => self.shifts(&all, bytes, true),
        }
    }

    /// Within the nodes, among their representatives, within the nodes again. The nodes' phases
    /// run at once; the widest node sets their time.
    fn hierarchical_time(&self, collective: Collective, bytes: usize, tuning: CollTuning) -> f64 {
        let widest = self.layout.widest();
        let node: Vec<usize> = self.layout.nodes.iter().find(|members| members.len() == widest).cloned().unwrap_or_default();
        let leaders = self.layout.representatives(0);
        match collective {
            Collective::Barrier => 2.0 * self.doubling(&node, |_| 0, false) + self.doubling(&leaders, |_| 0, false),
            Collective::Bcast => self.broadcast(&leaders, bytes, tuning) + self.broadcast(&node, bytes, tuning),
            Collective::Reduce => self.binomial(&node, bytes) + self.binomial(&leaders, bytes),
            Collective::Allreduce => self.binomial(&node, bytes) + self.allreduce(&leaders, bytes, tuning) + self.broadcast(&node, bytes, tuning),
            Collective::Allgather => {
                let size = self.layout.node_of.len();
                self.to_node_leaders(bytes) + self.shifts(&leaders, widest * bytes, false) + self.broadcast(&node, size * bytes, tuning)
            }
            Collective::Gather | Collective::Scatter => {
                let sections: Vec<(usize, usize)> = leaders[1..].iter().map(|&leader| (leader, leaders[0])).collect();
                self.to_node_leaders(bytes) + self.round(&sections, widest * bytes)
            }
            Collective::ReduceScatter => {
                let block = bytes / self.layout.node_of.len().max(1);
                self.binomial(&node, bytes) + self.shifts(&leaders, widest * block, true) + self.to_node_leaders(block)
            }
            Collective::Alltoall => {
                let elsewhere = self.layout.node_of.len() - widest;
                self.shifts(&node, bytes, true) + 2.0 * self.to_node_leaders(elsewhere * bytes) + self.shifts(&leaders, widest * widest * bytes, true)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs() -> LinkCosts {
        // Shared memory: 0.3 us, 10 GB/s. Network: 20 us, 200 MB/s.
        LinkCosts { intra: Profile::from_model(300.0, 10e9, 1 << 24), inter: Profile::from_model(20_000.0, 200e6, 1 << 24) }
    }

    fn tuning() -> CollTuning {
        CollTuning::default()
    }

    #[test]
    fn layouts_group_ranks_by_node_in_order_of_their_lowest_rank() {
        let cyclic = NodeLayout::new(&[7, 3, 7, 3, 9]);
        assert_eq!(cyclic.nodes(), &[vec![0, 2], vec![1, 3], vec![4]]);
        assert_eq!(cyclic.node_of(3), &[1, 3]);
        assert_eq!(cyclic.representatives(3), vec![0, 3, 4]);
        assert!(cyclic.is_hierarchical());
        assert!(!NodeLayout::new(&[1, 1, 1]).is_hierarchical());
        assert!(!NodeLayout::new(&[1, 2, 3]).is_hierarchical());
    }

    #[test]
    fn small_allreduces_cross_the_network_once_per_node_in_a_hierarchy() {
        // Flat, 4 ranks exchange all inputs: two messages leave each node.
        let blocked = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), costs());
        let (form, flat, hierarchical) = blocked.choose(Collective::Allreduce, 8, tuning());
        assert_eq!(form, Form::Hierarchical, "{flat} vs {hierarchical}");
        let wide = Hierarchy::new(NodeLayout::new(&[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]), costs());
        assert_eq!(wide.choose(Collective::Allreduce, 8, tuning()).0, Form::Hierarchical);
    }

    #[test]
    fn a_large_allreduce_moves_as_much_either_way_and_stays_flat() {
        // Halving first, the flat algorithm sends each node's half across once, as the leaders do.
        let blocked = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), costs());
        let (form, flat, hierarchical) = blocked.choose(Collective::Allreduce, 4 << 20, tuning());
        assert_eq!(form, Form::Flat);
        assert!((hierarchical - flat).abs() < 0.1 * flat, "{flat} vs {hierarchical}");
    }

    #[test]
    fn a_cyclic_layout_makes_every_flat_round_cross_the_network() {
        let blocked = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), costs());
        let cyclic = Hierarchy::new(NodeLayout::new(&[0, 1, 0, 1]), costs());
        let (_, blocked_flat, _) = blocked.choose(Collective::Bcast, 1 << 10, tuning());
        let (form, cyclic_flat, cyclic_hierarchical) = cyclic.choose(Collective::Bcast, 1 << 10, tuning());
        assert!(cyclic_flat > 1.5 * blocked_flat, "{cyclic_flat} vs {blocked_flat}");
        assert_eq!(form, Form::Hierarchical, "{cyclic_flat} vs {cyclic_hierarchical}");
        assert_eq!(cyclic.choose(Collective::Reduce, 1 << 10, tuning()).0, Form::Hierarchical);
    }

    #[test]
    fn equal_links_leave_the_flat_form() {
        let same = Profile::from_model(300.0, 10e9, 1 << 24);
        let flat = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), LinkCosts { intra: same.clone(), inter: same });
        for collective in [Collective::Barrier, Collective::Bcast, Collective::Reduce] {
            for bytes in [8, 1 << 16, 4 << 20] {
                assert_eq!(flat.choose(collective, bytes, tuning()).0, Form::Flat, "{collective:?}, {bytes} bytes");
            }
        }
    }

    #[test]
    fn node_sections_cross_the_network_once_per_node() {
        // Cyclic, 4 ranks: the flat ring and pairwise rounds cross the network every round.
        let cyclic = Hierarchy::new(NodeLayout::new(&[0, 1, 0, 1]), costs());
        for collective in [Collective::Allgather, Collective::Alltoall, Collective::ReduceScatter, Collective::Gather, Collective::Scatter] {
            let (form, flat, hierarchical) = cyclic.choose(collective, 64, tuning());
            assert_eq!(form, Form::Hierarchical, "{collective:?}: {flat} vs {hierarchical}");
        }
        // A large reduce-scatter sends half the vector across instead of every rank's blocks.
        let blocked = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), costs());
        assert_eq!(blocked.choose(Collective::ReduceScatter, 4 << 20, tuning()).0, Form::Hierarchical);
    }
}
