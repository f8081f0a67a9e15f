//! One-sided communication (MPI 3.1 chapter 11): windows, their synchronisation and the RMA
//! operations. Window attributes, keyvals and error handlers live with their families. A window
//! call raises on its communicator argument, or on MPI_COMM_WORLD (no window can exist yet).

use std::ffi::{c_char, c_int, c_void};

use crate::consts::*;

const WINDOWS: &str = "one-sided communication (windows and RMA) is not supported yet";

unsupported!(
    MPI_Win_create(
        base: *mut c_void,
        size: MPI_Aint,
        disp_unit: c_int,
        info: MPI_Info,
        comm: MPI_Comm,
        win: *mut MPI_Win,
    ) on comm,
    WINDOWS
);

unsupported!(
    MPI_Win_allocate(
        size: MPI_Aint,
        disp_unit: c_int,
        info: MPI_Info,
        comm: MPI_Comm,
        baseptr: *mut c_void,
        win: *mut MPI_Win,
    ) on comm,
    WINDOWS
);

unsupported!(MPI_Win_free(win: *mut MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_fence(assert: c_int, win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(
    MPI_Put(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: c_int,
        target_datatype: MPI_Datatype,
        win: MPI_Win,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(
    MPI_Get(
        origin_addr: *mut c_void,
        origin_count: c_int,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: c_int,
        target_datatype: MPI_Datatype,
        win: MPI_Win,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(
    MPI_Accumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: c_int,
        target_datatype: MPI_Datatype,
        op: MPI_Op,
        win: MPI_Win,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(
    MPI_Win_lock(
        lock_type: c_int,
        rank: c_int,
        assert: c_int,
        win: MPI_Win,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(MPI_Win_unlock(rank: c_int, win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_lock_all(assert: c_int, win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_unlock_all(win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_flush(rank: c_int, win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(
    MPI_Win_allocate_shared(
        size: MPI_Aint,
        disp_unit: c_int,
        info: MPI_Info,
        comm: MPI_Comm,
        baseptr: *mut c_void,
        win: *mut MPI_Win,
    ) on comm,
    WINDOWS
);

unsupported!(MPI_Win_create_dynamic(info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) on comm, WINDOWS);

unsupported!(MPI_Win_attach(win: MPI_Win, base: *mut c_void, size: MPI_Aint) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_detach(win: MPI_Win, base: *const c_void) on MPI_COMM_WORLD, WINDOWS);

unsupported!(
    MPI_Win_shared_query(
        win: MPI_Win,
        rank: c_int,
        size: *mut MPI_Aint,
        disp_unit: *mut c_int,
        baseptr: *mut c_void,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(MPI_Win_get_group(win: MPI_Win, group: *mut MPI_Group) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_set_info(win: MPI_Win, info: MPI_Info) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_get_info(win: MPI_Win, info_used: *mut MPI_Info) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_set_name(win: MPI_Win, win_name: *const c_char) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_get_name(win: MPI_Win, win_name: *mut c_char, resultlen: *mut c_int) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_start(group: MPI_Group, assert: c_int, win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_complete(win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_post(group: MPI_Group, assert: c_int, win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_wait(win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_test(win: MPI_Win, flag: *mut c_int) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_flush_all(win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_flush_local(rank: c_int, win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_flush_local_all(win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(MPI_Win_sync(win: MPI_Win) on MPI_COMM_WORLD, WINDOWS);

unsupported!(
    MPI_Get_accumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: MPI_Datatype,
        result_addr: *mut c_void,
        result_count: c_int,
        result_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: c_int,
        target_datatype: MPI_Datatype,
        op: MPI_Op,
        win: MPI_Win,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(
    MPI_Fetch_and_op(
        origin_addr: *const c_void,
        result_addr: *mut c_void,
        datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        op: MPI_Op,
        win: MPI_Win,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(
    MPI_Compare_and_swap(
        origin_addr: *const c_void,
        compare_addr: *const c_void,
        result_addr: *mut c_void,
        datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        win: MPI_Win,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(
    MPI_Rput(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: c_int,
        target_datatype: MPI_Datatype,
        win: MPI_Win,
        request: *mut MPI_Request,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(
    MPI_Rget(
        origin_addr: *mut c_void,
        origin_count: c_int,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: c_int,
        target_datatype: MPI_Datatype,
        win: MPI_Win,
        request: *mut MPI_Request,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(
    MPI_Raccumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: c_int,
        target_datatype: MPI_Datatype,
        op: MPI_Op,
        win: MPI_Win,
        request: *mut MPI_Request,
    ) on MPI_COMM_WORLD,
    WINDOWS
);

unsupported!(
    MPI_Rget_accumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: MPI_Datatype,
        result_addr: *mut c_void,
        result_count: c_int,
        result_datatype: MPI_Datatype,
        target_rank: c_int,
        target_disp: MPI_Aint,
        target_count: c_int,
        target_datatype: MPI_Datatype,
        op: MPI_Op,
        win: MPI_Win,
        request: *mut MPI_Request,
    ) on MPI_COMM_WORLD,
    WINDOWS
);
