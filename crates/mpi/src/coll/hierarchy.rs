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

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;

use braid_lane::Profile;

use super::algorithms::segment::NodeSegment;
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

/// The links a collective's messages take: within a node and between nodes, and what waking a
/// sleeping receiver adds to a round (nanoseconds; 0 where ranks spin while they wait) that
/// lasts longer than the ranks stay awake (`awake`, nanoseconds: they spin or yield their core
/// first, so a shorter round wakes nobody).
#[derive(Debug, Clone, PartialEq)]
pub struct LinkCosts {
    pub intra: Profile,
    pub inter: Profile,
    pub wake_up: f64,
    pub awake: f64,
}

/// Which form of a collective to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Flat,
    /// The node phases pass messages through shared memory.
    Hierarchical,
    /// A reduction whose node phases go through a node-wide shared segment, the node's ranks
    /// reducing disjoint slices in parallel (see [`node_segment`]).
    NodeSegment,
}

impl Form {
    fn name(self) -> &'static str {
        match self {
            Form::Flat => "flat",
            Form::Hierarchical => "hierarchical",
            Form::NodeSegment => "node segment",
        }
    }
}

/// Bytes of one rank's slot in a node-wide reduction segment: vectors go through it in chunks of
/// this size, so the segment stays small whatever the vector.
pub const NODE_SEGMENT_CHUNK: usize = 1 << 20;

/// Fewest bytes per rank of the node for the node segment form: a cache line.
const NODE_SEGMENT_SLICE_MIN: usize = 64;

/// The node-wide shared segment form's arithmetic.
pub mod node_segment {
    use std::ops::Range;

    /// The chunks of a `len`-byte vector of `element_size`-byte elements that pass through slots
    /// of `slot_bytes` bytes: whole elements each.
    pub fn chunks(len: usize, element_size: usize, slot_bytes: usize) -> impl Iterator<Item = Range<usize>> {
        let step = (slot_bytes / element_size.max(1)).max(1) * element_size.max(1);
        (0..len).step_by(step).map(move |start| start..(start + step).min(len))
    }

    /// The slice of a `len`-byte chunk that node rank `rank` of `ranks` reduces: whole elements,
    /// the ranks' slices disjoint and covering the chunk, the first ones one element longer where
    /// the elements do not divide evenly.
    pub fn slice(len: usize, element_size: usize, ranks: usize, rank: usize) -> Range<usize> {
        let elements = len / element_size.max(1);
        let (base, extra) = (elements / ranks, elements % ranks);
        let start = rank * base + rank.min(extra);
        let end = start + base + usize::from(rank < extra);
        start * element_size..end * element_size
    }
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
    Gatherv,
    Scatterv,
    Alltoallv,
}

impl Collective {
    /// How many there are (the variants are numbered from 0 in order).
    const COUNT: usize = Collective::Alltoallv as usize + 1;

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
            Collective::Gatherv => "gatherv",
            Collective::Scatterv => "scatterv",
            Collective::Alltoallv => "alltoallv",
        }
    }
}

/// Sizes the model tells apart: exact below 8 bytes, then four classes per doubling. A class
/// takes the choice made for its smallest size, so that every rank makes the same choice for
/// the same class whatever sizes it saw first.
const SIZE_CLASSES: usize = 8 + 4 * (usize::BITS as usize - 3);
/// The slot after the size classes: the choice for a collective whose sizes not every rank
/// knows (the v-variants), made without a size.
const ANY_SIZE: usize = SIZE_CLASSES;
const SLOTS_PER_COLLECTIVE: usize = SIZE_CLASSES + 1;
/// Sizes at which a choice made without a size must hold: from one element to 64 MiB.
const ANY_SIZE_PROBES: [usize; 6] = [8, 512, 32 << 10, 512 << 10, 4 << 20, 64 << 20];

/// The class of `bytes` and its smallest size.
fn size_class(bytes: usize) -> (usize, usize) {
    if bytes < 8 {
        return (bytes, bytes);
    }
    let top = (usize::BITS - 1 - bytes.leading_zeros()) as usize;
    let quarter = (bytes >> (top - 2)) & 3;
    (8 + 4 * (top - 3) + quarter, (1 << top) | (quarter << (top - 2)))
}

/// Bytes a rank's size takes in the round that tells it to its representative.
const COUNT_BYTES: usize = 8;

/// A cached choice: not made yet, or the form.
const UNCHOSEN: u8 = 0;
const FLAT: u8 = 1;
const HIERARCHICAL: u8 = 2;
const NODE_SEGMENT: u8 = 3;

/// A communicator's layout and links: what chooses between the flat and hierarchical forms.
///
/// The choices are cached per collective and size class, so that a call's choice is a lookup;
/// they are remade when the flat algorithms' switch points change (MPI_T may write them). The
/// collectives of one communicator run one at a time (MPI's rule), so the cache needs no lock.
#[derive(Debug)]
pub struct Hierarchy {
    pub layout: NodeLayout,
    pub costs: LinkCosts,
    /// With BRAID_DEBUG: each choice is printed as it is made.
    reporting: bool,
    /// `UNCHOSEN`, `FLAT` or `HIERARCHICAL` per collective (`SLOTS_PER_COLLECTIVE` each).
    choices: Box<[AtomicU8]>,
    /// The switch points the cached choices were made under.
    chosen_under: [AtomicUsize; 4],
    /// This rank's node's reduction segment, made at the first allreduce that takes the node
    /// segment form (None inside: it could not be made); unmapped with the communicator.
    pub node_segment: OnceLock<Option<NodeSegment>>,
}

impl Hierarchy {
    pub fn new(layout: NodeLayout, costs: LinkCosts) -> Hierarchy {
        let choices = (0..Collective::COUNT * SLOTS_PER_COLLECTIVE).map(|_| AtomicU8::new(UNCHOSEN)).collect();
        let default = CollTuning::default();
        let chosen_under =
            [AtomicUsize::new(default.bcast_split_min), AtomicUsize::new(default.allreduce_split_min), AtomicUsize::new(default.allreduce_exchange_max), AtomicUsize::new(default.alltoall_batch)];
        Hierarchy { layout, costs, reporting: false, choices, chosen_under, node_segment: OnceLock::new() }
    }

    /// Prints each choice of the cost model as it is made (BRAID_DEBUG), so that a sweep can set
    /// the model's predictions beside the measured times.
    pub fn reporting(self) -> Hierarchy {
        Hierarchy { reporting: true, ..self }
    }

    /// The form for `collective` on `bytes` under `tuning`: the cached choice for the size's
    /// class, made (at the class's smallest size) on first use.
    pub fn pick(&self, collective: Collective, bytes: usize, tuning: CollTuning) -> Form {
        let (class, smallest) = size_class(bytes);
        self.cached(collective, class, tuning, || {
            let (form, flat, hierarchical) = self.choose(collective, smallest, tuning);
            if self.reporting {
                let segment = self.node_segment_time(collective, smallest, tuning).map(|segment| format!(" (node segment {segment:.0} ns)")).unwrap_or_default();
                eprintln!("braid: coll model: {} {smallest} B: flat {flat:.0} ns, hierarchical {hierarchical:.0} ns{segment}: {}", collective.name(), form.name());
            }
            form
        })
    }

    /// The form for a collective whose sizes not every rank knows (gatherv, scatterv,
    /// alltoallv: a rank knows its own blocks only), so every rank must choose without them:
    /// hierarchical only where the model predicts it pays at every size from one element to
    /// 64 MiB. Its price includes the extra round in which the node's ranks tell their
    /// representative their sizes.
    pub fn pick_for_any_size(&self, collective: Collective, tuning: CollTuning) -> Form {
        self.cached(collective, ANY_SIZE, tuning, || {
            let predictions: Vec<(Form, f64, f64)> = ANY_SIZE_PROBES.iter().map(|&bytes| self.choose(collective, bytes, tuning)).collect();
            let form = if predictions.iter().all(|(form, _, _)| *form == Form::Hierarchical) { Form::Hierarchical } else { Form::Flat };
            if self.reporting {
                let text: Vec<String> = ANY_SIZE_PROBES.iter().zip(&predictions).map(|(bytes, (_, flat, hierarchical))| format!("{bytes} B {flat:.0}/{hierarchical:.0}")).collect();
                eprintln!("braid: coll model: {} any size (flat/hierarchical ns: {}): {}", collective.name(), text.join(", "), form.name());
            }
            form
        })
    }

    fn cached(&self, collective: Collective, class: usize, tuning: CollTuning, choose: impl FnOnce() -> Form) -> Form {
        let under = [tuning.bcast_split_min, tuning.allreduce_split_min, tuning.allreduce_exchange_max, tuning.alltoall_batch];
        if self.chosen_under.iter().zip(under).any(|(chosen, current)| chosen.load(Ordering::Relaxed) != current) {
            for choice in self.choices.iter() {
                choice.store(UNCHOSEN, Ordering::Relaxed);
            }
            for (chosen, current) in self.chosen_under.iter().zip(under) {
                chosen.store(current, Ordering::Relaxed);
            }
        }
        let index = collective as usize * SLOTS_PER_COLLECTIVE + class;
        match self.choices[index].load(Ordering::Relaxed) {
            FLAT => Form::Flat,
            HIERARCHICAL => Form::Hierarchical,
            NODE_SEGMENT => Form::NodeSegment,
            _ => {
                let form = choose();
                self.choices[index].store(
                    match form {
                        Form::Flat => FLAT,
                        Form::Hierarchical => HIERARCHICAL,
                        Form::NodeSegment => NODE_SEGMENT,
                    },
                    Ordering::Relaxed,
                );
                form
            }
        }
    }

    /// The form predicted to finish first for `bytes` of data per rank under the flat algorithms'
    /// switch points `tuning`, with the predicted nanoseconds of the flat and hierarchical forms.
    /// The time given for the hierarchical form is the faster of its variants' (the node
    /// segment's, for an allreduce).
    pub fn choose(&self, collective: Collective, bytes: usize, tuning: CollTuning) -> (Form, f64, f64) {
        let flat = self.flat_time(collective, bytes, tuning);
        let (hierarchical_form, hierarchical) = self.best_hierarchical(collective, bytes, tuning);
        let form = if hierarchical < flat { hierarchical_form } else { Form::Flat };
        (form, flat, hierarchical)
    }

    /// The faster of `collective`'s hierarchical forms on `bytes`, and its predicted time.
    pub fn best_hierarchical(&self, collective: Collective, bytes: usize, tuning: CollTuning) -> (Form, f64) {
        let hierarchical = self.hierarchical_time(collective, bytes, tuning);
        match self.node_segment_time(collective, bytes, tuning) {
            Some(segment) if segment < hierarchical => (Form::NodeSegment, segment),
            _ => (Form::Hierarchical, hierarchical),
        }
    }

    /// The node segment form of an allreduce, chunk by chunk: each rank copies its chunk into its
    /// slot, the node's ranks meet, each reduces its slice of every slot (reading the whole chunk
    /// once between them, in parallel), they meet again, the first rank takes the chunk out,
    /// allreduces it among the nodes and puts it back, and the node's ranks copy it out. A meeting
    /// costs a shared-memory latency and, where ranks sleep, a wake-up; the copies run at the
    /// shared-memory copy rate. None for the collectives that have no such form, and below a
    /// cache line per rank of the node (slices that share lines would bounce them between the
    /// ranks that write them).
    fn node_segment_time(&self, collective: Collective, bytes: usize, tuning: CollTuning) -> Option<f64> {
        let widest = self.layout.widest();
        if collective != Collective::Allreduce || widest < 2 || bytes < widest * NODE_SEGMENT_SLICE_MIN {
            return None;
        }
        let leaders = self.layout.representatives(0);
        let meeting = self.costs.intra.predict(0) + self.costs.wake_up;
        let chunk_time =
            |chunk: usize| 3.0 * meeting + self.copy(chunk) + self.copy(chunk.div_ceil(widest) * widest) + 2.0 * self.copy(chunk) + self.allreduce(&leaders, chunk, tuning) + self.copy(chunk);
        let whole = bytes / NODE_SEGMENT_CHUNK;
        let rest = bytes % NODE_SEGMENT_CHUNK;
        let mut total = whole as f64 * chunk_time(NODE_SEGMENT_CHUNK);
        if rest > 0 {
            total += chunk_time(rest);
        }
        Some(total)
    }

    /// One round in which each `(from, to)` of `messages` carries `bytes`: the slowest link. Within
    /// a node a rank handles its own messages one after another, other ranks at the same time;
    /// the messages leaving (or reaching) one node go one after another (its network, and on TCP
    /// its CPUs, serve them in turn). Where ranks sleep while they wait, a round longer than they
    /// stay awake also waits for a wake-up at its end.
    fn round(&self, messages: &[(usize, usize)], bytes: usize) -> f64 {
        if messages.is_empty() {
            return 0.0;
        }
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
        let busy = inter.max(intra);
        if busy > self.costs.awake {
            busy + self.costs.wake_up
        } else {
            busy
        }
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

    /// A pairwise exchange whose steps go `batch` at a time (the flat alltoall): one round per
    /// batch, in which every rank sends `bytes` to the ranks each step of the batch ahead of it.
    fn batched_exchange(&self, ranks: &[usize], bytes: usize, batch: usize) -> f64 {
        let size = ranks.len();
        let steps: Vec<usize> = (1..size).collect();
        steps
            .chunks(batch.max(1))
            .map(|chunk| {
                let messages: Vec<(usize, usize)> = chunk.iter().flat_map(|&step| (0..size).map(move |i| (ranks[i], ranks[(i + step) % size]))).collect();
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

    /// Recursive doubling over `ranks` as the flat algorithms run it: with n = 2^k + extra ranks,
    /// the even ranks below 2 * extra first hand `bytes` to the odd rank above and get the result
    /// back last; the 2^k others exchange `bytes` at distances 1, 2, 4, ... of their folded
    /// numbering. With `halving`, Rabenseifner's: the exchange at distance d carries
    /// `bytes * d / 2^k`, twice (reduce-scatter by halving, allgather by doubling).
    fn doubling(&self, ranks: &[usize], bytes: usize, halving: bool) -> f64 {
        let size = ranks.len();
        if size < 2 {
            return 0.0;
        }
        let participants = 1 << (usize::BITS - 1 - size.leading_zeros());
        let extra = size - participants;
        let unfolded = |folded: usize| if folded < extra { 2 * folded + 1 } else { folded + extra };
        let folds: Vec<(usize, usize)> = (0..extra).map(|index| (ranks[2 * index], ranks[2 * index + 1])).collect();
        let mut total = self.round(&folds, bytes) + self.round(&folds.iter().map(|&(even, odd)| (odd, even)).collect::<Vec<_>>(), bytes);
        let mut distance = 1;
        while distance < participants {
            let pairs: Vec<(usize, usize)> = (0..participants).filter(|&folded| folded & distance == 0).map(|folded| (ranks[unfolded(folded)], ranks[unfolded(folded | distance)])).collect();
            total += if halving { 2.0 * self.exchange(&pairs, bytes / participants * distance) } else { self.exchange(&pairs, bytes) };
            distance <<= 1;
        }
        total
    }

    /// A dissemination barrier over `ranks`: ceil(log2 n) rounds of empty messages, rank i to
    /// rank i + d.
    fn dissemination(&self, ranks: &[usize]) -> f64 {
        let size = ranks.len();
        let mut total = 0.0;
        let mut distance = 1;
        while distance < size {
            let messages: Vec<(usize, usize)> = (0..size).map(|i| (ranks[i], ranks[(i + distance) % size])).collect();
            total += self.round(&messages, 0);
            distance <<= 1;
        }
        total
    }

    /// Alltoall by node aggregation: pairwise within the node, the blocks for other nodes
    /// gathered to the node's first rank, exchanged among those, scattered.
    fn node_aggregated_alltoall(&self, node: &[usize], leaders: &[usize], bytes: usize) -> f64 {
        let widest = node.len();
        let elsewhere = self.layout.node_of.len() - widest;
        self.shifts(node, bytes, true) + 2.0 * self.to_node_leaders(elsewhere * bytes) + self.shifts(leaders, widest * widest * bytes, true)
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
        self.doubling(ranks, bytes, bytes >= tuning.allreduce_split_min)
    }

    fn flat_time(&self, collective: Collective, bytes: usize, tuning: CollTuning) -> f64 {
        let all: Vec<usize> = (0..self.layout.node_of.len()).collect();
        match collective {
            Collective::Barrier => self.dissemination(&all),
            Collective::Bcast => self.broadcast(&all, bytes, tuning),
            Collective::Reduce => self.binomial(&all, bytes),
            Collective::Allreduce => self.allreduce(&all, bytes, tuning),
            Collective::Allgather => self.shifts(&all, bytes, false),
            Collective::Gather | Collective::Scatter => self.binomial_gather(&all, bytes),
            Collective::ReduceScatter => self.shifts(&all, bytes / all.len().max(1), true),
            Collective::Alltoall | Collective::Alltoallv => self.batched_exchange(&all, bytes, tuning.alltoall_batch),
            Collective::Gatherv | Collective::Scatterv => {
                let to_root: Vec<(usize, usize)> = all[1..].iter().map(|&rank| (rank, 0)).collect();
                self.round(&to_root, bytes)
            }
        }
    }

    /// Within the nodes, among their representatives, within the nodes again. The nodes' phases
    /// run at once; the widest node sets their time. The forms that stage blocks in node order
    /// also pay for their local copies.
    fn hierarchical_time(&self, collective: Collective, bytes: usize, tuning: CollTuning) -> f64 {
        let size = self.layout.node_of.len();
        let widest = self.layout.widest();
        let elsewhere = size - widest;
        let node: Vec<usize> = self.layout.nodes.iter().find(|members| members.len() == widest).cloned().unwrap_or_default();
        let leaders = self.layout.representatives(0);
        let sections: Vec<(usize, usize)> = leaders[1..].iter().map(|&leader| (leader, leaders[0])).collect();
        match collective {
            Collective::Barrier => 2.0 * self.dissemination(&node) + self.dissemination(&leaders),
            Collective::Bcast => self.broadcast(&leaders, bytes, tuning) + self.broadcast(&node, bytes, tuning),
            Collective::Reduce => self.binomial(&node, bytes) + self.binomial(&leaders, bytes),
            Collective::Allreduce => self.binomial(&node, bytes) + self.allreduce(&leaders, bytes, tuning) + self.broadcast(&node, bytes, tuning),
            // Staged in node order, put back in rank order.
            Collective::Allgather => self.to_node_leaders(bytes) + self.shifts(&leaders, widest * bytes, false) + self.broadcast(&node, size * bytes, tuning) + self.copy(2 * size * bytes),
            // The root stages every block.
            Collective::Gather | Collective::Scatter => self.to_node_leaders(bytes) + self.round(&sections, widest * bytes) + self.copy(size * bytes),
            // The representatives stage the whole vector.
            Collective::ReduceScatter => {
                let block = bytes / size.max(1);
                self.binomial(&node, bytes) + self.shifts(&leaders, widest * block, true) + self.to_node_leaders(block) + self.copy(bytes)
            }
            Collective::Alltoall => self.node_aggregated_alltoall(&node, &leaders, bytes) + self.copy((2 * widest + 2) * elsewhere * bytes),
            // The node's ranks first tell their representative their sizes (one per rank, or
            // two per rank and peer).
            Collective::Gatherv | Collective::Scatterv => self.to_node_leaders(COUNT_BYTES) + self.to_node_leaders(bytes) + self.round(&sections, widest * bytes) + self.copy(size * bytes),
            Collective::Alltoallv => self.to_node_leaders(2 * COUNT_BYTES * size) + self.node_aggregated_alltoall(&node, &leaders, bytes) + self.copy((2 * widest + 2) * elsewhere * bytes),
        }
    }

    /// A local copy of `bytes`, at the rate shared memory moves them (a transfer there is one or
    /// two copies, without its fixed cost).
    fn copy(&self, bytes: usize) -> f64 {
        (self.costs.intra.predict(bytes) - self.costs.intra.predict(0)).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use std::ops::Range;

    use super::*;

    fn costs() -> LinkCosts {
        // Shared memory: 0.3 us, 10 GB/s. Network: 20 us, 200 MB/s.
        LinkCosts { intra: Profile::from_model(300.0, 10e9, 1 << 24), inter: Profile::from_model(20_000.0, 200e6, 1 << 24), wake_up: 0.0, awake: 0.0 }
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
    fn a_large_allreduce_goes_hierarchical_where_the_flat_halving_sends_its_large_halves_across() {
        // Blocked, the flat halving's first step (distance 2) crosses the network with half the
        // vector, and the doubling's last step again; the leaders send half the vector once each way.
        let blocked = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), costs());
        let (form, flat, hierarchical) = blocked.choose(Collective::Allreduce, 4 << 20, tuning());
        assert_eq!(form, Form::Hierarchical, "{flat} vs {hierarchical}");
        // Cyclic, the crossing steps (distance 1) carry a quarter from each of two ranks: as much
        // as the leaders send, and the node phases cost extra.
        let cyclic = Hierarchy::new(NodeLayout::new(&[0, 1, 0, 1]), costs());
        let (form, flat, hierarchical) = cyclic.choose(Collective::Allreduce, 4 << 20, tuning());
        assert_eq!(form, Form::Flat, "{flat} vs {hierarchical}");
        assert!(hierarchical < 1.2 * flat, "{flat} vs {hierarchical}");
    }

    #[test]
    fn waking_sleeping_ranks_makes_extra_rounds_cost_more() {
        // A one-element gather: the hierarchical form has as many rounds as the flat binomial
        // tree on a blocked layout, so wake-ups leave the near tie (the staging copy aside); with the v-variant's extra round
        // of sizes, wake-ups decide for the flat form.
        let mut sleeping = costs();
        sleeping.wake_up = 50_000.0;
        let blocked = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), sleeping.clone());
        let (_, flat, hierarchical) = blocked.choose(Collective::Gather, 8, tuning());
        assert!((flat - hierarchical).abs() < 100.0, "{flat} vs {hierarchical}");
        assert_eq!(blocked.choose(Collective::Gatherv, 8, tuning()).0, Form::Flat);
        // Every round pays once: three rounds of the hierarchical allreduce against the flat
        // one-round exchange.
        let spinning = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), costs());
        let (_, flat_spinning, hierarchical_spinning) = spinning.choose(Collective::Allreduce, 8, tuning());
        let (_, flat_sleeping, hierarchical_sleeping) = blocked.choose(Collective::Allreduce, 8, tuning());
        assert!((flat_sleeping - flat_spinning - 50_000.0).abs() < 1.0, "{flat_spinning} -> {flat_sleeping}");
        assert!((hierarchical_sleeping - hierarchical_spinning - 150_000.0).abs() < 1.0, "{hierarchical_spinning} -> {hierarchical_sleeping}");
    }

    #[test]
    fn rounds_shorter_than_the_ranks_stay_awake_wake_nobody() {
        // Blocked 8-byte allreduce: four network messages leave each node in the flat exchange,
        // one in the hierarchical form's three rounds. With every round waking a rank, the
        // wake-ups make the flat form's single round the cheaper.
        let mut sleeping = costs();
        sleeping.wake_up = 50_000.0;
        let always_asleep = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), sleeping.clone());
        assert_eq!(always_asleep.choose(Collective::Allreduce, 8, tuning()).0, Form::Flat);
        // Ranks that yield for 200 us first never sleep in those rounds: the network decides.
        let yielding = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), LinkCosts { awake: 200_000.0, ..sleeping });
        let (form, flat, hierarchical) = yielding.choose(Collective::Allreduce, 8, tuning());
        assert_eq!(form, Form::Hierarchical, "{flat} vs {hierarchical}");
        assert!((flat - 4.0 * costs().inter.predict(8)).abs() < 1.0, "{flat}");
        // A round longer than that (a 4 MiB message is 21 ms here) still pays its wake-up.
        let (_, flat_large, _) = yielding.choose(Collective::Bcast, 4 << 20, tuning());
        let (_, flat_large_spinning, _) = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), costs()).choose(Collective::Bcast, 4 << 20, tuning());
        assert!(flat_large > flat_large_spinning + 50_000.0, "{flat_large_spinning} -> {flat_large}");
    }

    #[test]
    fn choices_are_cached_per_size_class_and_remade_when_the_switch_points_change() {
        assert_eq!(size_class(0), (0, 0));
        assert_eq!(size_class(7), (7, 7));
        assert_eq!(size_class(8), (8, 8));
        assert_eq!(size_class(65536).1, 65536);
        assert_eq!(size_class(65536 + 100), size_class(65536));
        assert_eq!(size_class(3 << 20).1, 3 << 20);
        assert_ne!(size_class(3 << 20).0, size_class(4 << 20).0);
        assert!(size_class(usize::MAX).0 < SIZE_CLASSES);
        let blocked = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), costs());
        let big = 4 << 20;
        assert_eq!(blocked.pick(Collective::Bcast, big, tuning()), blocked.choose(Collective::Bcast, big, tuning()).0);
        // A cached choice stands for the whole class, whatever size asks.
        let slot = Collective::Bcast as usize * SLOTS_PER_COLLECTIVE + size_class(big).0;
        blocked.choices[slot].store(HIERARCHICAL, Ordering::Relaxed);
        assert_eq!(blocked.pick(Collective::Bcast, big + 1000, tuning()), Form::Hierarchical);
        blocked.choices[slot].store(FLAT, Ordering::Relaxed);
        assert_eq!(blocked.pick(Collective::Bcast, big, tuning()), Form::Flat);
        // New switch points clear the cache.
        let retuned = CollTuning { bcast_split_min: 1, ..tuning() };
        let chosen = blocked.choose(Collective::Bcast, big, retuned).0;
        assert_eq!(blocked.pick(Collective::Bcast, big, retuned), chosen);
        assert_ne!(blocked.choices[slot].load(Ordering::Relaxed), UNCHOSEN);
    }

    #[test]
    fn v_variants_go_hierarchical_only_where_that_pays_at_every_size() {
        // Two ranks per node: the extra round of sizes and the node phases do not pay for large
        // blocks, which cross the network once either way.
        let blocked = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), costs());
        for collective in [Collective::Gatherv, Collective::Scatterv, Collective::Alltoallv] {
            assert_eq!(blocked.pick_for_any_size(collective, tuning()), Form::Flat, "{collective:?}");
        }
        // Sixteen ranks per node whose copies are nearly free, behind a 1 ms network: sending
        // each node's blocks as one message saves more than the extra rounds and copies cost,
        // at every size.
        let slow = LinkCosts { intra: Profile::from_model(300.0, 1e12, 1 << 24), inter: Profile::from_model(1e6, 200e6, 1 << 24), wake_up: 0.0, awake: 0.0 };
        let ids: Vec<u32> = (0..64).map(|rank| rank / 16).collect();
        let wide = Hierarchy::new(NodeLayout::new(&ids), slow);
        for collective in [Collective::Gatherv, Collective::Scatterv] {
            assert_eq!(wide.pick_for_any_size(collective, tuning()), Form::Hierarchical, "{collective:?}");
        }
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
    fn node_segment_slices_are_disjoint_whole_elements_covering_the_chunk() {
        for (len, element_size, ranks) in [(96, 4, 3), (100, 4, 3), (8, 8, 4), (0, 4, 2), (4 << 20, 8, 7)] {
            let slices: Vec<Range<usize>> = (0..ranks).map(|rank| node_segment::slice(len, element_size, ranks, rank)).collect();
            assert_eq!(slices[0].start, 0);
            for pair in slices.windows(2) {
                assert_eq!(pair[0].end, pair[1].start, "{len} {element_size} {ranks}");
            }
            assert_eq!(slices[ranks - 1].end, len / element_size * element_size);
            let lens: Vec<usize> = slices.iter().map(Range::len).collect();
            assert!(lens.iter().all(|l| l % element_size == 0 && lens[0] - l <= element_size), "{lens:?}");
        }
        let chunks: Vec<Range<usize>> = node_segment::chunks(2500, 12, 1000).collect();
        assert_eq!(chunks, [0..996, 996..1992, 1992..2500]);
        assert_eq!(node_segment::chunks(0, 4, 1000).count(), 0);
        // An element larger than a slot still moves whole.
        assert_eq!(node_segment::chunks(64, 32, 16).collect::<Vec<_>>(), [0..32, 32..64]);
    }

    #[test]
    fn wide_nodes_reduce_large_vectors_in_the_node_segment() {
        // Sixteen ranks per node: the message-passing node phases send the whole vector through
        // four binomial rounds each way; the segment copies it a fixed number of times.
        let ids: Vec<u32> = (0..32).map(|rank| rank / 16).collect();
        let wide = Hierarchy::new(NodeLayout::new(&ids), costs());
        let (form, flat, hierarchical) = wide.choose(Collective::Allreduce, 4 << 20, tuning());
        assert_eq!(form, Form::NodeSegment, "{flat} vs {hierarchical}");
        assert_eq!(wide.pick(Collective::Allreduce, 4 << 20, tuning()), Form::NodeSegment);
        // Small vectors: three meetings per chunk do not pay.
        assert_ne!(wide.choose(Collective::Allreduce, 64, tuning()).0, Form::NodeSegment);
        // Only the allreduce has the form.
        for collective in [Collective::Reduce, Collective::Bcast, Collective::ReduceScatter] {
            assert_ne!(wide.choose(collective, 4 << 20, tuning()).0, Form::NodeSegment, "{collective:?}");
        }
        // Two ranks per node: one message each way costs less than the segment's copies.
        let blocked = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), costs());
        assert_eq!(blocked.best_hierarchical(Collective::Allreduce, 4 << 20, tuning()).0, Form::Hierarchical);
        // Where every round also wakes a sleeping rank, the segment's copies cost less than the
        // message-passing form's extra rounds on wide nodes at a middling size too.
        let mut sleeping = costs();
        sleeping.wake_up = 50_000.0;
        let wide_sleeping = Hierarchy::new(NodeLayout::new(&ids), sleeping);
        assert_eq!(wide_sleeping.best_hierarchical(Collective::Allreduce, 256 << 10, tuning()).0, Form::NodeSegment);
    }

    #[test]
    fn equal_links_leave_the_flat_form() {
        let same = Profile::from_model(300.0, 10e9, 1 << 24);
        let flat = Hierarchy::new(NodeLayout::new(&[0, 0, 1, 1]), LinkCosts { intra: same.clone(), inter: same, wake_up: 0.0, awake: 0.0 });
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
