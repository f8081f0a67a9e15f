//! Distributed graph topologies: each process holds only its own in- and out-edges.
//!
//! MPI_Dist_graph_create_adjacent takes them as given. MPI_Dist_graph_create lets any process
//! name any edge, so the edges are routed to their endpoints: an all-to-all of record counts, then
//! an all-to-allv of the records, on the old communicator. A process's in-edges come in the order
//! of the processes that named them (then in their argument order), and so do its out-edges.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;
use std::ops::Range;

use super::abi::{int_array, length, no_topology, with_topology, write_ints};
use super::Topology;
use crate::coll::algorithms;
use crate::comm;
use crate::comm::Agreement;
use crate::consts::*;
use crate::error::{error, finish, MpiResult};
use crate::group::store;
use crate::runtime;

/// One process's view of a distributed graph. Weights are None when the graph is unweighted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistGraph {
    pub sources: Vec<c_int>,
    pub source_weights: Option<Vec<c_int>>,
    pub destinations: Vec<c_int>,
    pub destination_weights: Option<Vec<c_int>>,
}

impl DistGraph {
    pub fn weighted(&self) -> bool {
        self.source_weights.is_some()
    }
}

/// A weights argument: None for MPI_UNWEIGHTED, else `count` non-negative weights (for a count of
/// 0, MPI_WEIGHTS_EMPTY or any pointer).
///
/// # Safety
/// `weights` must be MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY or point to `count` ints.
unsafe fn weights_argument<'a>(comm: MPI_Comm, weights: *const c_int, count: usize, what: &str) -> MpiResult<Option<&'a [c_int]>> {
    if weights == MPI_UNWEIGHTED.cast_const() {
        return Ok(None);
    }
    if count == 0 {
        return Ok(Some(&[]));
    }
    if weights == MPI_WEIGHTS_EMPTY.cast_const() {
        return Err(error(comm, MPI_ERR_ARG, format!("{what} is MPI_WEIGHTS_EMPTY but {count} weights are needed")));
    }
    // SAFETY: neither special value; the caller guarantees `count` ints.
    let values = unsafe { int_array(comm, weights, count, what)? };
    if let Some(bad) = values.iter().find(|&&w| w < 0) {
        return Err(error(comm, MPI_ERR_ARG, format!("{what} holds the negative weight {bad}")));
    }
    Ok(Some(values))
}

/// Checks that every entry of `ranks` is a rank of a communicator of `size` (or MPI_PROC_NULL when
/// `proc_null_allowed`).
fn check_ranks(comm: MPI_Comm, ranks: &[c_int], size: usize, proc_null_allowed: bool, what: &str) -> MpiResult<()> {
    match ranks.iter().find(|&&r| !((0..size as c_int).contains(&r) || (proc_null_allowed && r == MPI_PROC_NULL))) {
        Some(bad) => Err(error(comm, MPI_ERR_RANK, format!("{what} holds {bad}, not a rank of a communicator of {size}"))),
        None => Ok(()),
    }
}

/// The record kinds an edge is routed as: to its destination (`peer` is the source) and to its
/// source (`peer` is the destination).
const IN_EDGE: c_int = 0;
const OUT_EDGE: c_int = 1;
/// Ints per routed record: kind, peer, weight.
const RECORD: usize = 3;

/// The records each rank of a communicator of `size` must receive for the edges this process
/// names: `sources[i]` has an edge to each of the next `degrees[i]` entries of `destinations`.
/// Ranks must already be checked.
fn route_edges(size: usize, sources: &[c_int], degrees: &[c_int], destinations: &[c_int], weights: Option<&[c_int]>) -> Vec<Vec<c_int>> {
    let mut outgoing = vec![Vec::new(); size];
    for (source, destination, weight) in named_edges(sources, degrees, destinations, weights) {
        outgoing[source as usize].extend([OUT_EDGE, destination, weight]);
        outgoing[destination as usize].extend([IN_EDGE, source, weight]);
    }
    outgoing
}

/// The edges this process names, in its order: `(source, destination, weight)` (weight 1 when
/// unweighted).
fn named_edges(sources: &[c_int], degrees: &[c_int], destinations: &[c_int], weights: Option<&[c_int]>) -> Vec<(c_int, c_int, c_int)> {
    let mut edges = Vec::with_capacity(destinations.len());
    let mut position = 0;
    for (&source, &degree) in sources.iter().zip(degrees) {
        for edge in position..position + degree as usize {
            edges.push((source, destinations[edge], weights.map_or(1, |w| w[edge])));
        }
        position += degree as usize;
    }
    edges
}

/// This process's graph from the records it received.
fn collect_edges(records: &[c_int], weighted: bool) -> DistGraph {
    let mut graph = DistGraph { sources: Vec::new(), source_weights: None, destinations: Vec::new(), destination_weights: None };
    let (mut source_weights, mut destination_weights) = (Vec::new(), Vec::new());
    for record in records.chunks_exact(RECORD) {
        if record[0] == IN_EDGE {
            graph.sources.push(record[1]);
            source_weights.push(record[2]);
        } else {
            graph.destinations.push(record[1]);
            destination_weights.push(record[2]);
        }
    }
    if weighted {
        graph.source_weights = Some(source_weights);
        graph.destination_weights = Some(destination_weights);
    }
    graph
}

/// Consecutive byte ranges of `counts` records each.
fn record_blocks(counts: impl Iterator<Item = usize>) -> Vec<Range<usize>> {
    let mut start = 0;
    counts
        .map(|records| {
            let block = start..start + records * RECORD * 4;
            start = block.end;
            block
        })
        .collect()
}

/// Collective: sends `outgoing[r]` to every rank r and returns what every rank sent here, in
/// rank order.
fn exchange_records(comm: MPI_Comm, outgoing: &[Vec<c_int>]) -> MpiResult<Vec<c_int>> {
    let agreement = runtime::with(|rt| Ok(Agreement::new(rt.comms.get(comm)?.shared.clone(), rt.tuning)))?;
    let counts: Vec<u8> = outgoing.iter().flat_map(|records| ((records.len() / RECORD) as u32).to_le_bytes()).collect();
    let mut incoming_counts = vec![0u8; counts.len()];
    let (counts_ref, incoming_ref) = (&counts, &mut incoming_counts);
    agreement.run(comm, |port| async move { algorithms::alltoall(&port, counts_ref, incoming_ref).await })?;
    let send: Vec<u8> = outgoing.iter().flatten().flat_map(|value| value.to_le_bytes()).collect();
    let send_blocks = record_blocks(outgoing.iter().map(|records| records.len() / RECORD));
    let recv_blocks = record_blocks(incoming_counts.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize));
    let mut received = vec![0u8; recv_blocks.last().map_or(0, |block| block.end)];
    let (send_ref, send_blocks_ref, received_ref, recv_blocks_ref) = (&send, &send_blocks, &mut received, &recv_blocks);
    agreement.run(comm, |port| async move { algorithms::alltoallv(&port, send_ref, send_blocks_ref, received_ref, recv_blocks_ref).await })?;
    Ok(received.chunks_exact(4).map(|b| c_int::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

/// The members of `comm` (job ranks) and this process's rank in it.
fn members_of(comm: MPI_Comm) -> MpiResult<(Vec<u32>, usize)> {
    runtime::with(|rt| {
        let shared = &rt.comms.get(comm)?.shared;
        Ok((shared.members.to_vec(), shared.rank as usize))
    })
}

/// The record that opens a process's lists in [`reordered_adjacent`]: its number of records.
const COUNT: c_int = 2;

/// With reorder, for MPI_Dist_graph_create_adjacent: every process's lists go to every process,
/// the processes are mapped onto the vertices (topo/reorder.rs), and this process takes the
/// lists of the vertex it plays. Returns the new communicator's members and this process's graph.
fn reordered_adjacent(comm: MPI_Comm, members: &[u32], rank: usize, mine: &DistGraph) -> MpiResult<(Vec<u32>, DistGraph)> {
    let weight = |weights: &Option<Vec<c_int>>, index: usize| weights.as_ref().map_or(1, |weights| weights[index]);
    let mut records = vec![COUNT, (mine.sources.len() + mine.destinations.len()) as c_int, 0];
    records.extend(mine.sources.iter().enumerate().flat_map(|(index, &source)| [IN_EDGE, source, weight(&mine.source_weights, index)]));
    records.extend(mine.destinations.iter().enumerate().flat_map(|(index, &destination)| [OUT_EDGE, destination, weight(&mine.destination_weights, index)]));
    let received = exchange_records(comm, &vec![records; members.len()]).map_err(|e| error(comm, e.class, format!("sharing the graph to reorder it failed: {}", e.detail)))?;
    let mut lists: Vec<&[c_int]> = Vec::with_capacity(members.len());
    let mut at = 0;
    while at + RECORD <= received.len() {
        let count = received[at + 1] as usize;
        lists.push(&received[at + RECORD..(at + RECORD * (count + 1)).min(received.len())]);
        at += RECORD * (count + 1);
    }
    let edges: Vec<(usize, usize, u64)> = lists
        .iter()
        .enumerate()
        .flat_map(|(process, list)| list.chunks_exact(RECORD).filter(|record| record[0] == OUT_EDGE && record[1] >= 0).map(move |record| (process, record[1] as usize, record[2].max(0) as u64)))
        .collect();
    let playing = super::reorder::process_of_vertex(members, edges);
    let vertex = super::reorder::vertex_of(&playing, rank);
    let graph = collect_edges(lists.get(vertex).copied().unwrap_or(&[]), mine.weighted());
    Ok((playing.iter().map(|&process| members[process]).collect(), graph))
}

/// With reorder, for MPI_Dist_graph_create: every named edge goes to every process, the
/// processes are mapped onto the vertices, and this process takes the edges of the vertex it
/// plays (in the order the route to the endpoints would deliver them). Returns the new
/// communicator's members and this process's graph.
fn reordered_general(comm: MPI_Comm, members: &[u32], rank: usize, named: &[(c_int, c_int, c_int)], weighted: bool) -> MpiResult<(Vec<u32>, DistGraph)> {
    let records: Vec<c_int> = named.iter().flat_map(|&(source, destination, weight)| [source, destination, weight]).collect();
    let received = exchange_records(comm, &vec![records; members.len()]).map_err(|e| error(comm, e.class, format!("sharing the graph to reorder it failed: {}", e.detail)))?;
    let edges: Vec<(usize, usize, u64)> = received.chunks_exact(RECORD).map(|record| (record[0] as usize, record[1] as usize, record[2].max(0) as u64)).collect();
    let playing = super::reorder::process_of_vertex(members, edges.iter().copied());
    let vertex = super::reorder::vertex_of(&playing, rank);
    let mut routed = Vec::new();
    for &(source, destination, weight) in &edges {
        if destination == vertex {
            routed.extend([IN_EDGE, source as c_int, weight as c_int]);
        }
        if source == vertex {
            routed.extend([OUT_EDGE, destination as c_int, weight as c_int]);
        }
    }
    Ok((playing.iter().map(|&process| members[process]).collect(), collect_edges(&routed, weighted)))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create_adjacent(
    comm_old: MPI_Comm,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    info: MPI_Info,
    reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    let _ = info;
    let result = (|| {
        let (members, rank) = members_of(comm_old)?;
        let (indegree, outdegree) = (length(comm_old, indegree, "indegree")?, length(comm_old, outdegree, "outdegree")?);
        // SAFETY: MPI requires `indegree` and `outdegree` ints (weights: or the special values).
        let (sources, destinations, source_weights, destination_weights) = unsafe {
            (
                int_array(comm_old, sources, indegree, "sources")?,
                int_array(comm_old, destinations, outdegree, "destinations")?,
                weights_argument(comm_old, sourceweights, indegree, "sourceweights")?,
                weights_argument(comm_old, destweights, outdegree, "destweights")?,
            )
        };
        if source_weights.is_some() != destination_weights.is_some() {
            return Err(error(comm_old, MPI_ERR_ARG, "sourceweights and destweights must both be MPI_UNWEIGHTED or neither"));
        }
        check_ranks(comm_old, sources, members.len(), true, "sources")?;
        check_ranks(comm_old, destinations, members.len(), true, "destinations")?;
        if comm_dist_graph.is_null() {
            return Err(error(comm_old, MPI_ERR_ARG, "comm_dist_graph must not be NULL"));
        }
        let graph = DistGraph {
            sources: sources.to_vec(),
            source_weights: source_weights.map(<[c_int]>::to_vec),
            destinations: destinations.to_vec(),
            destination_weights: destination_weights.map(<[c_int]>::to_vec),
        };
        let (members, graph) = match reorder != 0 {
            true => reordered_adjacent(comm_old, &members, rank, &graph)?,
            false => (members, graph),
        };
        let created = comm::construct::create_from(comm_old, Some(members), Some(Topology::DistGraph(graph)))?;
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *comm_dist_graph = created };
        Ok(())
    })();
    finish("MPI_Dist_graph_create_adjacent", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create(
    comm_old: MPI_Comm,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights: *const c_int,
    info: MPI_Info,
    reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    let _ = info;
    let result = (|| {
        let (members, rank) = members_of(comm_old)?;
        let n = length(comm_old, n, "n")?;
        // SAFETY: MPI requires `n` ints in sources and degrees.
        let (sources, degrees) = unsafe { (int_array(comm_old, sources, n, "sources")?, int_array(comm_old, degrees, n, "degrees")?) };
        let mut total = 0usize;
        for &degree in degrees {
            total += length(comm_old, degree, "a degree")?;
        }
        // SAFETY: MPI requires one destination (and weight, unless MPI_UNWEIGHTED) per edge.
        let (destinations, weights) = unsafe { (int_array(comm_old, destinations, total, "destinations")?, weights_argument(comm_old, weights, total, "weights")?) };
        check_ranks(comm_old, sources, members.len(), false, "sources")?;
        check_ranks(comm_old, destinations, members.len(), false, "destinations")?;
        if comm_dist_graph.is_null() {
            return Err(error(comm_old, MPI_ERR_ARG, "comm_dist_graph must not be NULL"));
        }
        if reorder != 0 {
            let named = named_edges(sources, degrees, destinations, weights);
            let (members, graph) = reordered_general(comm_old, &members, rank, &named, weights.is_some())?;
            let created = comm::construct::create_from(comm_old, Some(members), Some(Topology::DistGraph(graph)))?;
            // SAFETY: checked non-null; the caller's handle.
            unsafe { *comm_dist_graph = created };
            return Ok(());
        }
        let outgoing = route_edges(members.len(), sources, degrees, destinations, weights);
        let received = exchange_records(comm_old, &outgoing).map_err(|e| error(comm_old, e.class, format!("routing the edges to their endpoints failed: {}", e.detail)))?;
        let graph = collect_edges(&received, weights.is_some());
        let created = comm::construct::create_from(comm_old, Some(members), Some(Topology::DistGraph(graph)))?;
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *comm_dist_graph = created };
        Ok(())
    })();
    finish("MPI_Dist_graph_create", result)
}

/// Runs `f` on the distributed graph topology of `comm`.
fn with_dist_graph<R>(comm: MPI_Comm, f: impl FnOnce(&DistGraph) -> MpiResult<R>) -> MpiResult<R> {
    with_topology(comm, |topology, _| match topology {
        Topology::DistGraph(graph) => f(graph),
        _ => Err(no_topology(comm, "a distributed graph topology")),
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors_count(comm: MPI_Comm, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int) -> c_int {
    let result = with_dist_graph(comm, |graph| {
        // SAFETY: the caller's out-pointers (NULL is rejected by store).
        unsafe {
            store(indegree, graph.sources.len() as c_int, "indegree")?;
            store(outdegree, graph.destinations.len() as c_int, "outdegree")?;
            store(weighted, c_int::from(graph.weighted()), "weighted")
        }
    });
    finish("MPI_Dist_graph_neighbors_count", result)
}

/// Copies the first `room` entries of `values` (and of `weights` when the graph is weighted and
/// the caller asks for them) to the caller's arrays.
///
/// # Safety
/// `out` must have room for `room` ints; so must `weights_out` unless it is MPI_UNWEIGHTED or
/// MPI_WEIGHTS_EMPTY or the graph is unweighted.
unsafe fn write_edges(comm: MPI_Comm, room: usize, values: &[c_int], out: *mut c_int, weights: Option<&Vec<c_int>>, weights_out: *mut c_int, what: &str) -> MpiResult<()> {
    let count = room.min(values.len());
    // SAFETY: the caller guarantees room for `room` ints.
    unsafe { write_ints(comm, out, &values[..count], what)? };
    match weights {
        Some(weights) if weights_out != MPI_UNWEIGHTED && weights_out != MPI_WEIGHTS_EMPTY => {
            // SAFETY: as above, for the weights array.
            unsafe { write_ints(comm, weights_out, &weights[..count], "weights") }
        }
        _ => Ok(()),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors(
    comm: MPI_Comm,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    let result = with_dist_graph(comm, |graph| {
        let (inward, outward) = (length(comm, maxindegree, "maxindegree")?, length(comm, maxoutdegree, "maxoutdegree")?);
        // SAFETY: MPI requires room for `maxindegree` and `maxoutdegree` ints in the arrays.
        unsafe {
            write_edges(comm, inward, &graph.sources, sources, graph.source_weights.as_ref(), sourceweights, "sources")?;
            write_edges(comm, outward, &graph.destinations, destinations, graph.destination_weights.as_ref(), destweights, "destinations")
        }
    });
    finish("MPI_Dist_graph_neighbors", result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The edges one rank names: MPI_Dist_graph_create's arguments.
    #[derive(Clone)]
    struct Named {
        sources: Vec<c_int>,
        degrees: Vec<c_int>,
        destinations: Vec<c_int>,
        weights: Option<Vec<c_int>>,
    }

    fn named(sources: &[c_int], degrees: &[c_int], destinations: &[c_int], weights: Option<&[c_int]>) -> Named {
        Named { sources: sources.to_vec(), degrees: degrees.to_vec(), destinations: destinations.to_vec(), weights: weights.map(<[c_int]>::to_vec) }
    }

    /// What every rank ends with when rank r names the edges of `named[r]`.
    fn route_all(size: usize, named: &[Named]) -> Vec<DistGraph> {
        let outgoing: Vec<Vec<Vec<c_int>>> = named.iter().map(|n| route_edges(size, &n.sources, &n.degrees, &n.destinations, n.weights.as_deref())).collect();
        (0..size)
            .map(|me| {
                let records: Vec<c_int> = outgoing.iter().flat_map(|from| from[me].iter().copied()).collect();
                collect_edges(&records, named[me].weights.is_some())
            })
            .collect()
    }

    #[test]
    fn a_ring_named_by_its_sources_reaches_both_ends() {
        let size = 3;
        let named: Vec<Named> = (0..size as c_int).map(|r| named(&[r], &[1], &[(r + 1) % 3], Some(&[10 + r]))).collect();
        let graphs = route_all(size, &named);
        assert_eq!(graphs[0].sources, vec![2]);
        assert_eq!(graphs[0].source_weights, Some(vec![12]));
        assert_eq!(graphs[0].destinations, vec![1]);
        assert_eq!(graphs[0].destination_weights, Some(vec![10]));
        assert!(graphs.iter().all(DistGraph::weighted));
    }

    #[test]
    fn one_rank_may_name_every_edge() {
        let size = 3;
        let mut everyone = vec![named(&[], &[], &[], None); size];
        // Rank 0 names 1->0, 1->2, 2->2 and 0->1.
        everyone[0] = named(&[1, 2, 0], &[2, 1, 1], &[0, 2, 2, 1], None);
        let graphs = route_all(size, &everyone);
        assert_eq!((graphs[0].sources.clone(), graphs[0].destinations.clone()), (vec![1], vec![1]));
        assert_eq!((graphs[1].sources.clone(), graphs[1].destinations.clone()), (vec![0], vec![0, 2]));
        assert_eq!((graphs[2].sources.clone(), graphs[2].destinations.clone()), (vec![1, 2], vec![2]));
        assert!(!graphs[2].weighted());
    }

    #[test]
    fn in_edges_come_in_rank_order_of_their_namers() {
        let size = 3;
        let everyone = vec![named(&[0], &[1], &[2], None), named(&[1, 1], &[1, 1], &[2, 2], None), named(&[2], &[1], &[2], None)];
        let graphs = route_all(size, &everyone);
        assert_eq!(graphs[2].sources, vec![0, 1, 1, 2]);
        assert_eq!(graphs[2].destinations, vec![2]);
        assert_eq!(graphs[1].destinations, vec![2, 2]);
    }

    #[test]
    fn record_blocks_are_consecutive() {
        assert_eq!(record_blocks([2, 0, 1].into_iter()), vec![0..24, 24..24, 24..36]);
    }

    #[test]
    fn ranks_are_checked() {
        assert!(check_ranks(MPI_COMM_WORLD, &[0, 2, MPI_PROC_NULL], 3, true, "sources").is_ok());
        assert_eq!(check_ranks(MPI_COMM_WORLD, &[0, MPI_PROC_NULL], 3, false, "sources").unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(check_ranks(MPI_COMM_WORLD, &[3], 3, true, "sources").unwrap_err().class, MPI_ERR_RANK);
    }

    #[test]
    fn weights_arguments_follow_the_special_values() {
        let weights = [4, 5];
        // SAFETY: two ints, or special values that are never read.
        unsafe {
            assert_eq!(weights_argument(MPI_COMM_WORLD, MPI_UNWEIGHTED, 2, "w").unwrap(), None);
            assert_eq!(weights_argument(MPI_COMM_WORLD, MPI_WEIGHTS_EMPTY, 0, "w").unwrap(), Some(&[][..]));
            assert_eq!(weights_argument(MPI_COMM_WORLD, std::ptr::null(), 0, "w").unwrap(), Some(&[][..]));
            assert_eq!(weights_argument(MPI_COMM_WORLD, MPI_WEIGHTS_EMPTY, 1, "w").unwrap_err().class, MPI_ERR_ARG);
            assert_eq!(weights_argument(MPI_COMM_WORLD, std::ptr::null(), 1, "w").unwrap_err().class, MPI_ERR_ARG);
            assert_eq!(weights_argument(MPI_COMM_WORLD, weights.as_ptr(), 2, "w").unwrap(), Some(&weights[..]));
            assert_eq!(weights_argument(MPI_COMM_WORLD, [1, -1].as_ptr(), 2, "w").unwrap_err().class, MPI_ERR_ARG);
        }
    }
}
