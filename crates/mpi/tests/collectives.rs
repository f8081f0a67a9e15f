//! The collective entry points in a singleton process: argument checks and their error classes,
//! MPI_IN_PLACE, and derived datatypes packed and unpacked around the algorithms (which
//! src/coll/algorithms/tests.rs checks on groups of 1..=7 ranks).
//!
//! One test function: the MPI state is per process.

use std::ffi::{c_int, c_void};
use std::ptr::{null, null_mut};

use braid::consts::*;

extern "C" {
    fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut std::ffi::c_char) -> c_int;
    fn MPI_Finalize() -> c_int;
    fn MPI_Comm_set_errhandler(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int;
    fn MPI_Type_vector(count: c_int, blocklength: c_int, stride: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int;
    fn MPI_Type_commit(datatype: *mut MPI_Datatype) -> c_int;
    fn MPI_Op_create(function: Option<MPI_User_function>, commute: c_int, op: *mut MPI_Op) -> c_int;
}

use braid::coll::abi::*;

fn ints(buffer: &[c_int]) -> *const c_void {
    buffer.as_ptr().cast()
}

fn ints_mut(buffer: &mut [c_int]) -> *mut c_void {
    buffer.as_mut_ptr().cast()
}

/// Every other int (a vector of 3 blocks of 1 with stride 2).
fn strided_type() -> MPI_Datatype {
    let mut strided = MPI_DATATYPE_NULL;
    // SAFETY: valid arguments and out-pointer.
    unsafe {
        assert_eq!(MPI_Type_vector(3, 1, 2, MPI_INT, &mut strided), MPI_SUCCESS);
        assert_eq!(MPI_Type_commit(&mut strided), MPI_SUCCESS);
    }
    strided
}

unsafe extern "C" fn keep_input(input: *mut c_void, inout: *mut c_void, len: *mut c_int, _: *mut MPI_Datatype) {
    // SAFETY: MPI passes `*len` ints in each vector.
    unsafe { std::ptr::copy_nonoverlapping(input.cast::<c_int>(), inout.cast::<c_int>(), *len as usize) };
}

#[test]
fn collectives_in_a_singleton_process() {
    // SAFETY: this test is the only user of MPI in its process; every buffer matches its count.
    unsafe {
        assert_eq!(MPI_Init(null_mut(), null_mut()), MPI_SUCCESS);
        assert_eq!(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), MPI_SUCCESS);
        let world = MPI_COMM_WORLD;
        let strided = strided_type();

        assert_eq!(MPI_Barrier(world), MPI_SUCCESS);
        let mut data = [1, 2, 3];
        assert_eq!(MPI_Bcast(ints_mut(&mut data), 3, MPI_INT, 0, world), MPI_SUCCESS);
        assert_eq!(data, [1, 2, 3]);

        // Reductions: a copy of the input, in place or not, through a strided type.
        let send = [1, 2, 3, 4, 5, 6];
        let mut recv = [0; 6];
        assert_eq!(MPI_Allreduce(ints(&send), ints_mut(&mut recv), 6, MPI_INT, MPI_SUM, world), MPI_SUCCESS);
        assert_eq!(recv, send);
        let mut recv = [-1; 6];
        assert_eq!(MPI_Allreduce(ints(&send), ints_mut(&mut recv), 1, strided, MPI_MAX, world), MPI_SUCCESS);
        assert_eq!(recv, [1, -1, 3, -1, 5, -1], "only the strided elements are written");
        let mut recv = [7, 8, 9];
        assert_eq!(MPI_Allreduce(MPI_IN_PLACE, ints_mut(&mut recv), 3, MPI_INT, MPI_PROD, world), MPI_SUCCESS);
        assert_eq!(recv, [7, 8, 9]);
        let mut recv = [0; 6];
        assert_eq!(MPI_Reduce(ints(&send), ints_mut(&mut recv), 1, strided, MPI_SUM, 0, world), MPI_SUCCESS);
        assert_eq!(recv, [1, 0, 3, 0, 5, 0]);
        let mut user_op = MPI_OP_NULL;
        assert_eq!(MPI_Op_create(Some(keep_input), 0, &mut user_op), MPI_SUCCESS);
        let mut recv = [0; 6];
        assert_eq!(MPI_Scan(ints(&send), ints_mut(&mut recv), 6, MPI_INT, user_op, world), MPI_SUCCESS);
        assert_eq!(recv, send);
        let mut recv = [0; 2];
        assert_eq!(MPI_Reduce_scatter_block(ints(&send[..2]), ints_mut(&mut recv), 2, MPI_INT, MPI_SUM, world), MPI_SUCCESS);
        assert_eq!(recv, [1, 2]);
        let mut recv = [4, 5];
        assert_eq!(MPI_Reduce_scatter(MPI_IN_PLACE, ints_mut(&mut recv), [1].as_ptr(), MPI_INT, MPI_SUM, world), MPI_SUCCESS);
        assert_eq!(recv, [4, 5]);
        let mut recv = [0; 3];
        assert_eq!(MPI_Exscan(ints(&send), ints_mut(&mut recv), 3, MPI_INT, MPI_SUM, world), MPI_SUCCESS);

        // Gathers and scatters: one strided element is three packed ints.
        let mut recv = [0; 3];
        assert_eq!(MPI_Gather(ints(&send), 1, strided, ints_mut(&mut recv), 3, MPI_INT, 0, world), MPI_SUCCESS);
        assert_eq!(recv, [1, 3, 5]);
        let mut recv = [0; 6];
        assert_eq!(MPI_Allgather(ints(&send), 3, MPI_INT, ints_mut(&mut recv), 1, strided, world), MPI_SUCCESS);
        assert_eq!(recv, [1, 0, 2, 0, 3, 0]);
        let mut recv = [9; 6];
        assert_eq!(MPI_Gatherv(ints(&send), 2, MPI_INT, ints_mut(&mut recv), [2].as_ptr(), [3].as_ptr(), MPI_INT, 0, world), MPI_SUCCESS);
        assert_eq!(recv, [9, 9, 9, 1, 2, 9], "the displacement counts elements");
        let mut recv = [9; 6];
        assert_eq!(MPI_Allgatherv(ints(&send), 3, MPI_INT, ints_mut(&mut recv), [1].as_ptr(), [0].as_ptr(), strided, world), MPI_SUCCESS);
        assert_eq!(recv, [1, 9, 2, 9, 3, 9]);
        let mut recv = [0; 3];
        assert_eq!(MPI_Scatter(ints(&send), 1, strided, ints_mut(&mut recv), 3, MPI_INT, 0, world), MPI_SUCCESS);
        assert_eq!(recv, [1, 3, 5]);
        let mut recv = [0; 2];
        assert_eq!(MPI_Scatterv(ints(&send), [2].as_ptr(), [2].as_ptr(), MPI_INT, ints_mut(&mut recv), 2, MPI_INT, 0, world), MPI_SUCCESS);
        assert_eq!(recv, [3, 4]);
        let mut recv = [0; 6];
        assert_eq!(MPI_Alltoall(ints(&send), 1, strided, ints_mut(&mut recv), 3, MPI_INT, world), MPI_SUCCESS);
        assert_eq!(recv[..3], [1, 3, 5]);
        let mut recv = [9; 6];
        assert_eq!(MPI_Alltoallv(ints(&send), [3].as_ptr(), [1].as_ptr(), MPI_INT, ints_mut(&mut recv), [1].as_ptr(), [0].as_ptr(), strided, world), MPI_SUCCESS);
        assert_eq!(recv, [2, 9, 3, 9, 4, 9]);

        // In place where the standard allows it: the data stays where it is.
        let mut buffer = [1, 2, 3, 4, 5, 6];
        assert_eq!(MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ints_mut(&mut buffer), 1, strided, 0, world), MPI_SUCCESS);
        assert_eq!(MPI_Scatter(ints(&send), 1, strided, MPI_IN_PLACE.cast_mut(), 0, MPI_DATATYPE_NULL, 0, world), MPI_SUCCESS);
        assert_eq!(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ints_mut(&mut buffer), 1, strided, world), MPI_SUCCESS);
        assert_eq!(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ints_mut(&mut buffer), 6, MPI_INT, world), MPI_SUCCESS);
        assert_eq!(MPI_Alltoallv(MPI_IN_PLACE, null(), null(), MPI_DATATYPE_NULL, ints_mut(&mut buffer), [1].as_ptr(), [0].as_ptr(), strided, world), MPI_SUCCESS);
        assert_eq!(MPI_Reduce(MPI_IN_PLACE, ints_mut(&mut buffer), 6, MPI_INT, MPI_MIN, 0, world), MPI_SUCCESS);
        assert_eq!(buffer, [1, 2, 3, 4, 5, 6]);

        // Argument errors, returned under MPI_ERRORS_RETURN.
        let mut buffer = [0; 4];
        assert_eq!(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
        assert_eq!(MPI_Bcast(ints_mut(&mut buffer), 4, MPI_INT, 0, 12345), MPI_ERR_COMM);
        assert_eq!(MPI_Bcast(ints_mut(&mut buffer), -1, MPI_INT, 0, world), MPI_ERR_COUNT);
        assert_eq!(MPI_Bcast(ints_mut(&mut buffer), 4, MPI_DATATYPE_NULL, 0, world), MPI_ERR_TYPE);
        assert_eq!(MPI_Bcast(ints_mut(&mut buffer), 4, MPI_INT, 1, world), MPI_ERR_ROOT);
        assert_eq!(MPI_Bcast(ints_mut(&mut buffer), 4, MPI_INT, -1, world), MPI_ERR_ROOT);
        assert_eq!(MPI_Bcast(null_mut(), 4, MPI_INT, 0, world), MPI_ERR_BUFFER);
        assert_eq!(MPI_Bcast(MPI_IN_PLACE.cast_mut(), 4, MPI_INT, 0, world), MPI_ERR_BUFFER);
        assert_eq!(MPI_Allreduce(ints(&send), ints_mut(&mut buffer), 4, MPI_INT, MPI_OP_NULL, world), MPI_ERR_OP);
        assert_eq!(MPI_Allreduce(ints(&send), ints_mut(&mut buffer), 4, MPI_FLOAT_INT, MPI_SUM, world), MPI_ERR_OP);
        assert_eq!(MPI_Gather(ints(&send), 2, MPI_INT, ints_mut(&mut buffer), 3, MPI_INT, 0, world), MPI_ERR_TRUNCATE);
        assert_eq!(MPI_Gatherv(ints(&send), 1, MPI_INT, ints_mut(&mut buffer), null(), [0].as_ptr(), MPI_INT, 0, world), MPI_ERR_ARG);
        assert_eq!(MPI_Gatherv(ints(&send), 1, MPI_INT, ints_mut(&mut buffer), [-1].as_ptr(), [0].as_ptr(), MPI_INT, 0, world), MPI_ERR_COUNT);
        assert_eq!(MPI_Reduce_scatter(ints(&send), ints_mut(&mut buffer), null(), MPI_INT, MPI_SUM, world), MPI_ERR_ARG);
        assert_eq!(buffer, [0; 4], "failed calls leave the buffers alone");

        assert_eq!(MPI_Finalize(), MPI_SUCCESS);
        assert_ne!(MPI_Barrier(world), MPI_SUCCESS, "collectives need a running MPI");
    }
}
