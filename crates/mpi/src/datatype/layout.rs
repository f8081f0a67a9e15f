//! Type maps as lists of strided byte runs, and the pack/unpack walks over them.
//!
//! A layout describes ONE element of a datatype, in type-map order (the order in which pack
//! emits bytes), relative to the element's buffer pointer. Adjacent runs are merged as the layout
//! is built, so a vector of doubles is a single [`Piece::Runs`] and a contiguous type a single run.

use std::ptr;
use std::sync::Arc;

/// Repeating a layout of several pieces copies it out up to this many pieces in all; beyond,
/// the repetition is kept as one [`Piece::Nested`], so a description stays small whatever the counts.
const FLATTEN_PIECES_MAX: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// `count` runs of `len` bytes; run `i` starts at `offset + i * stride`. A single run has stride 0.
    Runs { offset: isize, len: usize, count: usize, stride: isize },
    /// `count` copies of `inner`; copy `i` is displaced by `offset + i * stride`.
    Nested { offset: isize, count: usize, stride: isize, inner: Arc<[Piece]> },
}

impl Piece {
    fn shifted(&self, by: isize) -> Piece {
        let mut piece = self.clone();
        match &mut piece {
            Piece::Runs { offset, .. } | Piece::Nested { offset, .. } => *offset += by,
        }
        piece
    }

    fn bytes(&self) -> usize {
        match self {
            Piece::Runs { len, count, .. } => len * count,
            Piece::Nested { count, inner, .. } => count * inner.iter().map(Piece::bytes).sum::<usize>(),
        }
    }
}

/// A layout under construction.
#[derive(Clone, Debug, Default)]
pub(crate) struct Layout {
    pub pieces: Vec<Piece>,
}

impl Layout {
    /// Appends `piece`, merging it into the last piece when they continue one another.
    pub fn push(&mut self, piece: Piece) {
        let piece = match piece {
            Piece::Runs { len: 0, .. } | Piece::Runs { count: 0, .. } | Piece::Nested { count: 0, .. } => return,
            Piece::Nested { offset, count: 1, inner, .. } => return self.append_shifted(&inner, offset),
            Piece::Runs { offset, len, count, stride } if count == 1 || stride == len as isize => Piece::Runs { offset, len: len * count, count: 1, stride: 0 },
            other => other,
        };
        if let (Some(Piece::Runs { offset: o1, len: l1, count: c1, stride: s1 }), Piece::Runs { offset: o2, len: l2, count: c2, stride: s2 }) = (self.pieces.last_mut(), &piece) {
            if *c1 == 1 && *c2 == 1 && *o2 == *o1 + *l1 as isize {
                *l1 += l2;
                return;
            }
            if *l1 == *l2 {
                let stride = if *c1 > 1 {
                    *s1
                } else if *c2 > 1 {
                    *s2
                } else {
                    o2 - *o1
                };
                if (*c1 == 1 || *s1 == stride) && (*c2 == 1 || *s2 == stride) && *o2 == *o1 + *c1 as isize * stride {
                    *c1 += c2;
                    *s1 = stride;
                    return;
                }
            }
        }
        self.pieces.push(piece);
    }

    /// Appends every piece of `unit`, displaced by `shift`.
    pub fn append_shifted(&mut self, unit: &[Piece], shift: isize) {
        for piece in unit {
            self.push(piece.shifted(shift));
        }
    }

    /// Appends `count` copies of `unit`, copy `i` displaced by `offset + i * stride`.
    pub fn append_repeated(&mut self, unit: &[Piece], offset: isize, count: usize, stride: isize) {
        if count == 0 || unit.is_empty() {
            return;
        }
        if count == 1 {
            return self.append_shifted(unit, offset);
        }
        match unit {
            [Piece::Runs { offset: o, len, count: 1, .. }] => {
                return self.push(Piece::Runs { offset: o + offset, len: *len, count, stride });
            }
            [Piece::Runs { offset: o, len, count: c, stride: s }] if *c as isize * s == stride => {
                return self.push(Piece::Runs { offset: o + offset, len: *len, count: c * count, stride: *s });
            }
            [Piece::Nested { offset: o, count: c, stride: s, inner }] if *c as isize * s == stride => {
                return self.push(Piece::Nested { offset: o + offset, count: c * count, stride: *s, inner: inner.clone() });
            }
            _ => {}
        }
        if unit.len().saturating_mul(count) <= FLATTEN_PIECES_MAX {
            for index in 0..count {
                self.append_shifted(unit, offset + index as isize * stride);
            }
        } else {
            self.push(Piece::Nested { offset, count, stride, inner: Arc::from(unit) });
        }
    }
}

/// Total bytes of the runs of `pieces`.
pub(crate) fn layout_bytes(pieces: &[Piece]) -> usize {
    pieces.iter().map(Piece::bytes).sum()
}

/// When `count` elements of a layout with the given extent are one strided run pattern, that pattern.
pub(crate) fn as_single_runs(pieces: &[Piece], extent: isize, count: usize) -> Option<(isize, usize, usize, isize)> {
    match pieces {
        [Piece::Runs { offset, len, count: 1, .. }] if count == 1 || *len as isize == extent => Some((*offset, len * count, 1, 0)),
        [Piece::Runs { offset, len, count: 1, .. }] => Some((*offset, *len, count, extent)),
        [Piece::Runs { offset, len, count: c, stride }] if count == 1 || *c as isize * stride == extent => Some((*offset, *len, c * count, *stride)),
        _ => None,
    }
}

/// Calls `visit(offset, len)` for every byte run of `count` elements, in type-map order,
/// offsets relative to the buffer pointer; runs that continue one another are merged.
pub(crate) fn visit_runs(pieces: &[Piece], extent: isize, count: usize, visit: &mut impl FnMut(isize, usize)) {
    let mut pending: Option<(isize, usize)> = None;
    let mut emit = |offset: isize, len: usize| match &mut pending {
        Some((start, length)) if *start + *length as isize == offset => *length += len,
        _ => {
            if let Some((start, length)) = pending.replace((offset, len)) {
                visit(start, length);
            }
        }
    };
    for index in 0..count {
        visit_pieces(pieces, index as isize * extent, &mut emit);
    }
    if let Some((start, length)) = pending {
        visit(start, length);
    }
}

fn visit_pieces(pieces: &[Piece], base: isize, emit: &mut impl FnMut(isize, usize)) {
    for piece in pieces {
        match piece {
            Piece::Runs { offset, len, count, stride } => {
                for index in 0..*count {
                    emit(base + offset + index as isize * stride, *len);
                }
            }
            Piece::Nested { offset, count, stride, inner } => {
                for index in 0..*count {
                    visit_pieces(inner, base + offset + index as isize * stride, emit);
                }
            }
        }
    }
}

/// Copies between `count` elements laid out at `user` and the packed bytes at `packed`: from user
/// memory into `packed` when `PACK`, the other way otherwise.
///
/// # Safety
/// Every run of the `count` elements at `user` must be valid for reads (`PACK`) or writes, and
/// `packed` valid for `count * layout_bytes(pieces)` bytes of writes (`PACK`) or reads; the two
/// must not overlap.
pub(crate) unsafe fn transfer<const PACK: bool>(pieces: &[Piece], extent: isize, count: usize, user: *mut u8, packed: *mut u8) {
    if let Some((offset, len, runs, stride)) = as_single_runs(pieces, extent, count) {
        // SAFETY: these runs are exactly the elements' runs, which the caller vouches for.
        unsafe { copy_runs::<PACK>(user.wrapping_offset(offset), packed, len, runs, stride, len) };
        return;
    }
    if count > 1 && pieces.len() <= INTERLEAVED_PIECES_MAX && pieces.iter().all(|piece| matches!(piece, Piece::Runs { count: 1, .. })) {
        // SAFETY: forwarded from this function's contract.
        unsafe { transfer_interleaved::<PACK>(pieces, extent, count, user, packed) };
        return;
    }
    let mut cursor = packed;
    for index in 0..count {
        // SAFETY: element `index` lies at `user + index * extent`; its runs are covered by the
        // caller's guarantee, and the packed cursor never passes the caller's packed length.
        cursor = unsafe { transfer_pieces::<PACK>(pieces, user.wrapping_offset(index as isize * extent), cursor) };
    }
}

/// Copies the first `bytes` packed bytes of ONE element (fewer than its packed size), in
/// type-map order, between the element at `user` and `packed`. Returns the packed cursor after
/// them and the bytes left over (nonzero only when the pieces hold fewer).
///
/// # Safety
/// The element's runs that the bytes reach must be valid user memory, and `packed` valid for
/// `bytes` bytes; no overlap.
pub(crate) unsafe fn transfer_prefix<const PACK: bool>(pieces: &[Piece], user: *mut u8, mut packed: *mut u8, mut bytes: usize) -> (*mut u8, usize) {
    for piece in pieces {
        if bytes == 0 {
            break;
        }
        match piece {
            Piece::Runs { offset, len, count, stride } => {
                let whole = (bytes / len).min(*count);
                let start = user.wrapping_offset(*offset);
                // SAFETY: the first `whole` runs of this piece are reached by the bytes.
                unsafe { copy_runs::<PACK>(start, packed, *len, whole, *stride, *len) };
                (packed, bytes) = (packed.wrapping_add(whole * len), bytes - whole * len);
                if whole < *count && bytes > 0 {
                    // SAFETY: the bytes end inside the next run, which they reach.
                    unsafe { copy::<PACK>(start.wrapping_offset(whole as isize * stride), packed, bytes) };
                    return (packed.wrapping_add(bytes), 0);
                }
            }
            Piece::Nested { offset, count, stride, inner } => {
                for index in 0..*count {
                    if bytes == 0 {
                        break;
                    }
                    let base = user.wrapping_offset(offset + index as isize * stride);
                    // SAFETY: as above, for the nested copy.
                    (packed, bytes) = unsafe { transfer_prefix::<PACK>(inner, base, packed, bytes) };
                }
            }
        }
    }
    (packed, bytes)
}

/// Small records (a struct of a few fields) are copied field by field across a batch of
/// elements rather than element by element: one tight strided loop per field.
const INTERLEAVED_PIECES_MAX: usize = 8;
/// Elements per batch, so that a batch's user bytes stay in cache across the field passes.
const INTERLEAVED_BATCH: usize = 256;

/// [`transfer`] for layouts of a few single runs.
///
/// # Safety
/// As [`transfer`].
unsafe fn transfer_interleaved<const PACK: bool>(pieces: &[Piece], extent: isize, count: usize, user: *mut u8, packed: *mut u8) {
    let element_bytes = layout_bytes(pieces);
    let mut first = 0;
    while first < count {
        let batch = (count - first).min(INTERLEAVED_BATCH);
        let user_batch = user.wrapping_offset(first as isize * extent);
        let mut field_start = first * element_bytes;
        for piece in pieces {
            if let Piece::Runs { offset, len, .. } = piece {
                // SAFETY: run `i` is field `piece` of element `first + i` (the caller's memory) and
                // its packed place lies within the `count * element_bytes` packed bytes.
                unsafe { copy_runs::<PACK>(user_batch.wrapping_offset(*offset), packed.add(field_start), *len, batch, extent, element_bytes) };
                field_start += len;
            }
        }
        first += batch;
    }
}

/// Walks one element's pieces; returns the packed cursor after them.
///
/// # Safety
/// As [`transfer`], for one element at `user`.
unsafe fn transfer_pieces<const PACK: bool>(pieces: &[Piece], user: *mut u8, mut packed: *mut u8) -> *mut u8 {
    for piece in pieces {
        match piece {
            Piece::Runs { offset, len, count, stride } => {
                // SAFETY: the runs belong to this element (caller's guarantee).
                unsafe { copy_runs::<PACK>(user.wrapping_offset(*offset), packed, *len, *count, *stride, *len) };
                packed = packed.wrapping_add(len * count);
            }
            Piece::Nested { offset, count, stride, inner } => {
                for index in 0..*count {
                    let base = user.wrapping_offset(offset + index as isize * stride);
                    // SAFETY: the nested copy's runs belong to this element (caller's guarantee).
                    packed = unsafe { transfer_pieces::<PACK>(inner, base, packed) };
                }
            }
        }
    }
    packed
}

/// Copies `count` runs of `len` bytes, run `i` at `user + i * stride`, to or from
/// `packed + i * packed_stride`.
///
/// # Safety
/// The runs must be valid user memory and the packed runs valid packed memory; no overlap.
#[inline]
unsafe fn copy_runs<const PACK: bool>(user: *mut u8, packed: *mut u8, len: usize, count: usize, stride: isize, packed_stride: usize) {
    // SAFETY (all arms): forwarded from this function's contract.
    unsafe {
        if count == 1 && len > 16 {
            copy::<PACK>(user, packed, len);
            return;
        }
        match len {
            1 => copy_fixed_runs::<PACK, 1>(user, packed, count, stride, packed_stride),
            2 => copy_fixed_runs::<PACK, 2>(user, packed, count, stride, packed_stride),
            4 => copy_fixed_runs::<PACK, 4>(user, packed, count, stride, packed_stride),
            8 => copy_fixed_runs::<PACK, 8>(user, packed, count, stride, packed_stride),
            16 => copy_fixed_runs::<PACK, 16>(user, packed, count, stride, packed_stride),
            _ => {
                for index in 0..count {
                    copy::<PACK>(user.wrapping_offset(index as isize * stride), packed.add(index * packed_stride), len);
                }
            }
        }
    }
}

/// [`copy_runs`] for a length known at compile time: unaligned loads and stores instead of memcpy calls.
///
/// # Safety
/// As [`copy_runs`] with `len == N`.
#[inline]
unsafe fn copy_fixed_runs<const PACK: bool, const N: usize>(user: *mut u8, packed: *mut u8, count: usize, stride: isize, packed_stride: usize) {
    for index in 0..count {
        let user_run = user.wrapping_offset(index as isize * stride).cast::<[u8; N]>();
        // SAFETY: run `index` is valid user memory and packed run `index` valid packed memory.
        unsafe {
            let packed_run = packed.add(index * packed_stride).cast::<[u8; N]>();
            if PACK {
                packed_run.write_unaligned(user_run.read_unaligned());
            } else {
                user_run.write_unaligned(packed_run.read_unaligned());
            }
        }
    }
}

/// # Safety
/// `user` and `packed` valid for `len` bytes, not overlapping.
#[inline]
unsafe fn copy<const PACK: bool>(user: *mut u8, packed: *mut u8, len: usize) {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        if PACK {
            ptr::copy_nonoverlapping(user, packed, len);
        } else {
            ptr::copy_nonoverlapping(packed, user, len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(offset: isize, len: usize, count: usize, stride: isize) -> Piece {
        Piece::Runs { offset, len, count, stride }
    }

    #[test]
    fn adjacent_runs_merge_into_one() {
        let mut layout = Layout::default();
        layout.push(runs(0, 4, 1, 0));
        layout.push(runs(4, 4, 1, 0));
        layout.push(runs(8, 8, 1, 0));
        assert_eq!(layout.pieces, vec![runs(0, 16, 1, 0)]);
    }

    #[test]
    fn evenly_spaced_runs_become_strided() {
        let mut layout = Layout::default();
        for index in 0..5 {
            layout.push(runs(index * 24, 8, 1, 0));
        }
        layout.push(runs(200, 8, 1, 0));
        assert_eq!(layout.pieces, vec![runs(0, 8, 5, 24), runs(200, 8, 1, 0)]);
    }

    #[test]
    fn repeating_a_strided_run_that_tiles_extends_it() {
        let mut layout = Layout::default();
        layout.append_repeated(&[runs(0, 8, 4, 16)], 0, 3, 64);
        assert_eq!(layout.pieces, vec![runs(0, 8, 12, 16)]);
        let mut gapped = Layout::default();
        gapped.append_repeated(&[runs(0, 8, 4, 16)], 0, 3, 100);
        assert_eq!(gapped.pieces.len(), 3);
    }

    #[test]
    fn large_repetitions_of_irregular_units_nest() {
        let unit = [runs(0, 4, 1, 0), runs(10, 2, 1, 0)];
        let mut layout = Layout::default();
        layout.append_repeated(&unit, 0, 1000, 16);
        assert!(matches!(layout.pieces.as_slice(), [Piece::Nested { count: 1000, stride: 16, .. }]));
        assert_eq!(layout_bytes(&layout.pieces), 6000);
    }

    #[test]
    fn a_prefix_of_an_element_fills_its_first_runs_only() {
        let unit = [runs(0, 2, 1, 0), runs(4, 1, 1, 0)];
        let mut layout = Layout::default();
        layout.append_repeated(&unit, 0, 100, 8);
        assert!(matches!(layout.pieces.as_slice(), [Piece::Nested { .. }]));
        let mut packed: Vec<u8> = (1..=8).collect();
        let mut user = [0u8; 24];
        // SAFETY: 8 bytes reach the third record, well inside the 24-byte buffer.
        let (_, left) = unsafe { transfer_prefix::<false>(&layout.pieces, user.as_mut_ptr(), packed.as_mut_ptr(), 8) };
        assert_eq!(left, 0);
        assert_eq!(user, [1, 2, 0, 0, 3, 0, 0, 0, 4, 5, 0, 0, 6, 0, 0, 0, 7, 8, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn runs_are_listed_in_type_map_order_and_merged() {
        let unit = [runs(0, 4, 2, 8), runs(20, 4, 1, 0)];
        let mut found = Vec::new();
        visit_runs(&unit, 24, 2, &mut |offset, len| found.push((offset, len)));
        assert_eq!(found, vec![(0, 4), (8, 4), (20, 8), (32, 4), (44, 4)]);
    }

    #[test]
    fn pack_then_unpack_a_nested_layout() {
        let unit = [runs(0, 3, 1, 0), runs(5, 1, 1, 0)];
        let mut layout = Layout::default();
        layout.append_repeated(&unit, 0, 100, 8);
        let source: Vec<u8> = (0..800).map(|byte| byte as u8).collect();
        let mut packed = vec![0u8; 400 * 2];
        let mut user = [source.clone(), source.clone()].concat();
        // SAFETY: 2 elements of extent 800 over a 1600-byte buffer; packed holds 2 * 400 bytes.
        unsafe { transfer::<true>(&layout.pieces, 800, 2, user.as_mut_ptr(), packed.as_mut_ptr()) };
        let expected: Vec<u8> = (0..200)
            .flat_map(|index| {
                let base = (index % 100) * 8;
                [source[base], source[base + 1], source[base + 2], source[base + 5]]
            })
            .collect();
        assert_eq!(packed, expected);
        let mut restored = vec![0u8; 1600];
        // SAFETY: as above, unpacking into a buffer of the same size.
        unsafe { transfer::<false>(&layout.pieces, 800, 2, restored.as_mut_ptr(), packed.as_mut_ptr()) };
        for (index, byte) in restored.iter().enumerate() {
            let covered = matches!(index % 8, 0..=2 | 5);
            assert_eq!(*byte, if covered { user[index] } else { 0 }, "byte {index}");
        }
    }
}
