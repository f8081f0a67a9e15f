/* Waiting at MPI_THREAD_MULTIPLE: a thread blocked in MPI while its partner is away comes back
 * as soon as what it waits for arrives, whether a peer sends it or another thread of its own
 * process does, and (Braid) it sleeps meanwhile instead of burning its core. Run it with
 * BRAID_BLOCK_TIMEOUT_MS=5000 so that a missed wake-up shows as a wait of seconds. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include "check.h"
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AWAY_MS 1500
/* How late a wake-up may come after what it waits for, generous for a loaded 2-core machine. */
#define LATE_MS 1000

static double now(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void away(void) { usleep(AWAY_MS * 1000); }

/* CPU time of the whole process (all its threads) over `wall` seconds of waiting. */
static void check_slept(const char *what, double cpu, double wall)
{
#ifdef TEST_BRAID_ONLY
    CHECK(cpu < 0.25 * wall, "%s: the process used %.3f s of CPU while it waited %.3f s", what, cpu, wall);
#else
    (void)what, (void)cpu, (void)wall;
#endif
}

struct sender {
    MPI_Comm comm;
    int dest, tag, value;
};

static void *send_later(void *arg)
{
    struct sender *s = arg;
    away();
    MPI_Send(&s->value, 1, MPI_INT, s->dest, s->tag, s->comm);
    return NULL;
}

struct receiver {
    MPI_Comm comm;
    int source, tag, value;
    double done_at;
};

static void *receive(void *arg)
{
    struct receiver *r = arg;
    MPI_Recv(&r->value, 1, MPI_INT, r->source, r->tag, r->comm, MPI_STATUS_IGNORE);
    r->done_at = now(CLOCK_MONOTONIC);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided thread level %d", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1. A barrier that waits for a rank that is away. */
    if (size > 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == size - 1)
            away();
        double wall = now(CLOCK_MONOTONIC), cpu = now(CLOCK_PROCESS_CPUTIME_ID);
        MPI_Barrier(MPI_COMM_WORLD);
        wall = now(CLOCK_MONOTONIC) - wall;
        cpu = now(CLOCK_PROCESS_CPUTIME_ID) - cpu;
        if (rank != size - 1) {
            CHECK(wall < (AWAY_MS + LATE_MS) / 1000.0, "the barrier ended %.3f s after it began (the last rank came after %.3f s)", wall, AWAY_MS / 1000.0);
            check_slept("MPI_Barrier", cpu, wall);
        }
    }

    /* 2. A receive that another thread of the same process answers (MPICH 4.0 never completes
     * it: its runner passes no-self-wake). */
    if (!(argc > 1 && strcmp(argv[1], "no-self-wake") == 0)) {
        struct sender s = {MPI_COMM_WORLD, rank, 11, 1000 + rank};
        int value = -1;
        pthread_t thread;
        double wall = now(CLOCK_MONOTONIC), cpu = now(CLOCK_PROCESS_CPUTIME_ID);
        pthread_create(&thread, NULL, send_later, &s);
        MPI_Recv(&value, 1, MPI_INT, rank, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        wall = now(CLOCK_MONOTONIC) - wall;
        cpu = now(CLOCK_PROCESS_CPUTIME_ID) - cpu;
        pthread_join(thread, NULL);
        CHECK(value == 1000 + rank, "received %d from the own rank's thread", value);
        CHECK(wall < (AWAY_MS + LATE_MS) / 1000.0, "a receive answered by another thread after %.3f s ended after %.3f s", AWAY_MS / 1000.0, wall);
        check_slept("MPI_Recv answered by another thread", cpu, wall);
    }

    /* 3. Two threads of one rank wait on a peer at once; the peer answers both after a while. */
    if (size > 1) {
        int peer = rank ^ 1;
        if (peer < size) {
            struct receiver r[2] = {{MPI_COMM_WORLD, peer, 21, -1, 0}, {MPI_COMM_WORLD, peer, 22, -1, 0}};
            pthread_t threads[2];
            MPI_Barrier(MPI_COMM_WORLD);
            double wall = now(CLOCK_MONOTONIC), cpu = now(CLOCK_PROCESS_CPUTIME_ID);
            for (int i = 0; i < 2; i++)
                pthread_create(&threads[i], NULL, receive, &r[i]);
            away();
            double sent_at = now(CLOCK_MONOTONIC);
            int values[2] = {2100 + rank, 2200 + rank};
            MPI_Send(&values[0], 1, MPI_INT, peer, 21, MPI_COMM_WORLD);
            MPI_Send(&values[1], 1, MPI_INT, peer, 22, MPI_COMM_WORLD);
            for (int i = 0; i < 2; i++)
                pthread_join(threads[i], NULL);
            wall = now(CLOCK_MONOTONIC) - wall;
            cpu = now(CLOCK_PROCESS_CPUTIME_ID) - cpu;
            for (int i = 0; i < 2; i++) {
                CHECK(r[i].value == 100 * (21 + i) + peer, "thread %d received %d", i, r[i].value);
                CHECK(r[i].done_at - sent_at < LATE_MS / 1000.0, "thread %d's receive ended %.3f s after this rank sent its own", i, r[i].done_at - sent_at);
            }
            /* The main thread slept too (usleep): the waiting threads are what is measured. */
            check_slept("two threads receiving from a peer", cpu, wall);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
