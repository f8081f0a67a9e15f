//! Graph topologies (MPI_Graph_create and its queries): every process holds the whole graph in
//! MPI's compressed form. Self-loops and repeated edges are allowed (MPI 2.2 and later).

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_int;

use super::abi::{int_array, length, no_topology, with_topology, write_ints};
use super::Topology;
use crate::comm;
use crate::consts::*;
use crate::error::{error, finish, MpiResult};
use crate::group::store;
use crate::runtime;

/// A graph of `index.len()` nodes: node i's neighbours are `edges[index[i - 1]..index[i]]`
/// (from 0 for node 0), as MPI_Graph_create describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    pub index: Vec<c_int>,
    pub edges: Vec<c_int>,
}

/// The number of edges `index` describes; MPI_ERR_ARG unless it is a non-decreasing list of
/// non-negative cumulative degrees.
pub fn edge_count(comm: MPI_Comm, index: &[c_int]) -> MpiResult<usize> {
    let mut previous = 0;
    for (node, &end) in index.iter().enumerate() {
        if end < previous {
            return Err(error(comm, MPI_ERR_ARG, format!("index[{node}] = {end} is below the previous entry {previous} (index holds cumulative degrees)")));
        }
        previous = end;
    }
    Ok(previous as usize)
}

impl Graph {
    /// The graph `index` and `edges` describe, checked: MPI_ERR_ARG for a bad index or an edge that
    /// names no node.
    pub fn new(comm: MPI_Comm, index: &[c_int], edges: &[c_int]) -> MpiResult<Graph> {
        let count = edge_count(comm, index)?;
        if edges.len() != count {
            return Err(error(comm, MPI_ERR_ARG, format!("index describes {count} edges, {} were given", edges.len())));
        }
        if let Some((position, bad)) = edges.iter().enumerate().find(|(_, &e)| e < 0 || e as usize >= index.len()) {
            return Err(error(comm, MPI_ERR_ARG, format!("edges[{position}] = {bad} is not a node of a graph of {} nodes", index.len())));
        }
        Ok(Graph { index: index.to_vec(), edges: edges.to_vec() })
    }

    pub fn nnodes(&self) -> usize {
        self.index.len()
    }

    /// The neighbours of `node` (< nnodes), in the order given.
    pub fn neighbors(&self, node: usize) -> &[c_int] {
        let start = if node == 0 { 0 } else { self.index[node - 1] as usize };
        &self.edges[start..self.index[node] as usize]
    }
}

/// Runs `f` on the graph topology of `comm`.
fn with_graph<R>(comm: MPI_Comm, f: impl FnOnce(&Graph) -> MpiResult<R>) -> MpiResult<R> {
    with_topology(comm, |topology, _| match topology {
        Topology::Graph(graph) => f(graph),
        _ => Err(no_topology(comm, "a graph topology")),
    })
}

/// A node of `graph` named by the caller; MPI_ERR_RANK when out of range.
fn node_of(comm: MPI_Comm, graph: &Graph, rank: c_int) -> MpiResult<usize> {
    usize::try_from(rank).ok().filter(|&node| node < graph.nnodes()).ok_or_else(|| error(comm, MPI_ERR_RANK, format!("rank {rank} is not a node of a graph of {} nodes", graph.nnodes())))
}

/// MPI_Graph_map's answer for `rank`: its own rank when the graph has a node for it (ranks are
/// kept), MPI_UNDEFINED otherwise.
fn graph_map(comm: MPI_Comm, nnodes: c_int, size: usize, rank: usize) -> MpiResult<c_int> {
    let nodes = length(comm, nnodes, "nnodes")?;
    if nodes > size {
        return Err(error(comm, MPI_ERR_ARG, format!("the graph has {nodes} nodes, the communicator {size} processes")));
    }
    Ok(if rank < nodes { rank as c_int } else { MPI_UNDEFINED })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_create(comm_old: MPI_Comm, nnodes: c_int, index: *const c_int, edges: *const c_int, reorder: c_int, comm_graph: *mut MPI_Comm) -> c_int {
    let result = (|| {
        let nodes = length(comm_old, nnodes, "nnodes")?;
        // SAFETY: MPI requires `nnodes` ints in index.
        let index = unsafe { int_array(comm_old, index, nodes, "index")? };
        let count = edge_count(comm_old, index)?;
        // SAFETY: MPI requires index[nnodes - 1] ints in edges.
        let edges = unsafe { int_array(comm_old, edges, count, "edges")? };
        let graph = Graph::new(comm_old, index, edges)?;
        if comm_graph.is_null() {
            return Err(error(comm_old, MPI_ERR_ARG, "comm_graph must not be NULL"));
        }
        let (members, rank) = runtime::with(|rt| {
            let shared = &rt.comms.get(comm_old)?.shared;
            Ok((shared.members.clone(), shared.rank as usize))
        })?;
        if nodes > members.len() {
            return Err(error(comm_old, MPI_ERR_ARG, format!("the graph has {nodes} nodes, the communicator {} processes", members.len())));
        }
        let playing = match reorder != 0 {
            true => {
                let links = (0..nodes).flat_map(|node| graph.neighbors(node).iter().map(move |&other| (node, other as usize, 1)));
                super::reorder::process_of_vertex(&members, links.collect::<Vec<_>>())
            }
            false => (0..members.len()).collect(),
        };
        let position = super::reorder::vertex_of(&playing, rank);
        let mine = (position < nodes).then(|| playing[..nodes].iter().map(|&process| members[process]).collect());
        let created = comm::construct::create_from(comm_old, mine, Some(Topology::Graph(graph)))?;
        // SAFETY: checked non-null; the caller's handle.
        unsafe { *comm_graph = created };
        Ok(())
    })();
    finish("MPI_Graph_create", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graphdims_get(comm: MPI_Comm, nnodes: *mut c_int, nedges: *mut c_int) -> c_int {
    let result = with_graph(comm, |graph| {
        // SAFETY: the caller's out-pointers (NULL is rejected by store).
        unsafe {
            store(nnodes, graph.nnodes() as c_int, "nnodes")?;
            store(nedges, graph.edges.len() as c_int, "nedges")
        }
    });
    finish("MPI_Graphdims_get", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_get(comm: MPI_Comm, maxindex: c_int, maxedges: c_int, index: *mut c_int, edges: *mut c_int) -> c_int {
    let result = with_graph(comm, |graph| {
        if (maxindex as i64) < graph.nnodes() as i64 {
            return Err(error(comm, MPI_ERR_ARG, format!("maxindex {maxindex} is below the graph's {} nodes", graph.nnodes())));
        }
        if (maxedges as i64) < graph.edges.len() as i64 {
            return Err(error(comm, MPI_ERR_ARG, format!("maxedges {maxedges} is below the graph's {} edges", graph.edges.len())));
        }
        // SAFETY: MPI requires room for `maxindex` and `maxedges` ints, at least the graph's size.
        unsafe {
            write_ints(comm, index, &graph.index, "index")?;
            write_ints(comm, edges, &graph.edges, "edges")
        }
    });
    finish("MPI_Graph_get", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_neighbors_count(comm: MPI_Comm, rank: c_int, nneighbors: *mut c_int) -> c_int {
    let result = with_graph(comm, |graph| {
        let count = graph.neighbors(node_of(comm, graph, rank)?).len();
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(nneighbors, count as c_int, "nneighbors") }
    });
    finish("MPI_Graph_neighbors_count", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_neighbors(comm: MPI_Comm, rank: c_int, maxneighbors: c_int, neighbors: *mut c_int) -> c_int {
    let result = with_graph(comm, |graph| {
        let all = graph.neighbors(node_of(comm, graph, rank)?);
        let room = length(comm, maxneighbors, "maxneighbors")?;
        // As MPICH and Open MPI do, a short array receives the first maxneighbors neighbours.
        // SAFETY: MPI requires room for `maxneighbors` ints.
        unsafe { write_ints(comm, neighbors, &all[..room.min(all.len())], "neighbors") }
    });
    finish("MPI_Graph_neighbors", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_map(comm: MPI_Comm, nnodes: c_int, index: *const c_int, edges: *const c_int, newrank: *mut c_int) -> c_int {
    let result = (|| {
        let (members, rank) = runtime::with(|rt| {
            let shared = &rt.comms.get(comm)?.shared;
            Ok((shared.members.clone(), shared.rank as usize))
        })?;
        graph_map(comm, nnodes, members.len(), rank)?;
        let nodes = length(comm, nnodes, "nnodes")?;
        // SAFETY: MPI requires `nnodes` ints in index, then index[nnodes - 1] in edges.
        let index = unsafe { int_array(comm, index, nodes, "index")? };
        let count = index.last().map_or(0, |&last| usize::try_from(last).unwrap_or(0));
        // SAFETY: as above.
        let edges = unsafe { int_array(comm, edges, count, "edges")? };
        // The node MPI_Graph_create with reorder gives this process. MPI_Graph_map does not check
        // the graph (programs pass the first nodes of a larger one): edges that do not name one of
        // its nodes are left out.
        let mut links = Vec::new();
        let mut start = 0;
        for (node, &end) in index.iter().enumerate() {
            let end = usize::try_from(end).unwrap_or(0).clamp(start, count);
            links.extend(edges[start..end].iter().filter_map(|&other| usize::try_from(other).ok().filter(|&other| other < nodes)).map(|other| (node, other, 1)));
            start = end;
        }
        let playing = super::reorder::process_of_vertex(&members, links);
        let position = super::reorder::vertex_of(&playing, rank);
        let mapped = if position < nodes { position as c_int } else { MPI_UNDEFINED };
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(newrank, mapped, "newrank") }
    })();
    finish("MPI_Graph_map", result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class_of<T: std::fmt::Debug>(result: MpiResult<T>) -> c_int {
        result.unwrap_err().class
    }

    #[test]
    fn graphs_hold_each_node_s_neighbours() {
        // The example of MPI 3.1 §7.5.3: 0-1, 0-3, 1-0, 2-3, 3-0, 3-2.
        let graph = Graph::new(MPI_COMM_WORLD, &[2, 3, 4, 6], &[1, 3, 0, 3, 0, 2]).unwrap();
        assert_eq!(graph.nnodes(), 4);
        assert_eq!(graph.neighbors(0), &[1, 3]);
        assert_eq!(graph.neighbors(1), &[0]);
        assert_eq!(graph.neighbors(3), &[0, 2]);
    }

    #[test]
    fn isolated_nodes_self_loops_and_repeated_edges_are_allowed() {
        let graph = Graph::new(MPI_COMM_WORLD, &[0, 3, 3], &[1, 1, 2]).unwrap();
        assert!(graph.neighbors(0).is_empty());
        assert_eq!(graph.neighbors(1), &[1, 1, 2]);
        assert!(graph.neighbors(2).is_empty());
        assert_eq!(Graph::new(MPI_COMM_WORLD, &[], &[]).unwrap().nnodes(), 0);
    }

    #[test]
    fn bad_descriptions_are_argument_errors() {
        assert_eq!(class_of(edge_count(MPI_COMM_WORLD, &[2, 1])), MPI_ERR_ARG);
        assert_eq!(class_of(edge_count(MPI_COMM_WORLD, &[-1])), MPI_ERR_ARG);
        assert_eq!(edge_count(MPI_COMM_WORLD, &[0, 2, 2, 5]).unwrap(), 5);
        assert_eq!(class_of(Graph::new(MPI_COMM_WORLD, &[1, 2], &[2, 0])), MPI_ERR_ARG);
        assert_eq!(class_of(Graph::new(MPI_COMM_WORLD, &[1], &[-1])), MPI_ERR_ARG);
        assert_eq!(class_of(Graph::new(MPI_COMM_WORLD, &[1], &[0, 0])), MPI_ERR_ARG);
    }

    #[test]
    fn nodes_are_checked_as_ranks() {
        let graph = Graph::new(MPI_COMM_WORLD, &[1, 2], &[1, 0]).unwrap();
        assert_eq!(node_of(MPI_COMM_WORLD, &graph, 1).unwrap(), 1);
        assert_eq!(class_of(node_of(MPI_COMM_WORLD, &graph, 2)), MPI_ERR_RANK);
        assert_eq!(class_of(node_of(MPI_COMM_WORLD, &graph, -1)), MPI_ERR_RANK);
    }

    #[test]
    fn graph_map_keeps_ranks_that_fit() {
        assert_eq!(graph_map(MPI_COMM_WORLD, 3, 4, 2).unwrap(), 2);
        assert_eq!(graph_map(MPI_COMM_WORLD, 3, 4, 3).unwrap(), MPI_UNDEFINED);
        assert_eq!(graph_map(MPI_COMM_WORLD, 0, 4, 0).unwrap(), MPI_UNDEFINED);
        assert_eq!(class_of(graph_map(MPI_COMM_WORLD, 5, 4, 0)), MPI_ERR_ARG);
        assert_eq!(class_of(graph_map(MPI_COMM_WORLD, -1, 4, 0)), MPI_ERR_ARG);
    }
}
