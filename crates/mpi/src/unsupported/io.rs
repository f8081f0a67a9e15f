//! Parallel I/O (MPI 3.1 chapter 13): every MPI_File_* call except the error handler ones and
//! the handle conversions, and MPI_Register_datarep. No file can be opened, so a call on a file
//! handle always concerns an invalid file.

use std::ffi::{c_char, c_int, c_void};

use crate::consts::*;

const IO: &str = "MPI-IO (MPI_File_*) is not supported yet";

unsupported!(
    MPI_File_open(
        comm: MPI_Comm,
        filename: *const c_char,
        amode: c_int,
        info: MPI_Info,
        fh: *mut MPI_File,
    ) on files,
    IO
);

unsupported!(MPI_File_close(fh: *mut MPI_File) on files, IO);

unsupported!(MPI_File_delete(filename: *const c_char, info: MPI_Info) on files, IO);

unsupported!(MPI_File_set_size(fh: MPI_File, size: MPI_Offset) on files, IO);

unsupported!(MPI_File_preallocate(fh: MPI_File, size: MPI_Offset) on files, IO);

unsupported!(MPI_File_get_size(fh: MPI_File, size: *mut MPI_Offset) on files, IO);

unsupported!(MPI_File_get_group(fh: MPI_File, group: *mut MPI_Group) on files, IO);

unsupported!(MPI_File_get_amode(fh: MPI_File, amode: *mut c_int) on files, IO);

unsupported!(MPI_File_set_info(fh: MPI_File, info: MPI_Info) on files, IO);

unsupported!(MPI_File_get_info(fh: MPI_File, info_used: *mut MPI_Info) on files, IO);

unsupported!(
    MPI_File_set_view(
        fh: MPI_File,
        disp: MPI_Offset,
        etype: MPI_Datatype,
        filetype: MPI_Datatype,
        datarep: *const c_char,
        info: MPI_Info,
    ) on files,
    IO
);

unsupported!(
    MPI_File_get_view(
        fh: MPI_File,
        disp: *mut MPI_Offset,
        etype: *mut MPI_Datatype,
        filetype: *mut MPI_Datatype,
        datarep: *mut c_char,
    ) on files,
    IO
);

unsupported!(
    MPI_File_read_at(
        fh: MPI_File,
        offset: MPI_Offset,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        status: *mut MPI_Status,
    ) on files,
    IO
);

unsupported!(
    MPI_File_read_at_all(
        fh: MPI_File,
        offset: MPI_Offset,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        status: *mut MPI_Status,
    ) on files,
    IO
);

unsupported!(
    MPI_File_write_at(
        fh: MPI_File,
        offset: MPI_Offset,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
        status: *mut MPI_Status,
    ) on files,
    IO
);

unsupported!(
    MPI_File_write_at_all(
        fh: MPI_File,
        offset: MPI_Offset,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
        status: *mut MPI_Status,
    ) on files,
    IO
);

unsupported!(
    MPI_File_iread_at(
        fh: MPI_File,
        offset: MPI_Offset,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        request: *mut MPI_Request,
    ) on files,
    IO
);

unsupported!(
    MPI_File_iread_at_all(
        fh: MPI_File,
        offset: MPI_Offset,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        request: *mut MPI_Request,
    ) on files,
    IO
);

unsupported!(
    MPI_File_iwrite_at(
        fh: MPI_File,
        offset: MPI_Offset,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
        request: *mut MPI_Request,
    ) on files,
    IO
);

unsupported!(
    MPI_File_iwrite_at_all(
        fh: MPI_File,
        offset: MPI_Offset,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
        request: *mut MPI_Request,
    ) on files,
    IO
);

unsupported!(
    MPI_File_read(
        fh: MPI_File,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        status: *mut MPI_Status,
    ) on files,
    IO
);

unsupported!(
    MPI_File_read_all(
        fh: MPI_File,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        status: *mut MPI_Status,
    ) on files,
    IO
);

unsupported!(
    MPI_File_write(
        fh: MPI_File,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
        status: *mut MPI_Status,
    ) on files,
    IO
);

unsupported!(
    MPI_File_write_all(
        fh: MPI_File,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
        status: *mut MPI_Status,
    ) on files,
    IO
);

unsupported!(
    MPI_File_iread(
        fh: MPI_File,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        request: *mut MPI_Request,
    ) on files,
    IO
);

unsupported!(
    MPI_File_iread_all(
        fh: MPI_File,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        request: *mut MPI_Request,
    ) on files,
    IO
);

unsupported!(
    MPI_File_iwrite(
        fh: MPI_File,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
        request: *mut MPI_Request,
    ) on files,
    IO
);

unsupported!(
    MPI_File_iwrite_all(
        fh: MPI_File,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
        request: *mut MPI_Request,
    ) on files,
    IO
);

unsupported!(MPI_File_seek(fh: MPI_File, offset: MPI_Offset, whence: c_int) on files, IO);

unsupported!(MPI_File_get_position(fh: MPI_File, offset: *mut MPI_Offset) on files, IO);

unsupported!(MPI_File_get_byte_offset(fh: MPI_File, offset: MPI_Offset, disp: *mut MPI_Offset) on files, IO);

unsupported!(
    MPI_File_read_shared(
        fh: MPI_File,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        status: *mut MPI_Status,
    ) on files,
    IO
);

unsupported!(
    MPI_File_write_shared(
        fh: MPI_File,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
        status: *mut MPI_Status,
    ) on files,
    IO
);

unsupported!(
    MPI_File_iread_shared(
        fh: MPI_File,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        request: *mut MPI_Request,
    ) on files,
    IO
);

unsupported!(
    MPI_File_iwrite_shared(
        fh: MPI_File,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
        request: *mut MPI_Request,
    ) on files,
    IO
);

unsupported!(
    MPI_File_read_ordered(
        fh: MPI_File,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        status: *mut MPI_Status,
    ) on files,
    IO
);

unsupported!(
    MPI_File_write_ordered(
        fh: MPI_File,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
        status: *mut MPI_Status,
    ) on files,
    IO
);

unsupported!(MPI_File_seek_shared(fh: MPI_File, offset: MPI_Offset, whence: c_int) on files, IO);

unsupported!(MPI_File_get_position_shared(fh: MPI_File, offset: *mut MPI_Offset) on files, IO);

unsupported!(
    MPI_File_read_at_all_begin(
        fh: MPI_File,
        offset: MPI_Offset,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
    ) on files,
    IO
);

unsupported!(MPI_File_read_at_all_end(fh: MPI_File, buf: *mut c_void, status: *mut MPI_Status) on files, IO);

unsupported!(
    MPI_File_write_at_all_begin(
        fh: MPI_File,
        offset: MPI_Offset,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
    ) on files,
    IO
);

unsupported!(MPI_File_write_at_all_end(fh: MPI_File, buf: *const c_void, status: *mut MPI_Status) on files, IO);

unsupported!(
    MPI_File_read_all_begin(
        fh: MPI_File,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
    ) on files,
    IO
);

unsupported!(MPI_File_read_all_end(fh: MPI_File, buf: *mut c_void, status: *mut MPI_Status) on files, IO);

unsupported!(
    MPI_File_write_all_begin(
        fh: MPI_File,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
    ) on files,
    IO
);

unsupported!(MPI_File_write_all_end(fh: MPI_File, buf: *const c_void, status: *mut MPI_Status) on files, IO);

unsupported!(
    MPI_File_read_ordered_begin(
        fh: MPI_File,
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
    ) on files,
    IO
);

unsupported!(MPI_File_read_ordered_end(fh: MPI_File, buf: *mut c_void, status: *mut MPI_Status) on files, IO);

unsupported!(
    MPI_File_write_ordered_begin(
        fh: MPI_File,
        buf: *const c_void,
        count: c_int,
        datatype: MPI_Datatype,
    ) on files,
    IO
);

unsupported!(MPI_File_write_ordered_end(fh: MPI_File, buf: *const c_void, status: *mut MPI_Status) on files, IO);

unsupported!(MPI_File_get_type_extent(fh: MPI_File, datatype: MPI_Datatype, extent: *mut MPI_Aint) on files, IO);

unsupported!(MPI_File_set_atomicity(fh: MPI_File, flag: c_int) on files, IO);

unsupported!(MPI_File_get_atomicity(fh: MPI_File, flag: *mut c_int) on files, IO);

unsupported!(MPI_File_sync(fh: MPI_File) on files, IO);

unsupported!(
    MPI_Register_datarep(
        datarep: *const c_char,
        read_conversion_fn: Option<MPI_Datarep_conversion_function>,
        write_conversion_fn: Option<MPI_Datarep_conversion_function>,
        dtype_file_extent_fn: Option<MPI_Datarep_extent_function>,
        extra_state: *mut c_void,
    ) on files,
    IO
);
