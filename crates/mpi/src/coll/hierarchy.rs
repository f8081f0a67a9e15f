//! The node structure of a communicator, and the cost model that says when a collective should use
//! it.
//!
//! A communicator whose ranks span several nodes, with more than one rank on some node, can run a
//! collective in three phases: among each node's ranks (shared memory), among one representative
//! per node (the network), and among each node's ranks again. Whether that beats the flat
//! algorithm depends on the sizes and on the links, so the choice comes from predicted times: the
//! lanes' sampled profiles ([`braid_lane::Profile`]: shared memory within a node, the rails
//! between nodes) applied to the rounds each algorithm would run on this communicator's actual
//! layout, not from fixed cut-offs. The model is I/O-free; the communicator builds it once from the engine's node
//! map and profiles.
//!
//! `layout.rs` holds the node groups, `model.rs` the predicted times, `node_segment.rs` the
//! arithmetic of the node-wide shared segment; this file the choice and its cache.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::algorithms::segment::NodeSegment;
use super::CollTuning;

mod layout;
mod model;
pub mod node_segment;

pub use layout::NodeLayout;
pub use model::LinkCosts;

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
}

#[cfg(test)]
mod tests {
    use braid_lane::Profile;

    use super::*;

    fn costs() -> LinkCosts {
        // Shared memory: 0.3 us, 10 GB/s. Network: 20 us, 200 MB/s.
        LinkCosts { intra: Profile::from_model(300.0, 10e9, 1 << 24), inter: Profile::from_model(20_000.0, 200e6, 1 << 24), wake_up: 0.0, awake: 0.0 }
    }

    fn tuning() -> CollTuning {
        CollTuning::default()
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
