/* A soak of random, checked traffic for a given time: soak SECONDS [REPORT_SECONDS].
 *
 * The main thread of every rank runs the same random sequence of steps (the seed is the step's
 * number, so every rank agrees without talking): point-to-point exchanges of every size from
 * 0 B to 4 MiB with named and wildcard sources, non-blocking collectives (allreduce, bcast,
 * alltoall, allgather), and one-sided puts in fence epochs and accumulates under exclusive
 * locks. Meanwhile THREADS worker threads per rank (MPI_THREAD_MULTIPLE) exchange messages on
 * communicators of their own and lock different targets of one shared window at the same time.
 * Every payload is generated from (step, sender) and checked where it lands; every accumulate
 * is counted and the counts checked at the end. Rank 0 reports progress and the ranks' largest
 * resident memory every REPORT_SECONDS, and the run fails if that memory grew by more than
 * GROWTH_LIMIT_KIB after the first report. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "thread_workers.h"

#define THREADS 2
#define WINDOW_BYTES (4 << 20)
#define GROWTH_LIMIT_KIB (16 << 10)

static int rank, size;
static MPI_Comm thread_comm[THREADS];
static MPI_Win twin;
static long *twin_memory;
static volatile int stop_threads;
static long thread_rounds[THREADS];
static double checked_bytes;

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint64_t seed_of(uint64_t step, uint64_t who, uint64_t what)
{
    return mix(mix(step * 1000003u + who) ^ what);
}

static void fill(unsigned char *buffer, size_t len, uint64_t seed)
{
    size_t i;
    uint64_t word = 0;
    for (i = 0; i < len; i++) {
        if (i % 8 == 0)
            word = mix(seed + i);
        buffer[i] = (unsigned char)(word >> (8 * (i % 8)));
    }
}

static void expect_filled(const unsigned char *buffer, size_t len, uint64_t seed, const char *what, long step, int from)
{
    size_t i;
    uint64_t word = 0;
    for (i = 0; i < len; i++) {
        if (i % 8 == 0)
            word = mix(seed + i);
        if (buffer[i] != (unsigned char)(word >> (8 * (i % 8)))) {
            fprintf(stderr, "soak: rank %d step %ld: %s from rank %d corrupted at byte %zu of %zu\n", rank, step, what, from, i, len);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
}

/* 0 B to 4 MiB: mostly small, some medium, a few large. */
static size_t random_size(uint64_t r)
{
    switch (r % 10) {
    case 0: return (size_t)(mix(r) % (4u << 20));
    case 1:
    case 2: return (size_t)(mix(r) % (256u << 10));
    default: return (size_t)(mix(r) % 1025);
    }
}

static long resident_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *status = fopen("/proc/self/status", "r");
    if (!status)
        return -1;
    while (fgets(line, sizeof line, status))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    fclose(status);
    return kib;
}

static void point_to_point(long step, MPI_Comm comm, int me, int n, const char *who)
{
    int right = (me + 1) % n, left = (me + n - 1) % n;
    size_t len = random_size(seed_of(step, 0, 1));
    int wildcard = seed_of(step, 0, 2) % 4 == 0;
    unsigned char *out = malloc(len + 1), *in = malloc(len + 1);
    MPI_Request requests[2];
    MPI_Status status;
    int tag = (int)(step % 30000), count;

    fill(out, len, seed_of(step, (uint64_t)me, 3));
    MPI_Irecv(in, (int)len, MPI_BYTE, wildcard ? MPI_ANY_SOURCE : left, wildcard ? MPI_ANY_TAG : tag, comm, &requests[0]);
    MPI_Isend(out, (int)len, MPI_BYTE, right, tag, comm, &requests[1]);
    MPI_Wait(&requests[0], &status);
    MPI_Wait(&requests[1], MPI_STATUS_IGNORE);
    MPI_Get_count(&status, MPI_BYTE, &count);
    CHECK(status.MPI_SOURCE == left && status.MPI_TAG == tag && (size_t)count == len, "%s step %ld: from %d tag %d count %d, expected %d %d %zu", who, step, status.MPI_SOURCE, status.MPI_TAG, count, left, tag, len);
    expect_filled(in, len, seed_of(step, (uint64_t)left, 3), who, step, left);
    checked_bytes += (double)len;
    free(out);
    free(in);
}

static void collectives(long step)
{
    int count = (int)(seed_of(step, 0, 4) % 65536), root = (int)(step % size), i, r;
    size_t bcast_len = random_size(seed_of(step, 0, 5)), block = (size_t)(seed_of(step, 0, 6) % 16385);
    long *mine = malloc((count + 1) * sizeof(long)), *sum = malloc((count + 1) * sizeof(long));
    unsigned char *bcast = malloc(bcast_len + 1), *out = malloc(block * size + 1), *in = malloc(block * size + 1);
    MPI_Request requests[3];

    for (i = 0; i < count; i++)
        mine[i] = (long)(seed_of(step, (uint64_t)rank, 100 + (uint64_t)i) % 1000);
    if (rank == root)
        fill(bcast, bcast_len, seed_of(step, (uint64_t)root, 7));
    for (r = 0; r < size; r++)
        fill(out + r * block, block, seed_of(step, (uint64_t)(rank * size + r), 8));
    MPI_Iallreduce(mine, sum, count, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &requests[0]);
    MPI_Ibcast(bcast, (int)bcast_len, MPI_BYTE, root, MPI_COMM_WORLD, &requests[1]);
    MPI_Ialltoall(out, (int)block, MPI_BYTE, in, (int)block, MPI_BYTE, MPI_COMM_WORLD, &requests[2]);
    MPI_Waitall(3, requests, MPI_STATUSES_IGNORE);
    for (i = 0; i < count; i++) {
        long expected = 0;
        for (r = 0; r < size; r++)
            expected += (long)(seed_of(step, (uint64_t)r, 100 + (uint64_t)i) % 1000);
        CHECK(sum[i] == expected, "step %ld: allreduce element %d is %ld, expected %ld", step, i, sum[i], expected);
    }
    expect_filled(bcast, bcast_len, seed_of(step, (uint64_t)root, 7), "bcast", step, root);
    for (r = 0; r < size; r++)
        expect_filled(in + r * block, block, seed_of(step, (uint64_t)(r * size + rank), 8), "alltoall block", step, r);
    checked_bytes += (double)count * sizeof(long) + (double)bcast_len + (double)block * size;
    free(mine);
    free(sum);
    free(bcast);
    free(out);
    free(in);
}

static void one_sided(long step, MPI_Win win, unsigned char *memory, long *accumulated_here)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    size_t len = random_size(seed_of(step, 0, 9)) % (WINDOW_BYTES - 64);
    unsigned char *out = malloc(len + 1);
    long one = 1;
    int r;

    fill(out, len, seed_of(step, (uint64_t)rank, 10));
    MPI_Win_fence(0, win);
    MPI_Put(out, (int)len, MPI_BYTE, right, 64, (int)len, MPI_BYTE, win);
    MPI_Win_fence(0, win);
    expect_filled(memory + 64, len, seed_of(step, (uint64_t)left, 10), "put", step, left);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    checked_bytes += (double)len;

    /* Every rank adds one to slot 0 of a target that the step picks; counted at the end. */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, (int)(seed_of(step, (uint64_t)rank, 11) % size), 0, win);
    MPI_Accumulate(&one, 1, MPI_LONG, (int)(seed_of(step, (uint64_t)rank, 11) % size), 0, 1, MPI_LONG, MPI_SUM, win);
    MPI_Win_unlock((int)(seed_of(step, (uint64_t)rank, 11) % size), win);
    for (r = 0; r < size; r++)
        if ((int)(seed_of(step, (uint64_t)r, 11) % size) == rank)
            (*accumulated_here)++;
    free(out);
}

static void *worker(void *arg)
{
    int id = (int)(long)arg, target = (rank + 1 + id) % size, stop = 0, any_stop;
    long round = 0, one = 1;
    char who[32];

    snprintf(who, sizeof who, "thread %d", id);
    for (;;) {
        stop = stop_threads;
        MPI_Allreduce(&stop, &any_stop, 1, MPI_INT, MPI_MAX, thread_comm[id]);
        if (any_stop)
            break;
        point_to_point(1000000L * (id + 1) + round, thread_comm[id], rank, size, who);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, twin);
        MPI_Accumulate(&one, 1, MPI_LONG, target, id, 1, MPI_LONG, MPI_SUM, twin);
        if (round % 8 == 0)
            MPI_Win_flush(target, twin);
        MPI_Win_unlock(target, twin);
        round++;
    }
    thread_rounds[id] = round;
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 10, every = argc > 2 ? atof(argv[2]) : 5;
    double start, last_report;
    long step = 0, accumulated_here = 0, first_rss = -1, rss, total, expected_rounds;
    long rounds_all[THREADS * 64];
    int control[2], t;
    unsigned char *memory;
    MPI_Win win;
    pthread_t threads[THREADS];

    init_thread_multiple(&argc, &argv, thread_comm, THREADS);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= THREADS && size <= 64, "soak needs 2 to 64 ranks, not %d", size);
    MPI_Win_allocate(WINDOW_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &memory, &win);
    memset(memory, 0, 64);
    MPI_Win_allocate(THREADS * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &twin_memory, &twin);
    memset(twin_memory, 0, THREADS * sizeof(long));
    MPI_Barrier(MPI_COMM_WORLD);
    for (t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)(long)t) == 0, "pthread_create");

    start = last_report = MPI_Wtime();
    for (;;) {
        if (rank == 0) {
            control[0] = MPI_Wtime() - start < seconds;
            control[1] = MPI_Wtime() - last_report >= every;
        }
        MPI_Bcast(control, 2, MPI_INT, 0, MPI_COMM_WORLD);
        if (!control[0])
            break;
        if (control[1]) {
            double bytes;
            long own = resident_kib();
            MPI_Reduce(&own, &rss, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
            MPI_Reduce(&checked_bytes, &bytes, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank == 0) {
                if (first_rss < 0)
                    first_rss = rss;
                last_report = MPI_Wtime();
                printf("soak: %.0f s, %ld steps, %.1f MiB checked by the main threads, largest resident %ld KiB\n", last_report - start, step, bytes / 1048576, rss);
                fflush(stdout);
                CHECK(rss - first_rss <= GROWTH_LIMIT_KIB, "resident memory grew from %ld to %ld KiB", first_rss, rss);
            }
        }
        switch (seed_of(step, 0, 0) % 3) {
        case 0: point_to_point(step, MPI_COMM_WORLD, rank, size, "message"); break;
        case 1: collectives(step); break;
        default: one_sided(step, win, memory, &accumulated_here); break;
        }
        step++;
    }
    stop_threads = 1;
    for (t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);

    /* Every accumulate arrived exactly once: the main threads' into slot 0, the workers' into
     * their own slot at their target. */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(*(long *)memory == accumulated_here, "slot 0 holds %ld accumulates, %ld were sent here", *(long *)memory, accumulated_here);
    MPI_Allgather(thread_rounds, THREADS, MPI_LONG, rounds_all, THREADS, MPI_LONG, MPI_COMM_WORLD);
    for (t = 0; t < THREADS; t++) {
        expected_rounds = rounds_all[((rank + size - 1 - t) % size) * THREADS + t];
        CHECK(twin_memory[t] == expected_rounds, "thread slot %d holds %ld accumulates, %ld were sent here", t, twin_memory[t], expected_rounds);
    }
    MPI_Win_free(&twin);
    MPI_Win_free(&win);
    for (t = 0; t < THREADS; t++)
        MPI_Comm_free(&thread_comm[t]);
    total = resident_kib();
    MPI_Reduce(&total, &rss, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    total = 0;
    for (t = 0; t < THREADS * size; t++)
        total += rounds_all[t];
    if (rank == 0)
        printf("soak: ok: %ld steps and %ld worker rounds on %d ranks in %.0f s, 0 errors; largest resident %ld KiB at the first report, %ld KiB at the end\n", step, total, size, MPI_Wtime() - start, first_rss, rss);
    MPI_Finalize();
    return 0;
}
