/* The MPI functions the profiler times, as an X-macro: F(name) for each. Kept in one list so the
 * table of names and the per-function counters cannot drift apart. */
#define PROFILED_FUNCTIONS(F) \
    F(Init) F(Init_thread) F(Finalize) \
    F(Send) F(Bsend) F(Ssend) F(Rsend) F(Isend) F(Ibsend) F(Issend) F(Irsend) \
    F(Recv) F(Irecv) F(Mrecv) F(Imrecv) F(Sendrecv) F(Sendrecv_replace) \
    F(Send_init) F(Bsend_init) F(Ssend_init) F(Rsend_init) F(Recv_init) F(Start) F(Startall) \
    F(Wait) F(Waitall) F(Waitany) F(Waitsome) F(Test) F(Testall) F(Testany) F(Testsome) F(Request_get_status) \
    F(Probe) F(Iprobe) F(Mprobe) F(Improbe) F(Cancel) \
    F(Barrier) F(Bcast) F(Gather) F(Gatherv) F(Scatter) F(Scatterv) F(Allgather) F(Allgatherv) \
    F(Alltoall) F(Alltoallv) F(Alltoallw) F(Reduce) F(Allreduce) F(Reduce_scatter) F(Reduce_scatter_block) \
    F(Scan) F(Exscan) \
    F(Ibarrier) F(Ibcast) F(Igather) F(Igatherv) F(Iscatter) F(Iscatterv) F(Iallgather) F(Iallgatherv) \
    F(Ialltoall) F(Ialltoallv) F(Ialltoallw) F(Ireduce) F(Iallreduce) F(Ireduce_scatter) F(Ireduce_scatter_block) \
    F(Iscan) F(Iexscan) \
    F(Neighbor_allgather) F(Neighbor_allgatherv) F(Neighbor_alltoall) F(Neighbor_alltoallv) F(Neighbor_alltoallw) \
    F(Ineighbor_allgather) F(Ineighbor_allgatherv) F(Ineighbor_alltoall) F(Ineighbor_alltoallv) F(Ineighbor_alltoallw) \
    F(Put) F(Get) F(Accumulate) F(Get_accumulate) F(Fetch_and_op) F(Compare_and_swap) \
    F(Rput) F(Rget) F(Raccumulate) F(Rget_accumulate) \
    F(Win_create) F(Win_allocate) F(Win_allocate_shared) F(Win_create_dynamic) F(Win_free) \
    F(Win_fence) F(Win_lock) F(Win_unlock) F(Win_lock_all) F(Win_unlock_all) F(Win_flush) F(Win_flush_all) \
    F(Win_flush_local) F(Win_flush_local_all) F(Win_start) F(Win_complete) F(Win_post) F(Win_wait) F(Win_sync) \
    F(Comm_dup) F(Comm_split) F(Comm_split_type) F(Comm_create) F(Comm_free)
