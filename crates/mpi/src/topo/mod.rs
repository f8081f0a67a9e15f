//! Process topologies (MPI 3.1 chapter 7): the [`Topology`] a communicator carries, MPI_Topo_test
//! ([`abi`]), and [`neighbors`], the neighbour lists of the neighbourhood collectives. Each kind of topology
//! has its own file; `reorder = true` renumbers the processes so that the topology's edges stay
//! inside nodes where they can ([`reorder`]).

pub mod abi;
pub mod cartesian;
pub mod dims;
pub mod dist_graph;
pub mod graph;
mod reorder;

use std::ffi::c_int;

use crate::consts::*;

pub use abi::neighbors;
pub use cartesian::Cartesian;
pub use dist_graph::DistGraph;
pub use graph::Graph;

/// The virtual topology of a communicator; a duplicate keeps it, MPI_Comm_free drops it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topology {
    Cartesian(Cartesian),
    Graph(Graph),
    DistGraph(DistGraph),
}

/// The ranks a process exchanges with in a neighbourhood collective, in the order of MPI 3.1
/// §7.6: `sources` are received from, `destinations` sent to (MPI_PROC_NULL entries included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbors {
    pub sources: Vec<c_int>,
    pub destinations: Vec<c_int>,
    /// A Cartesian grid's: the lists hold, per dimension, the process at -1 then the one at +1.
    pub cartesian: bool,
}

impl Neighbors {
    /// The order in which the destination blocks leave. Messages between two processes match in
    /// the order they were sent, and where the same process is both neighbours of a dimension (a
    /// periodic dimension of 1 or 2 processes) the block sent toward +1 must land in the block
    /// received from -1 (MPI 4.0): on a grid, each dimension's +1 block leaves first.
    pub fn send_order(&self) -> Vec<usize> {
        let n = self.destinations.len();
        if self.cartesian {
            (0..n).map(|index| index ^ 1).filter(|&index| index < n).collect()
        } else {
            (0..n).collect()
        }
    }
}

impl Topology {
    /// The MPI_Topo_test value of this kind.
    pub fn kind(&self) -> c_int {
        match self {
            Topology::Cartesian(_) => MPI_CART,
            Topology::Graph(_) => MPI_GRAPH,
            Topology::DistGraph(_) => MPI_DIST_GRAPH,
        }
    }

    /// The neighbours of communicator rank `rank`: for a Cartesian grid, per dimension the
    /// process at -1 then at +1 (both lists); for a graph, the node's neighbours (both lists); for a
    /// distributed graph, the in-edges and the out-edges as given at creation.
    pub fn neighbors(&self, rank: usize) -> Neighbors {
        match self {
            Topology::Cartesian(grid) => {
                let both: Vec<c_int> = (0..grid.dims.len())
                    .flat_map(|direction| {
                        let (below, above) = grid.shift(rank, direction, 1);
                        [below, above]
                    })
                    .collect();
                Neighbors { sources: both.clone(), destinations: both, cartesian: true }
            }
            Topology::Graph(graph) => {
                let both = graph.neighbors(rank).to_vec();
                Neighbors { sources: both.clone(), destinations: both, cartesian: false }
            }
            Topology::DistGraph(graph) => Neighbors { sources: graph.sources.clone(), destinations: graph.destinations.clone(), cartesian: false },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cartesian_neighbors_go_down_then_up_per_dimension() {
        let grid = Topology::Cartesian(Cartesian { dims: vec![2, 3], periods: vec![false, true] });
        let expected = vec![MPI_PROC_NULL, 3, 2, 1];
        assert_eq!(grid.neighbors(0), Neighbors { sources: expected.clone(), destinations: expected, cartesian: true });
        assert_eq!(grid.neighbors(0).send_order(), vec![1, 0, 3, 2]);
        let corner = grid.neighbors(5);
        assert_eq!(corner.sources, vec![2, MPI_PROC_NULL, 4, 3]);
        assert_eq!(corner.destinations, corner.sources);
        let point = Topology::Cartesian(Cartesian { dims: vec![], periods: vec![] });
        assert!(point.neighbors(0).sources.is_empty());
    }

    #[test]
    fn periodic_rings_of_one_and_two_list_duplicates() {
        let one = Topology::Cartesian(Cartesian { dims: vec![1], periods: vec![true] });
        assert_eq!(one.neighbors(0).sources, vec![0, 0]);
        let two = Topology::Cartesian(Cartesian { dims: vec![2], periods: vec![true] });
        assert_eq!(two.neighbors(1).destinations, vec![0, 0]);
    }

    #[test]
    fn graph_neighbors_are_both_lists() {
        let graph = Topology::Graph(Graph::new(MPI_COMM_WORLD, &[2, 3, 4], &[1, 2, 0, 0]).unwrap());
        assert_eq!(graph.neighbors(0), Neighbors { sources: vec![1, 2], destinations: vec![1, 2], cartesian: false });
        assert_eq!(graph.neighbors(0).send_order(), vec![0, 1]);
        assert_eq!(graph.neighbors(2), Neighbors { sources: vec![0], destinations: vec![0], cartesian: false });
        assert_eq!(graph.kind(), MPI_GRAPH);
    }

    #[test]
    fn dist_graph_neighbors_keep_the_given_order() {
        let graph = DistGraph { sources: vec![3, 1, MPI_PROC_NULL], source_weights: None, destinations: vec![2], destination_weights: None };
        let topology = Topology::DistGraph(graph);
        assert_eq!(topology.neighbors(0), Neighbors { sources: vec![3, 1, MPI_PROC_NULL], destinations: vec![2], cartesian: false });
        assert_eq!(topology.kind(), MPI_DIST_GRAPH);
    }
}
