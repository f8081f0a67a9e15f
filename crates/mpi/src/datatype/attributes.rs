//! Attributes on datatypes: MPI_Type_create_keyval, MPI_Type_free_keyval, MPI_Type_set_attr,
//! MPI_Type_get_attr, MPI_Type_delete_attr, and their copy (MPI_Type_dup) and delete
//! (MPI_Type_free, replacement, deletion) callbacks.
//!
//! Values are kept by handle: a handle held several times is one object with one set of
//! attributes. Callbacks run with no lock held, so that they may call MPI.

// The safety contract of every entry point is the MPI standard's: pointers valid for the sizes
// it documents.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::RwLock;

use super::abi::out;
use super::{failure, lookup};
use crate::consts::*;
use crate::error::{finish, MpiResult};

/// Type keyvals are numbered from here, apart from communicator keyvals, so that one used on
/// the wrong kind of object is recognised.
const FIRST_TYPE_KEYVAL: c_int = 1 << 20;

/// A keyval's callbacks as the C caller passed them (addresses), and its extra state.
#[derive(Clone, Copy)]
struct Keyval {
    copy: usize,
    delete: usize,
    extra_state: usize,
    /// MPI_Type_free_keyval was called: no new values, but the callbacks of existing ones still run.
    freed: bool,
}

struct Table {
    keyvals: Vec<Keyval>,
    /// (datatype, keyval, value) of every attribute set.
    values: Vec<(MPI_Datatype, c_int, usize)>,
}

static TABLE: RwLock<Table> = RwLock::new(Table { keyvals: Vec::new(), values: Vec::new() });

fn table() -> std::sync::RwLockWriteGuard<'static, Table> {
    TABLE.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Table {
    fn keyval(&self, keyval: c_int) -> Option<Keyval> {
        let index = usize::try_from(keyval.checked_sub(FIRST_TYPE_KEYVAL)?).ok()?;
        self.keyvals.get(index).copied()
    }

    /// The keyval of a new value: MPI_ERR_KEYVAL if unknown or freed.
    fn live_keyval(&self, keyval: c_int) -> MpiResult<Keyval> {
        self.keyval(keyval).filter(|known| !known.freed).ok_or_else(|| failure(MPI_ERR_KEYVAL, format!("{keyval} is not a datatype keyval")))
    }

    fn take(&mut self, datatype: MPI_Datatype, keyval: c_int) -> Option<usize> {
        let index = self.values.iter().position(|&(dt, key, _)| dt == datatype && key == keyval)?;
        Some(self.values.remove(index).2)
    }
}

/// A delete callback to run once the table is released.
struct PendingDelete {
    datatype: MPI_Datatype,
    keyval: c_int,
    value: usize,
    callback: Keyval,
}

impl PendingDelete {
    /// # Safety
    /// The callback address came from MPI_Type_create_keyval.
    unsafe fn run(self) -> MpiResult<()> {
        if self.callback.delete == 0 {
            return Ok(());
        }
        // SAFETY: a nonzero delete address is a function of type MPI_Type_delete_attr_function
        // that C passed to MPI_Type_create_keyval.
        let function: MPI_Type_delete_attr_function = unsafe { std::mem::transmute(self.callback.delete) };
        // SAFETY: the user's callback, with the arguments MPI defines.
        let code = unsafe { function(self.datatype, self.keyval, self.value as *mut c_void, self.callback.extra_state as *mut c_void) };
        if code == MPI_SUCCESS {
            Ok(())
        } else {
            Err(failure(code, format!("the delete callback of keyval {} failed", self.keyval)))
        }
    }
}

/// Runs delete callbacks, returning the first failure.
fn run_deletes(pending: Vec<PendingDelete>) -> MpiResult<()> {
    let mut outcome = Ok(());
    for delete in pending {
        // SAFETY: callbacks registered through MPI_Type_create_keyval.
        let result = unsafe { delete.run() };
        if outcome.is_ok() {
            outcome = result;
        }
    }
    outcome
}

/// Deletes every attribute of `datatype`, whose object MPI_Type_free has just freed.
pub(super) fn delete_all(datatype: MPI_Datatype) -> MpiResult<()> {
    let pending = {
        let mut table = table();
        let (gone, kept) = std::mem::take(&mut table.values).into_iter().partition(|&(dt, _, _)| dt == datatype);
        table.values = kept;
        let gone: Vec<(MPI_Datatype, c_int, usize)> = gone;
        gone.into_iter()
            .filter_map(|(datatype, keyval, value)| table.keyval(keyval).map(|callback| PendingDelete { datatype, keyval, value, callback }))
            .collect()
    };
    run_deletes(pending)
}

/// Runs the copy callbacks of `old`'s attributes and gives the values they keep to `new`
/// (MPI_Type_dup).
pub(super) fn copy_all(old: MPI_Datatype, new: MPI_Datatype) -> MpiResult<()> {
    let attributes: Vec<(c_int, usize, Keyval)> = {
        let table = table();
        table.values.iter().filter(|&&(dt, _, _)| dt == old).filter_map(|&(_, key, value)| table.keyval(key).map(|kv| (key, value, kv))).collect()
    };
    let mut copied = Vec::new();
    for (keyval, value, callback) in attributes {
        match callback.copy {
            MPI_TYPE_NULL_COPY_FN => {}
            MPI_TYPE_DUP_FN => copied.push((new, keyval, value)),
            address => {
                // SAFETY: a copy address other than MPI_TYPE_NULL_COPY_FN (0) and MPI_TYPE_DUP_FN
                // (1) is a function of type MPI_Type_copy_attr_function passed to
                // MPI_Type_create_keyval.
                let function: MPI_Type_copy_attr_function = unsafe { std::mem::transmute(address) };
                let mut out: *mut c_void = std::ptr::null_mut();
                let mut flag: c_int = 0;
                let out_pointer = (&mut out as *mut *mut c_void).cast::<c_void>();
                // SAFETY: the user's callback, with the arguments MPI defines.
                let code = unsafe { function(old, keyval, callback.extra_state as *mut c_void, value as *mut c_void, out_pointer, &mut flag) };
                if code != MPI_SUCCESS {
                    return Err(failure(code, format!("the copy callback of keyval {keyval} failed")));
                }
                if flag != 0 {
                    copied.push((new, keyval, out as usize));
                }
            }
        }
    }
    table().values.extend(copied);
    Ok(())
}

fn valid_datatype(datatype: MPI_Datatype) -> MpiResult<()> {
    lookup(datatype).map(|_| ()).map_err(|class| failure(class, format!("invalid datatype ({datatype})")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_keyval(
    type_copy_attr_fn: *const c_void,
    type_delete_attr_fn: *const c_void,
    type_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    finish(
        "MPI_Type_create_keyval",
        (|| {
            // SAFETY: `type_keyval` is null or the caller's output variable.
            let type_keyval = unsafe { out(type_keyval, "type_keyval") }?;
            let mut table = table();
            let keyval = c_int::try_from(table.keyvals.len())
                .ok()
                .and_then(|index| index.checked_add(FIRST_TYPE_KEYVAL))
                .ok_or_else(|| failure(MPI_ERR_INTERN, "out of datatype keyvals"))?;
            table.keyvals.push(Keyval { copy: type_copy_attr_fn as usize, delete: type_delete_attr_fn as usize, extra_state: extra_state as usize, freed: false });
            *type_keyval = keyval;
            Ok(())
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free_keyval(type_keyval: *mut c_int) -> c_int {
    finish(
        "MPI_Type_free_keyval",
        (|| {
            // SAFETY: `type_keyval` is null or the caller's handle variable.
            let type_keyval = unsafe { out(type_keyval, "type_keyval") }?;
            let mut table = table();
            table.live_keyval(*type_keyval)?;
            let index = (*type_keyval - FIRST_TYPE_KEYVAL) as usize;
            table.keyvals[index].freed = true;
            *type_keyval = MPI_KEYVAL_INVALID;
            Ok(())
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_attr(datatype: MPI_Datatype, type_keyval: c_int, attribute_val: *mut c_void) -> c_int {
    finish(
        "MPI_Type_set_attr",
        (|| {
            valid_datatype(datatype)?;
            let replaced = {
                let mut table = table();
                let callback = table.live_keyval(type_keyval)?;
                let old = table.take(datatype, type_keyval);
                table.values.push((datatype, type_keyval, attribute_val as usize));
                old.map(|value| PendingDelete { datatype, keyval: type_keyval, value, callback })
            };
            run_deletes(replaced.into_iter().collect())
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_attr(datatype: MPI_Datatype, type_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    finish(
        "MPI_Type_get_attr",
        (|| {
            valid_datatype(datatype)?;
            if attribute_val.is_null() {
                return Err(failure(MPI_ERR_ARG, "attribute_val is NULL"));
            }
            // SAFETY: `flag` is null or the caller's output variable.
            let flag = unsafe { out(flag, "flag") }?;
            let table = table();
            table.keyval(type_keyval).ok_or_else(|| failure(MPI_ERR_KEYVAL, format!("{type_keyval} is not a datatype keyval")))?;
            let value = table.values.iter().find(|&&(dt, key, _)| dt == datatype && key == type_keyval).map(|&(_, _, value)| value);
            if let Some(value) = value {
                // SAFETY: for MPI_Type_get_attr, `attribute_val` is really a `void **` (non-null).
                unsafe { *attribute_val.cast::<*mut c_void>() = value as *mut c_void };
            }
            *flag = c_int::from(value.is_some());
            Ok(())
        })(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_delete_attr(datatype: MPI_Datatype, type_keyval: c_int) -> c_int {
    finish(
        "MPI_Type_delete_attr",
        (|| {
            valid_datatype(datatype)?;
            let removed = {
                let mut table = table();
                let callback =
                    table.keyval(type_keyval).ok_or_else(|| failure(MPI_ERR_KEYVAL, format!("{type_keyval} is not a datatype keyval")))?;
                let value = table
                    .take(datatype, type_keyval)
                    .ok_or_else(|| failure(MPI_ERR_KEYVAL, format!("keyval {type_keyval} has no value on datatype {datatype}")))?;
                PendingDelete { datatype, keyval: type_keyval, value, callback }
            };
            run_deletes(vec![removed])
        })(),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    static DELETED: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn count_delete(_: MPI_Datatype, _: c_int, value: *mut c_void, _: *mut c_void) -> c_int {
        DELETED.fetch_add(value as usize, Ordering::Relaxed);
        MPI_SUCCESS
    }

    unsafe extern "C" fn double_copy(_: MPI_Datatype, _: c_int, _: *mut c_void, value: *mut c_void, out: *mut c_void, flag: *mut c_int) -> c_int {
        // SAFETY: MPI passes `out` as a `void **` and `flag` as an int pointer.
        unsafe {
            *out.cast::<*mut c_void>() = (value as usize * 2) as *mut c_void;
            *flag = 1;
        }
        MPI_SUCCESS
    }

    fn get(datatype: MPI_Datatype, keyval: c_int) -> Option<usize> {
        let (mut value, mut flag): (*mut c_void, c_int) = (std::ptr::null_mut(), 0);
        // SAFETY: both outputs are live locals.
        assert_eq!(unsafe { MPI_Type_get_attr(datatype, keyval, (&mut value as *mut *mut c_void).cast(), &mut flag) }, MPI_SUCCESS);
        (flag != 0).then_some(value as usize)
    }

    #[test]
    fn values_are_copied_by_dup_and_deleted_with_the_type() {
        let mut keyval = 0;
        let copy = double_copy as MPI_Type_copy_attr_function as *const c_void;
        let delete = count_delete as MPI_Type_delete_attr_function as *const c_void;
        let mut dt = MPI_DATATYPE_NULL;
        let mut duplicate = MPI_DATATYPE_NULL;
        // SAFETY: all outputs are live locals; the callbacks match the C signatures.
        unsafe {
            assert_eq!(MPI_Type_create_keyval(copy, delete, &mut keyval, std::ptr::null_mut()), MPI_SUCCESS);
            assert_eq!(super::super::MPI_Type_contiguous(2, MPI_INT, &mut dt), MPI_SUCCESS);
            assert_eq!(MPI_Type_set_attr(dt, keyval, 21 as *mut c_void), MPI_SUCCESS);
            assert_eq!(get(dt, keyval), Some(21));
            assert_eq!(super::super::MPI_Type_dup(dt, &mut duplicate), MPI_SUCCESS);
            assert_eq!(get(duplicate, keyval), Some(42));
            let before = DELETED.load(Ordering::Relaxed);
            assert_eq!(MPI_Type_set_attr(dt, keyval, 5 as *mut c_void), MPI_SUCCESS);
            assert_eq!(DELETED.load(Ordering::Relaxed) - before, 21, "replacing runs the delete callback");
            assert_eq!(MPI_Type_free_keyval(&mut keyval.clone()), MPI_SUCCESS);
            assert_eq!(super::super::MPI_Type_free(&mut dt), MPI_SUCCESS);
            assert_eq!(super::super::MPI_Type_free(&mut duplicate), MPI_SUCCESS);
            assert_eq!(DELETED.load(Ordering::Relaxed) - before, 21 + 5 + 42, "freeing runs the delete callbacks, even of a freed keyval");
            assert_eq!(MPI_Type_set_attr(MPI_INT, keyval, std::ptr::null_mut()), MPI_ERR_KEYVAL);
            assert_eq!(MPI_Type_delete_attr(MPI_INT, 12345), MPI_ERR_KEYVAL);
        }
    }
}
