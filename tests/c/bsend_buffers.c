/* MPI 4.1's buffers for buffered sends: a communicator's buffer is used before the process's
 * (a Bsend that the process's small buffer refuses goes through), a session's for the
 * communicators made from its process sets, MPI_BUFFER_AUTOMATIC (hundreds of messages in flight
 * with no buffer sized for them, then detached as MPI_BUFFER_AUTOMATIC), the blocking and
 * non-blocking flushes, and a communicator freed with its buffer attached. Debian's MPICH 4.0.2
 * and Open MPI 4.1 predate these calls, so this test runs on Braid only. Needs 2 ranks or more. */
#include <string.h>

#include "check.h"

#define MESSAGES 300
#define LARGE (1 << 20)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int peer = rank == 0 ? 1 : 0, active = rank < 2;

    /* The process's buffer is too small for 100 ints; the communicator's is not. */
    char small[MPI_BSEND_OVERHEAD + 8];
    static char roomy[MPI_BSEND_OVERHEAD + 4096];
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    CHECK(MPI_Buffer_attach(small, sizeof small) == MPI_SUCCESS, "attach");
    CHECK(MPI_Comm_attach_buffer(dup, roomy, sizeof roomy) == MPI_SUCCESS, "comm attach");
    CHECK(class_of(MPI_Comm_attach_buffer(dup, roomy, sizeof roomy)) == MPI_ERR_BUFFER, "attached twice");
    int data[100], got[100];
    for (int i = 0; i < 100; i++)
        data[i] = rank * 1000 + i;
    if (active) {
        CHECK(MPI_Bsend(data, 100, MPI_INT, peer, 1, dup) == MPI_SUCCESS, "Bsend on the communicator with its own buffer");
        CHECK(class_of(MPI_Bsend(data, 100, MPI_INT, peer, 2, MPI_COMM_WORLD)) == MPI_ERR_BUFFER, "the process's small buffer took 400 bytes");
        MPI_Recv(got, 100, MPI_INT, peer, 1, dup, MPI_STATUS_IGNORE);
        CHECK(got[99] == peer * 1000 + 99, "got %d", got[99]);
        CHECK(MPI_Comm_flush_buffer(dup) == MPI_SUCCESS, "flush");
    }
    void *address = NULL;
    int bytes = 0;
    CHECK(MPI_Comm_detach_buffer(dup, &address, &bytes) == MPI_SUCCESS && address == roomy && bytes == (int)sizeof roomy, "comm detach gave %p, %d",
          address, bytes);
    CHECK(class_of(MPI_Comm_detach_buffer(dup, &address, &bytes)) == MPI_ERR_BUFFER, "detached twice");
    CHECK(MPI_Buffer_detach(&address, &bytes) == MPI_SUCCESS && address == small, "process detach");

    /* Automatic: hundreds of messages in flight, received only afterwards. */
    CHECK(MPI_Comm_attach_buffer(dup, MPI_BUFFER_AUTOMATIC, 0) == MPI_SUCCESS, "automatic attach");
    if (active) {
        for (int m = 0; m < MESSAGES; m++) {
            data[0] = m;
            CHECK(MPI_Bsend(data, 100, MPI_INT, peer, 3, dup) == MPI_SUCCESS, "automatic Bsend %d", m);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (active) {
        for (int m = 0; m < MESSAGES; m++) {
            MPI_Recv(got, 100, MPI_INT, peer, 3, dup, MPI_STATUS_IGNORE);
            CHECK(got[0] == m, "message %d arrived as %d", m, got[0]);
        }
    }
    CHECK(MPI_Comm_detach_buffer(dup, &address, &bytes) == MPI_SUCCESS && address == MPI_BUFFER_AUTOMATIC && bytes == 0, "automatic detach gave %p, %d",
          address, bytes);

    /* A non-blocking flush of a large message completes once the receiver has taken it. */
    static char large_buffer[MPI_BSEND_OVERHEAD + LARGE];
    char *large = malloc(LARGE);
    CHECK(large != NULL, "no memory");
    CHECK(MPI_Buffer_attach(large_buffer, sizeof large_buffer) == MPI_SUCCESS, "attach large");
    MPI_Request flushed = MPI_REQUEST_NULL;
    if (rank == 0) {
        memset(large, 7, LARGE);
        MPI_Bsend(large, LARGE, MPI_CHAR, 1, 4, MPI_COMM_WORLD);
        CHECK(MPI_Buffer_iflush(&flushed) == MPI_SUCCESS, "iflush");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Recv(large, LARGE, MPI_CHAR, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(large[LARGE - 1] == 7, "large message");
    }
    CHECK(MPI_Wait(&flushed, MPI_STATUS_IGNORE) == MPI_SUCCESS && flushed == MPI_REQUEST_NULL, "iflush wait");
    CHECK(MPI_Buffer_flush() == MPI_SUCCESS, "flush with nothing in flight");
    MPI_Buffer_detach(&address, &bytes);
    free(large);

    /* A communicator freed with its buffer attached. */
    MPI_Comm_attach_buffer(dup, roomy, sizeof roomy);
    if (active) {
        MPI_Bsend(data, 1, MPI_INT, peer, 5, dup);
        MPI_Recv(got, 1, MPI_INT, peer, 5, dup, MPI_STATUS_IGNORE);
    }
    CHECK(MPI_Comm_free(&dup) == MPI_SUCCESS, "free with a buffer attached");

    /* A session's buffer serves the communicators made from its process sets. */
    MPI_Session session;
    MPI_Group group;
    MPI_Comm from_session;
    CHECK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session) == MPI_SUCCESS, "session");
    MPI_Group_from_session_pset(session, "mpi://WORLD", &group);
    MPI_Comm_create_from_group(group, "braid.test.bsend", MPI_INFO_NULL, MPI_ERRORS_RETURN, &from_session);
    MPI_Group_free(&group);
    CHECK(MPI_Session_attach_buffer(session, roomy, sizeof roomy) == MPI_SUCCESS, "session attach");
    MPI_Request request;
    if (active) {
        CHECK(MPI_Ibsend(data, 100, MPI_INT, peer, 6, from_session, &request) == MPI_SUCCESS, "Ibsend through the session's buffer");
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        MPI_Recv(got, 100, MPI_INT, peer, 6, from_session, MPI_STATUS_IGNORE);
        CHECK(got[5] == peer * 1000 + 5, "got %d", got[5]);
        CHECK(class_of(MPI_Bsend(data, 100, MPI_INT, peer, 7, MPI_COMM_WORLD)) == MPI_ERR_BUFFER, "the world used the session's buffer");
    }
    /* Groups derived from the session's group (MPI_Group_incl, MPI_Comm_group) stay with the
     * session: a communicator made from one uses the session's buffer too. */
    MPI_Group whole, reversed;
    MPI_Comm_group(from_session, &whole);
    int order[64];
    MPI_Group_size(whole, &size);
    for (int i = 0; i < size && i < 64; i++)
        order[i] = size - 1 - i;
    MPI_Group_incl(whole, size, order, &reversed);
    MPI_Comm derived;
    CHECK(MPI_Comm_create_from_group(reversed, "braid.test.bsend.derived", MPI_INFO_NULL, MPI_ERRORS_RETURN, &derived) == MPI_SUCCESS, "a communicator from a derived group");
    MPI_Group_free(&reversed);
    MPI_Group_free(&whole);
    int derived_rank;
    MPI_Comm_rank(derived, &derived_rank);
    if (derived_rank % 2 == 0 && derived_rank + 1 < size)
        CHECK(MPI_Bsend(data, 100, MPI_INT, derived_rank + 1, 8, derived) == MPI_SUCCESS, "Bsend on a derived group's communicator through the session's buffer");
    else if (derived_rank % 2 == 1)
        MPI_Recv(got, 100, MPI_INT, derived_rank - 1, 8, derived, MPI_STATUS_IGNORE);
    MPI_Comm_free(&derived);
    CHECK(MPI_Session_iflush_buffer(session, &request) == MPI_SUCCESS, "session iflush");
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    CHECK(MPI_Session_detach_buffer(session, &address, &bytes) == MPI_SUCCESS && address == roomy, "session detach");
    MPI_Comm_free(&from_session);
    MPI_Session_finalize(&session);
    MPI_Finalize();
    return 0;
}
