/* Open MPI's monitoring variables through MPI_T, as Open MPI's own monitoring test uses them:
 * pml_monitoring_messages_count / _size bound to a communicator, and pml_monitoring_flush,
 * whose handle writes NAME.RANK.prof when stopped after a file name was written to it.
 *
 * Each rank sends 3 + rank messages of 100 * (rank + 1) bytes and one of 200000 bytes to the
 * next rank; the counts and the flushed file must show exactly that, as Open MPI's monitoring
 * with pml_monitoring_enable=1 (every message counted alike, as Braid counts them) writes them.
 * -DTEST_BRAID_ONLY adds a binding to a communicator other than MPI_COMM_WORLD, which Open MPI
 * refuses. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define LARGE 200000

static int pvar_index(const char *name, int var_class)
{
    int index = -1;
    int code = MPI_T_pvar_get_index(name, var_class, &index);
    CHECK(code == MPI_SUCCESS, "%s is not a performance variable (code %d)", name, code);
    return index;
}

/* The messages this rank sends: 3 + rank small ones and one large one to the next rank. */
static int small_count(int rank) { return 3 + rank; }
static int small_size(int rank) { return 100 * (rank + 1); }

static void send_pattern(int rank, int size)
{
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int sends = small_count(rank) + 1, receives = small_count(from) + 1;
    char *out = calloc(LARGE, 1), *in = calloc((size_t)LARGE * (size_t)receives, 1);
    MPI_Request *requests = malloc(sizeof(MPI_Request) * (size_t)(sends + receives));
    int r = 0;
    for (int i = 0; i < receives; i++)
        MPI_Irecv(in + (size_t)i * LARGE, LARGE, MPI_BYTE, from, 7, MPI_COMM_WORLD, &requests[r++]);
    for (int i = 0; i < sends; i++)
        MPI_Isend(out, i < small_count(rank) ? small_size(rank) : LARGE, MPI_BYTE, to, 7, MPI_COMM_WORLD, &requests[r++]);
    MPI_Waitall(r, requests, MPI_STATUSES_IGNORE);
    free(requests);
    free(in);
    free(out);
}

/* Reads the handle's `count` values and checks that only `peer` is non-zero, at `expected`. */
static void check_only(MPI_T_pvar_session session, MPI_T_pvar_handle handle, int count, int peer, unsigned long long expected, const char *what)
{
    unsigned long long *values = calloc((size_t)count, sizeof(unsigned long long));
    CHECK(MPI_T_pvar_read(session, handle, values) == MPI_SUCCESS, "reading %s", what);
    for (int i = 0; i < count; i++)
        CHECK(values[i] == (i == peer ? expected : 0), "%s[%d] = %llu, expected %llu", what, i, values[i], i == peer ? expected : 0);
    free(values);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    MPI_Init(NULL, NULL);
    int rank, size, provided;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int to = (rank + 1) % size;

    /* Rank 0 makes the folder the files go to. */
    char dir[256] = "";
    if (rank == 0) {
        strcpy(dir, "/tmp/braid-monitoring.XXXXXX");
        CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    }
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);

    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread");
    int flush = pvar_index("pml_monitoring_flush", MPI_T_PVAR_CLASS_GENERIC);
    int counts = pvar_index("pml_monitoring_messages_count", MPI_T_PVAR_CLASS_SIZE);
    int sizes = pvar_index("pml_monitoring_messages_size", MPI_T_PVAR_CLASS_SIZE);

    int bind = -1, var_class = -1;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    CHECK(MPI_T_pvar_get_info(counts, NULL, NULL, NULL, &var_class, &type, NULL, NULL, NULL, &bind, NULL, NULL, NULL) == MPI_SUCCESS, "get_info");
    CHECK(bind == MPI_T_BIND_MPI_COMM && var_class == MPI_T_PVAR_CLASS_SIZE && type == MPI_UNSIGNED_LONG_LONG, "bind %d class %d", bind, var_class);

    MPI_T_pvar_session session;
    MPI_T_pvar_handle flush_handle, count_handle, size_handle;
    int count;
    CHECK(MPI_T_pvar_session_create(&session) == MPI_SUCCESS, "session");
    /* Allocating the flush handle starts the monitoring afresh (MPI_Bcast above is forgotten). */
    CHECK(MPI_T_pvar_handle_alloc(session, flush, MPI_COMM_WORLD, &flush_handle, &count) == MPI_SUCCESS, "flush handle");
    CHECK(MPI_T_pvar_start(session, flush_handle) == MPI_SUCCESS, "start flush");
    MPI_Comm world = MPI_COMM_WORLD;
    CHECK(MPI_T_pvar_handle_alloc(session, counts, &world, &count_handle, &count) == MPI_SUCCESS, "count handle");
    CHECK(count == size, "count %d for %d ranks", count, size);
    CHECK(MPI_T_pvar_handle_alloc(session, sizes, &world, &size_handle, &count) == MPI_SUCCESS, "size handle");
    CHECK(MPI_T_pvar_start(session, count_handle) == MPI_SUCCESS, "start count");
    CHECK(MPI_T_pvar_start(session, size_handle) == MPI_SUCCESS, "start size");
    unsigned long long written = 0;
    CHECK(MPI_T_pvar_write(session, count_handle, &written) != MPI_SUCCESS, "the counts are read-only");

    send_pattern(rank, size);
    unsigned long long messages = (unsigned long long)small_count(rank) + 1;
    unsigned long long bytes = (unsigned long long)small_count(rank) * (unsigned long long)small_size(rank) + LARGE;
    check_only(session, count_handle, size, to, messages, "messages_count");
    check_only(session, size_handle, size, to, bytes, "messages_size");

#ifdef TEST_BRAID_ONLY
    /* Braid serves any communicator: ranks of the reversed world see the next rank elsewhere. */
    MPI_Comm reversed;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
    MPI_T_pvar_handle reversed_handle;
    CHECK(MPI_T_pvar_handle_alloc(session, counts, &reversed, &reversed_handle, &count) == MPI_SUCCESS, "reversed handle");
    CHECK(MPI_T_pvar_start(session, reversed_handle) == MPI_SUCCESS, "start reversed");
    /* The split's own messages count too: read, then compare the next rank's entry only. */
    unsigned long long *values = calloc((size_t)size, sizeof(unsigned long long)), world_values[64];
    CHECK(MPI_T_pvar_read(session, reversed_handle, values) == MPI_SUCCESS, "read reversed");
    CHECK(size <= 64, "at most 64 ranks");
    CHECK(MPI_T_pvar_read(session, count_handle, world_values) == MPI_SUCCESS, "read world");
    for (int i = 0; i < size; i++)
        CHECK(values[size - 1 - i] == world_values[i], "reversed[%d] = %llu, world[%d] = %llu", size - 1 - i, values[size - 1 - i], i, world_values[i]);
    free(values);
    MPI_T_pvar_handle_free(session, &reversed_handle);
    MPI_Comm_free(&reversed);
    MPI_Comm null_comm = MPI_COMM_NULL;
    CHECK(MPI_T_pvar_handle_alloc(session, counts, &null_comm, &reversed_handle, &count) == MPI_T_ERR_INVALID_HANDLE, "MPI_COMM_NULL is no object");
    /* Start the flushed phase again from the pattern alone. */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_T_pvar_stop(session, flush_handle) == MPI_SUCCESS, "a flush with no file name");
    CHECK(MPI_T_pvar_start(session, flush_handle) == MPI_SUCCESS, "restart flush");
    check_only(session, count_handle, size, -1, 0, "messages_count after a flush");
    send_pattern(rank, size);
#endif

    char name[300];
    snprintf(name, sizeof name, "%s/phase_1", dir);
    CHECK(MPI_T_pvar_write(session, flush_handle, name) == MPI_SUCCESS, "write the file name");
    CHECK(MPI_T_pvar_stop(session, flush_handle) == MPI_SUCCESS, "stop flush");
    /* The flush reset the counts. */
    check_only(session, count_handle, size, -1, 0, "messages_count after the flush");

    char path[320], line[4096];
    snprintf(path, sizeof path, "%s.%d.prof", name, rank);
    FILE *file = fopen(path, "r");
    CHECK(file != NULL, "no %s", path);
    int found = 0;
    while (fgets(line, sizeof line, file)) {
        int src, dst;
        unsigned long long line_bytes, line_messages;
        if (sscanf(line, "E\t%d\t%d\t%llu bytes\t%llu msgs sent", &src, &dst, &line_bytes, &line_messages) != 4)
            continue;
        CHECK(src == rank && dst == to, "line %s", line);
        CHECK(line_bytes == bytes && line_messages == messages, "line %s: expected %llu bytes, %llu messages", line, bytes, messages);
        /* 66 histogram buckets: the small size's and the large size's. */
        char *histogram = strrchr(line, '\t') + 1;
        unsigned long long buckets[66];
        int filled = 0, offset = 0, used;
        while (filled < 66 && sscanf(histogram + offset, "%llu%n", &buckets[filled], &used) == 1) {
            filled++;
            offset += used;
            if (histogram[offset] == ',')
                offset++;
        }
        CHECK(filled == 66, "%d buckets in %s", filled, line);
        int small_bucket = 0, large_bucket = 0;
        for (int value = small_size(rank); value; value >>= 1)
            small_bucket++;
        for (int value = LARGE; value; value >>= 1)
            large_bucket++;
        CHECK(buckets[small_bucket] == (unsigned long long)small_count(rank) && buckets[large_bucket] == 1, "buckets %d and %d in %s", small_bucket, large_bucket, line);
        found++;
    }
    fclose(file);
    CHECK(found == 1, "%d lines for the next rank in %s", found, path);
    unlink(path);

    /* An empty name: stopping writes nothing. */
    CHECK(MPI_T_pvar_start(session, flush_handle) == MPI_SUCCESS, "restart flush");
    static const void *nothing = NULL;
    CHECK(MPI_T_pvar_write(session, flush_handle, (void *)&nothing) == MPI_SUCCESS, "write no name");
    snprintf(name, sizeof name, "%s/phase_2", dir);
    CHECK(MPI_T_pvar_stop(session, flush_handle) == MPI_SUCCESS, "stop flush");
    snprintf(path, sizeof path, "%s.%d.prof", name, rank);
    CHECK(access(path, F_OK) != 0, "%s was written", path);

    MPI_T_pvar_handle_free(session, &count_handle);
    MPI_T_pvar_handle_free(session, &size_handle);
    MPI_T_pvar_handle_free(session, &flush_handle);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        rmdir(dir);
    MPI_Finalize();
    return 0;
}
