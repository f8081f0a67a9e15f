/* Several threads of each rank synchronising on the same window at once (MPI_THREAD_MULTIPLE),
 * on an allocated and on a created window:
 * 1. Under one MPI_Win_lock_all of the main thread, every worker accumulates into its own slot
 *    at every rank and flushes that target, flush_local_all, flush_all and MPI_Win_sync
 *    concurrently with the others; a get after each flush must see exactly its own count, and
 *    MPI_Fetch_and_op tickets drawn by every thread of every rank must all be distinct.
 * 2. Workers lock different targets of the same window at once (exclusive), each doing a
 *    read-modify-write (get, flush, put) under the lock, while the other ranks' workers contend
 *    for the same targets: no increment may be lost.
 * 3. Workers that each hold a shared lock on a different target read while the others do. */
#include <stdlib.h>
#include <string.h>

#include "thread_workers.h"

#define THREADS 4
#define ROUNDS 150

static int rank, size;
static MPI_Comm unused[1];
static MPI_Win win;
static const char *kind;
/* Slots: [0, THREADS * size): per (thread, origin) accumulate counters; then the ticket; then
 * one read-modify-write counter. */
static int ticket_slot, counter_slot, slots;
static long *tickets_seen;

static void *accumulate_and_flush(void *arg)
{
    int id = (int)(long)arg;
    long one = 1, seen, ticket;
    int i, target;

    for (i = 0; i < ROUNDS; i++) {
        for (target = 0; target < size; target++)
            MPI_Accumulate(&one, 1, MPI_LONG, target, id * size + rank, 1, MPI_LONG, MPI_SUM, win);
        target = (rank + i) % size;
        switch (i % 4) {
        case 0: MPI_Win_flush(target, win); break;
        case 1: MPI_Win_flush_all(win); break;
        case 2: MPI_Win_flush_local_all(win); MPI_Win_flush(target, win); break;
        default: MPI_Win_sync(win); MPI_Win_flush(target, win); break;
        }
        MPI_Get(&seen, 1, MPI_LONG, target, id * size + rank, 1, MPI_LONG, win);
        MPI_Win_flush(target, win);
        CHECK(seen == i + 1, "%s window, thread %d, round %d: slot at rank %d holds %ld", kind, id, i, target, seen);
        MPI_Fetch_and_op(&one, &ticket, MPI_LONG, 0, ticket_slot, MPI_SUM, win);
        MPI_Win_flush(0, win);
        tickets_seen[id * ROUNDS + i] = ticket;
    }
    return NULL;
}

/* Worker `id` (those below the number of ranks) locks rank + id ROUNDS times: with an exclusive
 * lock it adds one to the counter there by a get, a flush and a put; with a shared one it reads
 * the counter, which must hold every rank's increments by then. */
static void locked_rounds(int id, int exclusive)
{
    int target = (rank + id) % size;
    long value;
    int i;

    if (id >= size)
        return;
    for (i = 0; i < ROUNDS; i++) {
        MPI_Win_lock(exclusive ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, target, 0, win);
        MPI_Get(&value, 1, MPI_LONG, target, counter_slot, 1, MPI_LONG, win);
        if (exclusive) {
            MPI_Win_flush(target, win);
            value += 1;
            MPI_Put(&value, 1, MPI_LONG, target, counter_slot, 1, MPI_LONG, win);
        }
        MPI_Win_unlock(target, win);
        if (!exclusive)
            CHECK(value == (long)size * ROUNDS, "%s window, thread %d: counter at rank %d is %ld", kind, id, target, value);
    }
}

static void *exclusive_read_modify_write(void *arg)
{
    locked_rounds((int)(long)arg, 1);
    return NULL;
}

static void *shared_reads(void *arg)
{
    locked_rounds((int)(long)arg, 0);
    return NULL;
}

static int compare_longs(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static void exercise(long *memory)
{
    long *all_tickets;
    int i, t, origin;

    memset(memory, 0, slots * sizeof(long));
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_lock_all(0, win);
    run_workers(THREADS, accumulate_and_flush);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    for (t = 0; t < THREADS; t++)
        for (origin = 0; origin < size; origin++)
            CHECK(memory[t * size + origin] == ROUNDS, "%s window: slot of thread %d of rank %d holds %ld", kind, t, origin, memory[t * size + origin]);
    MPI_Win_unlock(rank, win);
    all_tickets = malloc((size_t)size * THREADS * ROUNDS * sizeof(long));
    MPI_Allgather(tickets_seen, THREADS * ROUNDS, MPI_LONG, all_tickets, THREADS * ROUNDS, MPI_LONG, MPI_COMM_WORLD);
    qsort(all_tickets, (size_t)size * THREADS * ROUNDS, sizeof(long), compare_longs);
    for (i = 0; i < size * THREADS * ROUNDS; i++)
        CHECK(all_tickets[i] == i, "%s window: ticket %d drawn as %ld (lost or drawn twice)", kind, i, all_tickets[i]);
    free(all_tickets);

    run_workers(THREADS, exclusive_read_modify_write);
    MPI_Barrier(MPI_COMM_WORLD);
    run_workers(THREADS, shared_reads);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    long *allocated, *created;

    init_thread_multiple(&argc, &argv, unused, 0);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ticket_slot = THREADS * size;
    counter_slot = ticket_slot + 1;
    slots = counter_slot + 1;
    tickets_seen = malloc(THREADS * ROUNDS * sizeof(long));

    MPI_Win_allocate(slots * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &allocated, &win);
    kind = "allocated";
    exercise(allocated);
    MPI_Win_free(&win);

    created = calloc(slots, sizeof(long));
    MPI_Win_create(created, slots * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    kind = "created";
    exercise(created);
    MPI_Win_free(&win);
    free(created);
    free(tickets_seen);

    if (rank == 0)
        printf("rma_threads_shared: %d threads x %d rounds on one window at %d ranks passed\n", THREADS, ROUNDS, size);
    MPI_Finalize();
    return 0;
}
