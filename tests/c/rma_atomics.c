/* Concurrent single-element accumulates from every rank on rank 0's window, with and without the
 * acc_single_intrinsic hint (which lets an implementation use the processor's atomic
 * instructions), on allocated and created windows: fetch-and-op sums on int64 and int32, plain
 * accumulate sums, a compare-and-swap loop, a floating-point maximum, and a sum on an int64 at a
 * misaligned address. No update may be lost, and fetched values only grow. Any number of ranks. */
#define _POSIX_C_SOURCE 200112L
#include <mpi.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define ROUNDS 300
#define BYTES 64

static int rank, size;

static void hammer(int allocate, int hinted)
{
    const char *name = allocate ? (hinted ? "allocated, hinted" : "allocated") : (hinted ? "created, hinted" : "created");
    MPI_Info info = MPI_INFO_NULL;
    if (hinted) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "acc_single_intrinsic", "true");
    }
    unsigned char *memory = NULL;
    void *created = NULL;
    MPI_Win win;
    if (allocate) {
        MPI_Win_allocate(BYTES, 1, info, MPI_COMM_WORLD, &memory, &win);
    } else {
        CHECK(posix_memalign(&created, 64, BYTES) == 0, "posix_memalign failed");
        memory = created;
        MPI_Win_create(memory, BYTES, 1, info, MPI_COMM_WORLD, &win);
    }
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    memset(memory, 0, BYTES);
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_lock_all(0, win);
    int64_t one = 1, last_seen = -1;
    int32_t one32 = 1;
    for (int i = 0; i < ROUNDS; i++) {
        int64_t old = -1;
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win);
        MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_SUM, win);
        int64_t seen = -1;
        MPI_Get_accumulate(NULL, 0, MPI_INT64_T, &seen, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_NO_OP, win);
        MPI_Win_flush(0, win);
        CHECK(old >= 0 && seen > old && seen >= last_seen, "%s: fetched %lld, then read %lld after %lld", name, (long long)old, (long long)seen, (long long)last_seen);
        last_seen = seen;
        /* Compare-and-swap until this rank's increment of the counter at byte 8 lands. Open MPI
         * 4.1's osc/rdma crashes in compare-and-swap (btl vader's emulated atomics) on the
         * caller's own window and on allocated ones, so there those add with fetch-and-op. */
        int64_t expected = 0;
        MPI_Fetch_and_op(NULL, &expected, MPI_INT64_T, 0, 8, MPI_NO_OP, win);
        MPI_Win_flush(0, win);
#ifdef OPEN_MPI
        if (rank == 0 || allocate)
            MPI_Fetch_and_op(&one, &expected, MPI_INT64_T, 0, 8, MPI_SUM, win);
        else
#endif
            add_one_by_compare_and_swap(win, 0, 8, expected);
        double value = rank * ROUNDS + i, previous = 0;
        MPI_Fetch_and_op(&value, &previous, MPI_DOUBLE, 0, 16, MPI_MAX, win);
        int32_t old32 = 0;
        MPI_Fetch_and_op(&one32, &old32, MPI_INT32_T, 0, 24, MPI_SUM, win);
        int64_t old_odd = 0;
        MPI_Fetch_and_op(&one, &old_odd, MPI_INT64_T, 0, 36, MPI_SUM, win);
        MPI_Win_flush(0, win);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        int64_t sum, cas, odd;
        double max;
        int32_t sum32;
        memcpy(&sum, memory, 8);
        memcpy(&cas, memory + 8, 8);
        memcpy(&max, memory + 16, 8);
        memcpy(&sum32, memory + 24, 4);
        memcpy(&odd, memory + 36, 8);
        MPI_Win_unlock(0, win);
        CHECK(sum == 2LL * ROUNDS * size, "%s: the sums reached %lld of %lld", name, (long long)sum, 2LL * ROUNDS * size);
        CHECK(cas == (int64_t)ROUNDS * size, "%s: compare-and-swap counted %lld of %lld", name, (long long)cas, (long long)ROUNDS * size);
        CHECK(max == (double)(size * ROUNDS - 1), "%s: the maximum is %g, expected %d", name, max, size * ROUNDS - 1);
        CHECK(sum32 == ROUNDS * size, "%s: the int32 sums reached %d of %d", name, sum32, ROUNDS * size);
        CHECK(odd == (int64_t)ROUNDS * size, "%s: the misaligned sums reached %lld of %lld", name, (long long)odd, (long long)ROUNDS * size);
    }
    MPI_Win_free(&win);
    free(created);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Optional arguments pick one case: allocate|create, then plain|hinted. */
    for (int allocate = 1; allocate >= 0; allocate--)
        for (int hinted = 0; hinted <= 1; hinted++)
            if ((argc < 2 || !strcmp(argv[1], allocate ? "allocate" : "create")) && (argc < 3 || !strcmp(argv[2], hinted ? "hinted" : "plain")))
                hammer(allocate, hinted);
    if (rank == 0)
        printf("rma_atomics: no update lost\n");
    MPI_Finalize();
    return 0;
}
