//! MPI_Info: ordered key/value lists. MPI_INFO_ENV is predefined, empty and read-only.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, CStr};

use crate::consts::*;
use crate::error::{error, finish, write_c_string, MpiResult};
use crate::group::store;
use crate::runtime;

type Entries = Vec<(String, String)>;

/// MPI_Info handles: slot 0 is MPI_INFO_NULL, slot 1 MPI_INFO_ENV.
pub struct InfoTable {
    slots: Vec<Option<Entries>>,
}

impl Default for InfoTable {
    fn default() -> Self {
        InfoTable::new()
    }
}

impl InfoTable {
    pub fn new() -> InfoTable {
        InfoTable { slots: vec![None, Some(Vec::new())] }
    }

    pub fn get(&self, info: MPI_Info) -> MpiResult<&Entries> {
        usize::try_from(info)
            .ok()
            .and_then(|i| self.slots.get(i))
            .and_then(|s| s.as_ref())
            .ok_or_else(|| error(MPI_COMM_WORLD, MPI_ERR_INFO, format!("{info} is not a valid info object")))
    }

    fn get_mut(&mut self, info: MPI_Info) -> MpiResult<&mut Entries> {
        if info == MPI_INFO_ENV {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_INFO, "MPI_INFO_ENV cannot be modified"));
        }
        self.get(info)?;
        Ok(self.slots[info as usize].as_mut().expect("checked above"))
    }

    pub fn insert(&mut self, entries: Entries) -> MPI_Info {
        match self.slots.iter().skip(2).position(|s| s.is_none()) {
            Some(free) => {
                self.slots[free + 2] = Some(entries);
                (free + 2) as MPI_Info
            }
            None => {
                self.slots.push(Some(entries));
                (self.slots.len() - 1) as MPI_Info
            }
        }
    }

    pub fn set(&mut self, info: MPI_Info, key: &str, value: &str) -> MpiResult<()> {
        check_key(key)?;
        if value.len() > MPI_MAX_INFO_VAL as usize {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_INFO_VALUE, format!("the value of {key:?} is longer than MPI_MAX_INFO_VAL")));
        }
        let entries = self.get_mut(info)?;
        match entries.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value.to_string(),
            None => entries.push((key.to_string(), value.to_string())),
        }
        Ok(())
    }

    pub fn lookup(&self, info: MPI_Info, key: &str) -> MpiResult<Option<&str>> {
        check_key(key)?;
        Ok(self.get(info)?.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()))
    }

    pub fn delete(&mut self, info: MPI_Info, key: &str) -> MpiResult<()> {
        check_key(key)?;
        let entries = self.get_mut(info)?;
        let index = entries.iter().position(|(k, _)| k == key).ok_or_else(|| error(MPI_COMM_WORLD, MPI_ERR_INFO_NOKEY, format!("key {key:?} is not set")))?;
        entries.remove(index);
        Ok(())
    }

    pub fn free(&mut self, info: MPI_Info) -> MpiResult<()> {
        self.get_mut(info)?;
        self.slots[info as usize] = None;
        Ok(())
    }
}

fn check_key(key: &str) -> MpiResult<()> {
    if key.is_empty() || key.len() > MPI_MAX_INFO_KEY as usize {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_INFO_KEY, format!("key {key:?} is empty or longer than MPI_MAX_INFO_KEY")));
    }
    Ok(())
}

/// A C string argument.
///
/// # Safety
/// `text` must be NULL or a NUL-terminated string.
unsafe fn c_text<'a>(text: *const c_char, what: &str) -> MpiResult<std::borrow::Cow<'a, str>> {
    if text.is_null() {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("{what} must not be NULL")));
    }
    // SAFETY: non-null and NUL-terminated per the caller.
    Ok(unsafe { CStr::from_ptr(text) }.to_string_lossy())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create(info: *mut MPI_Info) -> c_int {
    let result = runtime::with(|rt| {
        let handle = rt.infos.insert(Vec::new());
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(info, handle, "info") }
    });
    finish("MPI_Info_create", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_set(info: MPI_Info, key: *const c_char, value: *const c_char) -> c_int {
    let result = runtime::with(|rt| {
        // SAFETY: MPI requires NUL-terminated strings.
        let (key, value) = unsafe { (c_text(key, "key")?, c_text(value, "value")?) };
        rt.infos.set(info, &key, &value)
    });
    finish("MPI_Info_set", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get(info: MPI_Info, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        // SAFETY: MPI requires a NUL-terminated key.
        let key = unsafe { c_text(key, "key")? };
        if valuelen < 0 {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("valuelen {valuelen} is negative")));
        }
        let found = rt.infos.lookup(info, &key)?;
        if let Some(text) = found {
            if value.is_null() {
                return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "value must not be NULL"));
            }
            // SAFETY: MPI requires `value` to hold `valuelen + 1` characters.
            unsafe { write_c_string(text, value, valuelen as usize + 1) };
        }
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(flag, c_int::from(found.is_some()), "flag") }
    });
    finish("MPI_Info_get", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_valuelen(info: MPI_Info, key: *const c_char, valuelen: *mut c_int, flag: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        // SAFETY: MPI requires a NUL-terminated key.
        let key = unsafe { c_text(key, "key")? };
        let found = rt.infos.lookup(info, &key)?;
        // SAFETY: the caller's out-pointers (NULL is rejected by store).
        unsafe {
            if let Some(text) = found {
                store(valuelen, text.len() as c_int, "valuelen")?;
            }
            store(flag, c_int::from(found.is_some()), "flag")
        }
    });
    finish("MPI_Info_get_valuelen", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_delete(info: MPI_Info, key: *const c_char) -> c_int {
    let result = runtime::with(|rt| {
        // SAFETY: MPI requires a NUL-terminated key.
        let key = unsafe { c_text(key, "key")? };
        rt.infos.delete(info, &key)
    });
    finish("MPI_Info_delete", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nkeys(info: MPI_Info, nkeys: *mut c_int) -> c_int {
    let result = runtime::with(|rt| {
        let count = rt.infos.get(info)?.len() as c_int;
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(nkeys, count, "nkeys") }
    });
    finish("MPI_Info_get_nkeys", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) -> c_int {
    let result = runtime::with(|rt| {
        let entries = rt.infos.get(info)?;
        let Some((name, _)) = usize::try_from(n).ok().and_then(|i| entries.get(i)) else {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, format!("key number {n} does not exist ({} keys)", entries.len())));
        };
        if key.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "key must not be NULL"));
        }
        // SAFETY: MPI requires `key` to hold MPI_MAX_INFO_KEY + 1 characters.
        unsafe { write_c_string(name, key, MPI_MAX_INFO_KEY as usize + 1) };
        Ok(())
    });
    finish("MPI_Info_get_nthkey", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) -> c_int {
    let result = runtime::with(|rt| {
        let copy = rt.infos.get(info)?.clone();
        let handle = rt.infos.insert(copy);
        // SAFETY: the caller's out-pointer (NULL is rejected by store).
        unsafe { store(newinfo, handle, "newinfo") }
    });
    finish("MPI_Info_dup", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_free(info: *mut MPI_Info) -> c_int {
    let result = runtime::with(|rt| {
        if info.is_null() {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_ARG, "info must not be NULL"));
        }
        // SAFETY: non-null; the caller's handle.
        unsafe {
            rt.infos.free(*info)?;
            *info = MPI_INFO_NULL;
        }
        Ok(())
    });
    finish("MPI_Info_free", result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_insertion_order_and_values_are_replaced() {
        let mut table = InfoTable::new();
        let info = table.insert(Vec::new());
        table.set(info, "b", "1").unwrap();
        table.set(info, "a", "2").unwrap();
        table.set(info, "b", "3").unwrap();
        assert_eq!(table.get(info).unwrap(), &vec![("b".to_string(), "3".to_string()), ("a".to_string(), "2".to_string())]);
        assert_eq!(table.lookup(info, "a").unwrap(), Some("2"));
        assert_eq!(table.lookup(info, "c").unwrap(), None);
    }

    #[test]
    fn errors_have_the_info_classes() {
        let mut table = InfoTable::new();
        let info = table.insert(Vec::new());
        assert_eq!(table.delete(info, "missing").unwrap_err().class, MPI_ERR_INFO_NOKEY);
        assert_eq!(table.set(info, &"k".repeat(300), "v").unwrap_err().class, MPI_ERR_INFO_KEY);
        assert_eq!(table.set(info, "k", &"v".repeat(2000)).unwrap_err().class, MPI_ERR_INFO_VALUE);
        assert_eq!(table.set(MPI_INFO_ENV, "k", "v").unwrap_err().class, MPI_ERR_INFO);
        assert_eq!(table.get(MPI_INFO_NULL).unwrap_err().class, MPI_ERR_INFO);
        table.free(info).unwrap();
        assert_eq!(table.get(info).unwrap_err().class, MPI_ERR_INFO);
        assert!(table.get(MPI_INFO_ENV).unwrap().is_empty());
    }
}
