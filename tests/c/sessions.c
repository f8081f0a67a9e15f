/* MPI 4 sessions. Without MPI_Init: an info made before MPI starts asks for a thread level, the
 * process sets are listed (a zero length asks for a name's length), mpi://WORLD and mpi://SELF
 * give groups and communicators (MPI_Comm_create_from_group) that work, an intercommunicator is
 * made between the even and the odd ranks (MPI_Intercomm_create_from_groups), a session's error
 * handler sees its errors, and MPI_Initialized stays false. With "mixed": MPI_Init and a session
 * side by side, the session's communicator still working after MPI_Finalize. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

/* MPICH before 4.1 never calls a session's own handler (its errors, and
 * MPI_Session_call_errhandler, go to the default fatal one): the handler is checked on Braid and
 * later libraries only. */
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40100000
#define SESSION_ERRORS_ON_SESSION 0
#else
#define SESSION_ERRORS_ON_SESSION 1
#endif

static int handler_calls;
static void count_errors(MPI_Session *session, int *code, ...)
{
    (void)session;
    (void)code;
    handler_calls++;
}

/* A communicator of process set `pset` of `session`, checked by an allreduce of ones. */
static MPI_Comm comm_of(MPI_Session session, const char *pset, const char *tag)
{
    MPI_Group group;
    MPI_Group_from_session_pset(session, pset, &group);
    MPI_Comm comm;
    MPI_Comm_create_from_group(group, tag, MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &comm);
    int group_size, size, one = 1, sum = 0;
    MPI_Group_size(group, &group_size);
    MPI_Comm_size(comm, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    if (sum != size || size != group_size) {
        fprintf(stderr, "%s: size %d, group %d, sum %d\n", pset, size, group_size, sum);
        MPI_Abort(comm, 1);
    }
    MPI_Group_free(&group);
    return comm;
}

static void sessions_alone(void)
{
    int flag = 1;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", "MPI_THREAD_MULTIPLE");
    MPI_Session session;
    MPI_Session_init(info, MPI_ERRORS_ARE_FATAL, &session);
    MPI_Info_free(&info);
    MPI_Initialized(&flag);
    if (flag) {
        fprintf(stderr, "MPI_Initialized is true in the sessions model\n");
        MPI_Abort(MPI_COMM_SELF, 1);
    }

    int count = 0, found_world = 0, found_self = 0, found_node = 0;
    MPI_Session_get_num_psets(session, MPI_INFO_NULL, &count);
    for (int n = 0; n < count; n++) {
        int length = 0;
        char name[MPI_MAX_PSET_NAME_LEN];
        MPI_Session_get_nth_pset(session, MPI_INFO_NULL, n, &length, NULL);
        if (length <= 1 || length > MPI_MAX_PSET_NAME_LEN) {
            fprintf(stderr, "pset %d: length %d\n", n, length);
            MPI_Abort(MPI_COMM_SELF, 1);
        }
        MPI_Session_get_nth_pset(session, MPI_INFO_NULL, n, &length, name);
        found_world |= strcmp(name, "mpi://WORLD") == 0;
        found_self |= strcmp(name, "mpi://SELF") == 0;
        found_node |= strcmp(name, "braid://node") == 0;
    }
    if (!found_world || !found_self) {
        fprintf(stderr, "%d psets, WORLD %d SELF %d\n", count, found_world, found_self);
        MPI_Abort(MPI_COMM_SELF, 1);
    }

    MPI_Comm world = comm_of(session, "mpi://WORLD", "org.braid.test.world");
    MPI_Comm own = comm_of(session, "mpi://SELF", "org.braid.test.self");
    int rank, size;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    /* Braid's node set: the ranks MPI_COMM_TYPE_SHARED groups. */
    if (found_node) {
        MPI_Comm node = comm_of(session, "braid://node", "org.braid.test.node"), shared;
        MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
        int node_size, shared_size;
        MPI_Comm_size(node, &node_size);
        MPI_Comm_size(shared, &shared_size);
        if (node_size != shared_size) {
            fprintf(stderr, "braid://node has %d ranks, MPI_COMM_TYPE_SHARED %d\n", node_size, shared_size);
            MPI_Abort(world, 1);
        }
        MPI_Comm_free(&node);
        MPI_Comm_free(&shared);
    }
    MPI_Info pset_info;
    MPI_Session_get_pset_info(session, "mpi://WORLD", &pset_info);
    char value[32];
    MPI_Info_get(pset_info, "mpi_size", sizeof value - 1, value, &flag);
    if (!flag || atoi(value) != size) {
        fprintf(stderr, "mpi_size %s, size %d\n", flag ? value : "(none)", size);
        MPI_Abort(world, 1);
    }
    MPI_Info_free(&pset_info);
    MPI_Info used;
    MPI_Session_get_info(session, &used);
    MPI_Info_get(used, "thread_level", sizeof value - 1, value, &flag);
    if (!flag) {
        fprintf(stderr, "no thread_level in the session's info\n");
        MPI_Abort(world, 1);
    }
    MPI_Info_free(&used);

    /* Even and odd ranks, joined by an intercommunicator. */
    if (size >= 2) {
        MPI_Group world_group, evens, odds;
        MPI_Comm_group(world, &world_group);
        int range_even[1][3] = {{0, size - 1, 2}}, range_odd[1][3] = {{1, size - 1, 2}};
        MPI_Group_range_incl(world_group, 1, range_even, &evens);
        MPI_Group_range_incl(world_group, 1, range_odd, &odds);
        MPI_Comm inter;
        if (rank % 2 == 0)
            MPI_Intercomm_create_from_groups(evens, 0, odds, 0, "org.braid.test.halves", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &inter);
        else
            MPI_Intercomm_create_from_groups(odds, 0, evens, 0, "org.braid.test.halves", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &inter);
        int remote = 0, is_inter = 0;
        MPI_Comm_test_inter(inter, &is_inter);
        MPI_Comm_remote_size(inter, &remote);
        int expected = rank % 2 == 0 ? size / 2 : (size + 1) / 2;
        if (!is_inter || remote != expected) {
            fprintf(stderr, "rank %d: intercommunicator %d, remote size %d, expected %d\n", rank, is_inter, remote, expected);
            MPI_Abort(world, 1);
        }
        /* Across an intercommunicator, each side gets the other side's sum. */
        int mine = rank, theirs = -1, odd_sum = 0, even_sum = 0;
        for (int r = 0; r < size; r++)
            *(r % 2 ? &odd_sum : &even_sum) += r;
        MPI_Allreduce(&mine, &theirs, 1, MPI_INT, MPI_SUM, inter);
        if (theirs != (rank % 2 ? even_sum : odd_sum)) {
            fprintf(stderr, "rank %d: the other side's sum is %d\n", rank, theirs);
            MPI_Abort(world, 1);
        }
        MPI_Comm_free(&inter);
        MPI_Group_free(&evens);
        MPI_Group_free(&odds);
        MPI_Group_free(&world_group);
    }

    /* A second session with a handler of its own, which sees a bad process set name. */
    if (SESSION_ERRORS_ON_SESSION) {
        MPI_Errhandler counting;
        MPI_Session_create_errhandler(count_errors, &counting);
        MPI_Session second;
        MPI_Session_init(MPI_INFO_NULL, counting, &second);
        MPI_Group none = MPI_GROUP_NULL;
        int rc = MPI_Group_from_session_pset(second, "mpi://NOWHERE", &none);
        if (rc == MPI_SUCCESS || handler_calls != 1) {
            fprintf(stderr, "a bad pset name: rc %d, handler calls %d\n", rc, handler_calls);
            MPI_Abort(world, 1);
        }
        MPI_Session_call_errhandler(second, MPI_ERR_OTHER);
        MPI_Errhandler got;
        MPI_Session_get_errhandler(second, &got);
        if (handler_calls != 2 || got != counting) {
            fprintf(stderr, "handler calls %d\n", handler_calls);
            MPI_Abort(world, 1);
        }
        MPI_Errhandler_free(&got);
        MPI_Session_finalize(&second);
        MPI_Errhandler_free(&counting);
    }

    MPI_Comm_free(&own);
    MPI_Barrier(world);
    MPI_Comm_free(&world);
    MPI_Session_finalize(&session);
    if (session != MPI_SESSION_NULL) {
        fprintf(stderr, "MPI_Session_finalize left the handle\n");
        return;
    }
    MPI_Finalized(&flag);
    if (rank == 0)
        printf("sessions: passed (%d ranks, MPI_Finalized %d)\n", size, flag);
}

static void mixed(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Session session;
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &session);
    MPI_Comm comm = comm_of(session, "mpi://WORLD", "org.braid.test.mixed");
    int world_size, size;
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    MPI_Comm_size(comm, &size);
    CHECK(size == world_size, "session world %d, MPI_COMM_WORLD %d", size, world_size);
    MPI_Finalize();
    /* The session outlives the world model. */
    int one = 1, sum = 0, rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    if (sum != size) {
        fprintf(stderr, "after MPI_Finalize: sum %d of %d\n", sum, size);
        MPI_Abort(comm, 1);
    }
    MPI_Comm_free(&comm);
    MPI_Session_finalize(&session);
    if (rank == 0)
        printf("sessions mixed: passed\n");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "mixed") == 0)
        mixed(argc, argv);
    else
        sessions_alone();
    return 0;
}
