/* A profiling tool in the style of mpiP: it defines MPI_Send, MPI_Recv, MPI_Allreduce and
 * MPI_Pcontrol, counts the calls and forwards each to its PMPI_ twin. Built as a shared library
 * that pmpi_counts.c is either linked against (in front of the MPI library) or run with under
 * LD_PRELOAD; the program reads the counts with pmpi_tool_count, found through dlsym. */
#include <string.h>
#include <mpi.h>

static int sends, receives, allreduces, pcontrol_level = -1;

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    sends++;
    return PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    receives++;
    return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    allreduces++;
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Pcontrol(const int level, ...)
{
    pcontrol_level = level;
    return PMPI_Pcontrol(level);
}

int pmpi_tool_count(const char *name);

/* The number of calls of `name` seen so far, the last MPI_Pcontrol level, or -2 for a name the
 * tool does not intercept. */
int pmpi_tool_count(const char *name)
{
    if (strcmp(name, "MPI_Send") == 0)
        return sends;
    if (strcmp(name, "MPI_Recv") == 0)
        return receives;
    if (strcmp(name, "MPI_Allreduce") == 0)
        return allreduces;
    if (strcmp(name, "MPI_Pcontrol") == 0)
        return pcontrol_level;
    return -2;
}
