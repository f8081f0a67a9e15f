/* Compiled (not run) as strict C89, C99, C11 and C++ with -pedantic -Wall -Wextra -Werror: mpi.h
 * must be clean in each. Touches the constants and types a C program commonly uses. */
#include <mpi.h>

int header_strict_uses(MPI_Comm comm, MPI_Status *status);

int header_strict_uses(MPI_Comm comm, MPI_Status *status)
{
    MPI_Datatype types[] = {MPI_CHAR, MPI_INT, MPI_LONG, MPI_DOUBLE, MPI_BYTE, MPI_2INT, MPI_DOUBLE_INT};
    MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MINLOC, MPI_OP_NULL};
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Aint address = 0;
    int count = 0;
    (void)types;
    (void)ops;
    (void)address;
    if (comm == MPI_COMM_NULL || status == MPI_STATUS_IGNORE || request != MPI_REQUEST_NULL)
        return MPI_ERR_COMM;
    MPI_Get_count(status, MPI_INT, &count);
    return status->MPI_SOURCE == MPI_ANY_SOURCE && status->MPI_TAG == MPI_ANY_TAG ? count : MPI_UNDEFINED;
}
