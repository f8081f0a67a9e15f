//! MPI datatypes: descriptions of predefined and derived types, their handle registry, and
//! pack/unpack between user buffers and contiguous bytes.
//!
//! A description ([`TypeInfo`]) is immutable once built and shared through `Arc`, so derived
//! types built from it, and operations still using it, outlive `MPI_Type_free` of its handle.
//! It keeps how it was made (the constructor's arguments and input types, for
//! MPI_Type_get_contents) and whether its bounds are markers. Predefined types live in a table
//! that is read without locking.

mod abi;
mod arrays;
mod build;
mod contents;
mod envelope;
mod external32;
mod f90;
pub(crate) mod large;
mod layout;
mod legacy;
mod predefined;
mod representation;
#[cfg(test)]
mod tests;

use std::ffi::c_int;
use std::ops::Deref;
use std::sync::{Arc, OnceLock, RwLock};

use crate::consts::*;
use crate::error::{self, MpiError};
pub use abi::*;
pub use arrays::*;
use build::{build_blocks, build_resized, build_struct, Blocks};
pub use contents::*;
use envelope::{Envelope, Origin};
pub use external32::*;
pub use f90::*;
use layout::{Layout, Piece};
pub use legacy::*;
pub use predefined::{Basic, BINARY128_SIZE, LONG_DOUBLE_SIZE, PREDEFINED as PREDEFINED_DATATYPES};
pub(crate) use representation::in_representation;

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
    /// Whether `lb` is set by a marker (MPI_LB, MPI_Type_create_resized), here or below.
    lb_marker: bool,
    /// Whether the upper bound is set by a marker (MPI_UB, MPI_Type_create_resized): never padded.
    ub_marker: bool,
    /// One element's runs of bytes, in type-map order.
    pieces: Arc<[Piece]>,
    signature: Signature,
    /// Basic elements in one element (a pair type such as MPI_DOUBLE_INT counts two).
    elements: usize,
    /// The one predefined type that all the basic elements share, if any.
    pub uniform: Uniform,
    /// How the type was made (MPI_Type_get_envelope, MPI_Type_get_contents).
    origin: Origin,
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
    fn predefined(handle: MPI_Datatype, basic: Basic) -> TypeInfo {
        let shape = basic.shape();
        let mut layout = Layout::default();
        for &(offset, len) in shape.parts {
            layout.push(Piece::Runs { offset: offset as isize, len, count: 1, stride: 0 });
        }
        let true_extent = shape.parts.last().map_or(0, |(offset, len)| offset + len);
        TypeInfo {
            size: shape.parts.iter().map(|(_, len)| len).sum(),
            lb: 0,
            extent: shape.extent as isize,
            true_lb: 0,
            true_extent: true_extent as isize,
            align: shape.align,
            lb_marker: basic == Basic::Lb,
            ub_marker: basic == Basic::Ub,
            pieces: layout.pieces.into(),
            signature: Signature::Basic(basic),
            elements: shape.parts.len(),
            uniform: if shape.parts.is_empty() { Uniform::Empty } else { Uniform::One(basic) },
            origin: Origin::Named(handle),
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
        self.stream_prefix(bytes).0
    }

    /// The basic elements wholly contained in the first `bytes` packed bytes of a stream of
    /// elements: how many, and how many bytes they take.
    fn stream_prefix(&self, bytes: usize) -> (usize, usize) {
        if self.size == 0 {
            return (0, 0);
        }
        let (whole, rest) = (bytes / self.size, bytes % self.size);
        let (elements, covered) = if rest == 0 { (0, 0) } else { self.prefix(rest) };
        (whole * self.elements + elements, whole * self.size + covered)
    }

    /// [`Self::stream_prefix`] within one element (`bytes` < size).
    fn prefix(&self, bytes: usize) -> (usize, usize) {
        match &self.signature {
            Signature::Basic(basic) => {
                let (mut count, mut end) = (0, 0);
                for (_, len) in basic.shape().parts {
                    if end + len > bytes {
                        break;
                    }
                    (count, end) = (count + 1, end + len);
                }
                (count, end)
            }
            Signature::Repeat(child) => child.stream_prefix(bytes),
            Signature::Sequence(children) => {
                let (mut remaining, mut counted, mut covered) = (bytes, 0, 0);
                for (child, count) in children {
                    let block = child.size * count;
                    if remaining < block {
                        let (elements, bytes) = child.stream_prefix(remaining);
                        return (counted + elements, covered + bytes);
                    }
                    remaining -= block;
                    counted += child.elements * count;
                    covered += block;
                }
                (counted, covered)
            }
        }
    }

    /// The byte runs of `count` elements, in type-map order (the order pack emits them), as
    /// (offset from the buffer pointer, length), runs that continue one another merged.
    pub fn byte_runs(&self, count: usize) -> Vec<(isize, usize)> {
        if let Some((offset, len)) = self.contiguous_run(count) {
            return if len == 0 { Vec::new() } else { vec![(offset, len)] };
        }
        let mut runs = Vec::new();
        layout::visit_runs(&self.pieces, self.extent, count, &mut |offset, len| runs.push((offset, len)));
        runs
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

    /// Unpacks a message of `bytes` packed bytes, which may end inside an element (a message
    /// shorter than the receive buffer): the whole elements, then the basic elements of the last
    /// one that arrived whole. Nothing else of the buffer is written.
    ///
    /// # Safety
    /// The type map of the elements the bytes reach at `dst` must be writable and must not
    /// overlap `packed`.
    pub unsafe fn unpack_received(&self, bytes: usize, packed: &[u8], dst: *mut u8) {
        if self.size == 0 {
            return;
        }
        let (_, covered) = self.stream_prefix(bytes.min(packed.len()));
        let whole = covered / self.size;
        let (whole_bytes, partial) = packed[..covered].split_at(whole * self.size);
        // SAFETY: `whole` elements are within the caller's buffer and `whole_bytes` holds them.
        unsafe { self.unpack(whole, whole_bytes, dst) };
        if !partial.is_empty() {
            let element = dst.wrapping_offset(whole as isize * self.extent);
            // SAFETY: the partial bytes are a prefix of one element's packed bytes, and the
            // element they reach is within the caller's buffer.
            unsafe { layout::transfer_prefix::<false>(&self.pieces, element, partial.as_ptr().cast_mut(), partial.len()) };
        }
    }
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
    pub(crate) fn shared(&self) -> Arc<TypeInfo> {
        match self {
            DatatypeRef::Predefined(info) => Arc::clone(info),
            DatatypeRef::Derived(info) => Arc::clone(info),
        }
    }
}

/// `count` elements of `datatype` once packed, in bytes (an error on `comm` when that overflows).
#[inline]
pub(crate) fn packed_bytes(comm: MPI_Comm, datatype: &DatatypeRef, count: usize) -> error::MpiResult<usize> {
    datatype.size.checked_mul(count).ok_or_else(|| error::error(comm, MPI_ERR_COUNT, format!("{count} elements are more bytes than memory holds")))
}

struct Entry {
    info: Arc<TypeInfo>,
    committed: bool,
    name: String,
    /// Copies of the handle the program holds, each freed by its own MPI_Type_free:
    /// MPI_Type_get_contents hands out the handle of a live input type again, as MPICH and
    /// Open MPI do.
    references: usize,
    /// An MPI_Type_create_f90_* result: a predefined type, never freed.
    permanent: bool,
}

impl Entry {
    fn new(info: Arc<TypeInfo>, committed: bool) -> Entry {
        Entry { info, committed, name: String::new(), references: 1, permanent: false }
    }
}

/// Derived datatypes by handle (`BRAID_FIRST_DERIVED_DATATYPE + index`), renamed predefined
/// ones, and the MPI_Type_create_f90_* results by (combiner, p, r).
struct Registry {
    derived: Vec<Option<Entry>>,
    vacant: Vec<usize>,
    predefined_names: Vec<(MPI_Datatype, String)>,
    parameterized: Vec<([c_int; 3], MPI_Datatype)>,
}

static REGISTRY: RwLock<Registry> = RwLock::new(Registry { derived: Vec::new(), vacant: Vec::new(), predefined_names: Vec::new(), parameterized: Vec::new() });

fn registry() -> std::sync::RwLockReadGuard<'static, Registry> {
    REGISTRY.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn registry_mut() -> std::sync::RwLockWriteGuard<'static, Registry> {
    REGISTRY.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn predefined_table() -> &'static [Arc<TypeInfo>] {
    static TABLE: OnceLock<Vec<Arc<TypeInfo>>> = OnceLock::new();
    TABLE.get_or_init(|| predefined::PREDEFINED.iter().map(|(handle, basic, _)| Arc::new(TypeInfo::predefined(*handle, *basic))).collect())
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
    register_entry(Entry::new(Arc::new(info), false))
}

/// The handle MPI_Type_get_contents returns for an input type that had `handle` when the type
/// was made: a predefined type's own handle; `handle` again, one reference more, while it still
/// names the same description; otherwise a new (uncommitted) handle of it.
pub(crate) fn handle_for_contents(handle: MPI_Datatype, info: &Arc<TypeInfo>) -> Result<MPI_Datatype, MpiError> {
    if let Origin::Named(named) | Origin::Parameterized(named, _) = info.origin {
        return Ok(named);
    }
    if let Some(index) = derived_index(handle) {
        if let Some(Some(entry)) = registry_mut().derived.get_mut(index) {
            if Arc::ptr_eq(&entry.info, info) {
                entry.references += 1;
                return Ok(handle);
            }
        }
    }
    register_entry(Entry::new(info.clone(), false))
}

/// The MPI_Type_create_f90_* type for `key` (combiner, p, r), made by `make` the first time:
/// the same handle for the same arguments, committed, never freed.
pub(crate) fn parameterized(key: [c_int; 3], make: impl FnOnce(MPI_Datatype) -> TypeInfo) -> Result<MPI_Datatype, MpiError> {
    let mut registry = registry_mut();
    if let Some((_, handle)) = registry.parameterized.iter().find(|(known, _)| *known == key) {
        return Ok(*handle);
    }
    let index = registry.vacant.pop().unwrap_or_else(|| {
        registry.derived.push(None);
        registry.derived.len() - 1
    });
    let handle = handle_of_index(index)?;
    let entry = Entry { permanent: true, ..Entry::new(Arc::new(make(handle)), true) };
    registry.derived[index] = Some(entry);
    registry.parameterized.push((key, handle));
    Ok(handle)
}

fn handle_of_index(index: usize) -> Result<MPI_Datatype, MpiError> {
    c_int::try_from(index).ok().and_then(|index| index.checked_add(BRAID_FIRST_DERIVED_DATATYPE)).ok_or_else(|| failure(MPI_ERR_INTERN, "out of datatype handles"))
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
    handle_of_index(index)
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

/// MPI_Type_free: only derived types can be freed; a handle held several times (see
/// [`handle_for_contents`]) stays until its last copy is freed. Whether the type is gone.
pub(crate) fn free(dt: MPI_Datatype) -> Result<bool, MpiError> {
    if Basic::from_handle(dt).is_some() {
        return Err(failure(MPI_ERR_TYPE, "predefined datatypes cannot be freed"));
    }
    let index = derived_index(dt).ok_or_else(|| failure(MPI_ERR_TYPE, format!("invalid datatype ({dt})")))?;
    let mut registry = registry_mut();
    match registry.derived.get_mut(index) {
        Some(Some(entry)) if entry.permanent => Err(failure(MPI_ERR_TYPE, "the types of MPI_Type_create_f90_* are predefined and cannot be freed")),
        Some(Some(entry)) if entry.references > 1 => {
            entry.references -= 1;
            Ok(false)
        }
        Some(slot @ Some(_)) => {
            *slot = None;
            registry.vacant.push(index);
            Ok(true)
        }
        _ => Err(failure(MPI_ERR_TYPE, format!("invalid datatype ({dt})"))),
    }
}

/// MPI_Type_dup: same type map and committed state, no name; its envelope names `dt`.
pub(crate) fn dup(dt: MPI_Datatype) -> Result<MPI_Datatype, MpiError> {
    let info = lookup(dt).map_err(|class| failure(class, format!("invalid datatype ({dt})")))?.shared();
    let committed = lookup_committed(dt).is_ok();
    let origin = Origin::constructed(MPI_COMBINER_DUP, vec![], vec![], vec![(dt, info.clone())]);
    register_entry(Entry::new(Arc::new(TypeInfo { origin, ..(*info).clone() }), committed))
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
