//! Hierarchical forms of the collectives, for communicators that span nodes: a phase within each
//! node (shared memory), one among a representative of each node (the network), and a phase
//! within each node again. Each phase is the flat algorithm run on a subgroup
//! ([`Port::within`]), so a message crosses the network once per node, not once per rank.
//!
//! A node's representative is the root on the root's node and its lowest rank elsewhere, so a
//! rooted collective needs no extra hop to or from the root. Reductions are regrouped by node, so
//! only commutative operations take these forms.

use super::{allreduce as flat_allreduce, barrier as flat_barrier, bcast as flat_bcast, check_elements, check_root, reduce as flat_reduce, Outcome};
use crate::coll::hierarchy::NodeLayout;
use crate::coll::port::Port;
use crate::coll::Combine;

/// This rank's node, the representatives (root `root`), and this node's representative's index in
/// the node.
fn phases(port: &Port, layout: &NodeLayout, root: usize) -> (Vec<usize>, Vec<usize>, usize) {
    let node = layout.node_of(port.rank()).to_vec();
    let representatives = layout.representatives(root);
    let node_root = node.iter().position(|member| representatives.contains(member)).expect("every node has a representative");
    (node, representatives, node_root)
}

pub async fn barrier(port: &Port, layout: &NodeLayout) -> Outcome {
    let (node, representatives, _) = phases(port, layout, 0);
    {
        let _node = port.within(&node);
        flat_barrier(port).await?;
    }
    if representatives.contains(&port.rank()) {
        let _representatives = port.within(&representatives);
        flat_barrier(port).await?;
    }
    let _node = port.within(&node);
    flat_barrier(port).await
}

pub async fn bcast(port: &Port, layout: &NodeLayout, buffer: &mut [u8], root: usize) -> Outcome {
    check_root(root, port.size())?;
    let (node, representatives, node_root) = phases(port, layout, root);
    if representatives.contains(&port.rank()) {
        let _representatives = port.within(&representatives);
        let root_index = representatives.iter().position(|&member| member == root).expect("the root represents its node");
        flat_bcast(port, buffer, root_index).await?;
    }
    let _node = port.within(&node);
    flat_bcast(port, buffer, node_root).await
}

/// A commutative reduction to `root`.
pub async fn reduce(port: &Port, layout: &NodeLayout, data: &mut [u8], element_size: usize, combine: Combine<'_>, root: usize) -> Outcome {
    check_root(root, port.size())?;
    check_elements(data.len(), element_size)?;
    let (node, representatives, node_root) = phases(port, layout, root);
    {
        let _node = port.within(&node);
        flat_reduce(port, data, element_size, combine, true, node_root).await?;
    }
    if representatives.contains(&port.rank()) {
        let _representatives = port.within(&representatives);
        let root_index = representatives.iter().position(|&member| member == root).expect("the root represents its node");
        flat_reduce(port, data, element_size, combine, true, root_index).await?;
    }
    Ok(())
}

/// A commutative allreduce: reduce to each node's representative, allreduce among them,
/// broadcast within each node.
pub async fn allreduce(port: &Port, layout: &NodeLayout, data: &mut [u8], element_size: usize, combine: Combine<'_>) -> Outcome {
    check_elements(data.len(), element_size)?;
    let (node, representatives, node_root) = phases(port, layout, 0);
    {
        let _node = port.within(&node);
        flat_reduce(port, data, element_size, combine, true, node_root).await?;
    }
    if representatives.contains(&port.rank()) {
        let _representatives = port.within(&representatives);
        flat_allreduce(port, data, element_size, combine, true).await?;
    }
    let _node = port.within(&node);
    flat_bcast(port, data, node_root).await
}
