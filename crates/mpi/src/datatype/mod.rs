//! MPI datatypes: descriptions of predefined and derived types, their handle registry, and
//! pack/unpack between user buffers and contiguous bytes.
//!
//! A description ([`TypeInfo`]) is immutable once built and shared through `Arc`, so derived
//! types built from it, and operations still using it, outlive `MPI_Type_free` of its handle.
//! Predefined types live in a table that is read without locking.

mod abi;
mod layout;
mod predefined;
#[cfg(test)]
mod tests;

use std::ffi::c_int;
use std::ops::Deref;
use std::sync::{Arc, OnceLock, RwLock};

use crate::consts::*;
use crate::error::{self, MpiError};
pub use abi::*;
use layout::{Layout, Piece};
pub use predefined::{Basic, LONG_DOUBLE_SIZE, PREDEFINED as PREDEFINED_DATATYPES};

/// Everything known about one datatype.
#[derive(Clone, Debug)]
pub struct TypeInfo {
    /// Bytes of data in one element (its packed size).
    pub size: usize,
    pub lb: isize,
    pub extent: isize,
    pub true_lb: isize,
    pub true_extent: isize,
    /// Largest alignment of the basic types inside: a struct's extent is padded to it.
    align: usize,
    /// Set by MPI_Type_create_resized (here or below): the bounds are the user's, never padded.
    explicit_bounds: bool,
    /// One element's runs of bytes, in type-map order.
    pieces: Arc<[Piece]>,
    signature: Signature,
    /// Basic elements in one element (a pair type such as MPI_DOUBLE_INT counts two).
    elements: usize,
    /// The one predefined type that all the basic elements share, if any.
    pub uniform: Uniform,
}

/// The sequence of basic types of one element, in type-map order.
#[derive(Clone, Debug)]
enum Signature {
    Basic(Basic),
    /// The child's signature, repeated (as many times as the size says).
    Repeat(Arc<TypeInfo>),
    /// Each child's signature, repeated, one after the other.
    Sequence(Vec<(Arc<TypeInfo>, usize)>),
}

/// Whether a datatype is made of a single predefined type (what predefined reductions need).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Uniform {
    /// No data at all.
    Empty,
    One(Basic),
    Mixed,
}

impl Uniform {
    fn combine(self, other: Uniform) -> Uniform {
        match (self, other) {
            (Uniform::Empty, any) | (any, Uniform::Empty) => any,
            (Uniform::One(a), Uniform::One(b)) if a == b => Uniform::One(a),
            _ => Uniform::Mixed,
        }
    }
}

/// Datatype calls report through MPI_COMM_WORLD's error handler.
fn failure(class: c_int, detail: impl Into<String>) -> MpiError {
    error::error(MPI_COMM_WORLD, class, detail)
}

fn overflow() -> MpiError {
    failure(MPI_ERR_ARG, "the datatype would be larger than the address space")
}

impl TypeInfo {
    fn predefined(basic: Basic) -> TypeInfo {
        let shape = basic.shape();
        let mut layout = Layout::default();
        for &(offset, len) in shape.parts {
            layout.push(Piece::Runs { offset: offset as isize, len, count: 1, stride: 0 });
        }
        let (last_offset, last_len) = shape.parts[shape.parts.len() - 1];
        TypeInfo {
            size: shape.parts.iter().map(|(_, len)| len).sum(),
            lb: 0,
            extent: shape.extent as isize,
            true_lb: 0,
            true_extent: (last_offset + last_len) as isize,
            align: shape.align,
            explicit_bounds: false,
            pieces: layout.pieces.into(),
            signature: Signature::Basic(basic),
            elements: shape.parts.len(),
            uniform: Uniform::One(basic),
        }
    }

    /// Largest alignment of the basic types inside.
    pub fn align(&self) -> usize {
        self.align
    }

    pub fn ub(&self) -> isize {
        self.lb + self.extent
    }

    /// When `count` elements are one contiguous run of bytes: its offset from the buffer pointer
    /// and its length.
    pub fn contiguous_run(&self, count: usize) -> Option<(isize, usize)> {
        if count == 0 || self.size == 0 {
            return Some((0, 0));
        }
        match layout::as_single_runs(&self.pieces, self.extent, count) {
            Some((offset, len, 1, _)) => Some((offset, len)),
            _ => None,
        }
    }

    /// Basic elements wholly contained in the first `bytes` packed bytes of a stream of elements.
    pub fn elements_in(&self, bytes: usize) -> usize {
        if self.size == 0 {
            return 0;
        }
        (bytes / self.size) * self.elements + self.prefix_elements(bytes % self.size)
    }

    /// Basic elements wholly contained in the first `bytes` (< size) packed bytes of one element.
    fn prefix_elements(&self, bytes: usize) -> usize {
        match &self.signature {
            Signature::Basic(basic) => {
                let mut end = 0;
                basic
                    .shape()
                    .parts
                    .iter()
                    .take_while(|(_, len)| {
                        end += len;
                        end <= bytes
                    })
                    .count()
            }
            Signature::Repeat(child) => child.elements_in(bytes),
            Signature::Sequence(children) => {
                let mut remaining = bytes;
                let mut counted = 0;
                for (child, count) in children {
                    let block = child.size * count;
                    if remaining < block {
                        return counted + child.elements_in(remaining);
                    }
                    remaining -= block;
                    counted += child.elements * count;
                }
                counted
            }
        }
    }

    /// Copies `count` elements at `src` into `out`, which holds at least `count * size` bytes.
    ///
    /// # Safety
    /// Every byte of the type map of the `count` elements at `src` must be readable.
    pub unsafe fn pack(&self, count: usize, src: *const u8, out: &mut [u8]) {
        assert!(out.len() >= self.size * count, "pack: {} bytes do not hold {count} elements of {} bytes", out.len(), self.size);
        // SAFETY: PACK only reads through `src` (caller's guarantee); `out` is large enough.
        unsafe { layout::transfer::<true>(&self.pieces, self.extent, count, src.cast_mut(), out.as_mut_ptr()) };
    }

    /// Copies `count` elements from `packed`, which holds at least `count * size` bytes, to `dst`.
    ///
    /// # Safety
    /// Every byte of the type map of the `count` elements at `dst` must be writable, and must not
    /// overlap `packed`.
    pub unsafe fn unpack(&self, count: usize, packed: &[u8], dst: *mut u8) {
        assert!(packed.len() >= self.size * count, "unpack: {} bytes do not hold {count} elements of {} bytes", packed.len(), self.size);
        // SAFETY: !PACK only reads from `packed` (large enough) and writes the caller's type map.
        unsafe { layout::transfer::<false>(&self.pieces, self.extent, count, dst, packed.as_ptr().cast_mut()) };
    }
}

/// The bounds of some copies of a child, accumulated over blocks.
#[derive(Default)]
struct Bounds {
    any: bool,
    lb: isize,
    ub: isize,
    any_data: bool,
    true_lb: isize,
    true_ub: isize,
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
        if !self.any {
            (self.lb, self.ub) = (lb, ub);
        }
        (self.any, self.lb, self.ub) = (true, self.lb.min(lb), self.ub.max(ub));
        if child.size > 0 {
            let (true_lb, true_ub) = (disp + child.true_lb + low, disp + child.true_lb + child.true_extent + high);
            if !self.any_data {
                (self.true_lb, self.true_ub) = (true_lb, true_ub);
            }
            (self.any_data, self.true_lb, self.true_ub) = (true, self.true_lb.min(true_lb), self.true_ub.max(true_ub));
        }
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
pub(crate) fn build_blocks(child: &Arc<TypeInfo>, blocks: &Blocks) -> Result<TypeInfo, MpiError> {
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
    Ok(TypeInfo {
        size,
        lb: bounds.lb,
        extent: bounds.ub - bounds.lb,
        true_lb: bounds.true_lb,
        true_extent: bounds.true_ub - bounds.true_lb,
        align: child.align,
        explicit_bounds: child.explicit_bounds,
        pieces: layout.pieces.into(),
        signature: Signature::Repeat(child.clone()),
        elements: child.elements * copies,
        uniform: if copies == 0 { Uniform::Empty } else { child.uniform },
    })
}

/// MPI_Type_create_struct: (child, displacement in bytes, copies) of each block.
pub(crate) fn build_struct(blocks: &[(Arc<TypeInfo>, isize, usize)]) -> Result<TypeInfo, MpiError> {
    let mut bounds = Bounds::default();
    let mut layout = Layout::default();
    let (mut size, mut elements, mut align) = (0usize, 0usize, 1usize);
    let mut explicit_bounds = false;
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
        explicit_bounds |= child.explicit_bounds;
        uniform = uniform.combine(child.uniform);
        sequence.push((child.clone(), *blocklen));
    }
    debug_assert_eq!(layout::layout_bytes(&layout.pieces), size);
    let mut extent = bounds.ub - bounds.lb;
    if !explicit_bounds {
        extent = (extent + align as isize - 1) / align as isize * align as isize;
    }
    Ok(TypeInfo {
        size,
        lb: bounds.lb,
        extent,
        true_lb: bounds.true_lb,
        true_extent: bounds.true_ub - bounds.true_lb,
        align,
        explicit_bounds,
        pieces: layout.pieces.into(),
        signature: Signature::Sequence(sequence),
        elements,
        uniform,
    })
}

/// MPI_Type_create_resized.
pub(crate) fn build_resized(child: &Arc<TypeInfo>, lb: isize, extent: isize) -> TypeInfo {
    TypeInfo { lb, extent, explicit_bounds: true, signature: Signature::Repeat(child.clone()), ..(**child).clone() }
}

/// A datatype description, kept alive independently of its handle.
#[derive(Clone, Debug)]
pub enum DatatypeRef {
    Predefined(&'static Arc<TypeInfo>),
    Derived(Arc<TypeInfo>),
}

impl Deref for DatatypeRef {
    type Target = TypeInfo;
    fn deref(&self) -> &TypeInfo {
        match self {
            DatatypeRef::Predefined(info) => info,
            DatatypeRef::Derived(info) => info,
        }
    }
}

impl DatatypeRef {
    fn shared(&self) -> Arc<TypeInfo> {
        match self {
            DatatypeRef::Predefined(info) => Arc::clone(info),
            DatatypeRef::Derived(info) => Arc::clone(info),
        }
    }
}

struct Entry {
    info: Arc<TypeInfo>,
    committed: bool,
    name: String,
}

/// Derived datatypes by handle (`BRAID_FIRST_DERIVED_DATATYPE + index`), and renamed predefined ones.
struct Registry {
    derived: Vec<Option<Entry>>,
    vacant: Vec<usize>,
    predefined_names: Vec<(MPI_Datatype, String)>,
}

static REGISTRY: RwLock<Registry> = RwLock::new(Registry { derived: Vec::new(), vacant: Vec::new(), predefined_names: Vec::new() });

fn registry() -> std::sync::RwLockReadGuard<'static, Registry> {
    REGISTRY.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn registry_mut() -> std::sync::RwLockWriteGuard<'static, Registry> {
    REGISTRY.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn predefined_table() -> &'static [Arc<TypeInfo>] {
    static TABLE: OnceLock<Vec<Arc<TypeInfo>>> = OnceLock::new();
    TABLE.get_or_init(|| predefined::PREDEFINED.iter().map(|(_, basic, _)| Arc::new(TypeInfo::predefined(*basic))).collect())
}

fn derived_index(dt: MPI_Datatype) -> Option<usize> {
    usize::try_from(dt.checked_sub(BRAID_FIRST_DERIVED_DATATYPE)?).ok()
}

/// Bytes per element of a predefined datatype whose elements lie back to back with no gap (every
/// predefined type but the padded pair types), straight from the fixed table: the blocking calls'
/// fast path. `None` for anything else.
#[inline]
pub fn dense_predefined_size(dt: MPI_Datatype) -> Option<usize> {
    let index = usize::try_from(dt).ok()?.checked_sub(1)?;
    let info = predefined_table().get(index)?;
    (info.lb == 0 && info.true_lb == 0 && info.extent == info.size as isize).then_some(info.size)
}

/// The description of `dt`, committed or not.
pub fn lookup(dt: MPI_Datatype) -> Result<DatatypeRef, c_int> {
    lookup_checked(dt, false)
}

/// The description of `dt`, which must be committed (as communication requires).
pub fn lookup_committed(dt: MPI_Datatype) -> Result<DatatypeRef, c_int> {
    lookup_checked(dt, true)
}

#[inline]
fn lookup_checked(dt: MPI_Datatype, need_commit: bool) -> Result<DatatypeRef, c_int> {
    if let Some(basic_index) = usize::try_from(dt).ok().and_then(|handle| handle.checked_sub(1)) {
        if let Some(info) = predefined_table().get(basic_index) {
            return Ok(DatatypeRef::Predefined(info));
        }
    }
    lookup_derived(dt, need_commit)
}

fn lookup_derived(dt: MPI_Datatype, need_commit: bool) -> Result<DatatypeRef, c_int> {
    let index = derived_index(dt).ok_or(MPI_ERR_TYPE)?;
    match registry().derived.get(index) {
        Some(Some(entry)) if entry.committed || !need_commit => Ok(DatatypeRef::Derived(entry.info.clone())),
        _ => Err(MPI_ERR_TYPE),
    }
}

/// Registers a new derived datatype (uncommitted) and returns its handle.
pub(crate) fn register(info: TypeInfo) -> Result<MPI_Datatype, MpiError> {
    register_entry(Entry { info: Arc::new(info), committed: false, name: String::new() })
}

fn register_entry(entry: Entry) -> Result<MPI_Datatype, MpiError> {
    let mut registry = registry_mut();
    let index = match registry.vacant.pop() {
        Some(index) => {
            registry.derived[index] = Some(entry);
            index
        }
        None => {
            registry.derived.push(Some(entry));
            registry.derived.len() - 1
        }
    };
    c_int::try_from(index)
        .ok()
        .and_then(|index| index.checked_add(BRAID_FIRST_DERIVED_DATATYPE))
        .ok_or_else(|| failure(MPI_ERR_INTERN, "out of datatype handles"))
}

/// MPI_Type_commit: predefined types are always committed.
pub(crate) fn commit(dt: MPI_Datatype) -> Result<(), c_int> {
    if Basic::from_handle(dt).is_some() {
        return Ok(());
    }
    let index = derived_index(dt).ok_or(MPI_ERR_TYPE)?;
    match registry_mut().derived.get_mut(index) {
        Some(Some(entry)) => {
            entry.committed = true;
            Ok(())
        }
        _ => Err(MPI_ERR_TYPE),
    }
}

/// MPI_Type_free: only derived types can be freed.
pub(crate) fn free(dt: MPI_Datatype) -> Result<(), MpiError> {
    if Basic::from_handle(dt).is_some() {
        return Err(failure(MPI_ERR_TYPE, "predefined datatypes cannot be freed"));
    }
    let index = derived_index(dt).ok_or_else(|| failure(MPI_ERR_TYPE, "invalid datatype"))?;
    let mut registry = registry_mut();
    match registry.derived.get_mut(index) {
        Some(slot @ Some(_)) => {
            *slot = None;
            registry.vacant.push(index);
            Ok(())
        }
        _ => Err(failure(MPI_ERR_TYPE, "invalid datatype")),
    }
}

/// MPI_Type_dup: same description and committed state, no name.
pub(crate) fn dup(dt: MPI_Datatype) -> Result<MPI_Datatype, MpiError> {
    let info = lookup(dt).map_err(|class| failure(class, "invalid datatype"))?;
    let committed = lookup_committed(dt).is_ok();
    register_entry(Entry { info: info.shared(), committed, name: String::new() })
}

pub(crate) fn name(dt: MPI_Datatype) -> Result<String, c_int> {
    if let Some(basic) = Basic::from_handle(dt) {
        let registry = registry();
        let renamed = registry.predefined_names.iter().find(|(handle, _)| *handle == dt);
        return Ok(renamed.map_or_else(|| basic.name().to_owned(), |(_, name)| name.clone()));
    }
    let index = derived_index(dt).ok_or(MPI_ERR_TYPE)?;
    match registry().derived.get(index) {
        Some(Some(entry)) => Ok(entry.name.clone()),
        _ => Err(MPI_ERR_TYPE),
    }
}

pub(crate) fn set_name(dt: MPI_Datatype, name: String) -> Result<(), c_int> {
    let mut registry = registry_mut();
    if Basic::from_handle(dt).is_some() {
        registry.predefined_names.retain(|(handle, _)| *handle != dt);
        registry.predefined_names.push((dt, name));
        return Ok(());
    }
    let index = derived_index(dt).ok_or(MPI_ERR_TYPE)?;
    match registry.derived.get_mut(index) {
        Some(Some(entry)) => {
            entry.name = name;
            Ok(())
        }
        _ => Err(MPI_ERR_TYPE),
    }
}

// ---- Crate-internal API used by point-to-point and collectives ----

/// Bytes of data in one element of `dt` (committed or not).
pub fn type_size(dt: MPI_Datatype) -> Result<usize, c_int> {
    lookup(dt).map(|info| info.size)
}

/// Extent of `dt` (committed or not).
pub fn type_extent(dt: MPI_Datatype) -> Result<isize, c_int> {
    lookup(dt).map(|info| info.extent)
}

/// MPI_ERR_TYPE for the null handle, unknown handles and uncommitted derived types.
#[inline]
pub fn is_valid_committed(dt: MPI_Datatype) -> Result<(), c_int> {
    lookup_committed(dt).map(|_| ())
}

/// When `count` elements of the committed `dt` form one contiguous run: (offset from the buffer
/// pointer, length), so that the buffer can be used in place.
#[inline]
pub fn contiguous_bytes(dt: MPI_Datatype, count: usize) -> Result<Option<(isize, usize)>, c_int> {
    lookup_committed(dt).map(|info| info.contiguous_run(count))
}

/// Bytes that `count` elements of the committed `dt` take once packed.
pub fn packed_size(dt: MPI_Datatype, count: usize) -> Result<usize, c_int> {
    lookup_committed(dt)?.size.checked_mul(count).ok_or(MPI_ERR_COUNT)
}

/// Packs `count` elements of `dt` from `src` into `out` (at least `packed_size` bytes).
///
/// # Safety
/// `dt` must have passed [`is_valid_committed`]; the type map of the `count` elements at `src`
/// must be readable.
pub unsafe fn pack(dt: MPI_Datatype, count: usize, src: *const u8, out: &mut [u8]) {
    let info = lookup(dt).expect("pack: the caller validates the datatype");
    // SAFETY: forwarded from this function's contract.
    unsafe { info.pack(count, src, out) }
}

/// Unpacks `count` elements of `dt` from `packed` (at least `packed_size` bytes) to `dst`.
///
/// # Safety
/// `dt` must have passed [`is_valid_committed`]; the type map of the `count` elements at `dst`
/// must be writable and must not overlap `packed`.
pub unsafe fn unpack(dt: MPI_Datatype, count: usize, packed: &[u8], dst: *mut u8) {
    let info = lookup(dt).expect("unpack: the caller validates the datatype");
    // SAFETY: forwarded from this function's contract.
    unsafe { info.unpack(count, packed, dst) }
}

/// Basic elements in `bytes` packed bytes of `dt`, counting a partial element's whole basic
/// elements (MPI_Get_elements).
pub fn elements(dt: MPI_Datatype, bytes: usize) -> Result<usize, c_int> {
    lookup(dt).map(|info| info.elements_in(bytes))
}
