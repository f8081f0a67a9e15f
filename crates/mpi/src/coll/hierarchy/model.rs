//! The cost model: the rounds each algorithm runs on a communicator's layout, priced with the
//! links' sampled profiles. I/O-free: it predicts, [`super::Hierarchy`] chooses.

use braid_lane::Profile;

use super::node_segment::{NODE_SEGMENT_CHUNK, NODE_SEGMENT_SLICE_MIN};
use super::{Collective, Hierarchy};
use crate::coll::{CollTuning, SMALL_ALLREDUCE_RANKS};

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

/// Bytes a rank's size takes in the round that tells it to its representative.
const COUNT_BYTES: usize = 8;

impl Hierarchy {
    /// The node segment form of an allreduce, chunk by chunk: each rank copies its chunk into its
    /// slot, the node's ranks meet, each reduces its slice of every slot (reading the whole chunk
    /// once between them, in parallel), they meet again, the first rank takes the chunk out,
    /// allreduces it among the nodes and puts it back, and the node's ranks copy it out. A meeting
    /// costs a shared-memory latency and, where ranks sleep, a wake-up; the copies run at the
    /// shared-memory copy rate. None for the collectives that have no such form, and below a
    /// cache line per rank of the node (slices that share lines would bounce them between the
    /// ranks that write them).
    pub(super) fn node_segment_time(&self, collective: Collective, bytes: usize, tuning: CollTuning) -> Option<f64> {
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

    pub(super) fn flat_time(&self, collective: Collective, bytes: usize, tuning: CollTuning) -> f64 {
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
    pub(super) fn hierarchical_time(&self, collective: Collective, bytes: usize, tuning: CollTuning) -> f64 {
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
