//! Which ranks share a node: dealt out in blocks, round-robin, or by the job's measured
//! communication pattern so that the fewest bytes cross between nodes.
//!
//! The pattern mapping is a balanced partition of the traffic graph: candidates (the blocked and
//! cyclic deals and a greedy growth of each node around its heaviest talkers) are each improved by
//! the single swap or move that lowers the bytes crossing nodes most, again and again
//! (Kernighan-Lin's gain, one exchange at a time), and the best result is kept. It is never worse
//! than blocked or cyclic by construction. Within a node, [`order_within`] puts heavy talkers next
//! to each other, pairs first, then pairs of pairs (TreeMatch's idea for cores that share caches
//! level by level).
//!
//! Everything here is free of I/O: callers read profiles and write placements.

mod order;
mod partition;

pub use order::order_within;
pub use partition::{by_pattern, improve_placement};

/// Symmetric traffic between ranks: `weight(a, b)` is what `a` sent `b` plus what `b` sent `a`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traffic {
    size: usize,
    weights: Vec<u64>,
}

impl Traffic {
    /// Traffic from a square matrix whose row `i` is what rank `i` sent to each rank; the
    /// diagonal (a rank's messages to itself) never crosses nodes and is left out.
    pub fn from_matrix(rows: &[Vec<u64>]) -> Result<Traffic, String> {
        let size = rows.len();
        if let Some((index, row)) = rows.iter().enumerate().find(|(_, row)| row.len() != size) {
            return Err(format!("the matrix is not square: row {index} has {} entries, not {size}", row.len()));
        }
        let mut traffic = Traffic::empty(size);
        for (from, row) in rows.iter().enumerate() {
            for (to, &bytes) in row.iter().enumerate() {
                traffic.add(from, to, bytes);
            }
        }
        Ok(traffic)
    }

    /// Traffic from weighted edges `(a, b, weight)` among `size` ranks (each counted both ways
    /// round; self edges and ranks out of range are left out).
    pub fn from_edges(size: usize, edges: impl IntoIterator<Item = (usize, usize, u64)>) -> Traffic {
        let mut traffic = Traffic::empty(size);
        for (from, to, weight) in edges {
            if from < size && to < size {
                traffic.add(from, to, weight);
            }
        }
        traffic
    }

    fn empty(size: usize) -> Traffic {
        Traffic { size, weights: vec![0; size * size] }
    }

    fn add(&mut self, from: usize, to: usize, weight: u64) {
        if from != to {
            let forward = &mut self.weights[from * self.size + to];
            *forward = forward.saturating_add(weight);
            self.weights[to * self.size + from] = *forward;
        }
    }

    /// Ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// What `a` and `b` exchanged, both ways.
    #[inline]
    pub fn weight(&self, a: usize, b: usize) -> u64 {
        self.weights[a * self.size + b]
    }

    /// Everything exchanged between distinct ranks.
    pub fn total(&self) -> u64 {
        (0..self.size).flat_map(|a| (a + 1..self.size).map(move |b| (a, b))).map(|(a, b)| self.weight(a, b)).sum()
    }

    /// What crosses between nodes when rank `r` runs on node `node_of[r]`.
    pub fn crossing(&self, node_of: &[usize]) -> u64 {
        (0..self.size).flat_map(|a| (a + 1..self.size).map(move |b| (a, b))).filter(|&(a, b)| node_of[a] != node_of[b]).map(|(a, b)| self.weight(a, b)).sum()
    }
}

/// Checks that `size` ranks fit nodes holding `capacities` ranks each.
pub fn check_capacity(size: usize, capacities: &[usize]) -> Result<(), String> {
    let room: usize = capacities.iter().sum();
    if size > room {
        return Err(format!("{size} ranks do not fit on {} node(s) holding {room} in all", capacities.len()));
    }
    Ok(())
}

/// Blocks of consecutive ranks: node 0 filled first, then node 1, ...
pub fn blocked(size: usize, capacities: &[usize]) -> Result<Vec<usize>, String> {
    check_capacity(size, capacities)?;
    Ok(capacities.iter().enumerate().flat_map(|(node, &room)| std::iter::repeat_n(node, room)).take(size).collect())
}

/// Round-robin: rank r on node r mod nodes, skipping nodes that are full.
pub fn cyclic(size: usize, capacities: &[usize]) -> Result<Vec<usize>, String> {
    check_capacity(size, capacities)?;
    let mut used = vec![0; capacities.len()];
    let mut node_of = Vec::with_capacity(size);
    let mut next = 0;
    for _ in 0..size {
        while used[next] == capacities[next] {
            next = (next + 1) % capacities.len();
        }
        node_of.push(next);
        used[next] += 1;
        next = (next + 1) % capacities.len();
    }
    Ok(node_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_is_symmetric_without_the_diagonal() {
        let traffic = Traffic::from_matrix(&[vec![5, 1, 0], vec![2, 0, 4], vec![0, 0, 9]]).unwrap();
        assert_eq!((traffic.weight(0, 1), traffic.weight(1, 0), traffic.weight(1, 2), traffic.weight(0, 0)), (3, 3, 4, 0));
        assert_eq!(traffic.total(), 7);
        assert_eq!(traffic.crossing(&[0, 0, 1]), 4);
        assert!(Traffic::from_matrix(&[vec![1, 2], vec![3]]).unwrap_err().contains("row 1 has 1"));
        assert_eq!(Traffic::from_edges(3, [(0, 1, 2), (1, 0, 1), (2, 2, 5), (0, 7, 1)]).total(), 3);
    }

    #[test]
    fn blocked_and_cyclic_deal_as_launchers_do() {
        assert_eq!(blocked(5, &[2, 2, 2]).unwrap(), [0, 0, 1, 1, 2]);
        assert_eq!(cyclic(5, &[2, 2, 2]).unwrap(), [0, 1, 2, 0, 1]);
        assert_eq!(cyclic(5, &[1, 3, 1]).unwrap(), [0, 1, 2, 1, 1]);
        assert!(blocked(7, &[2, 2, 2]).unwrap_err().contains("7 ranks do not fit"));
    }
}
