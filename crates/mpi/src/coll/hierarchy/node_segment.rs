//! The node-wide shared segment form's arithmetic: how a vector passes through the segment's
//! slots, and which slice of each chunk a node's rank reduces.

use std::ops::Range;

/// Bytes of one rank's slot in a node-wide reduction segment: vectors go through it in chunks of
/// this size, so the segment stays small whatever the vector.
pub const NODE_SEGMENT_CHUNK: usize = 1 << 20;

/// Fewest bytes per rank of the node for the node segment form: a cache line.
pub(super) const NODE_SEGMENT_SLICE_MIN: usize = 64;

/// The chunks of a `len`-byte vector of `element_size`-byte elements that pass through slots
/// of `slot_bytes` bytes: whole elements each.
pub fn chunks(len: usize, element_size: usize, slot_bytes: usize) -> impl Iterator<Item = Range<usize>> {
    let step = (slot_bytes / element_size.max(1)).max(1) * element_size.max(1);
    (0..len).step_by(step).map(move |start| start..(start + step).min(len))
}

/// The slice of a `len`-byte chunk that node rank `rank` of `ranks` reduces: whole elements,
/// the ranks' slices disjoint and covering the chunk, the first ones one element longer where
/// the elements do not divide evenly.
pub fn slice(len: usize, element_size: usize, ranks: usize, rank: usize) -> Range<usize> {
    let elements = len / element_size.max(1);
    let (base, extra) = (elements / ranks, elements % ranks);
    let start = rank * base + rank.min(extra);
    let end = start + base + usize::from(rank < extra);
    start * element_size..end * element_size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_segment_slices_are_disjoint_whole_elements_covering_the_chunk() {
        for (len, element_size, ranks) in [(96, 4, 3), (100, 4, 3), (8, 8, 4), (0, 4, 2), (4 << 20, 8, 7)] {
            let slices: Vec<Range<usize>> = (0..ranks).map(|rank| slice(len, element_size, ranks, rank)).collect();
            assert_eq!(slices[0].start, 0);
            for pair in slices.windows(2) {
                assert_eq!(pair[0].end, pair[1].start, "{len} {element_size} {ranks}");
            }
            assert_eq!(slices[ranks - 1].end, len / element_size * element_size);
            let lens: Vec<usize> = slices.iter().map(Range::len).collect();
            assert!(lens.iter().all(|l| l % element_size == 0 && lens[0] - l <= element_size), "{lens:?}");
        }
        let pieces: Vec<Range<usize>> = chunks(2500, 12, 1000).collect();
        assert_eq!(pieces, [0..996, 996..1992, 1992..2500]);
        assert_eq!(chunks(0, 4, 1000).count(), 0);
        // An element larger than a slot still moves whole.
        assert_eq!(chunks(64, 32, 16).collect::<Vec<_>>(), [0..32, 32..64]);
    }
}
