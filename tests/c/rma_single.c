/* Windows of MPI_Win_create and MPI_Win_create_dynamic whose ranks share a node: many ranks
 * accumulating on one target at once stay atomic, a dynamic window with more regions attached
 * than fit one table still works, accesses outside attached memory are refused, and (Braid) a
 * passive put lands while its target computes without calling MPI. */
#define _POSIX_C_SOURCE 199309L
#include <mpi.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define ROUNDS 200
#define REGIONS 80

static int rank, size;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Every rank adds to rank 0's counters with fetch-and-op, accumulate and compare-and-swap loops
 * under a shared lock_all: no update is lost. */
static void atomics_from_every_rank(void)
{
    int64_t counters[2] = {0, 0};
    MPI_Win win;
    MPI_Win_create(counters, sizeof counters, sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < ROUNDS; i++) {
        int64_t one = 1, old = -1;
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win);
        MPI_Win_flush(0, win);
        CHECK(old >= 0 && old < 2LL * ROUNDS * size, "fetch-and-op returned %lld", (long long)old);
        MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_SUM, win);
        /* Compare-and-swap until this rank's increment of the second counter lands. Open MPI
         * 4.1's osc/rdma crashes in compare-and-swap on the caller's own window (btl vader's
         * emulated atomics), so there rank 0 adds with fetch-and-op instead. */
#ifdef OPEN_MPI
        if (rank == 0) {
            int64_t result = -1;
            MPI_Fetch_and_op(&one, &result, MPI_INT64_T, 0, 1, MPI_SUM, win);
            continue;
        }
#endif
        add_one_by_compare_and_swap(win, 0, 1, 0);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        CHECK(counters[0] == 2LL * ROUNDS * size, "counter 0 is %lld, expected %lld", (long long)counters[0], 2LL * ROUNDS * size);
        CHECK(counters[1] == (int64_t)ROUNDS * size, "counter 1 is %lld, expected %lld", (long long)counters[1], (long long)ROUNDS * size);
        MPI_Win_unlock(0, win);
    }
    MPI_Win_free(&win);
}

/* A dynamic window with REGIONS regions attached at each rank: puts into the last one and gets
 * from the first one, by address. */
static void many_regions(void)
{
    MPI_Win win;
    static int regions[REGIONS][4];
    MPI_Aint addresses[REGIONS];
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    for (int i = 0; i < REGIONS; i++) {
        for (int j = 0; j < 4; j++)
            regions[i][j] = rank * 1000 + i;
        MPI_Win_attach(win, regions[i], sizeof regions[i]);
        MPI_Get_address(regions[i], &addresses[i]);
    }
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Aint remote[REGIONS];
    MPI_Sendrecv(addresses, REGIONS, MPI_AINT, left, 0, remote, REGIONS, MPI_AINT, right, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int value = -rank - 1, got[4] = {0};
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Put(&value, 1, MPI_INT, right, remote[REGIONS - 1] + sizeof(int), 1, MPI_INT, win);
    MPI_Get(got, 4, MPI_INT, right, remote[0], 4, MPI_INT, win);
    MPI_Win_unlock(right, win);
    for (int j = 0; j < 4; j++)
        CHECK(got[j] == right * 1000, "element %d of rank %d's first region is %d", j, right, got[j]);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    CHECK(regions[REGIONS - 1][1] == -left - 1, "the put of rank %d into the last region gave %d", left, regions[REGIONS - 1][1]);
    CHECK(regions[REGIONS - 1][0] == rank * 1000 + REGIONS - 1, "the element before the put became %d", regions[REGIONS - 1][0]);
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < REGIONS; i++)
        MPI_Win_detach(win, regions[i]);
    MPI_Win_free(&win);
}

#ifdef TEST_BRAID_ONLY
/* A put outside the memory attached to a dynamic window is refused (at the call or at the
 * unlock) and writes nothing. MPICH and Open MPI do not check. */
static void outside_attached_memory(void)
{
    MPI_Win win;
    int memory[8] = {0};
    MPI_Aint address, remote;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_attach(win, memory, 4 * sizeof(int));
    MPI_Get_address(memory, &address);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Sendrecv(&address, 1, MPI_AINT, left, 0, &remote, 1, MPI_AINT, right, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int value = 7;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    int put = MPI_Put(&value, 1, MPI_INT, right, remote + 4 * sizeof(int), 1, MPI_INT, win);
    int unlock = MPI_Win_unlock(right, win);
    CHECK(class_of(put) == MPI_ERR_RMA_RANGE || class_of(unlock) == MPI_ERR_RMA_RANGE, "a put past the attached memory gave classes %d (put) and %d (unlock)", class_of(put), class_of(unlock));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 8; i++)
        CHECK(memory[i] == 0, "element %d became %d", i, memory[i]);
    MPI_Win_detach(win, memory);
    MPI_Win_free(&win);
}

/* Rank 1 puts into rank 0's window while rank 0 only watches its memory, calling no MPI
 * function: on one node the put needs no action by its target. */
static void truly_passive_put(void)
{
    volatile int cell = 0;
    MPI_Win win;
    MPI_Win_create((void *)&cell, sizeof cell, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    if (rank == 1) {
        int value = 42;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Put(&value, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);
    } else if (rank == 0) {
        double start = now();
        while (cell != 42 && now() - start < 10.0) {
        }
        CHECK(cell == 42, "the put did not land while the target computed (cell is %d)", cell);
    }
    MPI_Win_free(&win);
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    atomics_from_every_rank();
    many_regions();
#ifdef TEST_BRAID_ONLY
    outside_attached_memory();
    if (size >= 2 && getenv("BRAID_CMA") == NULL)
        truly_passive_put();
#endif
    report_ok("rma_single");
    MPI_Finalize();
    return 0;
}
