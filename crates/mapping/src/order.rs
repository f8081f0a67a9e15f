//! The order of a node's ranks over its cores: heavy talkers side by side.

use crate::Traffic;

/// `members` (ranks of one node) reordered so that the pairs that exchange most sit next to each
/// other, then the pairs of pairs that do, and so on: cores numbered in order share caches in
/// pairs, fours, ... on most machines, so neighbours in this order share the nearest cache.
/// Groups are matched greedily, heaviest tie first; ties keep the given order.
pub fn order_within(traffic: &Traffic, members: &[usize]) -> Vec<usize> {
    let mut groups: Vec<Vec<usize>> = members.iter().map(|&rank| vec![rank]).collect();
    while groups.len() > 1 {
        let tie = |a: &[usize], b: &[usize]| -> u64 { a.iter().flat_map(|&x| b.iter().map(move |&y| (x, y))).map(|(x, y)| traffic.weight(x, y)).sum() };
        let mut pairs: Vec<(u64, usize, usize)> = (0..groups.len()).flat_map(|a| (a + 1..groups.len()).map(move |b| (a, b))).map(|(a, b)| (tie(&groups[a], &groups[b]), a, b)).collect();
        // Heaviest first; among equals, the earliest pair.
        pairs.sort_by(|x, y| y.0.cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
        let mut taken = vec![false; groups.len()];
        let mut merged = Vec::with_capacity(groups.len().div_ceil(2));
        for (_, a, b) in pairs {
            if !taken[a] && !taken[b] {
                taken[a] = true;
                taken[b] = true;
                merged.push((a.min(b), [groups[a].clone(), groups[b].clone()].concat()));
            }
        }
        // An odd group out stays whole.
        merged.extend(taken.iter().enumerate().filter(|(_, &taken)| !taken).map(|(index, _)| (index, groups[index].clone())));
        merged.sort_by_key(|(first, _)| *first);
        groups = merged.into_iter().map(|(_, group)| group).collect();
    }
    groups.pop().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heavy_pairs_become_neighbours() {
        // 0-2 and 1-3 exchange much; 0-1 a little.
        let traffic = Traffic::from_edges(4, [(0, 2, 100), (1, 3, 90), (0, 1, 5)]);
        assert_eq!(order_within(&traffic, &[0, 1, 2, 3]), [0, 2, 1, 3]);
    }

    #[test]
    fn pairs_of_pairs_group_by_their_ties() {
        // Pairs (0,1) (2,3) (4,5) (6,7); pair (0,1) talks with (6,7), (2,3) with (4,5).
        let traffic = Traffic::from_edges(8, [(0, 1, 100), (2, 3, 100), (4, 5, 100), (6, 7, 100), (1, 6, 10), (3, 4, 10)]);
        let order = order_within(&traffic, &(0..8).collect::<Vec<_>>());
        let position = |rank: usize| order.iter().position(|&r| r == rank).unwrap();
        assert_eq!(position(0) / 2, position(1) / 2);
        assert_eq!(position(0) / 4, position(7) / 4, "{order:?}");
        assert_eq!(position(2) / 4, position(5) / 4, "{order:?}");
    }

    #[test]
    fn every_member_appears_once() {
        let traffic = Traffic::from_edges(5, []);
        let mut order = order_within(&traffic, &[4, 2, 0]);
        assert_eq!(order, [4, 2, 0], "no traffic keeps the order");
        order.sort_unstable();
        assert_eq!(order, [0, 2, 4]);
        assert!(order_within(&traffic, &[]).is_empty());
    }
}
