/* One-sided communication under MPI_THREAD_MULTIPLE: every thread of every rank makes windows of
 * its own (MPI_Win_allocate and MPI_Win_create, on a communicator of its own) at the same time as
 * the others, then synchronises and accesses them concurrently with the other threads' windows:
 * exclusive locks with accumulates and flushes, shared locks with gets, lock_all with flush_all,
 * fences and MPI_Win_sync; then frees them, all threads at once. Each rank's windows are targeted
 * by the rank before it, so every counter must end at exactly the number of accumulates sent. */
#include <string.h>

#include "thread_workers.h"

#define THREADS 4
#define ROUNDS 200

static int rank, size;
static MPI_Comm thread_comm[THREADS];

static void exercise(MPI_Win win, long *local, int id, const char *kind)
{
    int target = (rank + 1) % size;
    int i;
    long one = 1, seen = -1;

    MPI_Win_fence(0, win);
    for (i = 0; i < ROUNDS; i++) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
        MPI_Accumulate(&one, 1, MPI_LONG, target, 0, 1, MPI_LONG, MPI_SUM, win);
        MPI_Win_flush(target, win);
        MPI_Get(&seen, 1, MPI_LONG, target, 0, 1, MPI_LONG, win);
        MPI_Win_unlock(target, win);
        CHECK(seen == i + 1, "%s window of thread %d: round %d saw the counter at %ld", kind, id, i, seen);

        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
        MPI_Get(&seen, 1, MPI_LONG, rank, 1, 1, MPI_LONG, win);
        MPI_Win_unlock(rank, win);
        CHECK(seen == 1000 * rank + id, "%s window of thread %d: own marker %ld", kind, id, seen);

        if (i % 20 == 0) {
            MPI_Win_lock_all(0, win);
            MPI_Get(&seen, 1, MPI_LONG, target, 1, 1, MPI_LONG, win);
            MPI_Win_flush_all(win);
            MPI_Win_sync(win);
            MPI_Win_unlock_all(win);
            CHECK(seen == 1000 * target + id, "%s window of thread %d: marker of rank %d is %ld", kind, id, target, seen);
        }
    }
    MPI_Win_fence(0, win);
    MPI_Barrier(thread_comm[id]);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    seen = local[0];
    MPI_Win_unlock(rank, win);
    CHECK(seen == ROUNDS, "%s window of thread %d: counter %ld after %d accumulates", kind, id, seen, ROUNDS);
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    MPI_Comm comm = thread_comm[id];
    long *allocated = NULL;
    long created[2] = {0, 1000L * rank + id};
    MPI_Win allocated_win, created_win;

    MPI_Win_allocate(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, comm, &allocated, &allocated_win);
    allocated[0] = 0;
    allocated[1] = 1000L * rank + id;
    MPI_Win_create(created, sizeof created, sizeof(long), MPI_INFO_NULL, comm, &created_win);
    MPI_Barrier(comm);

    exercise(allocated_win, allocated, id, "allocated");
    exercise(created_win, created, id, "created");

    MPI_Win_free(&allocated_win);
    MPI_Win_free(&created_win);
    CHECK(allocated_win == MPI_WIN_NULL && created_win == MPI_WIN_NULL, "thread %d: windows not reset by MPI_Win_free", id);
    return NULL;
}

int main(int argc, char **argv)
{
    int i;

    init_thread_multiple(&argc, &argv, thread_comm, THREADS);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    run_workers(THREADS, worker);

    for (i = 0; i < THREADS; i++)
        MPI_Comm_free(&thread_comm[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("rma_threads: %d threads x %d rounds on %d ranks passed\n", THREADS, ROUNDS, size);
    MPI_Finalize();
    return 0;
}
