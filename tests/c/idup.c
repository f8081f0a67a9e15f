/* MPI_Comm_idup: the new communicator works once the request completes (isolated traffic,
 * attributes copied by their callbacks, the topology kept); several in flight at once complete in
 * any order; an idup in flight on one rank while another communicator is made elsewhere still
 * gives each communicator its own context (the ranks reach the two calls in different orders);
 * point-to-point traffic pending on the parent is unaffected; an intercommunicator's duplicate
 * keeps both groups; argument errors under
 * MPI_ERRORS_RETURN. Needs at least 2 ranks. */
#include <string.h>

#include "check.h"

static int rank, size;
static int copies;

static int count_copy(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval, (void)extra;
    copies++;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

/* `comm` carries its own traffic: a message sent on `other` with the same tag is not taken. */
static void check_isolated(MPI_Comm comm, MPI_Comm other, const char *what)
{
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    int on_other = 1000 + me, on_comm = 2000 + me, got_comm = -1, got_other = -1;
    MPI_Request sends[2];
    MPI_Isend(&on_other, 1, MPI_INT, next, 5, other, &sends[0]);
    MPI_Isend(&on_comm, 1, MPI_INT, next, 5, comm, &sends[1]);
    MPI_Recv(&got_comm, 1, MPI_INT, prev, 5, comm, MPI_STATUS_IGNORE);
    MPI_Recv(&got_other, 1, MPI_INT, prev, 5, other, MPI_STATUS_IGNORE);
    MPI_Waitall(2, sends, MPI_STATUSES_IGNORE);
    CHECK(got_comm == 2000 + prev && got_other == 1000 + prev, "%s: got %d on the communicator and %d on the other", what, got_comm, got_other);
    int sum = 0;
    MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, comm);
    CHECK(sum == n * (n - 1) / 2, "%s: allreduce gave %d", what, sum);
}

static void basic(void)
{
    int keyval;
    static char value[4];
    MPI_Comm_create_keyval(count_copy, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, value);
    copies = 0;
    MPI_Comm dup;
    MPI_Request request;
    CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &request) == MPI_SUCCESS, "MPI_Comm_idup failed");
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    CHECK(request == MPI_REQUEST_NULL, "the request is not freed");
    CHECK(copies == 1, "the copy callback ran %d times", copies);
    void *copied = NULL;
    int flag = 0;
    MPI_Comm_get_attr(dup, keyval, &copied, &flag);
    CHECK(flag && copied == value + 1, "the copy is not on the new communicator");
    int result;
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &result);
    CHECK(result == MPI_CONGRUENT, "compare gave %d", result);
    check_isolated(dup, MPI_COMM_WORLD, "idup of MPI_COMM_WORLD");
    MPI_Comm_free(&dup);
    MPI_Comm_delete_attr(MPI_COMM_WORLD, keyval);
    MPI_Comm_free_keyval(&keyval);
}

/* Four in flight at once on two parents, completed in reverse order with MPI_Test loops. */
static void many_in_flight(void)
{
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm made[4];
    MPI_Request requests[4];
    for (int i = 0; i < 4; i++)
        MPI_Comm_idup(i % 2 ? half : MPI_COMM_WORLD, &made[i], &requests[i]);
    for (int i = 3; i >= 0; i--) {
        int done = 0;
        while (!done)
            MPI_Test(&requests[i], &done, MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < i; j++) {
            int result;
            MPI_Comm_compare(made[i], made[j], &result);
            CHECK(result != MPI_IDENT, "two idups gave the same communicator");
        }
    check_isolated(made[0], made[2], "first and third idup of MPI_COMM_WORLD");
    check_isolated(made[2], MPI_COMM_WORLD, "third idup of MPI_COMM_WORLD");
    for (int i = 0; i < 4; i++)
        MPI_Comm_free(&made[i]);
    MPI_Comm_free(&half);
}

/* Rank 0 makes another communicator while its idup is in flight; the other ranks wait for the
 * idup first. Both communicators must get contexts of their own. */
static void overlapping_creation(void)
{
    MPI_Comm other_parent, by_idup, by_dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &other_parent);
    MPI_Request request;
    MPI_Comm_idup(MPI_COMM_WORLD, &by_idup, &request);
    if (rank == 0) {
        MPI_Comm_dup(other_parent, &by_dup);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        MPI_Comm_dup(other_parent, &by_dup);
    }
    check_isolated(by_idup, by_dup, "idup beside a dup");
    check_isolated(by_dup, other_parent, "dup beside its parent");
    MPI_Comm_free(&by_idup);
    MPI_Comm_free(&by_dup);
    MPI_Comm_free(&other_parent);
}

/* Three ranks: rank 0's idup of {0,1} is in flight while it makes a duplicate of {0,2}, and ranks
 * 1 and 2 have taken context ids that rank 0 has not, so both agreements first propose the same
 * id. The two communicators must still be apart: a receive from MPI_ANY_SOURCE on the first does
 * not take a message sent on the second. */
static void overlapping_creation_of_three(void)
{
    MPI_Group world_group, g01, g02, g12;
    int r01[2] = {0, 1}, r02[2] = {0, 2}, r12[2] = {1, 2};
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, 2, r01, &g01);
    MPI_Group_incl(world_group, 2, r02, &g02);
    MPI_Group_incl(world_group, 2, r12, &g12);
    MPI_Comm comm01, comm02, x = MPI_COMM_NULL, y = MPI_COMM_NULL;
    MPI_Comm_create(MPI_COMM_WORLD, g01, &comm01);
    MPI_Comm_create(MPI_COMM_WORLD, g02, &comm02);
    if (rank == 1 || rank == 2) {
        MPI_Comm a, b;
        MPI_Comm_create_group(MPI_COMM_WORLD, g12, 3, &a);
        MPI_Comm_create_group(MPI_COMM_WORLD, g12, 4, &b);
        MPI_Comm_free(&a);
        MPI_Comm_free(&b);
    }
    MPI_Request request;
    if (rank == 0) {
        MPI_Comm_idup(comm01, &x, &request);
        MPI_Comm_dup(comm02, &y);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Comm_idup(comm01, &x, &request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
    } else if (rank == 2) {
        MPI_Comm_dup(comm02, &y);
    }
    int value = 0;
    if (rank == 2) {
        value = 222;
        MPI_Send(&value, 1, MPI_INT, 0, 5, y);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        value = 111;
        MPI_Send(&value, 1, MPI_INT, 0, 5, x);
    }
    if (rank == 0) {
        MPI_Status status;
        MPI_Recv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 5, x, &status);
        CHECK(value == 111 && status.MPI_SOURCE == 1, "the idup's communicator took %d from %d", value, status.MPI_SOURCE);
        MPI_Recv(&value, 1, MPI_INT, 1, 5, y, MPI_STATUS_IGNORE);
        CHECK(value == 222, "the duplicate took %d", value);
    }
    if (x != MPI_COMM_NULL)
        MPI_Comm_free(&x);
    if (y != MPI_COMM_NULL)
        MPI_Comm_free(&y);
    if (comm01 != MPI_COMM_NULL)
        MPI_Comm_free(&comm01);
    if (comm02 != MPI_COMM_NULL)
        MPI_Comm_free(&comm02);
    MPI_Group_free(&g01);
    MPI_Group_free(&g02);
    MPI_Group_free(&g12);
    MPI_Group_free(&world_group);
}

/* An idup while a message on the parent is pending, and of a Cartesian communicator. */
static void pending_traffic_and_topology(void)
{
    int dims[1] = {0}, periods[1] = {1};
    MPI_Dims_create(size, 1, dims);
    MPI_Comm cart, dup;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    int sent = rank, got = -1;
    MPI_Request recv, send, request;
    MPI_Irecv(&got, 1, MPI_INT, (rank + size - 1) % size, 9, cart, &recv);
    MPI_Comm_idup(cart, &dup, &request);
    MPI_Isend(&sent, 1, MPI_INT, (rank + 1) % size, 9, cart, &send);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    MPI_Wait(&send, MPI_STATUS_IGNORE);
    MPI_Wait(&recv, MPI_STATUS_IGNORE);
    CHECK(got == (rank + size - 1) % size, "got %d on the parent", got);
    int kind;
    MPI_Topo_test(dup, &kind);
    CHECK(kind == MPI_CART, "the duplicate's topology is %d, not MPI_CART", kind);
    check_isolated(dup, cart, "idup of a Cartesian communicator");
    MPI_Comm_free(&dup);
    MPI_Comm_free(&cart);
}

/* An idup of an intercommunicator between the even and the odd ranks (with a dup of it made
 * meanwhile): the groups are kept, and its traffic is its own. */
static void intercommunicator(void)
{
    MPI_Comm half, inter, by_idup, by_dup;
    int parity = rank % 2;
    MPI_Comm_split(MPI_COMM_WORLD, parity, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - parity, 21, &inter);
    MPI_Request request;
    MPI_Comm_idup(inter, &by_idup, &request);
#ifdef TEST_BRAID_ONLY
    MPI_Comm_dup(inter, &by_dup);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
#else
    /* Open MPI 4.1 hangs in a blocking MPI_Comm_dup of an intercommunicator (at 3 or more ranks)
     * while an MPI_Comm_idup of it is in flight, which MPI allows. */
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    MPI_Comm_dup(inter, &by_dup);
#endif
    int flag = 0, remote = 0, local_rank;
    MPI_Comm_test_inter(by_idup, &flag);
    MPI_Comm_remote_size(by_idup, &remote);
    MPI_Comm_rank(by_idup, &local_rank);
    CHECK(flag && remote == (size + 1 - (1 - parity)) / 2, "the duplicate is %s with a remote group of %d", flag ? "an intercommunicator" : "not an intercommunicator", remote);
    /* Local rank 0 of each group swaps a value with the other group's rank 0, on the original
     * first and on the duplicates, each receive naming the communicator it expects. */
    if (local_rank == 0) {
        int mine[3] = {100 + rank, 200 + rank, 300 + rank}, got[3] = {-1, -1, -1};
        MPI_Request sends[3];
        MPI_Isend(&mine[0], 1, MPI_INT, 0, 4, inter, &sends[0]);
        MPI_Isend(&mine[1], 1, MPI_INT, 0, 4, by_dup, &sends[1]);
        MPI_Isend(&mine[2], 1, MPI_INT, 0, 4, by_idup, &sends[2]);
        MPI_Recv(&got[2], 1, MPI_INT, 0, 4, by_idup, MPI_STATUS_IGNORE);
        MPI_Recv(&got[1], 1, MPI_INT, 0, 4, by_dup, MPI_STATUS_IGNORE);
        MPI_Recv(&got[0], 1, MPI_INT, 0, 4, inter, MPI_STATUS_IGNORE);
        MPI_Waitall(3, sends, MPI_STATUSES_IGNORE);
        int other = 1 - parity;
        CHECK(got[0] == 100 + other && got[1] == 200 + other && got[2] == 300 + other, "got %d %d %d", got[0], got[1], got[2]);
    }
    MPI_Comm_free(&by_idup);
    MPI_Comm_free(&by_dup);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

static void errors(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm dup;
    MPI_Request request;
    CHECK(class_of(MPI_Comm_idup(MPI_COMM_NULL, &dup, &request)) == MPI_ERR_COMM, "MPI_COMM_NULL is accepted");
#ifdef TEST_BRAID_ONLY
    CHECK(class_of(MPI_Comm_idup(MPI_COMM_WORLD, NULL, &request)) == MPI_ERR_ARG, "a NULL newcomm is accepted");
    /* Before completion the handle names no communicator, and the request cannot be freed. */
    MPI_Comm_idup(MPI_COMM_WORLD, &dup, &request);
    int n;
    CHECK(class_of(MPI_Comm_size(dup, &n)) == MPI_ERR_COMM, "a communicator is usable before its idup completed");
    CHECK(class_of(MPI_Request_free(&request)) == MPI_ERR_REQUEST, "an idup request can be freed");
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    CHECK(MPI_Comm_size(dup, &n) == MPI_SUCCESS && n == size, "the completed communicator has size %d", n);
    MPI_Comm_free(&dup);
#endif
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* A handler set on the new handle before the request completes (as bindings do at once) is the
 * communicator's once it has; until then a query gives it back too. */
static void handler_before_completion(void)
{
    MPI_Comm dup;
    MPI_Request request;
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    MPI_Comm_idup(MPI_COMM_WORLD, &dup, &request);
    CHECK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN) == MPI_SUCCESS, "MPI_Comm_set_errhandler on an MPI_Comm_idup handle before completion failed");
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    MPI_Comm_get_errhandler(dup, &handler);
    CHECK(handler == MPI_ERRORS_RETURN, "the handler set before completion was lost");
    MPI_Errhandler_free(&handler);
    /* It applies: an invalid rank returns instead of aborting. */
    int value = 0;
    CHECK(class_of(MPI_Send(&value, 1, MPI_INT, size + 5, 0, dup)) == MPI_ERR_RANK, "an invalid rank on the duplicate did not return MPI_ERR_RANK");
    MPI_Comm_free(&dup);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    require_ranks(2, "idup");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    basic();
    many_in_flight();
    overlapping_creation();
    if (size >= 3)
        overlapping_creation_of_three();
    pending_traffic_and_topology();
    intercommunicator();
    errors();
    handler_before_completion();
    report_ok("idup");
    MPI_Finalize();
    return 0;
}
