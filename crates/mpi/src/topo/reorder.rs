//! `reorder = true` in the topology constructors: the processes are renumbered so that the
//! declared graph's heavy edges stay inside nodes.
//!
//! The topology is a graph over ranks: a Cartesian grid's positions, a graph's nodes, a
//! distributed graph's vertices, numbered as the ranks of `comm_old`. Reordering chooses which
//! process plays which vertex: the process that gets rank v in the new communicator is vertex v,
//! with vertex v's neighbours (as MPI_Cart_create has always meant it). The mapper
//! (braid_mapping) keeps every process on its vertex unless moving some lowers the weight of
//! the edges that cross nodes; then the vertices are dealt to the nodes it chose, each process
//! keeping its own vertex where that vertex stays on its node. Every process computes the same
//! answer from the same graph and the job's node layout, so no extra agreement is needed; with
//! processes of another job among them, which see another layout, nobody moves.

use braid_mapping::Traffic;

use crate::runtime;

/// The process (rank of `comm_old`, whose job ranks are `members`) that plays each vertex of a
/// graph of `members.len()` vertices with `edges` `(a, b, weight)`.
pub(crate) fn process_of_vertex(members: &[u32], edges: impl IntoIterator<Item = (usize, usize, u64)>) -> Vec<usize> {
    // Processes of another job see a layout of their own: all keep their vertices.
    let node_ids: Option<Vec<u32>> =
        runtime::with(|rt| Ok((!members.iter().any(|&job| rt.engine.is_joined(job))).then(|| members.iter().map(|&job| rt.engine.node_id(job)).collect()))).unwrap_or(None);
    match node_ids {
        Some(node_ids) => mapping(&node_ids, &Traffic::from_edges(members.len(), edges)),
        None => (0..members.len()).collect(),
    }
}

/// The vertex `process` plays in a mapping [`process_of_vertex`] returned.
pub(crate) fn vertex_of(playing: &[usize], process: usize) -> usize {
    playing.iter().position(|&other| other == process).unwrap_or(process)
}

/// [`process_of_vertex`] for processes on the nodes `node_ids` (equal ids share a node).
fn mapping(node_ids: &[u32], traffic: &Traffic) -> Vec<usize> {
    let size = node_ids.len();
    let identity: Vec<usize> = (0..size).collect();
    // Nodes numbered in the order their first process appears.
    let mut nodes: Vec<u32> = Vec::new();
    let current: Vec<usize> = node_ids
        .iter()
        .map(|id| {
            nodes.iter().position(|known| known == id).unwrap_or_else(|| {
                nodes.push(*id);
                nodes.len() - 1
            })
        })
        .collect();
    if nodes.len() < 2 {
        return identity;
    }
    let capacities: Vec<usize> = (0..nodes.len()).map(|node| current.iter().filter(|&&k| k == node).count()).collect();
    let Ok(node_of_vertex) = braid_mapping::improve_placement(traffic, &capacities, &current) else {
        return identity;
    };
    let mut playing = vec![usize::MAX; size];
    let mut free: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (vertex, &node) in node_of_vertex.iter().enumerate() {
        // A process whose own vertex stays on its node keeps it.
        if current[vertex] == node {
            playing[vertex] = vertex;
        }
    }
    for process in 0..size {
        if playing[process] != process {
            free[current[process]].push(process);
        }
    }
    for (vertex, &node) in node_of_vertex.iter().enumerate() {
        if playing[vertex] == usize::MAX {
            playing[vertex] = free[node].remove(0);
        }
    }
    playing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_keep_their_vertices_when_nothing_is_gained() {
        let traffic = Traffic::from_edges(4, [(0, 1, 5), (2, 3, 5)]);
        assert_eq!(mapping(&[7, 7, 9, 9], &traffic), [0, 1, 2, 3]);
        assert_eq!(mapping(&[7, 7, 7, 7], &Traffic::from_edges(4, [(0, 3, 5)])), [0, 1, 2, 3], "one node");
    }

    #[test]
    fn split_heavy_edges_are_brought_onto_one_node() {
        // Processes 0,1 on node 7 and 2,3 on node 9; vertices 0-2 and 1-3 are heavy.
        let traffic = Traffic::from_edges(4, [(0, 2, 100), (1, 3, 100), (0, 1, 1)]);
        let playing = mapping(&[7, 7, 9, 9], &traffic);
        let node = |vertex: usize| [7, 7, 9, 9][playing[vertex]];
        assert_eq!((node(0) == node(2), node(1) == node(3)), (true, true), "{playing:?}");
        let mut sorted = playing.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2, 3], "a permutation");
        // Of vertices 0 and 2 (and 1 and 3) one stays with its own process.
        assert!(playing.iter().enumerate().filter(|(vertex, process)| vertex == *process).count() >= 2, "{playing:?}");
    }
}
