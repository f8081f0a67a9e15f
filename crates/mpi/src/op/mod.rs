//! Reduction operations: the predefined ones on every type MPI defines them for, and user
//! functions (MPI_Op_create).
//!
//! Collectives ask [`reduction`] once per call for a [`Reduction`], then apply it to packed
//! buffers: for predefined operations a packed derived type is simply a run of its basic
//! elements, so a single kernel serves every type built from one predefined type.

mod abi;
mod kernels;
#[cfg(test)]
mod tests;

use std::ffi::{c_int, c_void};
use std::sync::RwLock;

use crate::consts::*;
use crate::datatype::{self, DatatypeRef, Uniform};
pub use abi::*;
pub use kernels::Builtin;
pub use kernels::Kernel;

/// A user function with its commute flag.
/// A user operation's function: MPI_Op_create's (an int length) or MPI_Op_create_c's.
#[derive(Debug, Clone, Copy)]
pub enum UserFunction {
    Int(MPI_User_function),
    Large(MPI_User_function_c),
}

#[derive(Clone, Copy)]
struct UserOp {
    function: UserFunction,
    commutative: bool,
}

/// User operations by handle (`BRAID_FIRST_USER_OP + index`).
static USER_OPS: RwLock<Vec<Option<UserOp>>> = RwLock::new(Vec::new());

fn user_ops() -> std::sync::RwLockReadGuard<'static, Vec<Option<UserOp>>> {
    USER_OPS.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn user_ops_mut() -> std::sync::RwLockWriteGuard<'static, Vec<Option<UserOp>>> {
    USER_OPS.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The predefined operation of a handle.
pub fn builtin(op: MPI_Op) -> Option<Builtin> {
    Some(match op {
        MPI_MAX => Builtin::Max,
        MPI_MIN => Builtin::Min,
        MPI_SUM => Builtin::Sum,
        MPI_PROD => Builtin::Prod,
        MPI_LAND => Builtin::Land,
        MPI_BAND => Builtin::Band,
        MPI_LOR => Builtin::Lor,
        MPI_BOR => Builtin::Bor,
        MPI_LXOR => Builtin::Lxor,
        MPI_BXOR => Builtin::Bxor,
        MPI_MINLOC => Builtin::Minloc,
        MPI_MAXLOC => Builtin::Maxloc,
        MPI_REPLACE => Builtin::Replace,
        MPI_NO_OP => Builtin::NoOp,
        _ => return None,
    })
}

fn user_op(op: MPI_Op) -> Option<UserOp> {
    let index = usize::try_from(op.checked_sub(BRAID_FIRST_USER_OP)?).ok()?;
    user_ops().get(index).copied().flatten()
}

/// Registers a user function; returns its handle.
pub(crate) fn create(function: UserFunction, commutative: bool) -> Result<MPI_Op, c_int> {
    let mut ops = user_ops_mut();
    let index = match ops.iter().position(Option::is_none) {
        Some(index) => index,
        None => {
            ops.push(None);
            ops.len() - 1
        }
    };
    ops[index] = Some(UserOp { function, commutative });
    c_int::try_from(index).ok().and_then(|index| index.checked_add(BRAID_FIRST_USER_OP)).ok_or(MPI_ERR_INTERN)
}

/// Frees a user operation (predefined ones cannot be freed).
pub(crate) fn free(op: MPI_Op) -> Result<(), c_int> {
    let index = op.checked_sub(BRAID_FIRST_USER_OP).and_then(|index| usize::try_from(index).ok()).ok_or(MPI_ERR_OP)?;
    match user_ops_mut().get_mut(index) {
        Some(slot @ Some(_)) => {
            *slot = None;
            Ok(())
        }
        _ => Err(MPI_ERR_OP),
    }
}

/// Whether `op` is commutative (MPI_Op_commutative).
pub fn is_commutative(op: MPI_Op) -> Result<bool, c_int> {
    if builtin(op).is_some() {
        return Ok(true);
    }
    user_op(op).map(|user| user.commutative).ok_or(MPI_ERR_OP)
}

enum Action {
    Kernel(Kernel),
    User { function: UserFunction, datatype: MPI_Datatype, info: DatatypeRef },
}

/// An operation bound to a datatype, ready to combine packed buffers.
pub struct Reduction {
    action: Action,
    element_size: usize,
    commutative: bool,
}

/// The kernel of predefined operation `builtin` over elements made of `uniform`; None where MPI
/// does not define it.
#[inline]
fn builtin_kernel(builtin: Builtin, uniform: Uniform) -> Option<Kernel> {
    match (builtin, uniform) {
        (_, Uniform::Empty) => kernels::kernel(Builtin::NoOp, datatype::Basic::Byte),
        (Builtin::NoOp | Builtin::Replace, _) => kernels::kernel(builtin, datatype::Basic::Byte),
        (_, Uniform::One(basic)) => kernels::kernel(builtin, basic),
        (_, Uniform::Mixed) => None,
    }
}

/// The kernel [`reduction`] picks for predefined operation `op` on predefined datatype `dt`,
/// from the fixed tables alone (fast paths); None for anything else, which [`reduction`] takes.
#[inline]
pub fn predefined_kernel(op: MPI_Op, dt: MPI_Datatype) -> Option<Kernel> {
    let builtin = builtin(op)?;
    let DatatypeRef::Predefined(info) = datatype::lookup(dt).ok()? else { return None };
    builtin_kernel(builtin, info.uniform)
}

/// The reduction of `op` over elements of `dt`: MPI_ERR_OP for an unknown operation or a
/// predefined operation that MPI does not define on `dt`'s basic type (or on a type mixing
/// several), MPI_ERR_TYPE for an invalid or uncommitted type.
pub fn reduction(op: MPI_Op, dt: MPI_Datatype) -> Result<Reduction, c_int> {
    let info = datatype::lookup_committed(dt)?;
    let element_size = info.size;
    if let Some(builtin) = builtin(op) {
        let kernel = builtin_kernel(builtin, info.uniform).ok_or(MPI_ERR_OP)?;
        return Ok(Reduction { action: Action::Kernel(kernel), element_size, commutative: true });
    }
    let user = user_op(op).ok_or(MPI_ERR_OP)?;
    Ok(Reduction { action: Action::User { function: user.function, datatype: dt, info }, element_size, commutative: user.commutative })
}

impl Reduction {
    pub fn commutative(&self) -> bool {
        self.commutative
    }

    /// Packed bytes per element of the datatype (0 only for a type without data).
    pub fn element_size(&self) -> usize {
        self.element_size
    }

    /// `inout = input op inout`, element-wise; both are packed and hold the same whole number of
    /// elements.
    pub fn apply(&self, input: &[u8], inout: &mut [u8]) {
        debug_assert_eq!(input.len(), inout.len(), "reduction buffers differ in length");
        match &self.action {
            Action::Kernel(kernel) => kernel(input, inout),
            Action::User { function, datatype, info } => apply_user(*function, *datatype, info, input, inout),
        }
    }
}

/// The largest `len` a user function of MPI_Op_create is given at once.
const USER_CHUNK_MAX: usize = c_int::MAX as usize;

/// Calls the user function over native-layout copies of the packed elements: user functions see
/// the datatype's memory layout, properly aligned. When the packed bytes already are that layout
/// (a contiguous type) and are aligned, `inout` is handed over in place.
fn apply_user(function: UserFunction, dt: MPI_Datatype, info: &DatatypeRef, input: &[u8], inout: &mut [u8]) {
    if info.size == 0 {
        return;
    }
    let count = inout.len().min(input.len()) / info.size;
    let chunk_max = match function {
        UserFunction::Int(_) => USER_CHUNK_MAX,
        UserFunction::Large(_) => usize::MAX,
    };
    let mut done = 0;
    while done < count {
        let chunk = (count - done).min(chunk_max);
        let range = done * info.size..(done + chunk) * info.size;
        // The input is copied even when contiguous: user functions get a writable `invec`.
        let mut input_native = NativeBuffer::unpacked(info, chunk, &input[range.clone()]);
        let inout_packed = &mut inout[range];
        let in_place = info.contiguous_run(chunk).filter(|_| inout_packed.as_ptr().align_offset(info.align()) == 0);
        let mut inout_native = None;
        let inout_base = match in_place {
            Some((offset, _)) => inout_packed.as_mut_ptr().wrapping_offset(-offset),
            None => inout_native.insert(NativeBuffer::unpacked(info, chunk, inout_packed)).base(),
        };
        let mut datatype = dt;
        let (invec, inoutvec) = (input_native.base().cast::<c_void>(), inout_base.cast::<c_void>());
        // SAFETY: both pointers address `chunk` elements of `dt` in its memory layout, suitably
        // aligned, as the user function expects; `len` and `datatype` are live locals.
        unsafe {
            match function {
                UserFunction::Int(function) => function(invec, inoutvec, &mut (chunk as c_int), &mut datatype),
                UserFunction::Large(function) => function(invec, inoutvec, &mut (chunk as MPI_Count), &mut datatype),
            }
        }
        if let Some(native) = &mut inout_native {
            // SAFETY: the native buffer holds `chunk` elements; `inout_packed` their packed bytes.
            unsafe { info.pack(chunk, native.base(), inout_packed) };
        }
        done += chunk;
    }
}

/// `count` elements of a datatype in their memory layout, in a 16-byte aligned allocation.
struct NativeBuffer {
    storage: Vec<u128>,
    /// Offset of the elements' buffer pointer from the allocation (the type map may start
    /// before or after the pointer).
    origin: isize,
}

impl NativeBuffer {
    fn unpacked(info: &DatatypeRef, count: usize, packed: &[u8]) -> NativeBuffer {
        let span = (count as isize - 1) * info.extent;
        let low = info.true_lb + span.min(0);
        let high = info.true_lb + info.true_extent + span.max(0);
        let bytes = (high - low) as usize;
        let mut buffer = NativeBuffer { storage: vec![0u128; bytes.div_ceil(16)], origin: -low };
        // SAFETY: the type map of `count` elements at `base()` lies within [low, high) of the
        // pointer, i.e. inside the allocation; `packed` holds `count` packed elements.
        unsafe { info.unpack(count, packed, buffer.base()) };
        buffer
    }

    fn base(&mut self) -> *mut u8 {
        self.storage.as_mut_ptr().cast::<u8>().wrapping_offset(self.origin)
    }
}
