//! Descriptions of derived types from their parts: bounds (with MPI's lower- and upper-bound
//! markers, MPI-3.1 §4.1.6), layouts, signatures.
//!
//! A bound set by MPI_LB / MPI_UB in MPI_Type_struct, or by MPI_Type_create_resized, is a marker:
//! it sticks to every type built from that type, and where any child carries a marker the
//! result's bound is the extreme marker, whatever the data of other children. Otherwise the bound
//! is the data's (natural) bound, and a struct pads its natural extent to its alignment.

use std::sync::Arc;

use super::envelope::Origin;
use super::layout::{self, Layout};
use super::{overflow, Signature, TypeInfo, Uniform};
use crate::error::MpiError;

/// The bounds of some copies of children, accumulated over blocks.
#[derive(Default)]
struct Bounds {
    natural_lb: Option<isize>,
    natural_ub: Option<isize>,
    marked_lb: Option<isize>,
    marked_ub: Option<isize>,
    true_lb: Option<isize>,
    true_ub: Option<isize>,
}

fn lower(slot: &mut Option<isize>, value: isize) {
    *slot = Some(slot.map_or(value, |current| current.min(value)));
}

fn upper(slot: &mut Option<isize>, value: isize) {
    *slot = Some(slot.map_or(value, |current| current.max(value)));
}

/// What [`Bounds::finish`] settles.
struct Settled {
    lb: isize,
    extent: isize,
    true_lb: isize,
    true_extent: isize,
    lb_marker: bool,
    ub_marker: bool,
}

impl Bounds {
    /// Adds `count` consecutive copies of `child` starting at `disp`.
    fn add(&mut self, child: &TypeInfo, disp: isize, count: usize) {
        if count == 0 {
            return;
        }
        let span = (count as isize - 1).wrapping_mul(child.extent);
        let (low, high) = (span.min(0), span.max(0));
        let (lb, ub) = (disp + child.lb + low, disp + child.ub() + high);
        // A bound that only a marker sets (a type without data, such as MPI_UB alone) is no natural bound.
        if child.lb_marker {
            lower(&mut self.marked_lb, lb);
        } else if child.size > 0 || !child.ub_marker {
            lower(&mut self.natural_lb, lb);
        }
        if child.ub_marker {
            upper(&mut self.marked_ub, ub);
        } else if child.size > 0 || !child.lb_marker {
            upper(&mut self.natural_ub, ub);
        }
        if child.size > 0 {
            lower(&mut self.true_lb, disp + child.true_lb + low);
            upper(&mut self.true_ub, disp + child.true_lb + child.true_extent + high);
        }
    }

    /// The bounds of the whole; without an upper-bound marker the natural extent is padded to
    /// a multiple of `align` (1: no padding).
    fn finish(&self, align: usize) -> Settled {
        let mut natural_ub = self.natural_ub;
        if let (Some(natural_lb), Some(ub), true) = (self.natural_lb, self.natural_ub, align > 1) {
            let align = align as isize;
            natural_ub = Some(natural_lb + (ub - natural_lb + align - 1) / align * align);
        }
        let lb = self.marked_lb.or(self.natural_lb).unwrap_or(0);
        let ub = self.marked_ub.or(natural_ub).unwrap_or(lb);
        let (true_lb, true_ub) = (self.true_lb.unwrap_or(0), self.true_ub.unwrap_or(0));
        Settled { lb, extent: ub - lb, true_lb, true_extent: true_ub - true_lb, lb_marker: self.marked_lb.is_some(), ub_marker: self.marked_ub.is_some() }
    }
}

/// How the copies of the old type are placed by a vector- or indexed-like constructor (bytes).
pub(crate) enum Blocks {
    /// `count` blocks of `blocklen` copies, block `i` at `i * stride`.
    Regular { count: usize, blocklen: usize, stride: isize },
    /// (displacement, copies) of each block.
    List(Vec<(isize, usize)>),
}

/// A type made of blocks of copies of one child (contiguous, vector, indexed and their h- and
/// block variants).
pub(crate) fn build_blocks(child: &Arc<TypeInfo>, blocks: &Blocks, origin: Origin) -> Result<TypeInfo, MpiError> {
    let mut bounds = Bounds::default();
    let mut layout = Layout::default();
    let copies = match blocks {
        Blocks::Regular { count, blocklen, stride } => {
            if *count > 0 && *blocklen > 0 {
                bounds.add(child, 0, *blocklen);
                bounds.add(child, (*count as isize - 1).wrapping_mul(*stride), *blocklen);
                let mut block = Layout::default();
                block.append_repeated(&child.pieces, 0, *blocklen, child.extent);
                layout.append_repeated(&block.pieces, 0, *count, *stride);
            }
            count.checked_mul(*blocklen).ok_or_else(overflow)?
        }
        Blocks::List(list) => {
            let mut copies = 0usize;
            for &(disp, blocklen) in list {
                bounds.add(child, disp, blocklen);
                layout.append_repeated(&child.pieces, disp, blocklen, child.extent);
                copies = copies.checked_add(blocklen).ok_or_else(overflow)?;
            }
            copies
        }
    };
    let size = child.size.checked_mul(copies).ok_or_else(overflow)?;
    debug_assert_eq!(layout::layout_bytes(&layout.pieces), size);
    let settled = bounds.finish(1);
    Ok(TypeInfo {
        size,
        lb: settled.lb,
        extent: settled.extent,
        true_lb: settled.true_lb,
        true_extent: settled.true_extent,
        align: child.align,
        lb_marker: settled.lb_marker,
        ub_marker: settled.ub_marker,
        pieces: layout.pieces.into(),
        signature: Signature::Repeat(child.clone()),
        elements: child.elements * copies,
        uniform: if copies == 0 { Uniform::Empty } else { child.uniform },
        origin,
    })
}

/// MPI_Type_create_struct: (child, displacement in bytes, copies) of each block.
pub(crate) fn build_struct(blocks: &[(Arc<TypeInfo>, isize, usize)], origin: Origin) -> Result<TypeInfo, MpiError> {
    let mut bounds = Bounds::default();
    let mut layout = Layout::default();
    let (mut size, mut elements, mut align) = (0usize, 0usize, 1usize);
    let mut uniform = Uniform::Empty;
    let mut sequence = Vec::with_capacity(blocks.len());
    for (child, disp, blocklen) in blocks {
        if *blocklen == 0 {
            continue;
        }
        bounds.add(child, *disp, *blocklen);
        layout.append_repeated(&child.pieces, *disp, *blocklen, child.extent);
        size = child.size.checked_mul(*blocklen).and_then(|bytes| bytes.checked_add(size)).ok_or_else(overflow)?;
        elements += child.elements * blocklen;
        align = align.max(child.align);
        uniform = uniform.combine(child.uniform);
        sequence.push((child.clone(), *blocklen));
    }
    debug_assert_eq!(layout::layout_bytes(&layout.pieces), size);
    let settled = bounds.finish(align);
    Ok(TypeInfo {
        size,
        lb: settled.lb,
        extent: settled.extent,
        true_lb: settled.true_lb,
        true_extent: settled.true_extent,
        align,
        lb_marker: settled.lb_marker,
        ub_marker: settled.ub_marker,
        pieces: layout.pieces.into(),
        signature: Signature::Sequence(sequence),
        elements,
        uniform,
        origin,
    })
}

/// MPI_Type_create_resized: both bounds become markers.
pub(crate) fn build_resized(child: &Arc<TypeInfo>, lb: isize, extent: isize, origin: Origin) -> TypeInfo {
    TypeInfo { lb, extent, lb_marker: true, ub_marker: true, signature: Signature::Repeat(child.clone()), origin, ..(**child).clone() }
}
