//! File manipulation (MPI 3.1 §13.2, §13.3, §13.6): open and close, delete, size, group, mode,
//! hints, views, atomicity, sync, the individual and shared file pointers' positions.

// The safety contract of the MPI_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::representation::{Conversion, Representation};
use super::shared_pointer::{hidden_path, SharedPointer};
use super::view::{View, ViewError};
use super::{file_error, finish_file, insert, modes, remove, system_error, with_file, OpenFile};
use crate::consts::*;
use crate::datatype;
use crate::error::{write_c_string, MpiResult};
use crate::info::abi::c_text;
use crate::runtime;

/// The hints a file reports (MPI_File_get_info) with the values it uses, before any given.
pub(crate) const DEFAULT_HINTS: &[(&str, &str)] = &[
    ("cb_buffer_size", "16777216"),
    ("romio_cb_read", "automatic"),
    ("romio_cb_write", "automatic"),
    ("romio_ds_read", "automatic"),
    ("romio_ds_write", "disable"),
    ("ind_rd_buffer_size", "4194304"),
    ("ind_wr_buffer_size", "524288"),
    ("romio_no_indep_rw", "false"),
];

/// The value of hint `key` for `hints` (given ones, then the defaults).
pub(crate) fn hint<'a>(hints: &'a [(String, String)], key: &str) -> Option<&'a str> {
    hints.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str()).or_else(|| DEFAULT_HINTS.iter().find(|(k, _)| *k == key).map(|(_, v)| *v))
}

/// A file name with ROMIO's file-system prefix (`ufs:`, `nfs:` ...) removed: every one is a
/// POSIX file system here.
fn path_of(filename: &str) -> PathBuf {
    const PREFIXES: &[&str] = &["ufs:", "nfs:", "lustre:", "gpfs:", "panfs:", "pvfs2:", "xfs:", "testfs:"];
    let stripped = PREFIXES.iter().find_map(|prefix| filename.strip_prefix(prefix)).unwrap_or(filename);
    PathBuf::from(stripped)
}

/// Runs a collective call of the C interface on the file's private communicator: its code.
pub(crate) fn check_collective(code: c_int, what: &str) -> MpiResult<()> {
    if code == MPI_SUCCESS {
        Ok(())
    } else {
        let mut class = code;
        // SAFETY: an int out-parameter.
        unsafe { crate::error::codes::abi::MPI_Error_class(code, &mut class) };
        Err(file_error(class, format!("the file's processes could not {what}")))
    }
}

/// Agrees on an outcome: the largest error class any process of `comm` had (0: none).
pub(crate) fn agree(comm: MPI_Comm, class: c_int) -> MpiResult<c_int> {
    let mut worst = 0;
    // SAFETY: one int each way on a valid communicator.
    let code = unsafe { crate::coll::abi::MPI_Allreduce((&class as *const c_int).cast(), (&mut worst as *mut c_int).cast(), 1, MPI_INT, MPI_MAX, comm) };
    check_collective(code, "agree on the outcome")?;
    Ok(worst)
}

/// Rank 0's `value` on every process of `comm`.
pub(crate) fn broadcast<T: Copy>(comm: MPI_Comm, value: &mut T) -> MpiResult<()> {
    // SAFETY: `value` is `size_of::<T>()` bytes of plain data on every process.
    let code = unsafe { crate::coll::abi::MPI_Bcast((value as *mut T).cast::<c_void>(), std::mem::size_of::<T>() as c_int, MPI_BYTE, 0, comm) };
    check_collective(code, "share a value")
}

pub(crate) fn barrier(comm: MPI_Comm) -> MpiResult<()> {
    // SAFETY: a valid communicator.
    check_collective(unsafe { crate::coll::abi::MPI_Barrier(comm) }, "meet")
}

/// The aggregators of collective accesses: the first rank of each node of the communicator, then
/// (for a `cb_nodes` larger than the nodes) more ranks of each node in turn, at most `wanted`.
fn aggregators(node_of_rank: &[u64], wanted: Option<usize>) -> Vec<c_int> {
    let mut nodes: Vec<(u64, Vec<c_int>)> = Vec::new();
    for (rank, &node) in node_of_rank.iter().enumerate() {
        match nodes.iter_mut().find(|(known, _)| *known == node) {
            Some((_, ranks)) => ranks.push(rank as c_int),
            None => nodes.push((node, vec![rank as c_int])),
        }
    }
    let wanted = wanted.unwrap_or(nodes.len()).clamp(1, node_of_rank.len().max(1));
    let mut chosen = Vec::with_capacity(wanted);
    let mut depth = 0;
    while chosen.len() < wanted {
        for (_, ranks) in &nodes {
            if let Some(&rank) = ranks.get(depth) {
                if chosen.len() < wanted {
                    chosen.push(rank);
                }
            }
        }
        depth += 1;
    }
    chosen.sort_unstable();
    chosen
}

/// A private duplicate of `comm` whose errors return (the file reports them itself), this
/// process's rank, the size, and the node of each rank (a process of another job on a node of
/// its own).
fn duplicate(comm: MPI_Comm) -> MpiResult<(MPI_Comm, c_int, c_int, Vec<u64>)> {
    let (rank, inter, nodes) = runtime::with(|rt| {
        let found = rt.comms.get(comm)?;
        let nodes = found.shared.members.iter().map(|&job| if rt.engine.is_joined(job) { u64::from(job) << 32 } else { u64::from(rt.engine.node_id(job)) }).collect::<Vec<u64>>();
        Ok((found.shared.rank as c_int, found.shared.is_inter(), nodes))
    })
    .map_err(|e| file_error(e.class, e.detail))?;
    if inter {
        return Err(file_error(MPI_ERR_COMM, "files are opened on intracommunicators"));
    }
    let mut private = MPI_COMM_NULL;
    // SAFETY: a valid communicator and an out-parameter.
    check_collective(unsafe { crate::comm::construct::MPI_Comm_dup(comm, &mut private) }, "duplicate the communicator")?;
    // SAFETY: the new communicator and a predefined handler.
    unsafe { crate::error::handlers::abi::MPI_Comm_set_errhandler(private, MPI_ERRORS_RETURN) };
    Ok((private, rank, nodes.len() as c_int, nodes))
}

fn free_comm(mut comm: MPI_Comm) {
    // SAFETY: the file's private communicator, freed once.
    unsafe { crate::comm::abi::MPI_Comm_free(&mut comm) };
}

/// Opens `path` as `amode` asks, without creating it.
fn open_local(path: &Path, amode: c_int) -> std::io::Result<File> {
    File::options().read(modes::can_read(amode)).write(modes::can_write(amode)).open(path)
}

/// Rank 0 creates the file when asked to (before the others open it): the class of its failure.
fn create_on_root(path: &Path, amode: c_int) -> c_int {
    if amode & MPI_MODE_CREATE == 0 {
        return 0;
    }
    let mut options = File::options();
    options.write(true);
    if amode & MPI_MODE_EXCL != 0 {
        options.create_new(true);
    } else {
        options.create(true);
    }
    options.open(path).map_or_else(|failure| modes::class_of(&failure), |_| 0)
}

/// The hidden file of the shared pointer, at `start`: rank 0 makes it and tells the others where.
fn shared_pointer(comm: MPI_Comm, rank: c_int, path: &Path, start: u64) -> MpiResult<SharedPointer> {
    static OPENS: AtomicU32 = AtomicU32::new(0);
    let mut name = [0u8; 4096];
    if rank == 0 {
        let tag = format!("{}-{}", std::process::id(), OPENS.fetch_add(1, Ordering::Relaxed));
        let beside = hidden_path(path, &tag, true);
        let made = SharedPointer::create(&beside, start).map(|()| beside).or_else(|_| {
            let elsewhere = hidden_path(path, &tag, false);
            SharedPointer::create(&elsewhere, start).map(|()| elsewhere)
        });
        if let Ok(made) = made {
            let text = made.to_string_lossy();
            let len = text.len().min(name.len() - 1);
            name[..len].copy_from_slice(&text.as_bytes()[..len]);
        }
    }
    broadcast(comm, &mut name)?;
    let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let opened = (len > 0).then(|| SharedPointer::open(Path::new(&*String::from_utf8_lossy(&name[..len])))).transpose();
    let class = match &opened {
        Ok(Some(_)) => 0,
        _ => MPI_ERR_IO,
    };
    if agree(comm, class)? != 0 {
        return Err(file_error(MPI_ERR_IO, format!("cannot make the shared file pointer of {}", path.display())));
    }
    Ok(opened.ok().flatten().expect("agreed that every process opened it"))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_open(comm: MPI_Comm, filename: *const c_char, amode: c_int, info: MPI_Info, fh: *mut MPI_File) -> c_int {
    let result = (|| {
        if fh.is_null() {
            return Err(file_error(MPI_ERR_ARG, "fh must not be NULL"));
        }
        // SAFETY: a NUL-terminated string per MPI.
        let name = unsafe { c_text(filename, "filename") }.map_err(|e| file_error(e.class, e.detail))?.into_owned();
        modes::check_amode(amode).map_err(|why| file_error(MPI_ERR_AMODE, why))?;
        let hints = crate::info::entries(info).map_err(|e| file_error(e.class, e.detail))?;
        let path = path_of(&name);
        let (private, rank, size, nodes) = duplicate(comm)?;
        let aggregators = aggregators(&nodes, hint(&hints, "cb_nodes").and_then(|value| value.parse().ok()));
        let opened = (|| {
            let mut created = if rank == 0 { create_on_root(&path, amode) } else { 0 };
            broadcast(private, &mut created)?;
            if created != 0 {
                return Err(file_error(created, format!("cannot create {}", path.display())));
            }
            let file = open_local(&path, amode);
            let class = file.as_ref().err().map_or(0, modes::class_of);
            let worst = agree(private, class)?;
            let file = match file {
                Err(failure) => return Err(system_error("cannot open", &path, &failure)),
                Ok(_) if worst != 0 => return Err(file_error(worst, format!("another process could not open {}", path.display()))),
                Ok(file) => file,
            };
            // MPI_MODE_APPEND: both pointers start at the end of the file.
            let start = if amode & MPI_MODE_APPEND != 0 { file.metadata().map(|m| m.len()).unwrap_or(0) } else { 0 };
            let shared = shared_pointer(private, rank, &path, start)?;
            let errhandler = runtime::with(|rt| {
                let handler = rt.errhandlers.file_default();
                rt.errhandlers.add_reference(handler);
                Ok(handler)
            })
            .unwrap_or(MPI_ERRORS_RETURN);
            let byte = datatype::lookup(MPI_BYTE).map_err(|class| file_error(class, "MPI_BYTE"))?;
            Ok(OpenFile {
                comm: private,
                rank,
                size,
                aggregators,
                path: path.clone(),
                file: Arc::new(file),
                amode,
                hints,
                view: Arc::new(View::bytes()),
                etype: (MPI_BYTE, byte.clone()),
                filetype: (MPI_BYTE, byte),
                datarep: "native".into(),
                representation: Representation::Native,
                pointer: start,
                shared: Arc::new(shared),
                atomic: false,
                errhandler,
                split: None,
            })
        })();
        match opened {
            Ok(open) => {
                // SAFETY: checked non-null.
                unsafe { *fh = insert(open) };
                Ok(())
            }
            Err(failure) => {
                free_comm(private);
                Err(failure)
            }
        }
    })();
    finish_file(MPI_FILE_NULL, "MPI_File_open", result)
}

/// Whether the open file has been removed from the file system (by another program): its data
/// goes nowhere once it is closed.
fn removed(file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    file.metadata().is_ok_and(|metadata| metadata.nlink() == 0)
}

fn removed_error(path: &Path) -> crate::error::MpiError {
    file_error(MPI_ERR_IO, format!("{} was removed while open: what was written to it is lost with it", path.display()))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_close(fh: *mut MPI_File) -> c_int {
    // SAFETY: checked non-null; the caller's handle.
    let handle = if fh.is_null() { MPI_FILE_NULL } else { unsafe { *fh } };
    let result = (|| {
        if fh.is_null() {
            return Err(file_error(MPI_ERR_ARG, "fh must not be NULL"));
        }
        let (comm, rank, gone) = with_file(handle, |file| Ok((file.comm, file.rank, removed(&file.file))))?;
        // Every process is done with the file before it may go away.
        barrier(comm)?;
        let open = remove(handle).expect("checked open");
        drop(open.file);
        if rank == 0 {
            let _ = std::fs::remove_file(open.shared.path());
            if open.amode & MPI_MODE_DELETE_ON_CLOSE != 0 {
                std::fs::remove_file(&open.path).map_err(|failure| system_error("cannot delete", &open.path, &failure))?;
            }
        }
        let _ = runtime::with(|rt| rt.errhandlers.release(open.errhandler, false).map_err(|why| file_error(MPI_ERR_INTERN, why)));
        free_comm(comm);
        // SAFETY: checked non-null.
        unsafe { *fh = MPI_FILE_NULL };
        if gone {
            return Err(removed_error(&open.path));
        }
        Ok(())
    })();
    finish_file(handle, "MPI_File_close", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_delete(filename: *const c_char, _info: MPI_Info) -> c_int {
    let result = (|| {
        // SAFETY: a NUL-terminated string per MPI.
        let name = unsafe { c_text(filename, "filename") }.map_err(|e| file_error(e.class, e.detail))?;
        let path = path_of(&name);
        std::fs::remove_file(&path).map_err(|failure| system_error("cannot delete", &path, &failure))
    })();
    finish_file(MPI_FILE_NULL, "MPI_File_delete", result)
}

/// Rank 0 changes the file's size (`grow_only`: preallocation) and every process learns how it went.
fn resize(fh: MPI_File, size: MPI_Offset, grow_only: bool) -> MpiResult<()> {
    if size < 0 {
        return Err(file_error(MPI_ERR_ARG, format!("size {size} is negative")));
    }
    let (comm, rank, file, path, amode) = with_file(fh, |file| Ok((file.comm, file.rank, file.file.clone(), file.path.clone(), file.amode)))?;
    if amode & MPI_MODE_SEQUENTIAL != 0 {
        return Err(file_error(MPI_ERR_UNSUPPORTED_OPERATION, "a file opened with MPI_MODE_SEQUENTIAL cannot change its size"));
    }
    if !modes::can_write(amode) {
        return Err(file_error(MPI_ERR_READ_ONLY, "the file is open read-only"));
    }
    let mut class = 0;
    if rank == 0 {
        let done = if grow_only { braid_sys::file::preallocate(&file, size as u64) } else { file.set_len(size as u64) };
        class = done.err().map_or(0, |failure| modes::class_of(&failure));
    }
    broadcast(comm, &mut class)?;
    if class != 0 {
        return Err(file_error(class, format!("cannot change the size of {}", path.display())));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_size(fh: MPI_File, size: MPI_Offset) -> c_int {
    finish_file(fh, "MPI_File_set_size", resize(fh, size, false))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_preallocate(fh: MPI_File, size: MPI_Offset) -> c_int {
    finish_file(fh, "MPI_File_preallocate", resize(fh, size, true))
}

/// Writes `value` through a non-null out-parameter.
///
/// # Safety
/// `out` must be NULL or valid for writes.
unsafe fn put<T>(out: *mut T, what: &str, value: T) -> MpiResult<()> {
    if out.is_null() {
        return Err(file_error(MPI_ERR_ARG, format!("{what} must not be NULL")));
    }
    // SAFETY: checked non-null; the caller's variable.
    unsafe { out.write(value) };
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_size(fh: MPI_File, size: *mut MPI_Offset) -> c_int {
    let result = with_file(fh, |file| file.file.metadata().map(|m| m.len() as MPI_Offset).map_err(|failure| system_error("cannot read the size of", &file.path, &failure)))
        // SAFETY: the caller's out-parameter.
        .and_then(|len| unsafe { put(size, "size", len) });
    finish_file(fh, "MPI_File_get_size", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_group(fh: MPI_File, group: *mut MPI_Group) -> c_int {
    let result = with_file(fh, |file| Ok(file.comm)).and_then(|comm| {
        if group.is_null() {
            return Err(file_error(MPI_ERR_ARG, "group must not be NULL"));
        }
        // SAFETY: the private communicator and a non-null out-parameter.
        check_collective(unsafe { crate::comm::abi::MPI_Comm_group(comm, group) }, "name their group")
    });
    finish_file(fh, "MPI_File_get_group", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_amode(fh: MPI_File, amode: *mut c_int) -> c_int {
    // SAFETY: the caller's out-parameter.
    let result = with_file(fh, |file| Ok(file.amode)).and_then(|mode| unsafe { put(amode, "amode", mode) });
    finish_file(fh, "MPI_File_get_amode", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_info(fh: MPI_File, info: MPI_Info) -> c_int {
    let result = crate::info::entries(info).map_err(|e| file_error(e.class, e.detail)).and_then(|given| {
        with_file(fh, |file| {
            file.hints.extend(given);
            Ok(())
        })
    });
    finish_file(fh, "MPI_File_set_info", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_info(fh: MPI_File, info_used: *mut MPI_Info) -> c_int {
    let result = with_file(fh, |file| {
        let mut used: Vec<(String, String)> = DEFAULT_HINTS.iter().map(|(k, _)| (k.to_string(), hint(&file.hints, k).unwrap_or_default().to_string())).collect();
        for (key, value) in &file.hints {
            match used.iter_mut().find(|(k, _)| k == key) {
                Some(entry) => entry.1 = value.clone(),
                None => used.push((key.clone(), value.clone())),
            }
        }
        Ok(used)
    })
    .and_then(|used| crate::info::create(used).map_err(|e| file_error(e.class, e.detail)))
    // SAFETY: the caller's out-parameter.
    .and_then(|info| unsafe { put(info_used, "info_used", info) });
    finish_file(fh, "MPI_File_get_info", result)
}

/// MPI_Register_datarep(_c).
///
/// # Safety
/// `datarep` must be NULL or a NUL-terminated string.
unsafe fn register_datarep(name: &str, datarep: *const c_char, read: Option<Conversion>, write: Option<Conversion>, extent: Option<MPI_Datarep_extent_function>, extra_state: *mut c_void) -> c_int {
    // SAFETY: a NUL-terminated string per the caller.
    let result = unsafe { c_text(datarep, "datarep") }.map_err(|e| file_error(e.class, e.detail)).and_then(|datarep| super::representation::register(&datarep, read, write, extent, extra_state));
    finish_file(MPI_FILE_NULL, name, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Register_datarep(
    datarep: *const c_char,
    read_conversion_fn: Option<MPI_Datarep_conversion_function>,
    write_conversion_fn: Option<MPI_Datarep_conversion_function>,
    dtype_file_extent_fn: Option<MPI_Datarep_extent_function>,
    extra_state: *mut c_void,
) -> c_int {
    let (read, write) = (read_conversion_fn.map(Conversion::Int), write_conversion_fn.map(Conversion::Int));
    // SAFETY: the caller's string.
    unsafe { register_datarep("MPI_Register_datarep", datarep, read, write, dtype_file_extent_fn, extra_state) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Register_datarep_c(
    datarep: *const c_char,
    read_conversion_fn: Option<MPI_Datarep_conversion_function_c>,
    write_conversion_fn: Option<MPI_Datarep_conversion_function_c>,
    dtype_file_extent_fn: Option<MPI_Datarep_extent_function>,
    extra_state: *mut c_void,
) -> c_int {
    let (read, write) = (read_conversion_fn.map(Conversion::Large), write_conversion_fn.map(Conversion::Large));
    // SAFETY: the caller's string.
    unsafe { register_datarep("MPI_Register_datarep_c", datarep, read, write, dtype_file_extent_fn, extra_state) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_view(fh: MPI_File, disp: MPI_Offset, etype: MPI_Datatype, filetype: MPI_Datatype, datarep: *const c_char, info: MPI_Info) -> c_int {
    let result = (|| {
        // SAFETY: a NUL-terminated string per MPI.
        let datarep = unsafe { c_text(datarep, "datarep") }.map_err(|e| file_error(e.class, e.detail))?.into_owned();
        let representation = Representation::named(&datarep)?;
        let given = crate::info::entries(info).map_err(|e| file_error(e.class, e.detail))?;
        let etype_info = datatype::lookup_committed(etype).map_err(|class| file_error(class, format!("etype {etype} is not a committed datatype")))?;
        let filetype_info = datatype::lookup_committed(filetype).map_err(|class| file_error(class, format!("filetype {filetype} is not a committed datatype")))?;
        // The view's arithmetic is in the file's bytes: the types as they lie there.
        let (etype_in_file, filetype_in_file) = (representation.file_type(&etype_info)?, representation.file_type(&filetype_info)?);
        let (comm, rank, amode, shared) = with_file(fh, |file| Ok((file.comm, file.rank, file.amode, file.shared.clone())))?;
        let disp = if disp == MPI_DISPLACEMENT_CURRENT as MPI_Offset {
            if amode & MPI_MODE_SEQUENTIAL == 0 {
                return Err(file_error(MPI_ERR_ARG, "MPI_DISPLACEMENT_CURRENT is for files opened with MPI_MODE_SEQUENTIAL"));
            }
            let (view, etype_size) = with_file(fh, |file| Ok((file.view.clone(), file.view.etype_size)))?;
            let position = shared.get().map_err(|failure| file_error(MPI_ERR_IO, failure.to_string()))?;
            view.file_offset(position * etype_size) as MPI_Offset
        } else if disp < 0 {
            return Err(file_error(MPI_ERR_ARG, format!("displacement {disp} is negative")));
        } else {
            disp
        };
        let view = View::new(disp as u64, etype_in_file.size as u64, &filetype_in_file.byte_runs(1), filetype_in_file.extent).map_err(|why| {
            let detail = match why {
                ViewError::Decreasing => "the filetype's displacements must be nonnegative and nondecreasing",
                ViewError::Overlapping => "the filetype's data reaches past its extent, so its copies would overlap",
                ViewError::NotEtypes => "the filetype's data is not a whole number of etypes",
            };
            file_error(MPI_ERR_TYPE, detail)
        })?;
        // Both file pointers go back to the view's start.
        if rank == 0 {
            shared.set(0).map_err(|failure| file_error(MPI_ERR_IO, failure.to_string()))?;
        }
        barrier(comm)?;
        with_file(fh, |file| {
            file.view = Arc::new(view);
            file.etype = (etype, etype_info);
            file.filetype = (filetype, filetype_info);
            file.datarep = datarep;
            file.representation = representation;
            file.pointer = 0;
            file.hints.extend(given);
            Ok(())
        })
    })();
    finish_file(fh, "MPI_File_set_view", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_view(fh: MPI_File, disp: *mut MPI_Offset, etype: *mut MPI_Datatype, filetype: *mut MPI_Datatype, datarep: *mut c_char) -> c_int {
    let result = (|| {
        if disp.is_null() || etype.is_null() || filetype.is_null() || datarep.is_null() {
            return Err(file_error(MPI_ERR_ARG, "disp, etype, filetype and datarep must not be NULL"));
        }
        let (offset, (etype_handle, etype_info), (filetype_handle, filetype_info), representation) =
            with_file(fh, |file| Ok((file.view.disp, file.etype.clone(), file.filetype.clone(), file.datarep.clone())))?;
        let etype_out = datatype::handle_for_contents(etype_handle, &etype_info.shared()).map_err(|e| file_error(e.class, e.detail))?;
        let filetype_out = datatype::handle_for_contents(filetype_handle, &filetype_info.shared()).map_err(|e| file_error(e.class, e.detail))?;
        // SAFETY: checked non-null; the caller's variables, `datarep` of MPI_MAX_DATAREP_STRING.
        unsafe {
            *disp = offset as MPI_Offset;
            *etype = etype_out;
            *filetype = filetype_out;
            write_c_string(&representation, datarep, MPI_MAX_DATAREP_STRING as usize);
        }
        Ok(())
    })();
    finish_file(fh, "MPI_File_get_view", result)
}

/// A type's extent in the file (MPI_File_get_type_extent and its `_c` form): in the native
/// representation its extent in memory; in another, its extent as the type lies there.
///
/// # Safety
/// `extent` must be NULL or writable.
unsafe fn type_extent<T: TryFrom<isize>>(name: &str, fh: MPI_File, datatype: MPI_Datatype, extent: *mut T) -> c_int {
    let result = with_file(fh, |file| Ok(file.representation.clone()))
        .and_then(|representation| {
            let info = datatype::lookup(datatype).map_err(|class| file_error(class, format!("{datatype} is not a datatype")))?;
            let in_file = representation.file_type(&info)?.extent;
            T::try_from(in_file).map_err(|_| file_error(MPI_ERR_VALUE_TOO_LARGE, format!("the extent {in_file} does not fit the result")))
        })
        // SAFETY: the caller's out-parameter.
        .and_then(|value| unsafe { put(extent, "extent", value) });
    finish_file(fh, name, result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_type_extent(fh: MPI_File, datatype: MPI_Datatype, extent: *mut MPI_Aint) -> c_int {
    // SAFETY: the caller's out-parameter.
    unsafe { type_extent("MPI_File_get_type_extent", fh, datatype, extent) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_type_extent_c(fh: MPI_File, datatype: MPI_Datatype, extent: *mut MPI_Count) -> c_int {
    // SAFETY: the caller's out-parameter.
    unsafe { type_extent("MPI_File_get_type_extent_c", fh, datatype, extent) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_set_atomicity(fh: MPI_File, flag: c_int) -> c_int {
    let result = with_file(fh, |file| {
        file.atomic = flag != 0;
        Ok(file.comm)
    })
    .and_then(barrier);
    finish_file(fh, "MPI_File_set_atomicity", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_atomicity(fh: MPI_File, flag: *mut c_int) -> c_int {
    // SAFETY: the caller's out-parameter.
    let result = with_file(fh, |file| Ok(c_int::from(file.atomic))).and_then(|atomic| unsafe { put(flag, "flag", atomic) });
    finish_file(fh, "MPI_File_get_atomicity", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_sync(fh: MPI_File) -> c_int {
    let result = with_file(fh, |file| {
        if !modes::can_write(file.amode) {
            return Ok(());
        }
        file.file.sync_all().map_err(|failure| system_error("cannot sync", &file.path, &failure))?;
        if removed(&file.file) {
            return Err(removed_error(&file.path));
        }
        Ok(())
    });
    finish_file(fh, "MPI_File_sync", result)
}

/// Where a seek lands, in etypes: `offset` from the start, the current position or the end of
/// the visible data.
fn seek_target(file: &OpenFile, current: u64, offset: MPI_Offset, whence: c_int) -> MpiResult<u64> {
    let base = match whence {
        MPI_SEEK_SET => 0,
        MPI_SEEK_CUR => current as i128,
        MPI_SEEK_END => {
            let size = file.file.metadata().map_err(|failure| system_error("cannot read the size of", &file.path, &failure))?.len();
            (file.view.visible_before(size) / file.view.etype_size) as i128
        }
        other => return Err(file_error(MPI_ERR_ARG, format!("whence {other} is none of MPI_SEEK_SET, MPI_SEEK_CUR and MPI_SEEK_END"))),
    };
    u64::try_from(base + offset as i128).map_err(|_| file_error(MPI_ERR_ARG, format!("the seek would land before the view's start ({offset} from {base})")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_seek(fh: MPI_File, offset: MPI_Offset, whence: c_int) -> c_int {
    let result = with_file(fh, |file| {
        if file.amode & MPI_MODE_SEQUENTIAL != 0 {
            return Err(file_error(MPI_ERR_UNSUPPORTED_OPERATION, "a file opened with MPI_MODE_SEQUENTIAL has no individual file pointer"));
        }
        file.pointer = seek_target(file, file.pointer, offset, whence)?;
        Ok(())
    });
    finish_file(fh, "MPI_File_seek", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_position(fh: MPI_File, offset: *mut MPI_Offset) -> c_int {
    // SAFETY: the caller's out-parameter.
    let result = with_file(fh, |file| Ok(file.pointer as MPI_Offset)).and_then(|at| unsafe { put(offset, "offset", at) });
    finish_file(fh, "MPI_File_get_position", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_byte_offset(fh: MPI_File, offset: MPI_Offset, disp: *mut MPI_Offset) -> c_int {
    let result = with_file(fh, |file| {
        let position = u64::try_from(offset).map_err(|_| file_error(MPI_ERR_ARG, format!("offset {offset} is negative")))?;
        Ok(file.view.file_offset(position * file.view.etype_size) as MPI_Offset)
    })
    // SAFETY: the caller's out-parameter.
    .and_then(|at| unsafe { put(disp, "disp", at) });
    finish_file(fh, "MPI_File_get_byte_offset", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_seek_shared(fh: MPI_File, offset: MPI_Offset, whence: c_int) -> c_int {
    let result = (|| {
        let (comm, rank, shared) = with_file(fh, |file| Ok((file.comm, file.rank, file.shared.clone())))?;
        let current = shared.get().map_err(|failure| file_error(MPI_ERR_IO, failure.to_string()))?;
        // Every process gets the same arguments; one moves the pointer once all have read it.
        let target = with_file(fh, |file| seek_target(file, current, offset, whence))?;
        barrier(comm)?;
        if rank == 0 {
            shared.set(target).map_err(|failure| file_error(MPI_ERR_IO, failure.to_string()))?;
        }
        barrier(comm)
    })();
    finish_file(fh, "MPI_File_seek_shared", result)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_get_position_shared(fh: MPI_File, offset: *mut MPI_Offset) -> c_int {
    let result = with_file(fh, |file| Ok(file.shared.clone()))
        .and_then(|shared| shared.get().map_err(|failure| file_error(MPI_ERR_IO, failure.to_string())))
        // SAFETY: the caller's out-parameter.
        .and_then(|at| unsafe { put(offset, "offset", at as MPI_Offset) });
    finish_file(fh, "MPI_File_get_position_shared", result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn romio_prefixes_name_the_same_file() {
        assert_eq!(path_of("ufs:/tmp/a"), PathBuf::from("/tmp/a"));
        assert_eq!(path_of("/tmp/a:b"), PathBuf::from("/tmp/a:b"));
    }

    #[test]
    fn aggregators_are_one_per_node_unless_cb_nodes_asks_for_more() {
        let nodes = [7, 7, 9, 9, 9, 4];
        assert_eq!(aggregators(&nodes, None), vec![0, 2, 5]);
        assert_eq!(aggregators(&nodes, Some(5)), vec![0, 1, 2, 3, 5]);
        assert_eq!(aggregators(&nodes, Some(1)), vec![0]);
        assert_eq!(aggregators(&nodes, Some(100)).len(), 6);
    }

    #[test]
    fn hints_given_win_over_the_defaults() {
        let given = vec![("cb_buffer_size".to_string(), "1024".to_string())];
        assert_eq!(hint(&given, "cb_buffer_size"), Some("1024"));
        assert_eq!(hint(&given, "romio_ds_write"), Some("disable"));
        assert_eq!(hint(&given, "no_such_hint"), None);
    }
}
