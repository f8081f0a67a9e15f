//! The report's one line of advice: how much of the traffic crosses nodes, and how much of it a
//! placement by the measured pattern could keep inside them.

use super::{intra_inter, node_of_rank, percent};
use crate::profile::merge::{Matrix, Profile};

pub fn advice(profile: &Profile) -> String {
    let (intra, inter) = intra_inter(profile);
    let total = intra + inter;
    if total == 0 {
        return "no rank sent anything: nothing to place".to_string();
    }
    if profile.nodes.len() < 2 {
        return "every rank shares one node, so every byte stays inside it; spreading the ranks over nodes would put traffic on the network".to_string();
    }
    if inter == 0 {
        return "no byte crosses nodes: this placement keeps all traffic inside them".to_string();
    }
    let nodes = node_of_rank(profile);
    let mut sizes: Vec<usize> = (0..profile.nodes.len()).map(|node| nodes.iter().filter(|&&n| n == Some(node)).count()).collect();
    sizes.retain(|&size| size > 0);
    let best = grouped_bytes(&profile.bytes, &greedy_groups(&profile.bytes, &sizes));
    let now = percent(intra as f64, total as f64);
    let could = percent(best as f64, total as f64);
    if best as f64 > intra as f64 * 1.05 && best > intra {
        format!("{:.1}% of the bytes cross nodes; placing the ranks by the measured pattern (same number per node) would keep at least {could:.1}% inside nodes, against {now:.1}% now", 100.0 - now)
    } else {
        format!("this placement keeps {now:.1}% of the bytes inside nodes, as much as a placement by the measured pattern found ({could:.1}%)")
    }
}

/// Ranks grouped into nodes of `sizes` ranks, greedily: each group starts from the busiest rank
/// left and takes, one at a time, the rank that exchanges most with those already in it.
pub fn greedy_groups(bytes: &Matrix, sizes: &[usize]) -> Vec<Vec<usize>> {
    let n = bytes.len();
    let exchanged = |a: usize, b: usize| bytes[a][b] + bytes[b][a];
    let mut left: Vec<usize> = (0..n).collect();
    let mut order: Vec<usize> = sizes.to_vec();
    order.sort_unstable_by(|a, b| b.cmp(a));
    let mut groups = Vec::new();
    for size in order {
        let mut group: Vec<usize> = Vec::with_capacity(size);
        while group.len() < size && !left.is_empty() {
            let pick = if group.is_empty() {
                (0..left.len()).max_by_key(|&i| ((0..n).map(|other| exchanged(left[i], other)).sum::<u64>(), std::cmp::Reverse(left[i]))).unwrap()
            } else {
                (0..left.len()).max_by_key(|&i| (group.iter().map(|&member| exchanged(left[i], member)).sum::<u64>(), std::cmp::Reverse(left[i]))).unwrap()
            };
            group.push(left.remove(pick));
        }
        groups.push(group);
    }
    groups
}

/// Bytes sent between ranks of the same group.
pub fn grouped_bytes(bytes: &Matrix, groups: &[Vec<usize>]) -> u64 {
    groups.iter().map(|group| group.iter().flat_map(|&a| group.iter().map(move |&b| (a, b))).map(|(a, b)| bytes[a][b]).sum::<u64>()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_that_talk_end_up_together() {
        // 0<->2 and 1<->3 exchange much; 0<->1 a little.
        let mut bytes = vec![vec![0u64; 4]; 4];
        bytes[0][2] = 100;
        bytes[2][0] = 100;
        bytes[1][3] = 80;
        bytes[3][1] = 80;
        bytes[0][1] = 5;
        let groups = greedy_groups(&bytes, &[2, 2]);
        let mut sorted: Vec<Vec<usize>> = groups
            .iter()
            .map(|g| {
                let mut g = g.clone();
                g.sort();
                g
            })
            .collect();
        sorted.sort();
        assert_eq!(sorted, vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(grouped_bytes(&bytes, &groups), 360);
    }
}
