/* MPI_THREAD_MULTIPLE: several threads per rank call MPI at the same time: ping-pongs between
 * the same-numbered threads of paired ranks, on MPI_COMM_WORLD (told apart by tag) and on a
 * communicator of their own; probes; collectives on each thread's own communicator; concurrent
 * waits on requests of one communicator; communicators made by every thread at once (MPI_Comm_dup
 * and MPI_Comm_idup), each with a context of its own. */
#include <string.h>

#include "thread_workers.h"

#define THREADS 4
#define ROUNDS 300

static int rank, size;
static MPI_Comm thread_comm[THREADS];

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    int peer = rank ^ 1;
    int i, value, sum, expected;
    MPI_Comm comm = thread_comm[id];
    MPI_Status status;

    if (peer < size) {
        /* Ping-pong on MPI_COMM_WORLD: this thread's tag keeps it apart from the others. */
        for (i = 0; i < ROUNDS; i++) {
            if (rank < peer) {
                value = id * 100000 + i;
                MPI_Send(&value, 1, MPI_INT, peer, id, MPI_COMM_WORLD);
                MPI_Recv(&value, 1, MPI_INT, peer, id, MPI_COMM_WORLD, &status);
                CHECK(value == id * 100000 + i + 1, "thread %d round %d got %d", id, i, value);
            } else {
                MPI_Recv(&value, 1, MPI_INT, peer, id, MPI_COMM_WORLD, &status);
                CHECK(status.MPI_TAG == id, "thread %d got tag %d", id, status.MPI_TAG);
                value++;
                MPI_Send(&value, 1, MPI_INT, peer, id, MPI_COMM_WORLD);
            }
        }
        /* Probe then receive on the thread's own communicator, any source and tag. */
        for (i = 0; i < ROUNDS / 10; i++) {
            int flag = 0, count;
            value = rank * 1000 + i;
            MPI_Send(&value, 1, MPI_INT, peer, i, comm);
            MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &status);
            CHECK(status.MPI_SOURCE == peer && status.MPI_TAG == i, "probe %d: source %d tag %d", i, status.MPI_SOURCE, status.MPI_TAG);
            MPI_Get_count(&status, MPI_INT, &count);
            CHECK(count == 1, "probe count %d", count);
            MPI_Recv(&value, 1, MPI_INT, status.MPI_SOURCE, status.MPI_TAG, comm, MPI_STATUS_IGNORE);
            CHECK(value == peer * 1000 + i, "probed message %d", value);
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
            (void)flag;
        }
        /* A large message (rendezvous) each way at once. */
        {
            enum { LARGE = 1 << 18 };
            int *out = malloc(sizeof(int) * LARGE), *in = malloc(sizeof(int) * LARGE);
            MPI_Request reqs[2];
            for (i = 0; i < LARGE; i++) out[i] = rank + id + i;
            MPI_Irecv(in, LARGE, MPI_INT, peer, 77, comm, &reqs[0]);
            MPI_Isend(out, LARGE, MPI_INT, peer, 77, comm, &reqs[1]);
            MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
            for (i = 0; i < LARGE; i += 4099) CHECK(in[i] == peer + id + i, "large [%d] = %d", i, in[i]);
            free(out);
            free(in);
        }
    }
    /* Collectives on the thread's own communicator, alongside the other threads' ones. */
    for (i = 0; i < ROUNDS / 10; i++) {
        value = rank + id + i;
        MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, comm);
        expected = size * (size - 1) / 2 + size * (id + i);
        CHECK(sum == expected, "thread %d allreduce %d = %d, expected %d", id, i, sum, expected);
        value = rank == 0 ? id * 7 + i : -1;
        MPI_Bcast(&value, 1, MPI_INT, 0, comm);
        CHECK(value == id * 7 + i, "thread %d bcast %d", id, value);
    }
    {
        MPI_Request req;
        value = rank;
        MPI_Iallreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MAX, comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(value == size - 1, "thread %d iallreduce %d", id, value);
        MPI_Barrier(comm);
    }
    return NULL;
}

/* Every thread waits on its own receive of one communicator; rank 0's main thread sends them in
 * reverse order. */
static int waits_done;
static pthread_mutex_t waits_lock = PTHREAD_MUTEX_INITIALIZER;

static void *waiter(void *arg)
{
    int id = (int)(long)arg, value = -1;
    MPI_Request req;
    MPI_Irecv(&value, 1, MPI_INT, 0, 1000 + id, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(value == id, "waiter %d got %d", id, value);
    pthread_mutex_lock(&waits_lock);
    waits_done++;
    pthread_mutex_unlock(&waits_lock);
    return NULL;
}

/* Thread `arg` makes communicators from its own while the other threads do the same: each must
 * get a context of its own, so the same tag on all of them never crosses between threads. */
static void *creator(void *arg)
{
    int t = (int)(long)arg;
    for (int round = 0; round < 6; round++) {
        MPI_Comm made;
        if (round % 2) {
            MPI_Request request;
            MPI_Comm_idup(thread_comm[t], &made, &request);
            MPI_Wait(&request, MPI_STATUS_IGNORE);
        } else {
            MPI_Comm_dup(thread_comm[t], &made);
        }
        int mine = 1000 * t + round, got = -1, partner = rank ^ 1;
        if (partner < size) {
            MPI_Sendrecv(&mine, 1, MPI_INT, partner, 7, &got, 1, MPI_INT, partner, 7, made, MPI_STATUS_IGNORE);
            CHECK(got == mine, "thread %d, round %d: got %d from another thread's communicator", t, round, got);
        }
        int sum = 0;
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, made);
        CHECK(sum == mine * size, "thread %d, round %d: allreduce gave %d", t, round, sum);
        MPI_Comm_free(&made);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int i;
    pthread_t threads[THREADS];
    init_thread_multiple(&argc, &argv, thread_comm, THREADS);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    run_workers(THREADS, worker);

    if (rank == size - 1 && size > 1) {
        for (i = 0; i < THREADS; i++) pthread_create(&threads[i], NULL, waiter, (void *)(long)i);
        MPI_Barrier(MPI_COMM_WORLD);
        for (i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
        CHECK(waits_done == THREADS, "%d waiters finished", waits_done);
    } else if (rank == 0 && size > 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        for (i = THREADS - 1; i >= 0; i--) MPI_Send(&i, 1, MPI_INT, size - 1, 1000 + i, MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }

    run_workers(THREADS, creator);

    for (i = 0; i < THREADS; i++) MPI_Comm_free(&thread_comm[i]);
    report_ok("threads");
    MPI_Finalize();
    return 0;
}
