//! Setting, getting, copying and deleting attributes: the program's copy and delete callbacks run
//! with the runtime state released, since a callback may call MPI.

use std::ffi::{c_int, c_void};

use super::{predefined, Attribute, Callbacks, Kind, Object};
use crate::consts::*;
use crate::error::{codes, error, MpiError, MpiResult};
use crate::runtime::{self, Runtime};

/// The error a callback's non-success return becomes: its own code when that is an error code,
/// MPI_ERR_OTHER otherwise.
fn callback_failure(object: Object, code: c_int, what: &str, keyval: c_int) -> MpiError {
    let class = if codes::abi::class_of(code).is_some() { code } else { MPI_ERR_OTHER };
    error(object.error_comm(), class, format!("the {what} callback of keyval {keyval} returned {code}"))
}

/// Runs the delete callback of `attribute` on `object`.
///
/// # Safety
/// The callbacks must be functions of the types MPI specifies (as the program promised when it
/// created the keyval). The runtime state must not be borrowed.
unsafe fn run_delete(object: Object, attribute: Attribute, callbacks: Callbacks) -> MpiResult<()> {
    let Some(delete) = callbacks.delete else { return Ok(()) };
    // SAFETY: the program's delete callback, called with the arguments MPI defines.
    let code = unsafe { delete(object.handle(), attribute.keyval, attribute.value, callbacks.extra_state) };
    if code == MPI_SUCCESS {
        Ok(())
    } else {
        Err(callback_failure(object, code, "delete", attribute.keyval))
    }
}

/// Runs the copy callback of `attribute` for a duplicate of `object`: the duplicate's value, or
/// None when the callback does not copy it.
///
/// # Safety
/// As for [`run_delete`].
unsafe fn run_copy(object: Object, attribute: Attribute, callbacks: Callbacks) -> MpiResult<Option<*mut c_void>> {
    let Some(copy) = callbacks.copy else { return Ok(None) };
    let mut copied: *mut c_void = std::ptr::null_mut();
    let mut flag: c_int = 0;
    // SAFETY: the program's copy callback, called with the arguments MPI defines; the output
    // argument is really a `void **`.
    let code = unsafe { copy(object.handle(), attribute.keyval, callbacks.extra_state, attribute.value, (&mut copied as *mut *mut c_void).cast(), &mut flag) };
    if code != MPI_SUCCESS {
        return Err(callback_failure(object, code, "copy", attribute.keyval));
    }
    Ok((flag != 0).then_some(copied))
}

/// Checks that `object` exists.
fn check_object(rt: &Runtime, object: Object) -> MpiResult<()> {
    match object {
        Object::Comm(comm) => rt.comms.get(comm).map(|_| ()),
        Object::Datatype(datatype) => crate::datatype::lookup(datatype).map(|_| ()).map_err(|class| error(MPI_COMM_WORLD, class, format!("{datatype} is not a valid datatype"))),
        Object::Win(win) => rt.windows.get(win).map(|_| ()),
    }
}

fn keyval_error(object: Object, detail: String) -> MpiError {
    error(object.error_comm(), MPI_ERR_KEYVAL, detail)
}

/// MPI_*_create_keyval.
pub(crate) fn create_keyval(kind: Kind, callbacks: Callbacks) -> MpiResult<c_int> {
    runtime::with(|rt| Ok(rt.attributes.create_keyval(kind, callbacks)))
}

/// MPI_*_free_keyval.
pub(crate) fn free_keyval(kind: Kind, keyval: c_int) -> MpiResult<()> {
    runtime::with(|rt| rt.attributes.free_keyval(kind, keyval).map_err(|detail| error(MPI_COMM_WORLD, MPI_ERR_KEYVAL, detail)))
}

/// MPI_*_set_attr: a value already cached for the keyval is deleted (its callback run) first; if
/// that callback fails, the old value stays.
pub(crate) fn set(object: Object, keyval: c_int, value: *mut c_void) -> MpiResult<()> {
    let (old, callbacks) = runtime::with(|rt| {
        check_object(rt, object)?;
        let callbacks = rt.attributes.callbacks(object.kind(), keyval, true).map_err(|detail| keyval_error(object, detail))?;
        Ok((rt.attributes.get(object, keyval), callbacks))
    })?;
    if let Some(old) = old {
        // SAFETY: the program's callback; the state is released.
        unsafe { run_delete(object, Attribute { keyval, value: old }, callbacks)? };
    }
    runtime::with(|rt| {
        // The callback may have freed the keyval: its own value still holds it unless deleted.
        if rt.attributes.get(object, keyval).is_none() {
            rt.attributes.callbacks(object.kind(), keyval, true).map_err(|detail| keyval_error(object, detail))?;
        }
        rt.attributes.put(object, keyval, value);
        Ok(())
    })
}

/// MPI_*_get_attr: the cached value, if any (predefined attributes included).
pub(crate) fn get(object: Object, keyval: c_int) -> MpiResult<Option<*mut c_void>> {
    runtime::with(|rt| {
        check_object(rt, object)?;
        if let Some(kind) = predefined::kind_of(keyval) {
            if kind != object.kind() {
                return Err(keyval_error(object, format!("keyval {keyval} is predefined for {}s, not {}s", kind.noun(), object.kind().noun())));
            }
            if let Object::Win(win) = object {
                return rt.windows.predefined_attribute(win, keyval);
            }
            return Ok(predefined::value(object, keyval));
        }
        rt.attributes.callbacks(object.kind(), keyval, false).map_err(|detail| keyval_error(object, detail))?;
        Ok(rt.attributes.get(object, keyval))
    })
}

/// MPI_*_delete_attr: runs the delete callback, then removes the value (kept if the callback
/// fails). Deleting a value that is not there does nothing.
pub(crate) fn delete(object: Object, keyval: c_int) -> MpiResult<()> {
    let found = runtime::with(|rt| {
        check_object(rt, object)?;
        let callbacks = rt.attributes.callbacks(object.kind(), keyval, false).map_err(|detail| keyval_error(object, detail))?;
        Ok(rt.attributes.get(object, keyval).map(|value| (Attribute { keyval, value }, callbacks)))
    })?;
    let Some((attribute, callbacks)) = found else { return Ok(()) };
    // SAFETY: the program's callback; the state is released.
    unsafe { run_delete(object, attribute, callbacks)? };
    runtime::with(|rt| {
        rt.attributes.remove(object, keyval);
        Ok(())
    })
}

/// Deletes every value cached on `object`, most recently set first, before the object goes away.
/// Stops at the first callback that fails (its value and the older ones stay).
pub(crate) fn delete_all(object: Object) -> MpiResult<()> {
    if !runtime::is_running() {
        return Ok(());
    }
    while let Some((attribute, callbacks)) = runtime::with(|rt| Ok(rt.attributes.last(object)))? {
        // SAFETY: the program's callback; the state is released.
        unsafe { run_delete(object, attribute, callbacks)? };
        runtime::with(|rt| {
            if rt.attributes.get(object, attribute.keyval) == Some(attribute.value) {
                rt.attributes.remove(object, attribute.keyval);
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Deletes every value cached on an object that is going away anyway (a duplicate that failed):
/// the callbacks run, and their failures do not keep the values.
fn discard_all(object: Object) {
    while let Ok(Some((attribute, callbacks))) = runtime::with(|rt| Ok(rt.attributes.last(object))) {
        // SAFETY: the program's callback; the state is released. The failure that made the
        // object go away is the one to report, not this one.
        let _ = unsafe { run_delete(object, attribute, callbacks) };
        let _ = runtime::with(|rt| Ok(rt.attributes.remove(object, attribute.keyval)));
    }
}

/// Gives `duplicate` the copies of `original`'s values that their copy callbacks make. If a
/// callback fails, the copies already made are deleted again and the error returned.
pub(crate) fn copy_all(original: Object, duplicate: Object) -> MpiResult<()> {
    if !runtime::is_running() {
        return Ok(());
    }
    let attributes = runtime::with(|rt| Ok(rt.attributes.attributes(original)))?;
    for (attribute, callbacks) in attributes {
        // SAFETY: the program's callback; the state is released.
        let copied = unsafe { run_copy(original, attribute, callbacks) };
        match copied {
            Ok(Some(value)) => runtime::with(|rt| {
                rt.attributes.put(duplicate, attribute.keyval, value);
                Ok(())
            })?,
            Ok(None) => {}
            Err(failure) => {
                discard_all(duplicate);
                return Err(failure);
            }
        }
    }
    Ok(())
}

/// MPI_Type_dup's attribute step: copies `original`'s values to `duplicate`; on failure frees
/// `duplicate` too.
pub(crate) fn copy_to_type_dup(original: MPI_Datatype, duplicate: MPI_Datatype) -> MpiResult<()> {
    copy_all(Object::Datatype(original), Object::Datatype(duplicate)).inspect_err(|_| {
        // The callback's failure is the error to report; the duplicate is ours to free.
        let _ = crate::datatype::free(duplicate);
    })
}

/// MPI_Type_free's attribute step: deletes the values cached on a datatype that is about to be
/// freed (an invalid or predefined handle is left for MPI_Type_free to report).
pub(crate) fn before_type_free(datatype: MPI_Datatype) -> MpiResult<()> {
    if datatype < BRAID_FIRST_DERIVED_DATATYPE || crate::datatype::lookup(datatype).is_err() {
        return Ok(());
    }
    delete_all(Object::Datatype(datatype))
}

/// MPI_Finalize's first step: the values cached on MPI_COMM_SELF are deleted, most recently set
/// first, while MPI is still fully usable; then those on MPI_COMM_WORLD.
pub(crate) fn delete_at_finalize() -> MpiResult<()> {
    delete_all(Object::Comm(MPI_COMM_SELF))?;
    delete_all(Object::Comm(MPI_COMM_WORLD))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::tests::{plain, value};

    #[test]
    fn a_failing_callback_code_becomes_its_class_or_err_other() {
        assert_eq!(callback_failure(Object::Comm(MPI_COMM_SELF), MPI_ERR_ARG, "copy", 20).class, MPI_ERR_ARG);
        assert_eq!(callback_failure(Object::Comm(MPI_COMM_SELF), 12345, "copy", 20).class, MPI_ERR_OTHER);
        assert_eq!(callback_failure(Object::Datatype(MPI_INT), MPI_ERR_ARG, "delete", 20).comm, MPI_COMM_WORLD);
    }

    unsafe extern "C" fn copy_doubled(_: c_int, _: c_int, _: *mut c_void, value: *mut c_void, out: *mut c_void, flag: *mut c_int) -> c_int {
        // SAFETY: run_copy passes a `void **` and a flag.
        unsafe {
            *out.cast::<*mut c_void>() = (value as usize * 2) as *mut c_void;
            *flag = 1;
        }
        MPI_SUCCESS
    }

    unsafe extern "C" fn refuse(_: c_int, _: c_int, _: *mut c_void, _: *mut c_void) -> c_int {
        MPI_ERR_ARG
    }

    #[test]
    fn callbacks_are_called_with_their_values() {
        let callbacks = Callbacks { copy: Some(copy_doubled), delete: Some(refuse), extra_state: std::ptr::null_mut() };
        let attribute = Attribute { keyval: 20, value: value(21) };
        // SAFETY: test callbacks of the right types.
        unsafe {
            assert_eq!(run_copy(Object::Comm(1), attribute, callbacks).unwrap(), Some(value(42)));
            assert_eq!(run_copy(Object::Comm(1), attribute, plain()).unwrap(), None);
            assert_eq!(run_delete(Object::Comm(1), attribute, callbacks).unwrap_err().class, MPI_ERR_ARG);
            assert!(run_delete(Object::Comm(1), attribute, plain()).is_ok());
        }
    }
}
