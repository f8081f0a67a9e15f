//! Which node each rank of a communicator is on: the groups a hierarchical collective runs its
//! phases in.

/// Which node each rank of a communicator is on, grouped.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeLayout {
    /// The ranks of each node, in rank order; nodes in the order of their lowest rank.
    pub(super) nodes: Vec<Vec<usize>>,
    /// The index in `nodes` of each rank's node.
    pub(super) node_of: Vec<usize>,
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
    pub(super) fn widest(&self) -> usize {
        self.nodes.iter().map(Vec::len).max().unwrap_or(0)
    }

    pub(super) fn crosses(&self, a: usize, b: usize) -> bool {
        self.node_of[a] != self.node_of[b]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
