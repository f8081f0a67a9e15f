//! Parallel file I/O (MPI 3.1 chapter 13): files opened collectively over a communicator, file
//! views, data access by explicit offset, individual and shared file pointer, blocking,
//! non-blocking and split collective, atomic mode, and the file error handlers.
//!
//! The open files live in a table of their own ([`with_file`]); each holds a private duplicate of
//! its communicator (the collective calls talk on it), its view ([`view::View`]), its pointers
//! and its hints. Reads and writes are positioned system calls on the file's descriptor, one per
//! file segment the view maps the data to; non-blocking ones run on a helper thread
//! ([`worker`]). The shared file pointer is a counter in a hidden file beside the file
//! ([`shared_pointer`]), so processes on every node that shares the file system move it alike.

pub mod abi;
pub mod access;
mod collective;
pub mod data;
mod modes;
mod representation;
mod shared_pointer;
mod view;
mod worker;

use std::collections::HashMap;
use std::ffi::c_int;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::consts::*;
use crate::datatype::DatatypeRef;
use crate::error::report::{apply, Target};
use crate::error::{class_text, error, MpiResult};
use shared_pointer::SharedPointer;
use view::View;

/// One open file of this process.
pub(crate) struct OpenFile {
    /// A private duplicate of the communicator the file was opened on.
    pub comm: MPI_Comm,
    pub rank: c_int,
    pub size: c_int,
    /// The ranks that aggregate collective accesses: one per node, or `cb_nodes` of them.
    pub aggregators: Vec<c_int>,
    pub path: PathBuf,
    pub file: Arc<File>,
    pub amode: c_int,
    /// The hints given at open and by MPI_File_set_info / MPI_File_set_view.
    pub hints: Vec<(String, String)>,
    pub view: Arc<View>,
    pub etype: (MPI_Datatype, DatatypeRef),
    pub filetype: (MPI_Datatype, DatatypeRef),
    /// The view's data representation: its name, as MPI_File_get_view gives it back.
    pub datarep: String,
    pub representation: representation::Representation,
    /// The individual file pointer, in etypes of the view.
    pub pointer: u64,
    pub shared: Arc<SharedPointer>,
    pub atomic: bool,
    pub errhandler: MPI_Errhandler,
    /// The result of a split collective begun and not ended yet: which kind, and its status.
    pub split: Option<(access::SplitKind, MpiResult<crate::request::Completion>)>,
}

#[derive(Default)]
pub(crate) struct FileTable {
    files: HashMap<MPI_File, OpenFile>,
    next: MPI_File,
}

static FILES: Mutex<Option<FileTable>> = Mutex::new(None);

fn with_table<R>(f: impl FnOnce(&mut FileTable) -> R) -> R {
    let mut table = FILES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(table.get_or_insert_with(FileTable::default))
}

/// Runs `f` on open file `fh`; MPI_ERR_FILE if it is none. Never called with the table locked:
/// `f` must not call it (nor MPI).
pub(crate) fn with_file<R>(fh: MPI_File, f: impl FnOnce(&mut OpenFile) -> MpiResult<R>) -> MpiResult<R> {
    with_table(|table| match table.files.get_mut(&fh) {
        Some(file) => f(file),
        None => Err(error(MPI_COMM_WORLD, MPI_ERR_FILE, format!("{fh} is not an open file"))),
    })
}

fn insert(file: OpenFile) -> MPI_File {
    with_table(|table| {
        table.next += 1;
        let handle = table.next;
        table.files.insert(handle, file);
        handle
    })
}

fn remove(fh: MPI_File) -> Option<OpenFile> {
    with_table(|table| table.files.remove(&fh))
}

/// Whether `fh` is an open file.
pub(crate) fn is_open(fh: MPI_File) -> bool {
    with_table(|table| table.files.contains_key(&fh))
}

/// The error handler of open file `fh` (None: not open; MPI_FILE_NULL's applies).
pub(crate) fn errhandler(fh: MPI_File) -> Option<MPI_Errhandler> {
    with_table(|table| table.files.get(&fh).map(|file| file.errhandler))
}

/// Attaches `handler` to open file `fh`; returns the one it replaces.
pub(crate) fn set_errhandler(fh: MPI_File, handler: MPI_Errhandler) -> Option<MPI_Errhandler> {
    with_table(|table| table.files.get_mut(&fh).map(|file| std::mem::replace(&mut file.errhandler, handler)))
}

/// Ends a file call: its error goes through the handler of `fh` (MPI_FILE_NULL's when it is not
/// open), whose default is MPI_ERRORS_RETURN (MPI 3.1 §13.7).
pub(crate) fn finish_file(fh: MPI_File, function: &str, result: MpiResult<()>) -> c_int {
    match result {
        Ok(()) => MPI_SUCCESS,
        Err(e) => {
            let target = if is_open(fh) { fh } else { MPI_FILE_NULL };
            apply(Target::File(target), e.class, || format!("Braid: {function}: {}: {}", class_text(e.class), e.detail))
        }
    }
}

/// A file error (reported through the file's handler by [`finish_file`]).
pub(crate) fn file_error(class: c_int, detail: impl Into<String>) -> crate::error::MpiError {
    error(MPI_COMM_WORLD, class, detail)
}

/// A failed system call on the file at `path`, with the standard's class.
pub(crate) fn system_error(what: &str, path: &std::path::Path, failure: &std::io::Error) -> crate::error::MpiError {
    file_error(modes::class_of(failure), format!("{what} {}: {failure}", path.display()))
}
