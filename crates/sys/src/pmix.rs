//! A PMIx client through the OpenPMIx library, loaded when a PMIx launcher started the process
//! (`srun --mpi=pmix`, Open MPI's `mpirun`, PRRTE's `prterun`): nothing links against it, so
//! Braid runs where it is not installed. The structures mirror `pmix_common.h` of the PMIx
//! standard's stable ABI (OpenPMIx 4 and 5): a process name of 256 + 4 bytes, a value of 32 (type
//! at 0, data at 8), an info of 552 (key, flags at 512, value at 520).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;

const NSPACE_BYTES: usize = 256;
const KEY_BYTES: usize = 512;

/// `pmix_rank_t` meaning every process of a namespace.
pub const RANK_WILDCARD: u32 = u32::MAX - 1;

const STATUS_SUCCESS: c_int = 0;
/// `PMIX_ERR_NOT_FOUND`.
const STATUS_NOT_FOUND: c_int = -46;
const SCOPE_GLOBAL: u8 = 3;
const TYPE_BOOL: u16 = 1;
const TYPE_SIZE: u16 = 4;
const TYPE_INT: u16 = 6;
const TYPE_INT32: u16 = 9;
const TYPE_UINT: u16 = 11;
const TYPE_UINT16: u16 = 13;
const TYPE_UINT32: u16 = 14;
const TYPE_STRING: u16 = 3;
const TYPE_PROC_RANK: u16 = 40;

/// `pmix_proc_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Proc {
    nspace: [c_char; NSPACE_BYTES],
    rank: u32,
}

/// `pmix_value_t`: a type tag and a 24-byte union.
#[repr(C)]
#[derive(Clone, Copy)]
struct Value {
    kind: u16,
    data: [u64; 3],
}

/// `pmix_info_t`.
#[repr(C)]
struct Info {
    key: [c_char; KEY_BYTES],
    flags: u32,
    value: Value,
}

type InitFn = unsafe extern "C" fn(*mut Proc, *mut Info, usize) -> c_int;
type FinalizeFn = unsafe extern "C" fn(*const Info, usize) -> c_int;
type GetFn = unsafe extern "C" fn(*const Proc, *const c_char, *const Info, usize, *mut *mut Value) -> c_int;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut Value) -> c_int;
type CommitFn = unsafe extern "C" fn() -> c_int;
type FenceFn = unsafe extern "C" fn(*const Proc, usize, *const Info, usize) -> c_int;
type AbortFn = unsafe extern "C" fn(c_int, *const c_char, *mut Proc, usize) -> c_int;
type DestructFn = unsafe extern "C" fn(*mut Value);
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;
type PublishFn = unsafe extern "C" fn(*const Info, usize) -> c_int;
type LookupFn = unsafe extern "C" fn(*mut LookupData, usize, *const Info, usize) -> c_int;
type UnpublishFn = unsafe extern "C" fn(*mut *mut c_char, *const Info, usize) -> c_int;

/// `pmix_pdata_t`: who published a key, the key, its value.
#[repr(C)]
struct LookupData {
    proc: Proc,
    key: [c_char; KEY_BYTES],
    value: Value,
}

/// The optional calls: a library or server may lack them, which the calls then say.
#[derive(Clone, Copy)]
struct Optional {
    publish: Option<PublishFn>,
    lookup: Option<LookupFn>,
    unpublish: Option<UnpublishFn>,
}

/// What went wrong, and the library's words for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmixError {
    pub call: &'static str,
    pub reason: String,
}

impl fmt::Display for PmixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.call, self.reason)
    }
}

impl std::error::Error for PmixError {}

/// A value read from the PMIx server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PmixValue {
    Number(u64),
    Text(String),
    Flag(bool),
    /// Of a type Braid does not read (its PMIx type number).
    Other(u16),
}

/// This process as a PMIx client: initialised, and finalised when dropped.
pub struct PmixClient {
    me: Proc,
    get: GetFn,
    put: PutFn,
    commit: CommitFn,
    fence: FenceFn,
    abort: AbortFn,
    finalize: FinalizeFn,
    destruct: DestructFn,
    error_string: ErrorStringFn,
    optional: Optional,
    finalized: bool,
}

// SAFETY: the function pointers are process-wide; PMIx's client calls are thread-safe, and Braid
// calls them from one thread at a time.
unsafe impl Send for PmixClient {}

/// Looks `name` up in `library` as a function of type `F`.
///
/// # Safety
/// `library` must be a live handle from dlopen, and `F` the symbol's true function type.
unsafe fn symbol<F: Copy>(library: *mut c_void, name: &CStr) -> Result<F, PmixError> {
    // SAFETY: per the caller; dlsym takes a NUL-terminated name.
    let address = unsafe { libc::dlsym(library, name.as_ptr()) };
    if address.is_null() {
        return Err(PmixError { call: "dlsym", reason: format!("the PMIx library has no {}", name.to_string_lossy()) });
    }
    debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: a non-null symbol of type `F` per the caller; function pointers are pointer-sized.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) })
}

impl PmixClient {
    /// Loads `library` (such as `libpmix.so.2`) and connects to the PMIx server that started
    /// this process.
    pub fn connect(library: &str) -> Result<PmixClient, PmixError> {
        let name = CString::new(library).map_err(|_| PmixError { call: "dlopen", reason: format!("{library:?} is no library name") })?;
        // PMIx loads plug-ins of its own that resolve its symbols: the library must be global.
        // SAFETY: a NUL-terminated name.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if handle.is_null() {
            // SAFETY: dlerror returns NULL or a NUL-terminated message.
            let why = unsafe { libc::dlerror() };
            let reason = if why.is_null() { "unknown error".to_string() } else { unsafe { CStr::from_ptr(why) }.to_string_lossy().into_owned() };
            return Err(PmixError { call: "dlopen", reason: format!("cannot load {library}: {reason} (install OpenPMIx, such as Debian's libpmix2)") });
        }
        // SAFETY: each symbol is looked up in the live handle with its type from pmix.h.
        let (init, get, put, commit, fence, abort, finalize, destruct, error_string) = unsafe {
            (
                symbol::<InitFn>(handle, c"PMIx_Init")?,
                symbol::<GetFn>(handle, c"PMIx_Get")?,
                symbol::<PutFn>(handle, c"PMIx_Put")?,
                symbol::<CommitFn>(handle, c"PMIx_Commit")?,
                symbol::<FenceFn>(handle, c"PMIx_Fence")?,
                symbol::<AbortFn>(handle, c"PMIx_Abort")?,
                symbol::<FinalizeFn>(handle, c"PMIx_Finalize")?,
                symbol::<DestructFn>(handle, c"PMIx_Value_destruct")?,
                symbol::<ErrorStringFn>(handle, c"PMIx_Error_string")?,
            )
        };
        // SAFETY: as above; a library without one of these says so when it is called.
        let optional = unsafe {
            Optional {
                publish: symbol::<PublishFn>(handle, c"PMIx_Publish").ok(),
                lookup: symbol::<LookupFn>(handle, c"PMIx_Lookup").ok(),
                unpublish: symbol::<UnpublishFn>(handle, c"PMIx_Unpublish").ok(),
            }
        };
        let mut me = Proc { nspace: [0; NSPACE_BYTES], rank: 0 };
        // SAFETY: PMIx_Init fills in `me`; no info.
        let status = unsafe { init(&mut me, std::ptr::null_mut(), 0) };
        // The library stays loaded for good (the handle is never closed): its threads may
        // outlive PMIx_Finalize.
        let mut client = PmixClient { me, get, put, commit, fence, abort, finalize, destruct, error_string, optional, finalized: true };
        client.check("PMIx_Init", status)?;
        client.finalized = false;
        Ok(client)
    }

    fn check(&self, call: &'static str, status: c_int) -> Result<(), PmixError> {
        if status == STATUS_SUCCESS {
            return Ok(());
        }
        // SAFETY: PMIx_Error_string returns a static NUL-terminated string.
        let text = unsafe { (self.error_string)(status) };
        let words = if text.is_null() { String::new() } else { unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned() };
        Err(PmixError { call, reason: format!("status {status} ({words})") })
    }

    /// The namespace (job) of this process.
    pub fn namespace(&self) -> String {
        // SAFETY: PMIx_Init wrote a NUL-terminated namespace within the array.
        unsafe { CStr::from_ptr(self.me.nspace.as_ptr()) }.to_string_lossy().into_owned()
    }

    /// This process's rank in its namespace.
    pub fn rank(&self) -> u32 {
        self.me.rank
    }

    /// The value of `key` that process `rank` of this namespace posted (or, with
    /// [`RANK_WILDCARD`], that the server holds for the job); `None` when there is none.
    pub fn get(&self, rank: u32, key: &str) -> Result<Option<PmixValue>, PmixError> {
        let key = key_of(key)?;
        let proc = Proc { rank, ..self.me };
        let mut value: *mut Value = std::ptr::null_mut();
        // SAFETY: valid process name and key; PMIx_Get allocates `value` on success.
        let status = unsafe { (self.get)(&proc, key.as_ptr(), std::ptr::null(), 0, &mut value) };
        if status == STATUS_NOT_FOUND {
            return Ok(None);
        }
        self.check("PMIx_Get", status)?;
        if value.is_null() {
            return Ok(None);
        }
        // SAFETY: PMIx_Get returned a valid value, read by its type tag, then released as
        // PMIX_VALUE_RELEASE does.
        unsafe {
            let read = read_value(&*value);
            (self.destruct)(value);
            libc::free(value.cast());
            Ok(Some(read))
        }
    }

    /// Posts `key` = `value` for every process of the job to read after the next fence.
    pub fn put(&self, key: &str, value: &str) -> Result<(), PmixError> {
        let key = key_of(key)?;
        let text = CString::new(value).map_err(|_| PmixError { call: "PMIx_Put", reason: "the value holds a NUL byte".into() })?;
        let mut value = text_value(&text);
        // SAFETY: PMIx_Put copies the string value; `text` outlives the call.
        let status = unsafe { (self.put)(SCOPE_GLOBAL, key.as_ptr(), &mut value) };
        self.check("PMIx_Put", status)
    }

    /// Pushes the posted values to the server.
    pub fn commit(&self) -> Result<(), PmixError> {
        // SAFETY: no arguments.
        let status = unsafe { (self.commit)() };
        self.check("PMIx_Commit", status)
    }

    /// Waits for every process of the job, collecting what each posted.
    pub fn fence(&self) -> Result<(), PmixError> {
        let everyone = Proc { rank: RANK_WILDCARD, ..self.me };
        let collect = Info { key: key_array(c"pmix.collect"), flags: 0, value: Value { kind: TYPE_BOOL, data: [1, 0, 0] } };
        // SAFETY: one process name and one info, both valid for the call.
        let status = unsafe { (self.fence)(&everyone, 1, &collect, 1) };
        self.check("PMIx_Fence", status)
    }

    /// Asks the server to end the job with `code`, printing `message`.
    pub fn abort(&self, code: i32, message: &str) -> Result<(), PmixError> {
        let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
        let mut everyone = Proc { rank: RANK_WILDCARD, ..self.me };
        // SAFETY: valid message and process name.
        let status = unsafe { (self.abort)(code, text.as_ptr(), &mut everyone, 1) };
        self.check("PMIx_Abort", status)
    }

    /// Publishes `value` under `key` in the server's name service, for the processes of this
    /// session (PMIx's default range).
    pub fn publish(&self, key: &str, value: &str) -> Result<(), PmixError> {
        let publish = self.optional.publish.ok_or_else(|| missing("PMIx_Publish"))?;
        let value = CString::new(value).map_err(|_| PmixError { call: "PMIx_Publish", reason: "the value holds a NUL byte".into() })?;
        let info = text_info(key, &value)?;
        // SAFETY: one info whose key and string value are valid for the call.
        let status = unsafe { publish(&info, 1) };
        self.check("PMIx_Publish", status)
    }

    /// The value published under `key`, if any (without waiting for one).
    pub fn lookup(&self, key: &str) -> Result<Option<String>, PmixError> {
        let lookup = self.optional.lookup.ok_or_else(|| missing("PMIx_Lookup"))?;
        let name = key_of(key)?;
        let mut data = LookupData { proc: Proc { nspace: [0; NSPACE_BYTES], rank: 0 }, key: key_array(&name), value: Value { kind: 0, data: [0; 3] } };
        // SAFETY: one lookup record with its key set; the server fills in its value.
        let status = unsafe { lookup(&mut data, 1, std::ptr::null(), 0) };
        if status == STATUS_NOT_FOUND {
            return Ok(None);
        }
        self.check("PMIx_Lookup", status)?;
        // SAFETY: the server filled in a valid value, read by its type tag and then released
        // as PMIX_PDATA_DESTRUCT does.
        let read = unsafe {
            let read = read_value(&data.value);
            (self.destruct)(&mut data.value);
            read
        };
        match read {
            PmixValue::Text(text) => Ok(Some(text)),
            other => Err(PmixError { call: "PMIx_Lookup", reason: format!("{key:?} holds {other:?}, not text") }),
        }
    }

    /// Withdraws what this process published under `key`.
    pub fn unpublish(&self, key: &str) -> Result<(), PmixError> {
        let unpublish = self.optional.unpublish.ok_or_else(|| missing("PMIx_Unpublish"))?;
        let name = key_of(key)?;
        let mut keys = [name.as_ptr().cast_mut(), std::ptr::null_mut()];
        // SAFETY: a NULL-terminated array of one valid key.
        let status = unsafe { unpublish(keys.as_mut_ptr(), std::ptr::null(), 0) };
        self.check("PMIx_Unpublish", status)
    }

    /// Tells the server this process ends normally.
    pub fn finalize(&mut self) -> Result<(), PmixError> {
        if self.finalized {
            return Ok(());
        }
        self.finalized = true;
        // SAFETY: no info.
        let status = unsafe { (self.finalize)(std::ptr::null(), 0) };
        self.check("PMIx_Finalize", status)
    }
}

impl Drop for PmixClient {
    fn drop(&mut self) {
        let _ = self.finalize();
    }
}

fn missing(call: &'static str) -> PmixError {
    PmixError { call, reason: format!("the PMIx library has no {call}") }
}

/// An info of key `key` whose value is the string `value` (which must outlive its use).
fn text_info(key: &str, value: &CStr) -> Result<Info, PmixError> {
    Ok(Info { key: key_array(&key_of(key)?), flags: 0, value: text_value(value) })
}

/// A string value pointing at `text` (which must outlive its use).
fn text_value(text: &CStr) -> Value {
    Value { kind: TYPE_STRING, data: [text.as_ptr() as u64, 0, 0] }
}

/// `key` as PMIx's fixed-size key field (`key_of` has checked that it fits with its NUL).
fn key_array(key: &CStr) -> [c_char; KEY_BYTES] {
    let mut array = [0; KEY_BYTES];
    for (slot, byte) in array.iter_mut().zip(key.to_bytes()) {
        *slot = *byte as c_char;
    }
    array
}

fn key_of(key: &str) -> Result<CString, PmixError> {
    if key.len() >= KEY_BYTES {
        return Err(PmixError { call: "PMIx key", reason: format!("{key:?} is longer than {} bytes", KEY_BYTES - 1) });
    }
    CString::new(key).map_err(|_| PmixError { call: "PMIx key", reason: "a key holds a NUL byte".into() })
}

/// # Safety
/// `value` must be a valid `pmix_value_t`.
unsafe fn read_value(value: &Value) -> PmixValue {
    let first = value.data[0];
    match value.kind {
        TYPE_BOOL => PmixValue::Flag(first as u8 != 0),
        TYPE_SIZE => PmixValue::Number(first),
        TYPE_UINT32 | TYPE_PROC_RANK | TYPE_UINT => PmixValue::Number(first as u32 as u64),
        TYPE_INT | TYPE_INT32 => PmixValue::Number((first as u32 as i32).max(0) as u64),
        TYPE_UINT16 => PmixValue::Number(first as u16 as u64),
        TYPE_STRING if first != 0 => {
            // SAFETY: a string value points to a NUL-terminated string.
            PmixValue::Text(unsafe { CStr::from_ptr(first as *const c_char) }.to_string_lossy().into_owned())
        }
        TYPE_STRING => PmixValue::Text(String::new()),
        other => PmixValue::Other(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structures_have_the_sizes_of_pmix_common_h() {
        assert_eq!(std::mem::size_of::<Proc>(), 260);
        assert_eq!(std::mem::size_of::<Value>(), 32);
        assert_eq!(std::mem::size_of::<Info>(), 552);
        assert_eq!(std::mem::offset_of!(Info, flags), 512);
        assert_eq!(std::mem::offset_of!(Info, value), 520);
        assert_eq!(std::mem::offset_of!(Value, data), 8);
        assert_eq!(std::mem::size_of::<LookupData>(), 808);
        assert_eq!(std::mem::offset_of!(LookupData, value), 776);
    }

    #[test]
    fn a_missing_library_is_named_in_the_error() {
        let error = PmixClient::connect("libno-such-pmix.so.9").err().expect("no such library");
        assert_eq!(error.call, "dlopen");
        assert!(error.reason.contains("libno-such-pmix.so.9"), "{}", error.reason);
    }

    #[test]
    fn keys_longer_than_pmix_allows_are_refused() {
        assert!(key_of(&"k".repeat(KEY_BYTES)).is_err());
        assert!(key_of("braid-node-3").is_ok());
    }
}
