//! Attributes (MPI 3.1 §6.7): keyvals and the values cached on communicators, datatypes and
//! windows, with their copy and delete callbacks.
//!
//! [`AttributeStore`] is the bookkeeping, free of callbacks (unit-tested); the functions of
//! [`access`] run the callbacks, always with the runtime state released, since a callback may call
//! MPI, and [`abi`] has the MPI calls.
//! Keyvals are reference counted: every cached value holds its keyval, so a keyval the program has
//! freed stays usable by the objects that still hold a value for it. Values are kept in the order
//! they were (last) set, and deleted in reverse order when their object goes away.

pub mod abi;
pub mod access;
pub mod predefined;

use std::collections::HashMap;
use std::ffi::{c_int, c_void};

use crate::consts::*;

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

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn plain() -> Callbacks {
        Callbacks { copy: None, delete: None, extra_state: std::ptr::null_mut() }
    }

    pub(super) fn value(n: usize) -> *mut c_void {
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
}
