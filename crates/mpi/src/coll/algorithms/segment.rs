//! The node segment form of a commutative allreduce on a communicator that spans nodes: the
//! node's ranks copy their vectors into a node-wide shared segment and reduce disjoint slices of
//! them in parallel (in place of passing the vectors between them as messages), the node's first
//! rank allreduces the node's result among the nodes, and every rank copies the result out.
//! Vectors go through the segment in chunks of one slot, the chunks alternating between two banks
//! so that a rank may fill its slot for the next chunk while the last one is still being read.
//!
//! The node's ranks meet through their arrival words in the segment (see
//! [`braid_transport::shm::reduction`]), waiting in place ([`Port::until`]): so this form runs
//! only in blocking calls. The segment is made at the first such allreduce on the communicator,
//! kept with its hierarchy and unmapped with it; if some rank of the node cannot map it, the
//! node's ranks agree to use the message-passing form instead.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use braid_transport::shm::reduction::{ReductionSegment, Slots, BANKS};

use super::shared_file::make_shared;
use super::{allreduce as flat_allreduce, check_elements, hier, Outcome};
use crate::coll::hierarchy::node_segment::{chunks, slice, NODE_SEGMENT_CHUNK};
use crate::coll::hierarchy::Hierarchy;
use crate::coll::port::Port;
use crate::coll::Combine;

/// A node's reduction segment as one of its ranks has it mapped, and the phases this rank has
/// passed in it (every rank of the node passes the same ones).
pub struct NodeSegment {
    segment: ReductionSegment,
    phase: AtomicU64,
}

impl fmt::Debug for NodeSegment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeSegment").field("ranks", &self.segment.ranks()).field("slot_bytes", &self.segment.slot_bytes()).field("phase", &self.phase).finish()
    }
}

/// Phases of one chunk: the slots filled, the slices reduced, the result back in slot 0.
const PHASES_PER_CHUNK: u64 = 3;

/// The node's segment, made and mapped by the node's ranks together at first use (see
/// [`make_shared`]). None if some rank could not.
async fn node_segment<'h>(port: &Port, hierarchy: &'h Hierarchy, node: &[usize]) -> Result<Option<&'h NodeSegment>, i32> {
    if let Some(made) = hierarchy.node_segment.get() {
        return Ok(made.as_ref());
    }
    let _node = port.within(node);
    let fallback = |e: std::io::Error, what: &str| {
        eprintln!("Braid: the node-wide reduction segment cannot be {what} ({e}): reductions pass messages instead");
        e
    };
    let made = make_shared(
        port,
        "braid-coll",
        |name| ReductionSegment::create(name, node.len(), NODE_SEGMENT_CHUNK).map_err(|e| fallback(e, "made")),
        |name| ReductionSegment::open(name, node.len(), NODE_SEGMENT_CHUNK).map_err(|e| fallback(e, "mapped")),
    )
    .await?;
    let segment = made.map(|segment| NodeSegment { segment, phase: AtomicU64::new(0) });
    let _ = hierarchy.node_segment.set(segment);
    Ok(hierarchy.node_segment.get().and_then(Option::as_ref))
}

/// A commutative allreduce through the node's segment (or, where it cannot be mapped, the
/// message-passing hierarchical form).
pub async fn allreduce(port: &Port, hierarchy: &Hierarchy, data: &mut [u8], element_size: usize, combine: Combine<'_>) -> Outcome {
    check_elements(data.len(), element_size)?;
    let layout = &hierarchy.layout;
    let node = layout.node_of(port.rank()).to_vec();
    let Some(shared) = node_segment(port, hierarchy, &node).await? else {
        return hier::allreduce(port, layout, data, element_size, combine).await;
    };
    // The node's first rank represents it among the nodes.
    let representatives = layout.representatives(0);
    let (ranks, me) = (node.len(), node.iter().position(|&member| member == port.rank()).expect("a rank is on its node"));
    let segment = &shared.segment;
    let mut failure = None;
    for chunk in chunks(data.len(), element_size, segment.slot_bytes()) {
        let base = shared.phase.fetch_add(PHASES_PER_CHUNK, Ordering::Relaxed);
        let bank = (base / PHASES_PER_CHUNK) as usize % BANKS;
        let len = chunk.len();
        let out = &mut data[chunk];
        segment.put(Slots::bank(bank), me, 0, out);
        segment.arrive(me, base + 1);
        port.ring_node();
        port.until(|| segment.reached(0..ranks, base + 1)).await;
        segment.reduce_into_first(bank, slice(len, element_size, ranks, me), combine);
        segment.arrive(me, base + 2);
        port.ring_node();
        if me == 0 {
            port.until(|| segment.reached(0..ranks, base + 2)).await;
            segment.get(Slots::bank(bank), 0, 0, out);
            if failure.is_none() {
                let _representatives = port.within(&representatives);
                failure = flat_allreduce(port, out, element_size, combine, true).await.err();
            }
            segment.put(Slots::bank(bank), 0, 0, out);
            segment.set_outcome(0, failure.map_or(0, |class| class as u32));
        } else {
            port.until(|| segment.reached(0..1, base + 3)).await;
            segment.get(Slots::bank(bank), 0, 0, out);
            // The first rank's failure among the nodes is every node rank's: the chunk it
            // handed back is not reduced.
            match segment.outcome(0) {
                0 => {}
                class => failure = failure.or(Some(class as i32)),
            }
        }
        // The node's ranks go on after a failure among the nodes, so that none waits for ever.
        segment.arrive(me, base + 3);
        port.ring_node();
    }
    failure.map_or(Ok(()), Err)
}
