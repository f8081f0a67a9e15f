//! The data representation of a file view (MPI-3.1 §13.5): `native` (and `internal`, which is
//! Braid's choice of native), `external32`, or one the program registered with
//! MPI_Register_datarep. A representation says how large each datatype is in the file and
//! converts the program's data to and from the stream of file bytes its view sees.

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

use super::file_error;
use crate::consts::*;
use crate::datatype::{self, DatatypeRef, TypeInfo};
use crate::error::MpiResult;

/// A conversion callback in the form it was registered with.
#[derive(Clone, Copy)]
pub(crate) enum Conversion {
    Int(MPI_Datarep_conversion_function),
    Large(MPI_Datarep_conversion_function_c),
}

/// A representation the program registered: its callbacks, `None` where it gave
/// MPI_CONVERSION_FN_NULL (the data is then written and read as it lies in memory).
pub(crate) struct Registered {
    name: String,
    read: Option<Conversion>,
    write: Option<Conversion>,
    extent: MPI_Datarep_extent_function,
    /// The program's `extra_state`, handed back to every callback.
    extra_state: usize,
}

/// The representations registered so far; MPI keeps them until the program ends.
static REGISTERED: Mutex<Vec<Arc<Registered>>> = Mutex::new(Vec::new());

const PREDEFINED: [&str; 3] = ["native", "internal", "external32"];

#[derive(Clone)]
pub(crate) enum Representation {
    Native,
    External32,
    User(Arc<Registered>),
}

impl Representation {
    /// The representation called `name`; MPI_ERR_UNSUPPORTED_DATAREP for an unknown name.
    pub fn named(name: &str) -> MpiResult<Representation> {
        match name {
            "native" | "internal" => Ok(Representation::Native),
            "external32" => Ok(Representation::External32),
            other => {
                let known = registered();
                match known.iter().find(|registered| registered.name == other) {
                    Some(found) => Ok(Representation::User(found.clone())),
                    None => {
                        let names: Vec<&str> = PREDEFINED.iter().copied().chain(known.iter().map(|registered| registered.name.as_str())).collect();
                        Err(file_error(MPI_ERR_UNSUPPORTED_DATAREP, format!("no data representation named {other:?} (there are {})", names.join(", "))))
                    }
                }
            }
        }
    }

    pub fn is_native(&self) -> bool {
        matches!(self, Representation::Native)
    }

    /// `info` as it lies in a file of this representation (its byte runs and extent there).
    pub fn file_type(&self, info: &DatatypeRef) -> MpiResult<Arc<TypeInfo>> {
        let shared = info.shared();
        match self {
            Representation::Native => Ok(shared),
            Representation::External32 => datatype::in_representation(&shared, &mut |_, basic| Ok(datatype::external_size(basic))),
            Representation::User(registered) => datatype::in_representation(&shared, &mut |named, _| registered.extent_of(named)),
        }
    }

    /// `count` elements of `handle` at `buffer` as file data of this representation: `file_bytes`
    /// bytes, in type-map order (natively, packed).
    ///
    /// # Safety
    /// `buffer` must hold `count` elements of the datatype.
    pub unsafe fn encode(&self, buffer: *const u8, count: usize, handle: MPI_Datatype, info: &DatatypeRef, file_bytes: usize) -> MpiResult<Vec<u8>> {
        let mut stream = vec![0u8; file_bytes];
        match self {
            Representation::Native => {
                // SAFETY: per the caller.
                unsafe { info.pack(count, buffer, &mut stream) }
            }
            Representation::External32 => {
                // SAFETY: per the caller; `stream` holds the external32 form of the elements.
                unsafe { datatype::to_external32(info, count, buffer, &mut stream) }.map_err(|failure| file_error(failure.class, failure.detail))?;
            }
            Representation::User(registered) => match registered.write {
                // SAFETY: per the caller; `stream` holds the file form of the elements.
                Some(write) => unsafe { registered.convert(write, buffer.cast_mut().cast(), count, handle, &mut stream, "write") }?,
                None => {
                    registered.same_as_memory(info, count, file_bytes)?;
                    // SAFETY: per the caller.
                    unsafe { info.pack(count, buffer, &mut stream) }
                }
            },
        }
        Ok(stream)
    }

    /// Puts `stream` (file data of this representation) into the program's buffer; returns the
    /// bytes that reached it in memory (packed), the count the status reports. Natively every
    /// byte, the basic elements of a last partial element included; otherwise the whole elements,
    /// converted.
    ///
    /// # Safety
    /// `buffer` must hold the elements, writable.
    pub unsafe fn decode(&self, buffer: *mut u8, handle: MPI_Datatype, info: &DatatypeRef, file_size: usize, stream: &[u8]) -> MpiResult<usize> {
        let whole = stream.len().checked_div(file_size).unwrap_or(0);
        let data = &stream[..whole * file_size];
        match self {
            Representation::Native => {
                // SAFETY: per the caller.
                unsafe { info.unpack_received(stream.len(), stream, buffer) };
                return Ok(stream.len());
            }
            Representation::External32 => {
                // SAFETY: per the caller; `data` holds `whole` elements in external32.
                unsafe { datatype::from_external32(info, whole, data, buffer) }.map_err(|failure| file_error(failure.class, failure.detail))?;
            }
            Representation::User(registered) => match registered.read {
                // SAFETY: per the caller; the conversion reads `data` and writes the elements.
                Some(read) => unsafe { registered.convert(read, buffer.cast(), whole, handle, &mut data.to_vec(), "read") }?,
                None => {
                    registered.same_as_memory(info, whole, data.len())?;
                    // SAFETY: per the caller.
                    unsafe { info.unpack(whole, data, buffer) }
                }
            },
        }
        Ok(whole * info.size)
    }
}

impl Registered {
    /// The extent in the file of the predefined type `named`, as the program's function says.
    fn extent_of(&self, named: MPI_Datatype) -> MpiResult<usize> {
        let mut extent: MPI_Aint = 0;
        // SAFETY: the program's extent function, called as MPI defines it.
        let code = unsafe { (self.extent)(named, &mut extent, self.extra_state as *mut c_void) };
        if code != MPI_SUCCESS {
            return Err(file_error(MPI_ERR_CONVERSION, format!("the extent function of data representation {:?} failed with code {code}", self.name)));
        }
        usize::try_from(extent).map_err(|_| file_error(MPI_ERR_CONVERSION, format!("the extent function of data representation {:?} gave {extent} bytes", self.name)))
    }

    /// Without a conversion function the data goes as it lies in memory, which only fits a file
    /// whose extents are the memory sizes.
    fn same_as_memory(&self, info: &DatatypeRef, count: usize, file_bytes: usize) -> MpiResult<()> {
        if info.size * count == file_bytes {
            Ok(())
        } else {
            Err(file_error(
                MPI_ERR_CONVERSION,
                format!(
                    "data representation {:?} has no conversion function, but its extents make {count} elements {file_bytes} bytes in the file, not the {} they take in memory",
                    self.name,
                    info.size * count
                ),
            ))
        }
    }

    /// Runs a conversion over `count` elements: the int form in pieces of at most `INT_MAX`
    /// elements (`position` says where each starts), the large form at once.
    ///
    /// # Safety
    /// `buffer` must hold `count` elements of `handle`; `stream` their file form.
    unsafe fn convert(&self, conversion: Conversion, buffer: *mut c_void, count: usize, handle: MPI_Datatype, stream: &mut [u8], what: &str) -> MpiResult<()> {
        let extra = self.extra_state as *mut c_void;
        let code = match conversion {
            // SAFETY: the program's conversion function, called as MPI defines it.
            Conversion::Large(function) => unsafe { function(buffer, handle, count as MPI_Count, stream.as_mut_ptr().cast(), 0, extra) },
            Conversion::Int(function) => {
                let per_element = stream.len().checked_div(count).unwrap_or(0);
                let mut done = 0usize;
                let mut code = MPI_SUCCESS;
                while done < count && code == MPI_SUCCESS {
                    let piece = (count - done).min(c_int::MAX as usize);
                    let file_part = stream[done * per_element..].as_mut_ptr().cast();
                    // SAFETY: as above; `position` skips the elements converted already.
                    code = unsafe { function(buffer, handle, piece as c_int, file_part, done as MPI_Offset, extra) };
                    done += piece;
                }
                code
            }
        };
        if code == MPI_SUCCESS {
            Ok(())
        } else {
            Err(file_error(MPI_ERR_CONVERSION, format!("the {what} conversion function of data representation {:?} failed with code {code}", self.name)))
        }
    }
}

fn registered() -> std::sync::MutexGuard<'static, Vec<Arc<Registered>>> {
    REGISTERED.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// MPI_Register_datarep(_c): `read` and `write` are None for MPI_CONVERSION_FN_NULL.
pub(crate) fn register(name: &str, read: Option<Conversion>, write: Option<Conversion>, extent: Option<MPI_Datarep_extent_function>, extra_state: *mut c_void) -> MpiResult<()> {
    let name = name.to_string();
    if name.len() >= MPI_MAX_DATAREP_STRING as usize {
        return Err(file_error(MPI_ERR_ARG, format!("datarep is longer than MPI_MAX_DATAREP_STRING ({MPI_MAX_DATAREP_STRING}) characters")));
    }
    let extent = extent.ok_or_else(|| file_error(MPI_ERR_ARG, "dtype_file_extent_fn must be a function"))?;
    let mut known = registered();
    if PREDEFINED.contains(&name.as_str()) || known.iter().any(|registered| registered.name == name) {
        return Err(file_error(MPI_ERR_DUP_DATAREP, format!("a data representation named {name:?} exists already")));
    }
    known.push(Arc::new(Registered { name, read, write, extent, extra_state: extra_state as usize }));
    Ok(())
}
