//! Error classes and codes (MPI 3.1 §8.4-8.5): the predefined classes and their texts, and the
//! classes, codes and texts a program adds. A predefined code is its own class; added classes and
//! codes share one numbering from MPI_ERR_LASTCODE + 1 up, and the MPI_LASTUSEDCODE attribute
//! follows the last one added. The lookups that reach the state and the MPI_Error_* and
//! MPI_Add_error_* calls are in [`abi`].

pub mod abi;

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::consts::*;

/// The value of the MPI_LASTUSEDCODE attribute (MPI_Comm_get_attr points at it).
pub static LAST_USED_CODE: AtomicI32 = AtomicI32::new(MPI_ERR_LASTCODE);

/// The text of a predefined error class.
pub fn class_text(class: c_int) -> &'static str {
    match class {
        MPI_SUCCESS => "no error",
        MPI_ERR_BUFFER => "invalid buffer pointer",
        MPI_ERR_COUNT => "invalid count argument",
        MPI_ERR_TYPE => "invalid datatype",
        MPI_ERR_TAG => "invalid tag",
        MPI_ERR_COMM => "invalid communicator",
        MPI_ERR_RANK => "invalid rank",
        MPI_ERR_ROOT => "invalid root",
        MPI_ERR_GROUP => "invalid group",
        MPI_ERR_OP => "invalid reduction operation",
        MPI_ERR_TOPOLOGY => "invalid topology",
        MPI_ERR_DIMS => "invalid dimension argument",
        MPI_ERR_ARG => "invalid argument",
        MPI_ERR_UNKNOWN => "unknown error",
        MPI_ERR_TRUNCATE => "message truncated",
        MPI_ERR_OTHER => "other error",
        MPI_ERR_INTERN => "internal error",
        MPI_ERR_IN_STATUS => "error code is in status",
        MPI_ERR_PENDING => "pending request",
        MPI_ERR_REQUEST => "invalid request",
        MPI_ERR_ACCESS => "permission denied",
        MPI_ERR_AMODE => "invalid file access mode",
        MPI_ERR_BAD_FILE => "invalid file name",
        MPI_ERR_CONVERSION => "data conversion error",
        MPI_ERR_DUP_DATAREP => "data representation already defined",
        MPI_ERR_FILE_EXISTS => "file exists",
        MPI_ERR_FILE_IN_USE => "file in use",
        MPI_ERR_FILE => "invalid file handle",
        MPI_ERR_INFO => "invalid info object",
        MPI_ERR_INFO_KEY => "info key too long",
        MPI_ERR_INFO_VALUE => "info value too long",
        MPI_ERR_INFO_NOKEY => "info key not defined",
        MPI_ERR_IO => "I/O error",
        MPI_ERR_NAME => "invalid service name",
        MPI_ERR_NO_MEM => "out of memory",
        MPI_ERR_NOT_SAME => "collective arguments differ between processes",
        MPI_ERR_NO_SPACE => "not enough space",
        MPI_ERR_NO_SUCH_FILE => "no such file",
        MPI_ERR_PORT => "invalid port name",
        MPI_ERR_QUOTA => "quota exceeded",
        MPI_ERR_READ_ONLY => "read-only file or file system",
        MPI_ERR_SERVICE => "invalid service",
        MPI_ERR_SPAWN => "spawn failed",
        MPI_ERR_UNSUPPORTED_DATAREP => "unsupported data representation",
        MPI_ERR_UNSUPPORTED_OPERATION => "unsupported operation",
        MPI_ERR_WIN => "invalid window",
        MPI_ERR_BASE => "invalid base address",
        MPI_ERR_LOCKTYPE => "invalid lock type",
        MPI_ERR_KEYVAL => "invalid attribute key",
        MPI_ERR_RMA_CONFLICT => "conflicting window accesses",
        MPI_ERR_RMA_SYNC => "wrong window synchronisation",
        MPI_ERR_SIZE => "invalid size",
        MPI_ERR_DISP => "invalid displacement",
        MPI_ERR_ASSERT => "invalid assert argument",
        MPI_ERR_RMA_RANGE => "target memory outside the window",
        MPI_ERR_RMA_ATTACH => "memory cannot be attached",
        MPI_ERR_RMA_SHARED => "memory cannot be shared",
        MPI_ERR_RMA_FLAVOR => "wrong window flavor",
        MPI_T_ERR_MEMORY => "tool interface: out of memory",
        MPI_T_ERR_NOT_INITIALIZED => "tool interface not initialized",
        MPI_T_ERR_CANNOT_INIT => "tool interface cannot be initialized now",
        MPI_T_ERR_INVALID_INDEX => "tool interface: invalid or out-of-range index",
        MPI_T_ERR_INVALID_ITEM => "tool interface: item index out of range",
        MPI_T_ERR_INVALID_HANDLE => "tool interface: invalid handle",
        MPI_T_ERR_OUT_OF_HANDLES => "tool interface: no more handles",
        MPI_T_ERR_OUT_OF_SESSIONS => "tool interface: no more sessions",
        MPI_T_ERR_INVALID_SESSION => "tool interface: invalid session",
        MPI_T_ERR_CVAR_SET_NOT_NOW => "control variable cannot be set now",
        MPI_T_ERR_CVAR_SET_NEVER => "control variable can no longer be set",
        MPI_T_ERR_PVAR_NO_STARTSTOP => "performance variable cannot be started or stopped",
        MPI_T_ERR_PVAR_NO_WRITE => "performance variable cannot be written or reset",
        MPI_T_ERR_PVAR_NO_ATOMIC => "performance variable cannot be read and reset atomically",
        MPI_T_ERR_INVALID_NAME => "tool interface: no variable or category of that name",
        MPI_T_ERR_INVALID => "tool interface: invalid use",
        MPI_ERR_SESSION => "invalid session",
        MPI_ERR_PROC_ABORTED => "a process of the operation has aborted",
        MPI_ERR_VALUE_TOO_LARGE => "a value is too large to be stored",
        MPI_ERR_ERRHANDLER => "invalid error handler",
        _ => "unknown error class",
    }
}

/// Whether `code` is a predefined error code (which is also its class).
fn is_predefined(code: c_int) -> bool {
    (MPI_SUCCESS..=MPI_ERR_LASTCODE).contains(&code)
}

/// An error class or code a program added.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AddedCode {
    /// Its class: itself for an added class.
    class: c_int,
    /// Empty until MPI_Add_error_string.
    text: String,
    /// Removed by MPI_Remove_error_class or MPI_Remove_error_code (its number is not reused).
    removed: bool,
}

/// The classes and codes added by MPI_Add_error_class and MPI_Add_error_code: entry i is number
/// MPI_ERR_LASTCODE + 1 + i.
#[derive(Debug, Default)]
pub struct ErrorCodes {
    added: Vec<AddedCode>,
}

impl ErrorCodes {
    pub fn new() -> ErrorCodes {
        LAST_USED_CODE.store(MPI_ERR_LASTCODE, Ordering::Relaxed);
        ErrorCodes::default()
    }

    /// The live added class or code numbered `code`.
    fn added(&self, code: c_int) -> Option<&AddedCode> {
        let index = usize::try_from(code.checked_sub(MPI_ERR_LASTCODE + 1)?).ok()?;
        self.added.get(index).filter(|added| !added.removed)
    }

    fn added_mut(&mut self, code: c_int) -> Option<&mut AddedCode> {
        let index = usize::try_from(code.checked_sub(MPI_ERR_LASTCODE + 1)?).ok()?;
        self.added.get_mut(index).filter(|added| !added.removed)
    }

    /// MPI_Remove_error_class: an added class without codes of its own left.
    pub fn remove_class(&mut self, class: c_int) -> Result<(), String> {
        if is_predefined(class) || !self.is_class(class) {
            return Err(format!("{class} is not an error class that MPI_Add_error_class made"));
        }
        let codes = self.added.iter().enumerate().filter(|(index, added)| !added.removed && added.class == class && MPI_ERR_LASTCODE + 1 + *index as c_int != class).count();
        if codes > 0 {
            return Err(format!("error class {class} still has {codes} error codes: remove them first"));
        }
        let added = self.added_mut(class).expect("checked above");
        if added.removed {
            return Err(format!("error class {class} was removed already"));
        }
        if !added.text.is_empty() {
            return Err(format!("error class {class} still has a string: remove it first (MPI_Remove_error_string)"));
        }
        added.removed = true;
        Ok(())
    }

    /// MPI_Remove_error_code: an added code (not a class).
    pub fn remove_code(&mut self, code: c_int) -> Result<(), String> {
        match self.added_mut(code) {
            Some(added) if added.class != code && added.removed => Err(format!("error code {code} was removed already")),
            Some(added) if added.class != code && !added.text.is_empty() => Err(format!("error code {code} still has a string: remove it first (MPI_Remove_error_string)")),
            Some(added) if added.class != code => {
                added.removed = true;
                Ok(())
            }
            _ => Err(format!("{code} is not an error code that MPI_Add_error_code made")),
        }
    }

    /// MPI_Remove_error_string: forgets the text of an added class or code.
    pub fn remove_text(&mut self, code: c_int) -> Result<(), String> {
        let added = self.added_mut(code).ok_or_else(|| format!("{code} is not an added error class or code"))?;
        if added.text.is_empty() {
            return Err(format!("error code {code} has no string to remove"));
        }
        added.text.clear();
        Ok(())
    }

    fn push(&mut self, class: Option<c_int>) -> c_int {
        let code = MPI_ERR_LASTCODE + 1 + self.added.len() as c_int;
        self.added.push(AddedCode { class: class.unwrap_or(code), text: String::new(), removed: false });
        LAST_USED_CODE.store(code, Ordering::Relaxed);
        code
    }

    /// A new error class.
    pub fn add_class(&mut self) -> c_int {
        self.push(None)
    }

    /// A new error code of `class` (predefined or added; MPI_SUCCESS is not an error class here).
    pub fn add_code(&mut self, class: c_int) -> Result<c_int, String> {
        if !self.is_class(class) || class == MPI_SUCCESS {
            return Err(format!("{class} is not an error class"));
        }
        Ok(self.push(Some(class)))
    }

    /// Sets the text of an added class or code (predefined texts cannot change).
    pub fn set_text(&mut self, code: c_int, text: &str) -> Result<(), String> {
        if is_predefined(code) {
            return Err(format!("{code} is a predefined error code; only added codes take a string"));
        }
        self.added_mut(code).ok_or_else(|| format!("{code} is not an error code"))?.text = text.to_string();
        Ok(())
    }

    /// Whether `class` is an error class, predefined or added.
    pub fn is_class(&self, class: c_int) -> bool {
        is_predefined(class) || self.added(class).is_some_and(|added| added.class == class)
    }

    /// The class of `code`, None if it is not an error code.
    pub fn class_of(&self, code: c_int) -> Option<c_int> {
        if is_predefined(code) {
            return Some(code);
        }
        self.added(code).map(|added| added.class)
    }

    /// The text of `code` (empty for an added code without one), None if it is not an error code.
    pub fn text(&self, code: c_int) -> Option<&str> {
        if is_predefined(code) {
            return Some(class_text(code));
        }
        self.added(code).map(|added| added.text.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_classes_and_codes_are_gone_and_a_class_goes_after_its_codes() {
        let mut codes = ErrorCodes::new();
        let class = codes.add_class();
        let code = codes.add_code(class).unwrap();
        codes.set_text(code, "disk on fire").unwrap();
        assert!(codes.remove_class(class).is_err(), "a class with a code left");
        assert!(codes.remove_code(class).is_err(), "a class is not a code");
        codes.remove_text(code).unwrap();
        assert_eq!(codes.text(code), Some(""));
        assert!(codes.remove_text(code).is_err(), "no string left to remove");
        codes.remove_code(code).unwrap();
        assert_eq!(codes.class_of(code), None);
        codes.remove_class(class).unwrap();
        assert!(!codes.is_class(class));
        assert!(codes.remove_class(MPI_ERR_TAG).is_err() && codes.remove_code(MPI_ERR_TAG).is_err());
        assert_ne!(codes.add_class(), class, "numbers are not reused");
    }

    #[test]
    fn every_class_has_its_own_text() {
        let mut texts: Vec<&str> = (MPI_SUCCESS..=MPI_ERR_LASTCODE).map(class_text).collect();
        assert!(texts.iter().all(|t| *t != "unknown error class"));
        texts.sort();
        texts.dedup();
        assert_eq!(texts.len(), (MPI_ERR_LASTCODE + 1) as usize);
        assert_eq!(class_text(MPI_ERR_LASTCODE + 1), "unknown error class");
    }

    #[test]
    fn added_classes_and_codes_are_numbered_after_the_predefined_ones() {
        let mut codes = ErrorCodes::default();
        let class = codes.add_class();
        assert_eq!(class, MPI_ERR_LASTCODE + 1);
        let code = codes.add_code(class).unwrap();
        assert_eq!(code, MPI_ERR_LASTCODE + 2);
        let arg_code = codes.add_code(MPI_ERR_ARG).unwrap();
        assert_eq!(codes.class_of(class), Some(class));
        assert_eq!(codes.class_of(code), Some(class));
        assert_eq!(codes.class_of(arg_code), Some(MPI_ERR_ARG));
        assert_eq!(codes.class_of(MPI_ERR_RANK), Some(MPI_ERR_RANK));
        assert_eq!(codes.class_of(arg_code + 1), None);
        assert_eq!(codes.class_of(-1), None);
        assert!(codes.is_class(class) && !codes.is_class(code));
    }

    #[test]
    fn codes_are_not_classes_for_new_codes() {
        let mut codes = ErrorCodes::default();
        let class = codes.add_class();
        let code = codes.add_code(class).unwrap();
        assert!(codes.add_code(code).is_err());
        assert!(codes.add_code(MPI_SUCCESS).is_err());
        assert!(codes.add_code(code + 1).is_err());
        assert!(codes.add_code(-3).is_err());
    }

    #[test]
    fn only_added_codes_take_texts() {
        let mut codes = ErrorCodes::default();
        let class = codes.add_class();
        let code = codes.add_code(class).unwrap();
        assert_eq!(codes.text(code), Some(""));
        codes.set_text(code, "disk on fire").unwrap();
        codes.set_text(class, "hardware").unwrap();
        assert_eq!(codes.text(code), Some("disk on fire"));
        assert_eq!(codes.text(class), Some("hardware"));
        codes.set_text(code, "disk still on fire").unwrap();
        assert_eq!(codes.text(code), Some("disk still on fire"));
        assert!(codes.set_text(MPI_ERR_ARG, "mine").is_err());
        assert!(codes.set_text(code + 1, "nobody's").is_err());
        assert_eq!(codes.text(MPI_ERR_ARG), Some("invalid argument"));
        assert_eq!(codes.text(code + 1), None);
    }
}
