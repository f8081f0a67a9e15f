#!/usr/bin/env python3
"""Writes wrappers.h, the profiler's MPI_ wrappers: each times its PMPI_ twin and says how many
bytes the call moves (and, for point-to-point sends, to whom). Run from anywhere:
`python3 profiler/wrappers.py`; the output is committed, so building needs no Python."""
import os

# (name, parameters, bytes expression, send destination or None, extra statement before return)
P2P_SEND = "const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm"
WRAPPERS = [
    ("Send", P2P_SEND, "bytes_of(count, datatype)", "dest"),
    ("Bsend", P2P_SEND, "bytes_of(count, datatype)", "dest"),
    ("Ssend", P2P_SEND, "bytes_of(count, datatype)", "dest"),
    ("Rsend", P2P_SEND, "bytes_of(count, datatype)", "dest"),
    ("Isend", P2P_SEND + ", MPI_Request *request", "bytes_of(count, datatype)", "dest"),
    ("Ibsend", P2P_SEND + ", MPI_Request *request", "bytes_of(count, datatype)", "dest"),
    ("Issend", P2P_SEND + ", MPI_Request *request", "bytes_of(count, datatype)", "dest"),
    ("Irsend", P2P_SEND + ", MPI_Request *request", "bytes_of(count, datatype)", "dest"),
    ("Recv", "void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status", "bytes_of(count, datatype)", None),
    ("Irecv", "void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request", "bytes_of(count, datatype)", None),
    ("Mrecv", "void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status", "bytes_of(count, datatype)", None),
    ("Imrecv", "void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request", "bytes_of(count, datatype)", None),
    ("Sendrecv", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status",
     "bytes_of(sendcount, sendtype)", "dest"),
    ("Sendrecv_replace", "void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status", "bytes_of(count, datatype)", "dest"),
    # Persistent requests: the bytes go to the matrix at each MPI_Start (not attributed: the
    # request does not say where), and count here once.
    ("Send_init", P2P_SEND + ", MPI_Request *request", "bytes_of(count, datatype)", None),
    ("Bsend_init", P2P_SEND + ", MPI_Request *request", "bytes_of(count, datatype)", None),
    ("Ssend_init", P2P_SEND + ", MPI_Request *request", "bytes_of(count, datatype)", None),
    ("Rsend_init", P2P_SEND + ", MPI_Request *request", "bytes_of(count, datatype)", None),
    ("Recv_init", "void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request", "bytes_of(count, datatype)", None),
    ("Start", "MPI_Request *request", "0", None),
    ("Startall", "int count, MPI_Request array_of_requests[]", "0", None),
    ("Wait", "MPI_Request *request, MPI_Status *status", "0", None),
    ("Waitall", "int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]", "0", None),
    ("Waitany", "int count, MPI_Request array_of_requests[], int *index, MPI_Status *status", "0", None),
    ("Waitsome", "int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[], MPI_Status array_of_statuses[]", "0", None),
    ("Test", "MPI_Request *request, int *flag, MPI_Status *status", "0", None),
    ("Testall", "int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[]", "0", None),
    ("Testany", "int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status", "0", None),
    ("Testsome", "int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[], MPI_Status array_of_statuses[]", "0", None),
    ("Request_get_status", "MPI_Request request, int *flag, MPI_Status *status", "0", None),
    ("Probe", "int source, int tag, MPI_Comm comm, MPI_Status *status", "0", None),
    ("Iprobe", "int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status", "0", None),
    ("Mprobe", "int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status", "0", None),
    ("Improbe", "int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status", "0", None),
    ("Cancel", "MPI_Request *request", "0", None),
    ("Barrier", "MPI_Comm comm", "0", None),
    ("Bcast", "void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm", "bytes_of(count, datatype)", None),
    ("Gather", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm", "bytes_of(sendcount, sendtype)", None),
    ("Gatherv", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm", "bytes_of(sendcount, sendtype)", None),
    ("Scatter", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm", "bytes_of(recvcount, recvtype)", None),
    ("Scatterv", "const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm", "bytes_of(recvcount, recvtype)", None),
    ("Allgather", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm", "bytes_of(sendcount, sendtype)", None),
    ("Allgatherv", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm", "bytes_of(sendcount, sendtype)", None),
    ("Alltoall", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm", "bytes_of(sendcount, sendtype) * (uint64_t)comm_size(comm)", None),
    ("Alltoallv", "const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm", "sum_bytes(sendcounts, sendtype, comm)", None),
    ("Alltoallw", "const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm", "sum_bytes_w(sendcounts, sendtypes, comm)", None),
    ("Reduce", "const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm", "bytes_of(count, datatype)", None),
    ("Allreduce", "const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm", "bytes_of(count, datatype)", None),
    ("Reduce_scatter", "const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm", "sum_bytes(recvcounts, datatype, comm)", None),
    ("Reduce_scatter_block", "const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm", "bytes_of(recvcount, datatype) * (uint64_t)comm_size(comm)", None),
    ("Scan", "const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm", "bytes_of(count, datatype)", None),
    ("Exscan", "const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm", "bytes_of(count, datatype)", None),
]
NONBLOCKING = ["Barrier", "Bcast", "Gather", "Gatherv", "Scatter", "Scatterv", "Allgather", "Allgatherv", "Alltoall", "Alltoallv", "Alltoallw",
               "Reduce", "Allreduce", "Reduce_scatter", "Reduce_scatter_block", "Scan", "Exscan"]
blocking = {w[0]: w for w in WRAPPERS}
for name in NONBLOCKING:
    _, params, size, dest = blocking[name]
    WRAPPERS.append(("I" + name[0].lower() + name[1:], params + ", MPI_Request *request", size, dest))
NEIGHBOR = [
    ("Neighbor_allgather", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm", "bytes_of(sendcount, sendtype)"),
    ("Neighbor_allgatherv", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm", "bytes_of(sendcount, sendtype)"),
    ("Neighbor_alltoall", "const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm", "bytes_of(sendcount, sendtype)"),
    ("Neighbor_alltoallv", "const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm", "0"),
    ("Neighbor_alltoallw", "const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm", "0"),
]
for name, params, size in NEIGHBOR:
    WRAPPERS.append((name, params, size, None))
    WRAPPERS.append(("I" + name[0].lower() + name[1:], params + ", MPI_Request *request", size, None))
ORIGIN = "const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype"
GET = "void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype"
GETACC = "const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win"
WRAPPERS += [
    ("Put", ORIGIN + ", MPI_Win win", "bytes_of(origin_count, origin_datatype)", None),
    ("Get", GET + ", MPI_Win win", "bytes_of(origin_count, origin_datatype)", None),
    ("Accumulate", ORIGIN + ", MPI_Op op, MPI_Win win", "bytes_of(origin_count, origin_datatype)", None),
    ("Get_accumulate", GETACC, "bytes_of(origin_count, origin_datatype)", None),
    ("Fetch_and_op", "const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win", "bytes_of(1, datatype)", None),
    ("Compare_and_swap", "const void *origin_addr, const void *compare_addr, void *result_addr, MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win", "bytes_of(1, datatype)", None),
    ("Rput", ORIGIN + ", MPI_Win win, MPI_Request *request", "bytes_of(origin_count, origin_datatype)", None),
    ("Rget", GET + ", MPI_Win win, MPI_Request *request", "bytes_of(origin_count, origin_datatype)", None),
    ("Raccumulate", ORIGIN + ", MPI_Op op, MPI_Win win, MPI_Request *request", "bytes_of(origin_count, origin_datatype)", None),
    ("Rget_accumulate", GETACC + ", MPI_Request *request", "bytes_of(origin_count, origin_datatype)", None),
    ("Win_create", "void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win", "0", None),
    ("Win_allocate", "MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win", "0", None),
    ("Win_allocate_shared", "MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win", "0", None),
    ("Win_create_dynamic", "MPI_Info info, MPI_Comm comm, MPI_Win *win", "0", None),
    ("Win_free", "MPI_Win *win", "0", None),
    ("Win_fence", "int assert, MPI_Win win", "0", None),
    ("Win_lock", "int lock_type, int rank, int assert, MPI_Win win", "0", None),
    ("Win_unlock", "int rank, MPI_Win win", "0", None),
    ("Win_lock_all", "int assert, MPI_Win win", "0", None),
    ("Win_unlock_all", "MPI_Win win", "0", None),
    ("Win_flush", "int rank, MPI_Win win", "0", None),
    ("Win_flush_all", "MPI_Win win", "0", None),
    ("Win_flush_local", "int rank, MPI_Win win", "0", None),
    ("Win_flush_local_all", "MPI_Win win", "0", None),
    ("Win_start", "MPI_Group group, int assert, MPI_Win win", "0", None),
    ("Win_complete", "MPI_Win win", "0", None),
    ("Win_post", "MPI_Group group, int assert, MPI_Win win", "0", None),
    ("Win_wait", "MPI_Win win", "0", None),
    ("Win_sync", "MPI_Win win", "0", None),
    ("Comm_dup", "MPI_Comm comm, MPI_Comm *newcomm", "0", None),
    ("Comm_split", "MPI_Comm comm, int color, int key, MPI_Comm *newcomm", "0", None),
    ("Comm_split_type", "MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm", "0", None),
    ("Comm_create", "MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm", "0", None),
]


# Fortran (gfortran's names, mpif.h and `use mpi`): each wrapper times the library's own
# profiling entry point pmpi_<name>_, so Fortran's special addresses (MPI_IN_PLACE, MPI_BOTTOM)
# need no conversion. (name, parameters after the buffers' void pointers, bytes, destination).
F = "MPI_Fint *"
FORTRAN = [
    ("send", f"void *buf, {F}count, {F}datatype, {F}dest, {F}tag, {F}comm, {F}ierr", "bytes_of(*count, PMPI_Type_f2c(*datatype))", "*dest"),
    ("ssend", f"void *buf, {F}count, {F}datatype, {F}dest, {F}tag, {F}comm, {F}ierr", "bytes_of(*count, PMPI_Type_f2c(*datatype))", "*dest"),
    ("isend", f"void *buf, {F}count, {F}datatype, {F}dest, {F}tag, {F}comm, {F}request, {F}ierr", "bytes_of(*count, PMPI_Type_f2c(*datatype))", "*dest"),
    ("recv", f"void *buf, {F}count, {F}datatype, {F}source, {F}tag, {F}comm, {F}status, {F}ierr", "bytes_of(*count, PMPI_Type_f2c(*datatype))", None),
    ("irecv", f"void *buf, {F}count, {F}datatype, {F}source, {F}tag, {F}comm, {F}request, {F}ierr", "bytes_of(*count, PMPI_Type_f2c(*datatype))", None),
    ("sendrecv", f"void *sendbuf, {F}sendcount, {F}sendtype, {F}dest, {F}sendtag, void *recvbuf, {F}recvcount, {F}recvtype, {F}source, {F}recvtag, {F}comm, {F}status, {F}ierr",
     "bytes_of(*sendcount, PMPI_Type_f2c(*sendtype))", "*dest"),
    ("wait", f"{F}request, {F}status, {F}ierr", "0", None),
    ("waitall", f"{F}count, {F}requests, {F}statuses, {F}ierr", "0", None),
    ("waitany", f"{F}count, {F}requests, {F}index, {F}status, {F}ierr", "0", None),
    ("test", f"{F}request, {F}flag, {F}status, {F}ierr", "0", None),
    ("barrier", f"{F}comm, {F}ierr", "0", None),
    ("bcast", f"void *buffer, {F}count, {F}datatype, {F}root, {F}comm, {F}ierr", "bytes_of(*count, PMPI_Type_f2c(*datatype))", None),
    ("reduce", f"void *sendbuf, void *recvbuf, {F}count, {F}datatype, {F}op, {F}root, {F}comm, {F}ierr", "bytes_of(*count, PMPI_Type_f2c(*datatype))", None),
    ("allreduce", f"void *sendbuf, void *recvbuf, {F}count, {F}datatype, {F}op, {F}comm, {F}ierr", "bytes_of(*count, PMPI_Type_f2c(*datatype))", None),
    ("alltoall", f"void *sendbuf, {F}sendcount, {F}sendtype, void *recvbuf, {F}recvcount, {F}recvtype, {F}comm, {F}ierr",
     "bytes_of(*sendcount, PMPI_Type_f2c(*sendtype)) * (uint64_t)comm_size(PMPI_Comm_f2c(*comm))", None),
    ("alltoallv", f"void *sendbuf, {F}sendcounts, {F}sdispls, {F}sendtype, void *recvbuf, {F}recvcounts, {F}rdispls, {F}recvtype, {F}comm, {F}ierr",
     "sum_bytes(sendcounts, PMPI_Type_f2c(*sendtype), PMPI_Comm_f2c(*comm))", None),
    ("allgather", f"void *sendbuf, {F}sendcount, {F}sendtype, void *recvbuf, {F}recvcount, {F}recvtype, {F}comm, {F}ierr", "bytes_of(*sendcount, PMPI_Type_f2c(*sendtype))", None),
    ("gather", f"void *sendbuf, {F}sendcount, {F}sendtype, void *recvbuf, {F}recvcount, {F}recvtype, {F}root, {F}comm, {F}ierr", "bytes_of(*sendcount, PMPI_Type_f2c(*sendtype))", None),
    ("scatter", f"void *sendbuf, {F}sendcount, {F}sendtype, void *recvbuf, {F}recvcount, {F}recvtype, {F}root, {F}comm, {F}ierr", "bytes_of(*recvcount, PMPI_Type_f2c(*recvtype))", None),
]


def argument_names(params):
    names = []
    for param in params.split(","):
        token = param.strip().split()[-1].lstrip("*")
        names.append(token.split("[")[0])
    return ", ".join(names)


def main():
    lines = ["/* Generated by profiler/wrappers.py: the profiler's MPI_ wrappers. Do not edit. */", ""]
    for name, params, size, dest in WRAPPERS:
        args = argument_names(params)
        lines.append(f"int MPI_{name}({params})")
        lines.append("{")
        lines.append("    ENTER;")
        lines.append(f"    int rc = PMPI_{name}({args});")
        lines.append(f"    uint64_t bytes = prof.on ? {size} : 0;")
        if dest:
            lines.append(f"    if (rc == MPI_SUCCESS && {dest} != MPI_PROC_NULL)")
            lines.append(f"        sent_to({dest}, comm, bytes);")
        lines.append(f"    LEAVE({name}, bytes);")
        lines.append("    return rc;")
        lines.append("}")
        lines.append("")
    # MPI_Comm_free forgets the communicator's ranks before the handle can be reused.
    lines += ["int MPI_Comm_free(MPI_Comm *comm)", "{", "    ENTER;", "    if (comm)", "        forget_comm(*comm);", "    int rc = PMPI_Comm_free(comm);",
              "    LEAVE(Comm_free, 0);", "    return rc;", "}", ""]
    lines.append("/* Fortran */")
    lines.append("")
    for name, params, size, dest in FORTRAN:
        args = argument_names(params)
        cname = name[0].upper() + name[1:]
        lines.append(f"void pmpi_{name}_({params});")
        lines.append(f"void mpi_{name}_({params})")
        lines.append("{")
        lines.append("    ENTER;")
        lines.append(f"    pmpi_{name}_({args});")
        lines.append(f"    uint64_t bytes = prof.on && *ierr == MPI_SUCCESS ? {size} : 0;")
        if dest:
            lines.append(f"    if (prof.on && *ierr == MPI_SUCCESS && {dest} != MPI_PROC_NULL)")
            lines.append(f"        sent_to({dest}, PMPI_Comm_f2c(*comm), bytes);")
        lines.append(f"    LEAVE({cname}, bytes);")
        lines.append("}")
        lines.append("")
    # Initialisation and finalisation start and end the profile, as the C calls do.
    lines += ["void pmpi_init_(MPI_Fint *ierr);", "void mpi_init_(MPI_Fint *ierr)", "{", "    pmpi_init_(ierr);", "    if (*ierr == MPI_SUCCESS)", "        start_profiling();", "}", "",
              "void pmpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);", "void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)", "{",
              "    pmpi_init_thread_(required, provided, ierr);", "    if (*ierr == MPI_SUCCESS)", "        start_profiling();", "}", "",
              "void pmpi_finalize_(MPI_Fint *ierr);", "void mpi_finalize_(MPI_Fint *ierr)", "{", "    finish_profiling();", "    pmpi_finalize_(ierr);", "}", ""]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wrappers.h")
    with open(path, "w") as out:
        out.write("\n".join(lines))


if __name__ == "__main__":
    main()
