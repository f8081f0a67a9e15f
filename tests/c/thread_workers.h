/* Shared by the MPI_THREAD_MULTIPLE tests: MPI started with every thread allowed in, a
 * communicator per worker thread, and workers run on threads of their own. */
#ifndef BRAID_TEST_THREAD_WORKERS_H
#define BRAID_TEST_THREAD_WORKERS_H

#include <pthread.h>

#include "check.h"

/* MPI_Init_thread asking for MPI_THREAD_MULTIPLE, which must be granted; then `count`
 * duplicates of MPI_COMM_WORLD, one per worker. */
static inline void init_thread_multiple(int *argc, char ***argv, MPI_Comm *comms, int count)
{
    int provided, i;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    for (i = 0; i < count; i++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
}

/* Runs worker((void *)i) for i in 0..count, each on a thread of its own, and waits for all. */
static inline void run_workers(int count, void *(*worker)(void *))
{
    pthread_t threads[64];
    int i;
    CHECK(count <= 64, "%d workers", count);
    for (i = 0; i < count; i++)
        CHECK(pthread_create(&threads[i], NULL, worker, (void *)(long)i) == 0, "pthread_create %d", i);
    for (i = 0; i < count; i++)
        pthread_join(threads[i], NULL);
}

#endif
