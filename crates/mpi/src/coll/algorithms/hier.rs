//! Hierarchical forms of the collectives, for communicators that span nodes: a phase within each
//! node (shared memory), one among a representative of each node (the network), and a phase
//! within each node again. Each phase is the flat algorithm run on a subgroup
//! ([`Port::within`]), so a message crosses the network once per node, not once per rank.
//!
//! A node's representative is the root on the root's node and its lowest rank elsewhere, so a
//! rooted collective needs no extra hop to or from the root. Reductions are regrouped by node, so
//! only commutative operations take these forms.
//!
//! The forms that move blocks (allgather, gather, scatter, reduce_scatter, alltoall) stage them in
//! node order (node 0's ranks, then node 1's, ...), so that each node's blocks are one section
//! that crosses the network as one message; a cyclic layout's blocks are put back in rank order
//! at the end.

use std::ops::Range;

use super::{
    allgatherv as flat_allgatherv, allreduce as flat_allreduce, alltoallv as flat_alltoallv, barrier as flat_barrier, bcast as flat_bcast, check_blocks, check_elements, check_root,
    gather as flat_gather, gatherv as flat_gatherv, reduce as flat_reduce, reduce_scatter as flat_reduce_scatter, require, scatter as flat_scatter, scatterv as flat_scatterv, Outcome,
};
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

/// The root's index among the representatives (it represents its node).
fn root_index(representatives: &[usize], root: usize) -> usize {
    representatives.iter().position(|&member| member == root).expect("the root represents its node")
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
        let root_index = root_index(&representatives, root);
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
        let root_index = root_index(&representatives, root);
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

/// Where each rank's block lies when blocks of `len(rank)` bytes are staged in node order: the
/// ranges by rank, and each node's section.
struct Staging {
    by_rank: Vec<Range<usize>>,
    sections: Vec<Range<usize>>,
    total: usize,
}

impl Staging {
    fn new(layout: &NodeLayout, len: impl Fn(usize) -> usize) -> Staging {
        let mut by_rank = vec![0..0; layout.nodes().iter().map(Vec::len).sum()];
        let mut sections = Vec::with_capacity(layout.nodes().len());
        let mut offset = 0;
        for members in layout.nodes() {
            let start = offset;
            for &member in members {
                by_rank[member] = offset..offset + len(member);
                offset += len(member);
            }
            sections.push(start..offset);
        }
        Staging { by_rank, sections, total: offset }
    }

    /// The blocks of `members` relative to the start of their (one) section.
    fn within_section(&self, members: &[usize], section: usize) -> Vec<Range<usize>> {
        let start = self.sections[section].start;
        members.iter().map(|&member| self.by_rank[member].start - start..self.by_rank[member].end - start).collect()
    }
}

/// The index of `rank`'s node in the layout's node order.
fn node_index(layout: &NodeLayout, rank: usize) -> usize {
    layout.nodes().iter().position(|members| members.contains(&rank)).expect("every rank has a node")
}

/// Gathers blocks of varying sizes everywhere: each node's ranks send theirs to the node's
/// lowest rank, those exchange their nodes' sections (ring), and each broadcasts all of them
/// within its node. `mine` is `None` when this rank's block is already in place.
pub async fn allgatherv(port: &Port, layout: &NodeLayout, mine: Option<&[u8]>, all: &mut [u8], blocks: &[Range<usize>]) -> Outcome {
    let rank = port.rank();
    check_blocks(blocks, port.size(), all.len())?;
    if let Some(mine) = mine {
        require(mine.len() == blocks[rank].len(), super::MPI_ERR_ARG)?;
        all[blocks[rank].clone()].copy_from_slice(mine);
    }
    let staging = Staging::new(layout, |member| blocks[member].len());
    let mut staged = vec![0u8; staging.total];
    staged[staging.by_rank[rank].clone()].copy_from_slice(&all[blocks[rank].clone()]);
    let (node, representatives, _) = phases(port, layout, 0);
    let section = node_index(layout, rank);
    {
        let _node = port.within(&node);
        let member_blocks = staging.within_section(&node, section);
        let own = (port.rank() != 0).then(|| &all[blocks[rank].clone()]);
        flat_gatherv(port, own, &mut staged[staging.sections[section].clone()], &member_blocks, 0).await?;
    }
    if representatives.contains(&rank) {
        let _representatives = port.within(&representatives);
        flat_allgatherv(port, None, &mut staged, &staging.sections).await?;
    }
    {
        let _node = port.within(&node);
        flat_bcast(port, &mut staged, 0).await?;
    }
    for (member, block) in blocks.iter().enumerate() {
        all[block.clone()].copy_from_slice(&staged[staging.by_rank[member].clone()]);
    }
    Ok(())
}

/// Gathers equal blocks to `root`: each node's ranks to the node's representative, the
/// representatives' sections to the root. At the root `mine` is `None` when its block is in place.
pub async fn gather(port: &Port, layout: &NodeLayout, mine: Option<&[u8]>, all: &mut [u8], block: usize, root: usize) -> Outcome {
    let rank = port.rank();
    check_root(root, port.size())?;
    let staging = Staging::new(layout, |_| block);
    let (node, representatives, node_root) = phases(port, layout, root);
    let section = node_index(layout, rank);
    let mut staged = vec![
        0u8;
        if rank == root {
            staging.total
        } else if representatives.contains(&rank) {
            staging.sections[section].len()
        } else {
            0
        }
    ];
    if rank == root {
        require(all.len() == staging.total, super::MPI_ERR_ARG)?;
    }
    let own: &[u8] = match mine {
        Some(mine) => mine,
        None if rank == root => &all[rank * block..(rank + 1) * block],
        None => return Err(super::MPI_ERR_BUFFER),
    };
    require(own.len() == block, super::MPI_ERR_ARG)?;
    // The representative's section: at the root, in place within its staging.
    let section_at = if rank == root { staging.sections[section].clone() } else { 0..staged.len() };
    {
        let _node = port.within(&node);
        let member_blocks = staging.within_section(&node, section);
        if port.rank() == node_root {
            staged[section_at.clone()][member_blocks[node_root].clone()].copy_from_slice(own);
            flat_gatherv(port, None, &mut staged[section_at], &member_blocks, node_root).await?;
        } else {
            flat_gatherv(port, Some(own), &mut [], &member_blocks, node_root).await?;
        }
    }
    if representatives.contains(&rank) {
        let _representatives = port.within(&representatives);
        let root_index = root_index(&representatives, root);
        if rank == root {
            flat_gatherv(port, None, &mut staged, &staging.sections, root_index).await?;
        } else {
            flat_gatherv(port, Some(&staged), &mut [], &staging.sections, root_index).await?;
        }
    }
    if rank == root {
        for (member, range) in staging.by_rank.iter().enumerate() {
            all[member * block..(member + 1) * block].copy_from_slice(&staged[range.clone()]);
        }
    }
    Ok(())
}

/// Scatters equal blocks from `root`: the root sends each node's section to its
/// representative, which scatters it within the node. At the root `mine` is `None` when it keeps
/// its block in place.
pub async fn scatter(port: &Port, layout: &NodeLayout, all: &[u8], mine: Option<&mut [u8]>, block: usize, root: usize) -> Outcome {
    let rank = port.rank();
    check_root(root, port.size())?;
    let staging = Staging::new(layout, |_| block);
    let (node, representatives, node_root) = phases(port, layout, root);
    let section = node_index(layout, rank);
    let mut staged = Vec::new();
    if rank == root {
        require(all.len() == staging.total, super::MPI_ERR_ARG)?;
        staged.resize(staging.total, 0);
        for (member, range) in staging.by_rank.iter().enumerate() {
            staged[range.clone()].copy_from_slice(&all[member * block..(member + 1) * block]);
        }
    } else if representatives.contains(&rank) {
        staged.resize(staging.sections[section].len(), 0);
    }
    if representatives.contains(&rank) {
        let _representatives = port.within(&representatives);
        let root_index = root_index(&representatives, root);
        if rank == root {
            flat_scatterv(port, &staged, &staging.sections, None, root_index).await?;
        } else {
            flat_scatterv(port, &[], &staging.sections, Some(&mut staged), root_index).await?;
        }
    }
    let section_at = if rank == root { staging.sections[section].clone() } else { 0..staged.len() };
    let _node = port.within(&node);
    let member_blocks = staging.within_section(&node, section);
    if port.rank() == node_root {
        let mine = match mine {
            Some(mine) => Some(mine),
            None if rank == root => None,
            None => return Err(super::MPI_ERR_BUFFER),
        };
        flat_scatterv(port, &staged[section_at], &member_blocks, mine, node_root).await
    } else {
        flat_scatterv(port, &[], &member_blocks, mine, node_root).await
    }
}

/// A commutative reduce-scatter: each node reduces the whole vector to its lowest rank, those
/// reduce-scatter their nodes' sections (the vector regrouped in node order) among themselves,
/// and each scatters its section within its node. `blocks`: each rank's part of `data`.
pub async fn reduce_scatter(port: &Port, layout: &NodeLayout, data: &mut [u8], blocks: &[Range<usize>], element_size: usize, combine: Combine<'_>, out: &mut [u8]) -> Outcome {
    let rank = port.rank();
    check_elements(data.len(), element_size)?;
    check_blocks(blocks, port.size(), data.len())?;
    require(out.len() == blocks[rank].len(), super::MPI_ERR_ARG)?;
    let staging = Staging::new(layout, |member| blocks[member].len());
    let (node, representatives, _) = phases(port, layout, 0);
    let section = node_index(layout, rank);
    {
        let _node = port.within(&node);
        flat_reduce(port, data, element_size, combine, true, 0).await?;
    }
    let mut reduced = Vec::new();
    if representatives.contains(&rank) {
        let mut staged = vec![0u8; staging.total];
        for (member, range) in staging.by_rank.iter().enumerate() {
            staged[range.clone()].copy_from_slice(&data[blocks[member].clone()]);
        }
        reduced.resize(staging.sections[section].len(), 0);
        let counts: Vec<usize> = staging.sections.iter().map(|section| section.len() / element_size).collect();
        let _representatives = port.within(&representatives);
        flat_reduce_scatter(port, &mut staged, &counts, element_size, combine, true, &mut reduced).await?;
    }
    let _node = port.within(&node);
    flat_scatterv(port, &reduced, &staging.within_section(&node, section), Some(out), 0).await
}

/// Personalized exchange of equal blocks: within each node directly; the blocks for other nodes
/// go to the node's lowest rank, which sends each other node's lowest rank one message with all
/// of its node's blocks for that node, and scatters what it receives within its node.
pub async fn alltoall(port: &Port, layout: &NodeLayout, send: &[u8], recv: &mut [u8]) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    require(send.len() == recv.len() && send.len().is_multiple_of(size), super::MPI_ERR_ARG)?;
    let block = send.len() / size;
    let (node, representatives, _) = phases(port, layout, 0);
    let home = node_index(layout, rank);
    let by_rank = |member: usize| member * block..(member + 1) * block;
    {
        let _node = port.within(&node);
        let node_blocks: Vec<Range<usize>> = node.iter().map(|&member| by_rank(member)).collect();
        flat_alltoallv(port, send, &node_blocks, recv, &node_blocks).await?;
    }
    // The ranks of the other nodes, in node order: the order of the blocks that leave this rank
    // and of those that reach it.
    let elsewhere: Vec<usize> = layout.nodes().iter().enumerate().filter(|&(index, _)| index != home).flat_map(|(_, members)| members.iter().copied()).collect();
    if elsewhere.is_empty() {
        return Ok(());
    }
    let leaving = concatenated(elsewhere.iter().map(|&dest| &send[by_rank(dest)]));
    let span = leaving.len();
    let leader = port.rank() == node[0];
    let mut gathered = vec![0u8; if leader { node.len() * span } else { 0 }];
    {
        let _node = port.within(&node);
        if leader {
            gathered[..span].copy_from_slice(&leaving);
            flat_gather(port, None, &mut gathered, 0).await?;
        } else {
            flat_gather(port, Some(&leaving), &mut [], 0).await?;
        }
    }
    let mut arrived = Vec::new();
    if leader {
        // To node n: for each of this node's ranks (in node order), its blocks for n's ranks.
        let nodes = layout.nodes();
        let offset_in_span = |dest_node: usize| -> usize { nodes[..dest_node].iter().enumerate().filter(|&(index, _)| index != home).map(|(_, members)| members.len()).sum::<usize>() * block };
        let mut outgoing = Vec::with_capacity(gathered.len());
        let mut send_blocks = Vec::with_capacity(nodes.len());
        let mut recv_blocks = Vec::with_capacity(nodes.len());
        let mut incoming_len = 0;
        for (index, members) in nodes.iter().enumerate() {
            let start = outgoing.len();
            if index != home {
                let within_span = offset_in_span(index)..offset_in_span(index) + members.len() * block;
                for source in 0..node.len() {
                    outgoing.extend_from_slice(&gathered[source * span..(source + 1) * span][within_span.clone()]);
                }
            }
            send_blocks.push(start..outgoing.len());
            let len = if index == home { 0 } else { members.len() * node.len() * block };
            recv_blocks.push(incoming_len..incoming_len + len);
            incoming_len += len;
        }
        let mut incoming = vec![0u8; incoming_len];
        {
            let _representatives = port.within(&representatives);
            flat_alltoallv(port, &outgoing, &send_blocks, &mut incoming, &recv_blocks).await?;
        }
        // From node n: for each of n's ranks, its blocks for this node's ranks. Regroup by
        // destination: member k gets, for each rank elsewhere (node order), that rank's block.
        arrived.reserve(incoming.len());
        for k in 0..node.len() {
            for (index, members) in nodes.iter().enumerate().filter(|&(index, _)| index != home) {
                for source in 0..members.len() {
                    let at = recv_blocks[index].start + (source * node.len() + k) * block;
                    arrived.extend_from_slice(&incoming[at..at + block]);
                }
            }
        }
    }
    let mut mine = vec![0u8; span];
    {
        let _node = port.within(&node);
        if leader {
            mine.copy_from_slice(&arrived[..span]);
            flat_scatter(port, &arrived, None, 0).await?;
        } else {
            flat_scatter(port, &[], Some(&mut mine), 0).await?;
        }
    }
    for (index, &source) in elsewhere.iter().enumerate() {
        recv[by_rank(source)].copy_from_slice(&mine[index * block..(index + 1) * block]);
    }
    Ok(())
}

/// Tells each node's representative (rank `node_root` of `node`) the lengths its ranks give:
/// `own` from every rank, one flat gather within the node. The representative gets them all,
/// rank by rank in node order (its own included); the others get nothing.
async fn node_lengths(port: &Port, node: &[usize], node_root: usize, own: &[usize]) -> Result<Vec<usize>, i32> {
    const LEN: usize = std::mem::size_of::<u64>();
    let encoded: Vec<u8> = own.iter().flat_map(|&len| (len as u64).to_le_bytes()).collect();
    let _node = port.within(node);
    if port.rank() != node_root {
        flat_gather(port, Some(&encoded), &mut [], node_root).await?;
        return Ok(Vec::new());
    }
    let mut all = vec![0u8; node.len() * encoded.len()];
    all[node_root * encoded.len()..(node_root + 1) * encoded.len()].copy_from_slice(&encoded);
    flat_gather(port, None, &mut all, node_root).await?;
    Ok(all.chunks_exact(LEN).map(|bytes| u64::from_le_bytes(bytes.try_into().expect("a chunk of LEN bytes")) as usize).collect())
}

/// The blocks one after another, each copied whole.
fn concatenated<'a>(blocks: impl Iterator<Item = &'a [u8]> + Clone) -> Vec<u8> {
    let mut all = Vec::with_capacity(blocks.clone().map(<[u8]>::len).sum());
    for block in blocks {
        all.extend_from_slice(block);
    }
    all
}

/// Consecutive ranges of the lengths `lens`, and their total.
fn consecutive(lens: impl IntoIterator<Item = usize>) -> (Vec<Range<usize>>, usize) {
    let mut offset = 0;
    let ranges = lens
        .into_iter()
        .map(|len| {
            offset += len;
            offset - len..offset
        })
        .collect();
    (ranges, offset)
}

/// Gathers blocks of varying sizes to `root`: the ranks of each node but the root's tell their
/// representative their sizes, send it their blocks, and the representatives send the root
/// their nodes' sections. `blocks` and `all` matter at the root only; the root's `mine` is
/// `None` when its block is in place.
pub async fn gatherv(port: &Port, layout: &NodeLayout, mine: Option<&[u8]>, all: &mut [u8], blocks: &[Range<usize>], root: usize) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    check_root(root, size)?;
    let (node, representatives, node_root) = phases(port, layout, root);
    let root_index = root_index(&representatives, root);
    if rank == root {
        check_blocks(blocks, size, all.len())?;
        if let Some(mine) = mine {
            require(mine.len() == blocks[root].len(), super::MPI_ERR_ARG)?;
            all[blocks[root].clone()].copy_from_slice(mine);
        }
        let staging = Staging::new(layout, |member| blocks[member].len());
        let section = node_index(layout, rank);
        let mut staged = vec![0u8; staging.total];
        {
            let _node = port.within(&node);
            let member_blocks = staging.within_section(&node, section);
            let at = staging.sections[section].clone();
            staged[at.clone()][member_blocks[node_root].clone()].copy_from_slice(&all[blocks[root].clone()]);
            flat_gatherv(port, None, &mut staged[at], &member_blocks, node_root).await?;
        }
        {
            let _representatives = port.within(&representatives);
            flat_gatherv(port, None, &mut staged, &staging.sections, root_index).await?;
        }
        for (member, block) in blocks.iter().enumerate() {
            all[block.clone()].copy_from_slice(&staged[staging.by_rank[member].clone()]);
        }
        return Ok(());
    }
    let own = mine.ok_or(super::MPI_ERR_BUFFER)?;
    if node.contains(&root) {
        let _node = port.within(&node);
        return flat_gatherv(port, Some(own), &mut [], &[], node_root).await;
    }
    let lens = node_lengths(port, &node, node_root, &[own.len()]).await?;
    if !representatives.contains(&rank) {
        let _node = port.within(&node);
        return flat_gatherv(port, Some(own), &mut [], &[], node_root).await;
    }
    let (member_blocks, total) = consecutive(lens);
    let mut section = vec![0u8; total];
    section[member_blocks[node_root].clone()].copy_from_slice(own);
    {
        let _node = port.within(&node);
        flat_gatherv(port, None, &mut section, &member_blocks, node_root).await?;
    }
    let _representatives = port.within(&representatives);
    flat_gatherv(port, Some(&section), &mut [], &[], root_index).await
}

/// Scatters `all[blocks[r]]` from `root` to rank r's `mine`: the ranks of each node but the
/// root's tell their representative their sizes, the root sends each representative its node's
/// section, which it scatters within the node. `blocks` and `all` matter at the root only; the
/// root's `mine` is `None` when it keeps its block in place.
pub async fn scatterv(port: &Port, layout: &NodeLayout, all: &[u8], blocks: &[Range<usize>], mine: Option<&mut [u8]>, root: usize) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    check_root(root, size)?;
    let (node, representatives, node_root) = phases(port, layout, root);
    let root_index = root_index(&representatives, root);
    if rank == root {
        check_blocks(blocks, size, all.len())?;
        let staging = Staging::new(layout, |member| blocks[member].len());
        let mut staged = vec![0u8; staging.total];
        for (member, range) in staging.by_rank.iter().enumerate() {
            staged[range.clone()].copy_from_slice(&all[blocks[member].clone()]);
        }
        {
            let _representatives = port.within(&representatives);
            flat_scatterv(port, &staged, &staging.sections, None, root_index).await?;
        }
        let section = node_index(layout, rank);
        let _node = port.within(&node);
        return flat_scatterv(port, &staged[staging.sections[section].clone()], &staging.within_section(&node, section), mine, node_root).await;
    }
    let mine = mine.ok_or(super::MPI_ERR_BUFFER)?;
    if node.contains(&root) {
        let _node = port.within(&node);
        return flat_scatterv(port, &[], &[], Some(mine), node_root).await;
    }
    let lens = node_lengths(port, &node, node_root, &[mine.len()]).await?;
    if !representatives.contains(&rank) {
        let _node = port.within(&node);
        return flat_scatterv(port, &[], &[], Some(mine), node_root).await;
    }
    let (member_blocks, total) = consecutive(lens);
    let mut section = vec![0u8; total];
    {
        let _representatives = port.within(&representatives);
        flat_scatterv(port, &[], &[], Some(&mut section), root_index).await?;
    }
    let _node = port.within(&node);
    flat_scatterv(port, &section, &member_blocks, Some(mine), node_root).await
}

/// Personalized exchange of varying blocks, by node as [`alltoall`] does it: within each node
/// directly; each rank tells its node's lowest rank the sizes of its blocks for, and from, the
/// other nodes' ranks, and sends it the blocks for them; the lowest ranks exchange one message
/// per pair of nodes and scatter what they receive within their nodes.
pub async fn alltoallv(port: &Port, layout: &NodeLayout, send: &[u8], send_blocks: &[Range<usize>], recv: &mut [u8], recv_blocks: &[Range<usize>]) -> Outcome {
    let (rank, size) = (port.rank(), port.size());
    check_blocks(send_blocks, size, send.len())?;
    check_blocks(recv_blocks, size, recv.len())?;
    require(send_blocks[rank].len() == recv_blocks[rank].len(), super::MPI_ERR_ARG)?;
    let (node, representatives, _) = phases(port, layout, 0);
    let home = node_index(layout, rank);
    {
        let _node = port.within(&node);
        let node_send: Vec<Range<usize>> = node.iter().map(|&member| send_blocks[member].clone()).collect();
        let node_recv: Vec<Range<usize>> = node.iter().map(|&member| recv_blocks[member].clone()).collect();
        flat_alltoallv(port, send, &node_send, recv, &node_recv).await?;
    }
    let nodes = layout.nodes();
    // The ranks of the other nodes, in node order, and where each other node's ranks start in it.
    let elsewhere: Vec<usize> = nodes.iter().enumerate().filter(|&(index, _)| index != home).flat_map(|(_, members)| members.iter().copied()).collect();
    if elsewhere.is_empty() {
        return Ok(());
    }
    let mut first_elsewhere = vec![0; nodes.len()];
    let mut count = 0;
    for (index, members) in nodes.iter().enumerate().filter(|&(index, _)| index != home) {
        first_elsewhere[index] = count;
        count += members.len();
    }
    let others = elsewhere.len();
    let own_lens: Vec<usize> = elsewhere.iter().map(|&dest| send_blocks[dest].len()).chain(elsewhere.iter().map(|&source| recv_blocks[source].len())).collect();
    let leader = port.rank() == node[0];
    // At the leader: member k's lengths for (and from) the rank elsewhere[j].
    let lens = node_lengths(port, &node, 0, &own_lens).await?;
    let sent_len = |member: usize, to: usize| lens[member * 2 * others + to];
    let received_len = |member: usize, from: usize| lens[member * 2 * others + others + from];
    let leaving = concatenated(elsewhere.iter().map(|&dest| &send[send_blocks[dest].clone()]));
    let (gathered_blocks, gathered_len) = if leader { consecutive((0..node.len()).map(|member| (0..others).map(|to| sent_len(member, to)).sum())) } else { (Vec::new(), 0) };
    let mut gathered = vec![0u8; gathered_len];
    {
        let _node = port.within(&node);
        if leader {
            gathered[gathered_blocks[0].clone()].copy_from_slice(&leaving);
            flat_gatherv(port, None, &mut gathered, &gathered_blocks, 0).await?;
        } else {
            flat_gatherv(port, Some(&leaving), &mut [], &[], 0).await?;
        }
    }
    let mut arrived = Vec::new();
    let mut arrived_blocks = Vec::new();
    if leader {
        // Where member k's block for elsewhere[j] lies in `gathered`.
        let mut sent_at = vec![0..0; node.len() * others];
        for member in 0..node.len() {
            let mut offset = gathered_blocks[member].start;
            for to in 0..others {
                sent_at[member * others + to] = offset..offset + sent_len(member, to);
                offset += sent_len(member, to);
            }
        }
        // To node n: for each of this node's ranks (node order), its blocks for n's ranks; from
        // node n: for each of n's ranks, its blocks for this node's ranks.
        let mut outgoing = Vec::with_capacity(gathered.len());
        let mut node_send = Vec::with_capacity(nodes.len());
        let mut node_recv = Vec::with_capacity(nodes.len());
        let mut incoming_len = 0;
        for (index, members) in nodes.iter().enumerate() {
            let start = outgoing.len();
            let mut len = 0;
            if index != home {
                let first = first_elsewhere[index];
                for member in 0..node.len() {
                    for to in first..first + members.len() {
                        outgoing.extend_from_slice(&gathered[sent_at[member * others + to].clone()]);
                    }
                }
                len = (first..first + members.len()).map(|from| (0..node.len()).map(|member| received_len(member, from)).sum::<usize>()).sum();
            }
            node_send.push(start..outgoing.len());
            node_recv.push(incoming_len..incoming_len + len);
            incoming_len += len;
        }
        let mut incoming = vec![0u8; incoming_len];
        {
            let _representatives = port.within(&representatives);
            flat_alltoallv(port, &outgoing, &node_send, &mut incoming, &node_recv).await?;
        }
        // Where the block from elsewhere[j] to member k lies in `incoming`: source-major within
        // its node's message.
        let mut received_at = vec![0..0; node.len() * others];
        for (index, members) in nodes.iter().enumerate().filter(|&(index, _)| index != home) {
            let mut offset = node_recv[index].start;
            for from in first_elsewhere[index]..first_elsewhere[index] + members.len() {
                for member in 0..node.len() {
                    received_at[member * others + from] = offset..offset + received_len(member, from);
                    offset += received_len(member, from);
                }
            }
        }
        arrived.reserve(incoming.len());
        for member in 0..node.len() {
            let start = arrived.len();
            for from in 0..others {
                arrived.extend_from_slice(&incoming[received_at[member * others + from].clone()]);
            }
            arrived_blocks.push(start..arrived.len());
        }
    }
    let mut mine = vec![0u8; elsewhere.iter().map(|&source| recv_blocks[source].len()).sum()];
    {
        let _node = port.within(&node);
        if leader {
            flat_scatterv(port, &arrived, &arrived_blocks, Some(&mut mine), 0).await?;
        } else {
            flat_scatterv(port, &[], &[], Some(&mut mine), 0).await?;
        }
    }
    let mut offset = 0;
    for &source in &elsewhere {
        let len = recv_blocks[source].len();
        recv[recv_blocks[source].clone()].copy_from_slice(&mine[offset..offset + len]);
        offset += len;
    }
    Ok(())
}
