/* MPI_T events: a tool finds Braid's event for a growing unexpected queue, registers a callback,
 * and sees the growth marks when one rank sends 3000 messages that the other receives only after
 * a later one. The callback reads the mark, the timestamp (non-decreasing) and the source; the
 * category lists the event; freeing the registration calls its free callback. With "none" as
 * argument (BRAID_UNEXPECTED_MARK=0) no event may come. Run on 2 ranks. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

enum { MESSAGES = 3000 };

struct seen {
    int calls;
    uint64_t marks[16];
    MPI_Count last_time;
    int bad_source, backwards;
};

static void on_event(MPI_T_event_instance instance, MPI_T_event_registration registration, MPI_T_cb_safety safety, void *user_data)
{
    (void)registration;
    (void)safety;
    struct seen *seen = user_data;
    uint64_t mark = 0;
    MPI_T_event_read(instance, 0, &mark);
    MPI_Count time = 0;
    MPI_T_event_get_timestamp(instance, &time);
    int source = -1;
    MPI_T_event_get_source(instance, &source);
    if (seen->calls < 16)
        seen->marks[seen->calls] = mark;
    seen->calls++;
    seen->bad_source |= source != 0;
    seen->backwards |= time < seen->last_time;
    seen->last_time = time;
}

static int freed;
static void on_free(MPI_T_event_registration registration, MPI_T_cb_safety safety, void *user_data)
{
    (void)registration;
    (void)safety;
    (void)user_data;
    freed++;
}

int main(int argc, char **argv)
{
    int expect_none = argc > 1 && strcmp(argv[1], "none") == 0;
    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "run on 2 ranks");

    int index = -1;
    CHECK(MPI_T_event_get_index("braid_unexpected_queue_growth", &index) == MPI_SUCCESS, "no braid_unexpected_queue_growth event");
    char name[64];
    int name_len = sizeof name, elements = 4, verbosity, bind;
    MPI_Datatype types[4];
    MPI_Aint displacements[4];
    MPI_T_event_get_info(index, name, &name_len, &verbosity, types, displacements, &elements, NULL, NULL, NULL, NULL, &bind);
    CHECK(strcmp(name, "braid_unexpected_queue_growth") == 0 && elements == 1 && types[0] == MPI_UINT64_T && displacements[0] == 0, "info: %s, %d elements", name, elements);
    int category = -1, in_category = 0;
    MPI_T_category_get_index("braid_diagnostics", &category);
    MPI_T_category_get_num_events(category, &in_category);
    CHECK(in_category >= 1, "the diagnostics category lists %d events", in_category);
    int sources = 0;
    MPI_T_source_get_num(&sources);
    MPI_Count ticks = 0, before = -1, after = -1;
    MPI_T_source_get_info(0, NULL, NULL, NULL, NULL, NULL, &ticks, NULL, NULL);
    MPI_T_source_get_timestamp(0, &before);
    CHECK(sources == 1 && ticks == 1000000000 && before >= 0, "source: %d, %lld ticks per second", sources, (long long)ticks);

    struct seen seen = {0};
    MPI_T_event_registration registration;
    MPI_T_event_handle_alloc(index, NULL, MPI_INFO_NULL, &registration);
    MPI_T_event_register_callback(registration, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL, &seen, on_event);

    int value = 7, done = 1;
    if (rank == 1) {
        for (int i = 0; i < MESSAGES; i++)
            MPI_Send(&value, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        MPI_Send(&done, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
    } else {
        /* Every message tagged 1 arrives before this receive matches: unexpected. */
        MPI_Recv(&done, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < MESSAGES; i++)
            MPI_Recv(&value, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_T_source_get_timestamp(0, &after);

    if (rank == 0 && expect_none) {
        CHECK(seen.calls == 0, "%d events with the marks off", seen.calls);
    } else if (rank == 0) {
        CHECK(seen.calls >= 2 && seen.marks[0] == 1024 && seen.marks[1] == 2048, "%d events, marks %llu %llu", seen.calls, (unsigned long long)seen.marks[0], (unsigned long long)seen.marks[1]);
        CHECK(!seen.bad_source && !seen.backwards && seen.last_time <= after, "sources or timestamps wrong (last %lld, now %lld)", (long long)seen.last_time, (long long)after);
    } else {
        CHECK(seen.calls == 0, "the sender saw %d events of its own", seen.calls);
    }
    MPI_T_event_handle_free(&registration, NULL, on_free);
    CHECK(freed == 1 && registration == MPI_T_EVENT_REGISTRATION_NULL, "free callback called %d times", freed);
    if (rank == 0)
        printf("mpit_events: passed (%d events)\n", seen.calls);
    MPI_Finalize();
    MPI_T_finalize();
    return 0;
}
