//! Attributes (MPI 3.1 §6.7): keyvals and the values cached on communicators, datatypes and
//! windows, with their copy and delete callbacks.
//!
//! [`AttributeStore`] is the bookkeeping, free of callbacks (unit-tested); the functions below it
//! run the callbacks, always with the runtime state released, since a callback may call MPI.
//! Keyvals are reference counted: every cached value holds its keyval, so a keyval the program has
//! freed stays usable by the objects that still hold a value for it. Values are kept in the order
//! they were (last) set, and deleted in reverse order when their object goes away.

pub mod abi;
pub mod predefined;

use std::collections::HashMap;
use std::ffi::{c_int, c_void};

use crate::consts::*;
use crate::error::{codes, error, MpiError, MpiResult};
use crate::runtime::{self, Runtime};

/// Keyvals made by the program start here (below are the predefined ones).
pub const FIRST_USER_KEYVAL: c_int = 16;

/// The kind of object a keyval serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Comm,
    Datatype,
    Win,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Comm => "communicator",
            Kind::Datatype => "datatype",
            Kind::Win => "window",
        }
    }
}

/// An object attributes are cached on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Object {
    Comm(MPI_Comm),
    Datatype(MPI_Datatype),
    Win(MPI_Win),
}

impl Object {
    pub fn kind(self) -> Kind {
        match self {
            Object::Comm(_) => Kind::Comm,
            Object::Datatype(_) => Kind::Datatype,
            Object::Win(_) => Kind::Win,
        }
    }

    /// The handle the callbacks receive (every handle is an int).
    pub fn handle(self) -> c_int {
        match self {
            Object::Comm(handle) | Object::Datatype(handle) | Object::Win(handle) => handle,
        }
    }

    /// The communicator whose error handler applies to errors on this object.
    pub fn error_comm(self) -> MPI_Comm {
        match self {
            Object::Comm(comm) => comm,
            Object::Datatype(_) | Object::Win(_) => MPI_COMM_WORLD,
        }
    }
}

/// A keyval's callbacks as the program passed them (NULL: copy nothing / delete nothing). Every
/// handle type is an int, so one function type serves communicators, datatypes and windows.
#[derive(Debug, Clone, Copy)]
pub struct Callbacks {
    pub copy: Option<MPI_Comm_copy_attr_function>,
    pub delete: Option<MPI_Comm_delete_attr_function>,
    pub extra_state: *mut c_void,
}

struct Keyval {
    kind: Kind,
    callbacks: Callbacks,
    /// The program has freed its handle (MPI_*_free_keyval).
    freed: bool,
    /// Cached values that hold this keyval.
    uses: usize,
}

/// One cached value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attribute {
    pub keyval: c_int,
    pub value: *mut c_void,
}

/// Keyvals and cached values (the detail of a failure is an MPI_ERR_KEYVAL message).
#[derive(Default)]
pub struct AttributeStore {
    /// Index = keyval - FIRST_USER_KEYVAL.
    keyvals: Vec<Option<Keyval>>,
    values: HashMap<Object, Vec<Attribute>>,
}

impl AttributeStore {
    pub fn new() -> AttributeStore {
        AttributeStore::default()
    }

    pub fn create_keyval(&mut self, kind: Kind, callbacks: Callbacks) -> c_int {
        let keyval = Keyval { kind, callbacks, freed: false, uses: 0 };
        let index = match self.keyvals.iter().position(Option::is_none) {
            Some(vacant) => {
                self.keyvals[vacant] = Some(keyval);
                vacant
            }
            None => {
                self.keyvals.push(Some(keyval));
                self.keyvals.len() - 1
            }
        };
        FIRST_USER_KEYVAL + index as c_int
    }

    fn slot(&self, keyval: c_int) -> Option<&Keyval> {
        let index = usize::try_from(keyval.checked_sub(FIRST_USER_KEYVAL)?).ok()?;
        self.keyvals.get(index)?.as_ref()
    }

    fn slot_mut(&mut self, keyval: c_int) -> Option<&mut Keyval> {
        let index = usize::try_from(keyval.checked_sub(FIRST_USER_KEYVAL)?).ok()?;
        self.keyvals.get_mut(index)?.as_mut()
    }

    /// The callbacks of a user keyval of `kind`; a freed keyval is refused only when `setting`.
    pub fn callbacks(&self, kind: Kind, keyval: c_int, setting: bool) -> Result<Callbacks, String> {
        if predefined::kind_of(keyval).is_some() {
            return Err(format!("keyval {keyval} is predefined and cannot be changed"));
        }
        let Some(slot) = self.slot(keyval) else {
            return Err(format!("{keyval} is not a keyval"));
        };
        if slot.kind != kind {
            return Err(format!("keyval {keyval} was made for {}s, not {}s", slot.kind.noun(), kind.noun()));
        }
        if setting && slot.freed {
            return Err(format!("keyval {keyval} has been freed"));
        }
        Ok(slot.callbacks)
    }

    /// MPI_*_free_keyval: the keyval goes once no value holds it.
    pub fn free_keyval(&mut self, kind: Kind, keyval: c_int) -> Result<(), String> {
        self.callbacks(kind, keyval, true)?;
        let slot = self.slot_mut(keyval).expect("checked above");
        slot.freed = true;
        if slot.uses == 0 {
            self.vacate(keyval);
        }
        Ok(())
    }

    fn vacate(&mut self, keyval: c_int) {
        self.keyvals[(keyval - FIRST_USER_KEYVAL) as usize] = None;
        while matches!(self.keyvals.last(), Some(None)) {
            self.keyvals.pop();
        }
    }

    fn release(&mut self, keyval: c_int) {
        let slot = self.slot_mut(keyval).expect("a cached value holds its keyval");
        slot.uses -= 1;
        if slot.freed && slot.uses == 0 {
            self.vacate(keyval);
        }
    }

    pub fn get(&self, object: Object, keyval: c_int) -> Option<*mut c_void> {
        self.values.get(&object)?.iter().find(|a| a.keyval == keyval).map(|a| a.value)
    }

    /// Caches `value`, replacing any value `object` has for `keyval`; the value becomes the most
    /// recently set. `keyval` must be a live user keyval of the object's kind.
    pub fn put(&mut self, object: Object, keyval: c_int, value: *mut c_void) {
        let list = self.values.entry(object).or_default();
        match list.iter().position(|a| a.keyval == keyval) {
            Some(index) => {
                list.remove(index);
                list.push(Attribute { keyval, value });
            }
            None => {
                list.push(Attribute { keyval, value });
                self.slot_mut(keyval).expect("a live keyval").uses += 1;
            }
        }
    }

    /// Removes `object`'s value for `keyval`, if it has one.
    pub fn remove(&mut self, object: Object, keyval: c_int) -> Option<*mut c_void> {
        let list = self.values.get_mut(&object)?;
        let index = list.iter().position(|a| a.keyval == keyval)?;
        let removed = list.remove(index);
        if list.is_empty() {
            self.values.remove(&object);
        }
        self.release(keyval);
        Some(removed.value)
    }

    /// `object`'s values in the order they were set, with their keyvals' callbacks.
    pub fn attributes(&self, object: Object) -> Vec<(Attribute, Callbacks)> {
        let list = self.values.get(&object).map_or(&[][..], Vec::as_slice);
        list.iter().map(|a| (*a, self.slot(a.keyval).expect("a cached value holds its keyval").callbacks)).collect()
    }

    /// The value set last on `object`, with its keyval's callbacks.
    pub fn last(&self, object: Object) -> Option<(Attribute, Callbacks)> {
        let attribute = *self.values.get(&object)?.last()?;
        Some((attribute, self.slot(attribute.keyval).expect("a cached value holds its keyval").callbacks))
    }
}

/// The error a callback's non-success return becomes: its own code when that is an error code,
/// MPI_ERR_OTHER otherwise.
fn callback_failure(object: Object, code: c_int, what: &str, keyval: c_int) -> MpiError {
    let class = if codes::class_of(code).is_some() { code } else { MPI_ERR_OTHER };
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

    fn plain() -> Callbacks {
        Callbacks { copy: None, delete: None, extra_state: std::ptr::null_mut() }
    }

    fn value(n: usize) -> *mut c_void {
        n as *mut c_void
    }

    #[test]
    fn keyvals_serve_one_kind_and_predefined_ones_are_read_only() {
        let mut store = AttributeStore::new();
        let comm_key = store.create_keyval(Kind::Comm, plain());
        let type_key = store.create_keyval(Kind::Datatype, plain());
        assert!(comm_key >= FIRST_USER_KEYVAL && type_key != comm_key);
        assert!(store.callbacks(Kind::Comm, comm_key, true).is_ok());
        assert!(store.callbacks(Kind::Comm, type_key, false).unwrap_err().contains("datatypes"));
        assert!(store.callbacks(Kind::Comm, MPI_TAG_UB, false).unwrap_err().contains("predefined"));
        assert!(store.callbacks(Kind::Comm, MPI_KEYVAL_INVALID, false).is_err());
        assert!(store.callbacks(Kind::Win, 999, false).is_err());
        assert!(store.free_keyval(Kind::Comm, MPI_TAG_UB).is_err());
    }

    #[test]
    fn a_freed_keyval_lives_while_values_hold_it() {
        let mut store = AttributeStore::new();
        let key = store.create_keyval(Kind::Comm, plain());
        let object = Object::Comm(3);
        store.put(object, key, value(1));
        store.free_keyval(Kind::Comm, key).unwrap();
        assert!(store.free_keyval(Kind::Comm, key).is_err(), "a second free is an error");
        assert!(store.callbacks(Kind::Comm, key, true).is_err(), "a freed keyval cannot be set");
        assert!(store.callbacks(Kind::Comm, key, false).is_ok(), "but its value can still be read and deleted");
        assert_eq!(store.get(object, key), Some(value(1)));
        let other = store.create_keyval(Kind::Comm, plain());
        assert_ne!(other, key, "the slot is still taken");
        assert_eq!(store.remove(object, key), Some(value(1)));
        assert!(store.callbacks(Kind::Comm, key, false).is_err(), "the last value released it");
        assert_eq!(store.create_keyval(Kind::Comm, plain()), key, "its slot is reused");
    }

    #[test]
    fn values_keep_the_order_of_their_last_setting() {
        let mut store = AttributeStore::new();
        let (a, b, c) = (store.create_keyval(Kind::Comm, plain()), store.create_keyval(Kind::Comm, plain()), store.create_keyval(Kind::Comm, plain()));
        let object = Object::Comm(2);
        store.put(object, a, value(1));
        store.put(object, b, value(2));
        store.put(object, c, value(3));
        store.put(object, a, value(4));
        let order: Vec<(c_int, *mut c_void)> = store.attributes(object).iter().map(|(at, _)| (at.keyval, at.value)).collect();
        assert_eq!(order, vec![(b, value(2)), (c, value(3)), (a, value(4))]);
        assert_eq!(store.last(object).unwrap().0, Attribute { keyval: a, value: value(4) });
        assert_eq!(store.remove(object, b), Some(value(2)));
        assert_eq!(store.remove(object, b), None);
        assert_eq!(store.get(Object::Datatype(2), a), None, "objects of different kinds are apart");
        store.remove(object, c);
        store.remove(object, a);
        assert!(store.last(object).is_none());
        assert!(store.values.is_empty());
    }

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
