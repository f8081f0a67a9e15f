//! A datatype as it lies in a file of another data representation (MPI-3.1 §13.5): each
//! predefined type takes the representation's extent for it (external32's fixed sizes, or what a
//! user representation's extent function says), constructors that count in extents of their old
//! type (contiguous, vector, indexed, subarray, darray) scale by those, and byte displacements
//! (the h-variants, struct, resized) are taken as they are, as the standard says. The result
//! describes the file layout only (its byte runs and extent); it is never a memory layout.
//! A representation packs its values without alignment: a struct's extent is not padded.

use std::sync::Arc;

use super::arrays::{darray_layout, subarray_layout};
use super::build::{build_blocks, build_resized, build_struct, Blocks};
use super::envelope::Origin;
use super::layout::{Layout, Piece};
use super::{failure, overflow, Basic, Signature, TypeInfo};
use crate::consts::*;
use crate::error::MpiResult;

/// `info` laid out in a representation where the predefined type `named` (with description
/// `basic`) takes `extent_of(named, basic)` bytes.
pub(crate) fn in_representation(info: &Arc<TypeInfo>, extent_of: &mut dyn FnMut(MPI_Datatype, &TypeInfo) -> MpiResult<usize>) -> MpiResult<Arc<TypeInfo>> {
    let envelope = match &info.origin {
        Origin::Named(named) | Origin::Parameterized(named, _) => return leaf(info, *named, extent_of),
        Origin::Constructed(envelope) => envelope.clone(),
    };
    let mut children = Vec::with_capacity(envelope.types.len());
    for (_, child) in &envelope.types {
        children.push(in_representation(child, extent_of)?);
    }
    let incomplete = || failure(MPI_ERR_INTERN, "a type constructor's recorded arguments are incomplete");
    let child = || children.first().cloned().ok_or_else(incomplete);
    // The int forms list counts (integers) before byte displacements (addresses); the large
    // forms list them all as large counts, in call order.
    let numbers: Vec<i64> = if envelope.large.is_empty() { envelope.integers.iter().map(|&v| v as i64).chain(envelope.addresses.iter().map(|&v| v as i64)).collect() } else { envelope.large.clone() };
    let at = |index: usize| numbers.get(index).copied().ok_or_else(incomplete);
    let size = |value: i64| usize::try_from(value).map_err(|_| overflow());
    let bytes = |value: i64| isize::try_from(value).map_err(|_| overflow());
    let origin = info.origin.clone();
    let built = match envelope.combiner {
        MPI_COMBINER_DUP => return child(),
        MPI_COMBINER_CONTIGUOUS => build_blocks(&child()?, &Blocks::Regular { count: 1, blocklen: size(at(0)?)?, stride: 0 }, origin)?,
        MPI_COMBINER_VECTOR | MPI_COMBINER_HVECTOR => {
            let old = child()?;
            let stride = if envelope.combiner == MPI_COMBINER_VECTOR { bytes(at(2)?)?.checked_mul(old.extent).ok_or_else(overflow)? } else { bytes(at(2)?)? };
            build_blocks(&old, &Blocks::Regular { count: size(at(0)?)?, blocklen: size(at(1)?)?, stride }, origin)?
        }
        MPI_COMBINER_INDEXED | MPI_COMBINER_HINDEXED | MPI_COMBINER_INDEXED_BLOCK | MPI_COMBINER_HINDEXED_BLOCK => {
            let old = child()?;
            let count = size(at(0)?)?;
            let same_length = matches!(envelope.combiner, MPI_COMBINER_INDEXED_BLOCK | MPI_COMBINER_HINDEXED_BLOCK);
            let first_displacement = if same_length { 2 } else { 1 + count };
            let in_extents = matches!(envelope.combiner, MPI_COMBINER_INDEXED | MPI_COMBINER_INDEXED_BLOCK);
            let blocks = (0..count)
                .map(|block| {
                    let length = size(if same_length { at(1)? } else { at(1 + block)? })?;
                    let displacement = bytes(at(first_displacement + block)?)?;
                    Ok((if in_extents { displacement.checked_mul(old.extent).ok_or_else(overflow)? } else { displacement }, length))
                })
                .collect::<MpiResult<Vec<_>>>()?;
            build_blocks(&old, &Blocks::List(blocks), origin)?
        }
        MPI_COMBINER_STRUCT => {
            let count = size(at(0)?)?;
            let blocks = (0..count).map(|block| Ok((children.get(block).cloned().ok_or_else(incomplete)?, bytes(at(1 + count + block)?)?, size(at(1 + block)?)?))).collect::<MpiResult<Vec<_>>>()?;
            build_struct(&blocks, origin)?
        }
        MPI_COMBINER_RESIZED => build_resized(&child()?, bytes(at(0)?)?, bytes(at(1)?)?, origin),
        MPI_COMBINER_SUBARRAY => subarray_layout(&child()?, &envelope, origin)?,
        MPI_COMBINER_DARRAY => darray_layout(&child()?, &envelope, origin)?,
        other => return Err(failure(MPI_ERR_INTERN, format!("no file layout for combiner {other}"))),
    };
    Ok(Arc::new(built))
}

/// A predefined type in the representation: one run of its extent there, aligned to a byte (the
/// legacy bound markers as they are).
fn leaf(info: &Arc<TypeInfo>, named: MPI_Datatype, extent_of: &mut dyn FnMut(MPI_Datatype, &TypeInfo) -> MpiResult<usize>) -> MpiResult<Arc<TypeInfo>> {
    if matches!(info.signature, Signature::Basic(Basic::Lb | Basic::Ub)) {
        return Ok(info.clone());
    }
    let extent = extent_of(named, info)?;
    let mut layout = Layout::default();
    layout.push(Piece::Runs { offset: 0, len: extent, count: 1, stride: 0 });
    let span = isize::try_from(extent).map_err(|_| overflow())?;
    Ok(Arc::new(TypeInfo { size: extent, lb: 0, extent: span, true_lb: 0, true_extent: span, align: 1, pieces: layout.pieces.into(), ..(**info).clone() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::{external_size, lookup, MPI_Type_commit, MPI_Type_create_struct, MPI_Type_free, MPI_Type_vector};

    fn external(info: &Arc<TypeInfo>) -> Arc<TypeInfo> {
        in_representation(info, &mut |_, basic| Ok(external_size(basic))).unwrap()
    }

    #[test]
    fn vectors_stride_by_the_file_extent_and_structs_by_their_bytes() {
        let mut vector = MPI_DATATYPE_NULL;
        // SAFETY: valid out-pointer.
        unsafe { assert_eq!(MPI_Type_vector(3, 1, 2, MPI_LONG, &mut vector), MPI_SUCCESS) };
        let file = external(&lookup(vector).unwrap().shared());
        // MPI_LONG is 4 bytes in external32: copies every 8 bytes, the last ending at 20.
        assert_eq!(file.byte_runs(1), vec![(0, 4), (8, 4), (16, 4)]);
        assert_eq!((file.size, file.extent), (12, 20));

        let lengths = [1, 2];
        let displacements: [MPI_Aint; 2] = [0, 6];
        let types = [MPI_CHAR, MPI_LONG];
        let mut record = MPI_DATATYPE_NULL;
        // SAFETY: arrays of two, valid out-pointer.
        unsafe { assert_eq!(MPI_Type_create_struct(2, lengths.as_ptr(), displacements.as_ptr(), types.as_ptr(), &mut record), MPI_SUCCESS) };
        let file = external(&lookup(record).unwrap().shared());
        assert_eq!(file.byte_runs(1), vec![(0, 1), (6, 8)]);
        assert_eq!(file.extent, 14, "no alignment padding in the file");
        // SAFETY: handles made above.
        unsafe {
            assert_eq!(MPI_Type_commit(&mut record), MPI_SUCCESS);
            assert_eq!(MPI_Type_free(&mut record), MPI_SUCCESS);
            assert_eq!(MPI_Type_free(&mut vector), MPI_SUCCESS);
        }
    }

    #[test]
    fn predefined_types_take_their_external_sizes() {
        let int = external(&lookup(MPI_INT).unwrap().shared());
        assert_eq!((int.size, int.extent, int.align), (4, 4, 1));
        let long_double = external(&lookup(MPI_LONG_DOUBLE).unwrap().shared());
        assert_eq!((long_double.size, long_double.extent), (16, 16));
    }
}
