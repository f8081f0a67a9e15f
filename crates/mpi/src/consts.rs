//! Every constant and handle type of include/mpi.h, with the same names and values.
//!
//! tests/header.rs compiles a C program against mpi.h and checks that the values agree.

#![allow(non_upper_case_globals, non_camel_case_types, non_snake_case)]
// The special pointer values are sentinels, compared and never dereferenced.
#![allow(clippy::manual_dangling_ptr)]

use std::ffi::{c_char, c_int, c_longlong, c_void};

pub type MPI_Comm = c_int;
pub type MPI_Datatype = c_int;
pub type MPI_Op = c_int;
pub type MPI_Group = c_int;
pub type MPI_Request = c_int;
pub type MPI_Errhandler = c_int;
pub type MPI_Info = c_int;
pub type MPI_Session = c_int;
pub const MPI_SESSION_NULL: MPI_Session = 0;
pub type MPI_Win = c_int;
pub type MPI_File = c_int;
pub type MPI_Message = c_int;
pub type MPI_Aint = isize;
pub type MPI_Offset = c_longlong;
pub type MPI_Count = c_longlong;
pub type MPI_Fint = c_int;

/// MPI's status: the received byte count is split over `count_lo` (low 32 bits) and
/// `count_hi_and_cancelled` (bit 0: cancelled, bits 1..: count bits 32..).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MPI_Status {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub MPI_SOURCE: c_int,
    pub MPI_TAG: c_int,
    pub MPI_ERROR: c_int,
}

/// `void MPI_User_function(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype)`.
pub type MPI_User_function = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut MPI_Datatype);
/// `void MPI_User_function_c(void *invec, void *inoutvec, MPI_Count *len, MPI_Datatype *datatype)`.
pub type MPI_User_function_c = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut MPI_Count, *mut MPI_Datatype);
/// Attribute copy callback (MPI_Comm_create_keyval).
pub type MPI_Comm_copy_attr_function = unsafe extern "C" fn(MPI_Comm, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// Attribute delete callback (MPI_Comm_create_keyval).
pub type MPI_Comm_delete_attr_function = unsafe extern "C" fn(MPI_Comm, c_int, *mut c_void, *mut c_void) -> c_int;
/// Attribute copy callback (MPI_Type_create_keyval).
pub type MPI_Type_copy_attr_function = unsafe extern "C" fn(MPI_Datatype, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// Attribute delete callback (MPI_Type_create_keyval).
pub type MPI_Type_delete_attr_function = unsafe extern "C" fn(MPI_Datatype, c_int, *mut c_void, *mut c_void) -> c_int;
/// Attribute copy callback (MPI_Win_create_keyval).
pub type MPI_Win_copy_attr_function = unsafe extern "C" fn(MPI_Win, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// Attribute delete callback (MPI_Win_create_keyval).
pub type MPI_Win_delete_attr_function = unsafe extern "C" fn(MPI_Win, c_int, *mut c_void, *mut c_void) -> c_int;
/// MPI-1 attribute copy callback (MPI_Keyval_create).
pub type MPI_Copy_function = unsafe extern "C" fn(MPI_Comm, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// MPI-1 attribute delete callback (MPI_Keyval_create).
pub type MPI_Delete_function = unsafe extern "C" fn(MPI_Comm, c_int, *mut c_void, *mut c_void) -> c_int;
/// Generalized request callbacks (MPI_Grequest_start): `query_fn(extra_state, status)`,
/// `free_fn(extra_state)` and `cancel_fn(extra_state, complete)`.
pub type MPI_Grequest_query_function = unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int;
pub type MPI_Grequest_free_function = unsafe extern "C" fn(*mut c_void) -> c_int;
pub type MPI_Grequest_cancel_function = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
/// `void MPI_Comm_errhandler_function(MPI_Comm *, int *, ...)`.
pub type MPI_Comm_errhandler_function = unsafe extern "C" fn(*mut MPI_Comm, *mut c_int, ...);
/// `void MPI_Win_errhandler_function(MPI_Win *, int *, ...)`.
pub type MPI_Win_errhandler_function = unsafe extern "C" fn(*mut MPI_Win, *mut c_int, ...);
/// `void MPI_File_errhandler_function(MPI_File *, int *, ...)`.
pub type MPI_File_errhandler_function = unsafe extern "C" fn(*mut MPI_File, *mut c_int, ...);
/// `void MPI_Session_errhandler_function(MPI_Session *, int *, ...)`.
pub type MPI_Session_errhandler_function = MPI_Comm_errhandler_function;
/// MPI-1's name for MPI_Comm_errhandler_function (MPI_Errhandler_create).
pub type MPI_Handler_function = unsafe extern "C" fn(*mut MPI_Comm, *mut c_int, ...);
pub const MPI_VERSION: c_int = 4;
pub const MPI_SUBVERSION: c_int = 1;
pub const BRAID: c_int = 1;

// Null handles
pub const MPI_COMM_NULL: MPI_Comm = 0;
pub const MPI_DATATYPE_NULL: MPI_Datatype = 0;
pub const MPI_OP_NULL: MPI_Op = 0;
pub const MPI_GROUP_NULL: MPI_Group = 0;
pub const MPI_REQUEST_NULL: MPI_Request = 0;
pub const MPI_ERRHANDLER_NULL: MPI_Errhandler = 0;
pub const MPI_INFO_NULL: MPI_Info = 0;
pub const MPI_WIN_NULL: MPI_Win = 0;
pub const MPI_FILE_NULL: MPI_File = 0;
pub const MPI_MESSAGE_NULL: MPI_Message = 0;

// Predefined communicators, groups, error handlers, infos
pub const MPI_COMM_WORLD: MPI_Comm = 1;
pub const MPI_COMM_SELF: MPI_Comm = 2;
pub const MPI_GROUP_EMPTY: MPI_Group = 1;
pub const MPI_ERRORS_ARE_FATAL: MPI_Errhandler = 1;
pub const MPI_ERRORS_RETURN: MPI_Errhandler = 2;
/// MPI 4.0: ends the processes of the communicator's group, as MPI_Abort on it would (which in
/// Braid ends the whole job).
pub const MPI_ERRORS_ABORT: MPI_Errhandler = 3;
pub const MPI_INFO_ENV: MPI_Info = 1;
/// The message a matched probe of MPI_PROC_NULL returns.
pub const MPI_MESSAGE_NO_PROC: MPI_Message = 1;

// Predefined datatypes
pub const MPI_CHAR: MPI_Datatype = 1;
pub const MPI_SIGNED_CHAR: MPI_Datatype = 2;
pub const MPI_UNSIGNED_CHAR: MPI_Datatype = 3;
pub const MPI_BYTE: MPI_Datatype = 4;
pub const MPI_WCHAR: MPI_Datatype = 5;
pub const MPI_SHORT: MPI_Datatype = 6;
pub const MPI_UNSIGNED_SHORT: MPI_Datatype = 7;
pub const MPI_INT: MPI_Datatype = 8;
pub const MPI_UNSIGNED: MPI_Datatype = 9;
pub const MPI_LONG: MPI_Datatype = 10;
pub const MPI_UNSIGNED_LONG: MPI_Datatype = 11;
pub const MPI_LONG_LONG_INT: MPI_Datatype = 12;
pub const MPI_LONG_LONG: MPI_Datatype = 13;
pub const MPI_UNSIGNED_LONG_LONG: MPI_Datatype = 14;
pub const MPI_FLOAT: MPI_Datatype = 15;
pub const MPI_DOUBLE: MPI_Datatype = 16;
pub const MPI_LONG_DOUBLE: MPI_Datatype = 17;
pub const MPI_C_BOOL: MPI_Datatype = 18;
pub const MPI_INT8_T: MPI_Datatype = 19;
pub const MPI_INT16_T: MPI_Datatype = 20;
pub const MPI_INT32_T: MPI_Datatype = 21;
pub const MPI_INT64_T: MPI_Datatype = 22;
pub const MPI_UINT8_T: MPI_Datatype = 23;
pub const MPI_UINT16_T: MPI_Datatype = 24;
pub const MPI_UINT32_T: MPI_Datatype = 25;
pub const MPI_UINT64_T: MPI_Datatype = 26;
pub const MPI_AINT: MPI_Datatype = 27;
pub const MPI_OFFSET: MPI_Datatype = 28;
pub const MPI_COUNT: MPI_Datatype = 29;
pub const MPI_C_COMPLEX: MPI_Datatype = 30;
pub const MPI_C_FLOAT_COMPLEX: MPI_Datatype = 31;
pub const MPI_C_DOUBLE_COMPLEX: MPI_Datatype = 32;
pub const MPI_C_LONG_DOUBLE_COMPLEX: MPI_Datatype = 33;
pub const MPI_PACKED: MPI_Datatype = 34;
pub const MPI_FLOAT_INT: MPI_Datatype = 35;
pub const MPI_DOUBLE_INT: MPI_Datatype = 36;
pub const MPI_LONG_INT: MPI_Datatype = 37;
pub const MPI_2INT: MPI_Datatype = 38;
pub const MPI_SHORT_INT: MPI_Datatype = 39;
pub const MPI_LONG_DOUBLE_INT: MPI_Datatype = 40;
// Fortran datatypes usable from C
pub const MPI_CHARACTER: MPI_Datatype = 41;
pub const MPI_LOGICAL: MPI_Datatype = 42;
pub const MPI_INTEGER: MPI_Datatype = 43;
pub const MPI_REAL: MPI_Datatype = 44;
pub const MPI_DOUBLE_PRECISION: MPI_Datatype = 45;
pub const MPI_COMPLEX: MPI_Datatype = 46;
pub const MPI_DOUBLE_COMPLEX: MPI_Datatype = 47;
pub const MPI_2INTEGER: MPI_Datatype = 48;
pub const MPI_2REAL: MPI_Datatype = 49;
pub const MPI_2DOUBLE_PRECISION: MPI_Datatype = 50;
pub const MPI_INTEGER1: MPI_Datatype = 51;
pub const MPI_INTEGER2: MPI_Datatype = 52;
pub const MPI_INTEGER4: MPI_Datatype = 53;
pub const MPI_INTEGER8: MPI_Datatype = 54;
pub const MPI_REAL4: MPI_Datatype = 55;
pub const MPI_REAL8: MPI_Datatype = 56;
pub const MPI_REAL16: MPI_Datatype = 57;
pub const MPI_COMPLEX8: MPI_Datatype = 58;
pub const MPI_COMPLEX16: MPI_Datatype = 59;
pub const MPI_COMPLEX32: MPI_Datatype = 60;
// C++ datatypes
pub const MPI_CXX_BOOL: MPI_Datatype = 61;
pub const MPI_CXX_FLOAT_COMPLEX: MPI_Datatype = 62;
pub const MPI_CXX_DOUBLE_COMPLEX: MPI_Datatype = 63;
pub const MPI_CXX_LONG_DOUBLE_COMPLEX: MPI_Datatype = 64;
// MPI-1 bound markers (for MPI_Type_struct)
pub const MPI_LB: MPI_Datatype = 65;
pub const MPI_UB: MPI_Datatype = 66;
pub const MPI_INTEGER16: MPI_Datatype = 67;
pub const BRAID_PREDEFINED_DATATYPE_LAST: c_int = 67;
pub const BRAID_FIRST_DERIVED_DATATYPE: c_int = 256;

// Type constructor helpers
pub const MPI_ORDER_C: c_int = 56;
pub const MPI_ORDER_FORTRAN: c_int = 57;
pub const MPI_COMBINER_NAMED: c_int = 1;
pub const MPI_COMBINER_DUP: c_int = 2;
pub const MPI_COMBINER_CONTIGUOUS: c_int = 3;
pub const MPI_COMBINER_VECTOR: c_int = 4;
pub const MPI_COMBINER_HVECTOR: c_int = 5;
pub const MPI_COMBINER_INDEXED: c_int = 6;
pub const MPI_COMBINER_HINDEXED: c_int = 7;
pub const MPI_COMBINER_INDEXED_BLOCK: c_int = 8;
pub const MPI_COMBINER_HINDEXED_BLOCK: c_int = 9;
pub const MPI_COMBINER_STRUCT: c_int = 10;
pub const MPI_COMBINER_SUBARRAY: c_int = 11;
pub const MPI_COMBINER_DARRAY: c_int = 12;
pub const MPI_COMBINER_RESIZED: c_int = 13;
pub const MPI_COMBINER_F90_REAL: c_int = 14;
pub const MPI_COMBINER_F90_COMPLEX: c_int = 15;
pub const MPI_COMBINER_F90_INTEGER: c_int = 16;
pub const MPI_DISTRIBUTE_BLOCK: c_int = 121;
pub const MPI_DISTRIBUTE_CYCLIC: c_int = 122;
pub const MPI_DISTRIBUTE_NONE: c_int = 123;
pub const MPI_DISTRIBUTE_DFLT_DARG: c_int = -49767;
pub const MPI_TYPECLASS_REAL: c_int = 1;
pub const MPI_TYPECLASS_INTEGER: c_int = 2;
pub const MPI_TYPECLASS_COMPLEX: c_int = 3;

// Predefined reduction operations
pub const MPI_MAX: MPI_Op = 1;
pub const MPI_MIN: MPI_Op = 2;
pub const MPI_SUM: MPI_Op = 3;
pub const MPI_PROD: MPI_Op = 4;
pub const MPI_LAND: MPI_Op = 5;
pub const MPI_BAND: MPI_Op = 6;
pub const MPI_LOR: MPI_Op = 7;
pub const MPI_BOR: MPI_Op = 8;
pub const MPI_LXOR: MPI_Op = 9;
pub const MPI_BXOR: MPI_Op = 10;
pub const MPI_MINLOC: MPI_Op = 11;
pub const MPI_MAXLOC: MPI_Op = 12;
pub const MPI_REPLACE: MPI_Op = 13;
pub const MPI_NO_OP: MPI_Op = 14;
pub const BRAID_FIRST_USER_OP: c_int = 32;

// Special values
pub const MPI_STATUS_IGNORE: *mut MPI_Status = 1usize as *mut MPI_Status;
pub const MPI_STATUSES_IGNORE: *mut MPI_Status = 1usize as *mut MPI_Status;
pub const MPI_ERRCODES_IGNORE: *mut c_int = std::ptr::null_mut();
pub const MPI_IN_PLACE: *const c_void = usize::MAX as *const c_void;
/// MPI 4.1: a buffer for buffered sends that the library allocates as each message needs.
pub const MPI_BUFFER_AUTOMATIC: *const c_void = 2 as *const c_void;
pub const MPI_BOTTOM: *const c_void = std::ptr::null();
pub const MPI_UNWEIGHTED: *mut c_int = 2usize as *mut c_int;
pub const MPI_WEIGHTS_EMPTY: *mut c_int = 3usize as *mut c_int;
pub const MPI_ANY_SOURCE: c_int = -2;
pub const MPI_PROC_NULL: c_int = -1;
pub const MPI_ROOT: c_int = -3;
pub const MPI_ANY_TAG: c_int = -1;
pub const MPI_UNDEFINED: c_int = -32766;
pub const MPI_MAX_PROCESSOR_NAME: c_int = 256;
pub const MPI_MAX_ERROR_STRING: c_int = 512;
pub const MPI_MAX_OBJECT_NAME: c_int = 128;
pub const MPI_MAX_LIBRARY_VERSION_STRING: c_int = 8192;
pub const MPI_MAX_INFO_KEY: c_int = 255;
pub const MPI_MAX_INFO_VAL: c_int = 1024;
pub const MPI_MAX_PSET_NAME_LEN: c_int = 256;
pub const MPI_MAX_STRINGTAG_LEN: c_int = 256;
/// Bytes of the attached buffer that each buffered send takes beyond its packed data.
pub const MPI_BSEND_OVERHEAD: c_int = 96;

// Results of MPI_Comm_compare / MPI_Group_compare
pub const MPI_IDENT: c_int = 0;
pub const MPI_CONGRUENT: c_int = 1;
pub const MPI_SIMILAR: c_int = 2;
pub const MPI_UNEQUAL: c_int = 3;

// Thread support levels
pub const MPI_THREAD_SINGLE: c_int = 0;
pub const MPI_THREAD_FUNNELED: c_int = 1;
pub const MPI_THREAD_SERIALIZED: c_int = 2;
pub const MPI_THREAD_MULTIPLE: c_int = 3;

// MPI_Comm_split_type
pub const MPI_COMM_TYPE_SHARED: c_int = 1;
pub const MPI_COMM_TYPE_HW_GUIDED: c_int = 2;
pub const MPI_COMM_TYPE_HW_UNGUIDED: c_int = 3;
pub const MPI_COMM_TYPE_RESOURCE_GUIDED: c_int = 4;

// Topologies
pub const MPI_GRAPH: c_int = 1;
pub const MPI_CART: c_int = 2;
pub const MPI_DIST_GRAPH: c_int = 3;

// Attribute keys
pub const MPI_KEYVAL_INVALID: c_int = 0;
pub const MPI_TAG_UB: c_int = 1;
pub const MPI_HOST: c_int = 2;
pub const MPI_IO: c_int = 3;
pub const MPI_WTIME_IS_GLOBAL: c_int = 4;
pub const MPI_UNIVERSE_SIZE: c_int = 5;
pub const MPI_LASTUSEDCODE: c_int = 6;
pub const MPI_APPNUM: c_int = 7;
pub const MPI_WIN_BASE: c_int = 8;
pub const MPI_WIN_SIZE: c_int = 9;
pub const MPI_WIN_DISP_UNIT: c_int = 10;
pub const MPI_WIN_CREATE_FLAVOR: c_int = 11;
pub const MPI_WIN_MODEL: c_int = 12;

// Values of MPI_WIN_CREATE_FLAVOR and MPI_WIN_MODEL
pub const MPI_WIN_FLAVOR_CREATE: c_int = 1;
pub const MPI_WIN_FLAVOR_ALLOCATE: c_int = 2;
pub const MPI_WIN_FLAVOR_DYNAMIC: c_int = 3;
pub const MPI_WIN_FLAVOR_SHARED: c_int = 4;
pub const MPI_WIN_SEPARATE: c_int = 1;
pub const MPI_WIN_UNIFIED: c_int = 2;

// One-sided (declared; not supported yet)
pub const MPI_LOCK_EXCLUSIVE: c_int = 234;
pub const MPI_LOCK_SHARED: c_int = 235;
pub const MPI_MODE_NOCHECK: c_int = 1024;
pub const MPI_MODE_NOSTORE: c_int = 2048;
pub const MPI_MODE_NOPUT: c_int = 4096;
pub const MPI_MODE_NOPRECEDE: c_int = 8192;
pub const MPI_MODE_NOSUCCEED: c_int = 16384;

// Error classes
pub const MPI_SUCCESS: c_int = 0;
pub const MPI_ERR_BUFFER: c_int = 1;
pub const MPI_ERR_COUNT: c_int = 2;
pub const MPI_ERR_TYPE: c_int = 3;
pub const MPI_ERR_TAG: c_int = 4;
pub const MPI_ERR_COMM: c_int = 5;
pub const MPI_ERR_RANK: c_int = 6;
pub const MPI_ERR_ROOT: c_int = 7;
pub const MPI_ERR_GROUP: c_int = 8;
pub const MPI_ERR_OP: c_int = 9;
pub const MPI_ERR_TOPOLOGY: c_int = 10;
pub const MPI_ERR_DIMS: c_int = 11;
pub const MPI_ERR_ARG: c_int = 12;
pub const MPI_ERR_UNKNOWN: c_int = 13;
pub const MPI_ERR_TRUNCATE: c_int = 14;
pub const MPI_ERR_OTHER: c_int = 15;
pub const MPI_ERR_INTERN: c_int = 16;
pub const MPI_ERR_IN_STATUS: c_int = 17;
pub const MPI_ERR_PENDING: c_int = 18;
pub const MPI_ERR_REQUEST: c_int = 19;
pub const MPI_ERR_ACCESS: c_int = 20;
pub const MPI_ERR_AMODE: c_int = 21;
pub const MPI_ERR_BAD_FILE: c_int = 22;
pub const MPI_ERR_CONVERSION: c_int = 23;
pub const MPI_ERR_DUP_DATAREP: c_int = 24;
pub const MPI_ERR_FILE_EXISTS: c_int = 25;
pub const MPI_ERR_FILE_IN_USE: c_int = 26;
pub const MPI_ERR_FILE: c_int = 27;
pub const MPI_ERR_INFO: c_int = 28;
pub const MPI_ERR_INFO_KEY: c_int = 29;
pub const MPI_ERR_INFO_VALUE: c_int = 30;
pub const MPI_ERR_INFO_NOKEY: c_int = 31;
pub const MPI_ERR_IO: c_int = 32;
pub const MPI_ERR_NAME: c_int = 33;
pub const MPI_ERR_NO_MEM: c_int = 34;
pub const MPI_ERR_NOT_SAME: c_int = 35;
pub const MPI_ERR_NO_SPACE: c_int = 36;
pub const MPI_ERR_NO_SUCH_FILE: c_int = 37;
pub const MPI_ERR_PORT: c_int = 38;
pub const MPI_ERR_QUOTA: c_int = 39;
pub const MPI_ERR_READ_ONLY: c_int = 40;
pub const MPI_ERR_SERVICE: c_int = 41;
pub const MPI_ERR_SPAWN: c_int = 42;
pub const MPI_ERR_UNSUPPORTED_DATAREP: c_int = 43;
pub const MPI_ERR_UNSUPPORTED_OPERATION: c_int = 44;
pub const MPI_ERR_WIN: c_int = 45;
pub const MPI_ERR_BASE: c_int = 46;
pub const MPI_ERR_LOCKTYPE: c_int = 47;
pub const MPI_ERR_KEYVAL: c_int = 48;
pub const MPI_ERR_RMA_CONFLICT: c_int = 49;
pub const MPI_ERR_RMA_SYNC: c_int = 50;
pub const MPI_ERR_SIZE: c_int = 51;
pub const MPI_ERR_DISP: c_int = 52;
pub const MPI_ERR_ASSERT: c_int = 53;
pub const MPI_ERR_RMA_RANGE: c_int = 54;
pub const MPI_ERR_RMA_ATTACH: c_int = 55;
pub const MPI_ERR_RMA_SHARED: c_int = 56;
pub const MPI_ERR_RMA_FLAVOR: c_int = 57;
// MPI 4's classes, after the MPI_T_ERR_ codes (tool interface section).
pub const MPI_ERR_SESSION: c_int = 74;
pub const MPI_ERR_PROC_ABORTED: c_int = 75;
pub const MPI_ERR_VALUE_TOO_LARGE: c_int = 76;
pub const MPI_ERR_ERRHANDLER: c_int = 77;
pub const MPI_ERR_LASTCODE: c_int = 77;

// Error handlers and user-defined error classes
pub type MPI_Comm_errhandler_fn = MPI_Comm_errhandler_function;
pub type MPI_Win_errhandler_fn = MPI_Win_errhandler_function;
pub type MPI_File_errhandler_fn = MPI_File_errhandler_function;

// Handle conversions between C and Fortran, and Fortran statuses (MPI_Fint arrays)
pub const MPI_F_STATUS_SIZE: c_int = 5;
pub const MPI_F_SOURCE: c_int = 2;
pub const MPI_F_TAG: c_int = 3;
pub const MPI_F_ERROR: c_int = 4;
pub const MPI_F_STATUS_IGNORE: *mut MPI_Fint = 1usize as *mut MPI_Fint;
pub const MPI_F_STATUSES_IGNORE: *mut MPI_Fint = 1usize as *mut MPI_Fint;

// Process creation and management
pub const MPI_MAX_PORT_NAME: c_int = 256;
pub const MPI_ARGV_NULL: *mut *mut c_char = std::ptr::null_mut();
pub const MPI_ARGVS_NULL: *mut *mut *mut c_char = std::ptr::null_mut();

// Parallel I/O
pub const MPI_MODE_CREATE: c_int = 1;
pub const MPI_MODE_RDONLY: c_int = 2;
pub const MPI_MODE_WRONLY: c_int = 4;
pub const MPI_MODE_RDWR: c_int = 8;
pub const MPI_MODE_DELETE_ON_CLOSE: c_int = 16;
pub const MPI_MODE_UNIQUE_OPEN: c_int = 32;
pub const MPI_MODE_EXCL: c_int = 64;
pub const MPI_MODE_APPEND: c_int = 128;
pub const MPI_MODE_SEQUENTIAL: c_int = 256;
pub const MPI_SEEK_SET: c_int = 600;
pub const MPI_SEEK_CUR: c_int = 602;
pub const MPI_SEEK_END: c_int = 604;
pub const MPI_DISPLACEMENT_CURRENT: MPI_Offset = -54278278;
pub const MPI_MAX_DATAREP_STRING: c_int = 128;
/// `int MPI_Datarep_extent_function(MPI_Datatype datatype, MPI_Aint *extent, void *extra_state)`.
pub type MPI_Datarep_extent_function = unsafe extern "C" fn(MPI_Datatype, *mut MPI_Aint, *mut c_void) -> c_int;
/// `int MPI_Datarep_conversion_function(void *userbuf, MPI_Datatype datatype, int count, void *filebuf,
/// MPI_Offset position, void *extra_state)`.
pub type MPI_Datarep_conversion_function = unsafe extern "C" fn(*mut c_void, MPI_Datatype, c_int, *mut c_void, MPI_Offset, *mut c_void) -> c_int;
/// `((MPI_Datarep_conversion_function *)0)`: the address a C caller passes for this callback.
pub const MPI_CONVERSION_FN_NULL: usize = 0;
/// `int MPI_Datarep_conversion_function_c(void *userbuf, MPI_Datatype datatype, MPI_Count count,
/// void *filebuf, MPI_Offset position, void *extra_state)`: the large-count form.
pub type MPI_Datarep_conversion_function_c = unsafe extern "C" fn(*mut c_void, MPI_Datatype, MPI_Count, *mut c_void, MPI_Offset, *mut c_void) -> c_int;
/// `((MPI_Datarep_conversion_function_c *)0)`.
pub const MPI_CONVERSION_FN_NULL_C: usize = 0;

// Tool information interface (MPI_T)
/// What an `MPI_T_enum` points to (never dereferenced: the handle carries a number).
#[repr(C)]
pub struct braid_t_enum {
    _opaque: [u8; 0],
}
/// What an `MPI_T_cvar_handle` points to (never dereferenced: the handle carries a number).
#[repr(C)]
pub struct braid_t_cvar_handle {
    _opaque: [u8; 0],
}
/// What an `MPI_T_pvar_handle` points to (never dereferenced: the handle carries a number).
#[repr(C)]
pub struct braid_t_pvar_handle {
    _opaque: [u8; 0],
}
/// What an `MPI_T_pvar_session` points to (never dereferenced: the handle carries a number).
#[repr(C)]
pub struct braid_t_pvar_session {
    _opaque: [u8; 0],
}
/// What an `MPI_T_event_registration` points to (never dereferenced: the handle carries a number).
#[repr(C)]
pub struct braid_t_event_registration {
    _opaque: [u8; 0],
}
/// What an `MPI_T_event_instance` points to: the event a callback is handed (see `tools`).
#[repr(C)]
pub struct braid_t_event_instance {
    _opaque: [u8; 0],
}
pub type MPI_T_event_registration = *mut braid_t_event_registration;
pub type MPI_T_event_instance = *mut braid_t_event_instance;
pub const MPI_T_EVENT_REGISTRATION_NULL: MPI_T_event_registration = std::ptr::null_mut();
/// `MPI_T_cb_safety`: what a callback can bear.
pub type MPI_T_cb_safety = c_int;
pub const MPI_T_CB_REQUIRE_NONE: MPI_T_cb_safety = 0;
pub const MPI_T_CB_REQUIRE_MPI_RESTRICTED: MPI_T_cb_safety = 1;
pub const MPI_T_CB_REQUIRE_THREAD_SAFE: MPI_T_cb_safety = 2;
pub const MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE: MPI_T_cb_safety = 3;
/// `MPI_T_source_order`.
pub type MPI_T_source_order = c_int;
pub const MPI_T_SOURCE_ORDERED: MPI_T_source_order = 0;
pub const MPI_T_SOURCE_UNORDERED: MPI_T_source_order = 1;
/// `void MPI_T_event_cb_function(MPI_T_event_instance, MPI_T_event_registration, MPI_T_cb_safety, void *user_data)`.
pub type MPI_T_event_cb_function = unsafe extern "C" fn(MPI_T_event_instance, MPI_T_event_registration, MPI_T_cb_safety, *mut c_void);
/// `void MPI_T_event_free_cb_function(MPI_T_event_registration, MPI_T_cb_safety, void *user_data)`.
pub type MPI_T_event_free_cb_function = unsafe extern "C" fn(MPI_T_event_registration, MPI_T_cb_safety, *mut c_void);
/// `void MPI_T_event_dropped_cb_function(MPI_Count, MPI_T_event_registration, int source_index, MPI_T_cb_safety, void *user_data)`.
pub type MPI_T_event_dropped_cb_function = unsafe extern "C" fn(MPI_Count, MPI_T_event_registration, c_int, MPI_T_cb_safety, *mut c_void);
/// `MPI_F08_status`: the `mpi_f08` module's TYPE(MPI_Status), which is BIND(C) with the C
/// status's layout, so the conversions to and from it are copies.
pub type MPI_F08_status = MPI_Status;
/// MPI_F08_STATUS_IGNORE and MPI_F08_STATUSES_IGNORE in C.
pub const MPI_F08_STATUS_IGNORE: *mut MPI_F08_status = 1 as *mut MPI_F08_status;
pub const MPI_F08_STATUSES_IGNORE: *mut MPI_F08_status = 1 as *mut MPI_F08_status;
pub type MPI_T_enum = *mut braid_t_enum;
pub type MPI_T_cvar_handle = *mut braid_t_cvar_handle;
pub type MPI_T_pvar_handle = *mut braid_t_pvar_handle;
pub type MPI_T_pvar_session = *mut braid_t_pvar_session;
pub const MPI_T_ENUM_NULL: MPI_T_enum = std::ptr::null_mut();
pub const MPI_T_CVAR_HANDLE_NULL: MPI_T_cvar_handle = std::ptr::null_mut();
pub const MPI_T_PVAR_HANDLE_NULL: MPI_T_pvar_handle = std::ptr::null_mut();
pub const MPI_T_PVAR_SESSION_NULL: MPI_T_pvar_session = std::ptr::null_mut();
pub const MPI_T_PVAR_ALL_HANDLES: MPI_T_pvar_handle = usize::MAX as MPI_T_pvar_handle;
pub const MPI_T_VERBOSITY_USER_BASIC: c_int = 221;
pub const MPI_T_VERBOSITY_USER_DETAIL: c_int = 222;
pub const MPI_T_VERBOSITY_USER_ALL: c_int = 223;
pub const MPI_T_VERBOSITY_TUNER_BASIC: c_int = 224;
pub const MPI_T_VERBOSITY_TUNER_DETAIL: c_int = 225;
pub const MPI_T_VERBOSITY_TUNER_ALL: c_int = 226;
pub const MPI_T_VERBOSITY_MPIDEV_BASIC: c_int = 227;
pub const MPI_T_VERBOSITY_MPIDEV_DETAIL: c_int = 228;
pub const MPI_T_VERBOSITY_MPIDEV_ALL: c_int = 229;
pub const MPI_T_BIND_NO_OBJECT: c_int = 9700;
pub const MPI_T_BIND_MPI_COMM: c_int = 9701;
pub const MPI_T_BIND_MPI_DATATYPE: c_int = 9702;
pub const MPI_T_BIND_MPI_ERRHANDLER: c_int = 9703;
pub const MPI_T_BIND_MPI_FILE: c_int = 9704;
pub const MPI_T_BIND_MPI_GROUP: c_int = 9705;
pub const MPI_T_BIND_MPI_OP: c_int = 9706;
pub const MPI_T_BIND_MPI_REQUEST: c_int = 9707;
pub const MPI_T_BIND_MPI_WIN: c_int = 9708;
pub const MPI_T_BIND_MPI_MESSAGE: c_int = 9709;
pub const MPI_T_BIND_MPI_INFO: c_int = 9710;
pub const MPI_T_SCOPE_CONSTANT: c_int = 60438;
pub const MPI_T_SCOPE_READONLY: c_int = 60439;
pub const MPI_T_SCOPE_LOCAL: c_int = 60440;
pub const MPI_T_SCOPE_GROUP: c_int = 60441;
pub const MPI_T_SCOPE_GROUP_EQ: c_int = 60442;
pub const MPI_T_SCOPE_ALL: c_int = 60443;
pub const MPI_T_SCOPE_ALL_EQ: c_int = 60444;
pub const MPI_T_PVAR_CLASS_STATE: c_int = 240;
pub const MPI_T_PVAR_CLASS_LEVEL: c_int = 241;
pub const MPI_T_PVAR_CLASS_SIZE: c_int = 242;
pub const MPI_T_PVAR_CLASS_PERCENTAGE: c_int = 243;
pub const MPI_T_PVAR_CLASS_HIGHWATERMARK: c_int = 244;
pub const MPI_T_PVAR_CLASS_LOWWATERMARK: c_int = 245;
pub const MPI_T_PVAR_CLASS_COUNTER: c_int = 246;
pub const MPI_T_PVAR_CLASS_AGGREGATE: c_int = 247;
pub const MPI_T_PVAR_CLASS_TIMER: c_int = 248;
pub const MPI_T_PVAR_CLASS_GENERIC: c_int = 249;
pub const MPI_T_ERR_MEMORY: c_int = 58;
pub const MPI_T_ERR_NOT_INITIALIZED: c_int = 59;
pub const MPI_T_ERR_CANNOT_INIT: c_int = 60;
pub const MPI_T_ERR_INVALID_INDEX: c_int = 61;
pub const MPI_T_ERR_INVALID_ITEM: c_int = 62;
pub const MPI_T_ERR_INVALID_HANDLE: c_int = 63;
pub const MPI_T_ERR_OUT_OF_HANDLES: c_int = 64;
pub const MPI_T_ERR_OUT_OF_SESSIONS: c_int = 65;
pub const MPI_T_ERR_INVALID_SESSION: c_int = 66;
pub const MPI_T_ERR_CVAR_SET_NOT_NOW: c_int = 67;
pub const MPI_T_ERR_CVAR_SET_NEVER: c_int = 68;
pub const MPI_T_ERR_PVAR_NO_STARTSTOP: c_int = 69;
pub const MPI_T_ERR_PVAR_NO_WRITE: c_int = 70;
pub const MPI_T_ERR_PVAR_NO_ATOMIC: c_int = 71;
pub const MPI_T_ERR_INVALID_NAME: c_int = 72;
pub const MPI_T_ERR_INVALID: c_int = 73;
