/* Intercommunicators: MPI_Intercomm_create (between the even and the odd ranks, and between rank 0
 * and the others with a leader that is not local rank 0, over a peer communicator that is not
 * MPI_COMM_WORLD), the local and remote groups, point-to-point (ranks name the remote group,
 * MPI_ANY_SOURCE matches remote ranks, the status source is a remote rank), probes,
 * MPI_Comm_dup (isolated traffic, attributes copied), MPI_Intercomm_merge (high ordering),
 * MPI_Comm_split, MPI_Comm_create, MPI_Comm_compare and MPI_Comm_free on intercommunicators,
 * and errors under MPI_ERRORS_RETURN. Needs at least 2 ranks. */
#include "check.h"

static int rank, size, parity, other;
static int local_rank, local_size, remote_size;
static MPI_Group world_group;

/* Number of world ranks of parity p. */
static int count_of_parity(int p)
{
    return (size - p + 1) / 2;
}

/* The world ranks of the remote group of `comm`, in remote-rank order. */
static void remote_world_ranks(MPI_Comm comm, int *out, int n)
{
    MPI_Group remote;
    MPI_Comm_remote_group(comm, &remote);
    int ranks[8];
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    MPI_Group_translate_ranks(remote, n, ranks, world_group, out);
    MPI_Group_free(&remote);
}

static MPI_Comm even_odd(void)
{
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, parity, rank, &half);
    /* The leaders are world ranks 0 and 1. */
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, other, 17, &inter);
    MPI_Comm_free(&half);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    return inter;
}

static void groups(MPI_Comm inter)
{
    int flag = -1, value;
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag == 1, "MPI_Comm_test_inter gave %d", flag);
    MPI_Comm_test_inter(MPI_COMM_WORLD, &flag);
    CHECK(flag == 0, "MPI_Comm_test_inter(world) gave %d", flag);
    MPI_Comm_size(inter, &value);
    CHECK(value == local_size, "local size %d, expected %d", value, local_size);
    MPI_Comm_rank(inter, &value);
    CHECK(value == local_rank, "local rank %d, expected %d", value, local_rank);
    MPI_Comm_remote_size(inter, &value);
    CHECK(value == remote_size, "remote size %d, expected %d", value, remote_size);

    int world_ranks[8];
    remote_world_ranks(inter, world_ranks, remote_size);
    for (int i = 0; i < remote_size; i++)
        CHECK(world_ranks[i] == 2 * i + other, "remote rank %d is world rank %d", i, world_ranks[i]);
    MPI_Group local;
    MPI_Comm_group(inter, &local);
    int first = 0, in_world;
    MPI_Group_translate_ranks(local, 1, &first, world_group, &in_world);
    CHECK(in_world == parity, "local rank 0 is world rank %d", in_world);
    MPI_Group_free(&local);

    int result;
    MPI_Comm_compare(inter, inter, &result);
    CHECK(result == MPI_IDENT, "compare(inter, inter) = %d", result);
    MPI_Comm_compare(inter, MPI_COMM_WORLD, &result);
    CHECK(result == MPI_UNEQUAL, "compare(inter, world) = %d", result);
}

static void point_to_point(MPI_Comm inter)
{
    /* Every process sends its world rank to every remote process, tagged with its local rank. */
    MPI_Request requests[8];
    for (int j = 0; j < remote_size; j++)
        MPI_Isend(&rank, 1, MPI_INT, j, 100 + local_rank, inter, &requests[j]);
    int seen[8] = {0};
    for (int i = 0; i < remote_size; i++) {
        int payload = -1;
        MPI_Status status;
        MPI_Recv(&payload, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, inter, &status);
        int source = status.MPI_SOURCE;
        CHECK(source >= 0 && source < remote_size, "status source %d is not a remote rank", source);
        CHECK(payload == 2 * source + other, "remote rank %d sent world rank %d", source, payload);
        CHECK(status.MPI_TAG == 100 + source, "remote rank %d sent tag %d", source, status.MPI_TAG);
        CHECK(!seen[source]++, "two messages from remote rank %d", source);
    }
    MPI_Waitall(remote_size, requests, MPI_STATUSES_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Receives from named remote ranks, in order. */
    for (int j = 0; j < remote_size; j++)
        MPI_Isend(&rank, 1, MPI_INT, j, 200, inter, &requests[j]);
    for (int j = remote_size - 1; j >= 0; j--) {
        int payload = -1;
        MPI_Status status;
        MPI_Recv(&payload, 1, MPI_INT, j, 200, inter, &status);
        CHECK(payload == 2 * j + other && status.MPI_SOURCE == j, "from remote rank %d: %d (source %d)", j, payload, status.MPI_SOURCE);
    }
    MPI_Waitall(remote_size, requests, MPI_STATUSES_IGNORE);

    /* A probe names the remote rank too. */
    int partner = local_rank % remote_size;
    MPI_Request request;
    MPI_Isend(&rank, 1, MPI_INT, partner, 300, inter, &request);
    /* The remote ranks whose partner is this process. */
    int expected = 0;
    for (int j = 0; j < remote_size; j++)
        expected += j % local_size == local_rank;
    for (int i = 0; i < expected; i++) {
        MPI_Status status;
        MPI_Probe(MPI_ANY_SOURCE, 300, inter, &status);
        CHECK(status.MPI_SOURCE % local_size == local_rank, "probed a message from remote rank %d", status.MPI_SOURCE);
        int payload = -1, count = -1;
        MPI_Get_count(&status, MPI_INT, &count);
        CHECK(count == 1, "probed count %d", count);
        MPI_Recv(&payload, 1, MPI_INT, status.MPI_SOURCE, 300, inter, MPI_STATUS_IGNORE);
        CHECK(payload == 2 * status.MPI_SOURCE + other, "probed message carries %d", payload);
    }
    MPI_Wait(&request, MPI_STATUS_IGNORE);

    /* Ranks name the remote group: remote_size is out of range. */
    int err = MPI_Send(&rank, 1, MPI_INT, remote_size, 0, inter);
    CHECK(class_of(err) == MPI_ERR_RANK, "a send to rank remote_size returned class %d", class_of(err));
    MPI_Barrier(MPI_COMM_WORLD);
}

static void duplicate(MPI_Comm inter)
{
    int keyval, found, result;
    static int payload;
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
    MPI_Comm_set_attr(inter, keyval, &payload);
    MPI_Comm copy;
    MPI_Comm_dup(inter, &copy);
    int flag;
    MPI_Comm_test_inter(copy, &flag);
    CHECK(flag, "the duplicate of an intercommunicator is not one");
    MPI_Comm_compare(inter, copy, &result);
    CHECK(result == MPI_CONGRUENT, "compare(inter, dup) = %d", result);
    void *value = NULL;
    MPI_Comm_get_attr(copy, keyval, &value, &found);
    CHECK(found && value == &payload, "the duplicate lacks the attribute (found %d)", found);

    /* Traffic on the duplicate and on the original never meet. */
    int partner = local_rank % remote_size, on_copy = 1000 + rank, on_inter = 2000 + rank;
    MPI_Request requests[2];
    MPI_Isend(&on_copy, 1, MPI_INT, partner, 5, copy, &requests[0]);
    MPI_Isend(&on_inter, 1, MPI_INT, partner, 5, inter, &requests[1]);
    int expected = 0;
    for (int j = 0; j < remote_size; j++)
        expected += j % local_size == local_rank;
    for (int i = 0; i < expected; i++) {
        int received = -1;
        MPI_Status status;
        MPI_Recv(&received, 1, MPI_INT, MPI_ANY_SOURCE, 5, inter, &status);
        CHECK(received == 2000 + 2 * status.MPI_SOURCE + other, "the original received %d from remote rank %d", received, status.MPI_SOURCE);
        MPI_Recv(&received, 1, MPI_INT, status.MPI_SOURCE, 5, copy, MPI_STATUS_IGNORE);
        CHECK(received == 1000 + 2 * status.MPI_SOURCE + other, "the duplicate received %d", received);
    }
    MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    MPI_Comm_free(&copy);
    CHECK(copy == MPI_COMM_NULL, "MPI_Comm_free left the handle");
    MPI_Comm_delete_attr(inter, keyval);
    MPI_Comm_free_keyval(&keyval);
}

static void check_merged(MPI_Comm merged, int evens_first)
{
    int merged_rank, merged_size, flag;
    MPI_Comm_test_inter(merged, &flag);
    CHECK(!flag, "the merged communicator is an intercommunicator");
    MPI_Comm_size(merged, &merged_size);
    MPI_Comm_rank(merged, &merged_rank);
    int first_parity = evens_first ? 0 : 1;
    int expected = parity == first_parity ? local_rank : count_of_parity(first_parity) + local_rank;
    CHECK(merged_size == size && merged_rank == expected, "merged: rank %d of %d, expected %d of %d (evens first: %d)", merged_rank, merged_size, expected, size,
          evens_first);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, merged);
    CHECK(sum == size * (size - 1) / 2, "MPI_Allreduce on the merged communicator gave %d", sum);
    int root_world_rank = rank;
    MPI_Bcast(&root_world_rank, 1, MPI_INT, 0, merged);
    CHECK(root_world_rank == first_parity, "merged rank 0 is world rank %d", root_world_rank);
}

static void merge(MPI_Comm inter)
{
    MPI_Comm merged;
    /* The group passing high = false comes first. */
    MPI_Intercomm_merge(inter, parity, &merged);
    check_merged(merged, 1);
    MPI_Comm_free(&merged);
    MPI_Intercomm_merge(inter, !parity, &merged);
    check_merged(merged, 0);
    MPI_Comm_free(&merged);
    /* Both groups pass the same: the group of world rank 0 comes first (as in MPICH and Open MPI). */
    MPI_Intercomm_merge(inter, 1, &merged);
    check_merged(merged, 1);
    MPI_Comm_free(&merged);
}

static void split(MPI_Comm inter)
{
    /* Color by local rank parity, key reversing the order. */
    int color = local_rank % 2;
    MPI_Comm part;
    MPI_Comm_split(inter, color, -local_rank, &part);
    int local_members = 0, remote_members = 0;
    for (int r = 0; r < local_size; r++)
        local_members += r % 2 == color;
    for (int r = 0; r < remote_size; r++)
        remote_members += r % 2 == color;
    if (remote_members == 0) {
        CHECK(part == MPI_COMM_NULL, "a color without remote members gave a communicator");
        return;
    }
    CHECK(part != MPI_COMM_NULL, "MPI_Comm_split of an intercommunicator gave MPI_COMM_NULL");
    int flag, value;
    MPI_Comm_test_inter(part, &flag);
    CHECK(flag, "the split of an intercommunicator is not one");
    MPI_Comm_size(part, &value);
    CHECK(value == local_members, "split local size %d, expected %d", value, local_members);
    int position = 0;
    for (int r = local_rank + 2; r < local_size; r += 2)
        position++;
    MPI_Comm_rank(part, &value);
    CHECK(value == position, "split local rank %d, expected %d (keys reverse the order)", value, position);
    MPI_Comm_remote_size(part, &value);
    CHECK(value == remote_members, "split remote size %d, expected %d", value, remote_members);
    int world_ranks[8];
    remote_world_ranks(part, world_ranks, remote_members);
    int highest = color;
    while (highest + 2 < remote_size)
        highest += 2;
    CHECK(world_ranks[0] == 2 * highest + other, "split remote rank 0 is world rank %d, expected %d", world_ranks[0], 2 * highest + other);

    /* The part's local rank 0 sends to every remote member; each receives from remote rank 0. */
    MPI_Request requests[8];
    int sends = position == 0 ? remote_members : 0;
    for (int j = 0; j < sends; j++)
        MPI_Isend(&rank, 1, MPI_INT, j, 9, part, &requests[j]);
    int received = -1;
    MPI_Recv(&received, 1, MPI_INT, 0, 9, part, MPI_STATUS_IGNORE);
    CHECK(received == 2 * highest + other, "the split's remote rank 0 sent %d", received);
    MPI_Waitall(sends, requests, MPI_STATUSES_IGNORE);
    MPI_Comm_free(&part);
}

static void create(MPI_Comm inter)
{
    /* The leaders only. */
    MPI_Group local, leader;
    MPI_Comm_group(inter, &local);
    int zero = 0;
    MPI_Group_incl(local, 1, &zero, &leader);
    MPI_Comm leaders;
    MPI_Comm_create(inter, leader, &leaders);
    if (local_rank != 0) {
        CHECK(leaders == MPI_COMM_NULL, "a non-leader got a communicator");
    } else {
        int value;
        MPI_Comm_remote_size(leaders, &value);
        CHECK(value == 1, "the leaders' intercommunicator has remote size %d", value);
        int received = -1;
        MPI_Sendrecv(&rank, 1, MPI_INT, 0, 4, &received, 1, MPI_INT, 0, 4, leaders, MPI_STATUS_IGNORE);
        CHECK(received == other, "the other leader is world rank %d", received);
        MPI_Comm_free(&leaders);
    }
    /* The whole local group: the same groups as the original. */
    MPI_Comm whole;
    MPI_Comm_create(inter, local, &whole);
    int result;
    MPI_Comm_compare(inter, whole, &result);
    CHECK(result == MPI_CONGRUENT, "MPI_Comm_create with the whole group: compare = %d", result);
    MPI_Comm_free(&whole);
    MPI_Group_free(&leader);
    MPI_Group_free(&local);
}

/* World rank 0 against all the others; the others' leader is their last local rank, and the
 * leaders talk over a duplicate of MPI_COMM_WORLD. */
static void lopsided(void)
{
    MPI_Comm peer, side, inter;
    MPI_Comm_dup(MPI_COMM_WORLD, &peer);
    int alone = rank == 0;
    MPI_Comm_split(MPI_COMM_WORLD, alone, rank, &side);
    int leader = alone ? 0 : size - 2;
    int remote_leader = alone ? size - 1 : 0;
    MPI_Intercomm_create(side, leader, peer, remote_leader, 23, &inter);
    int value;
    MPI_Comm_remote_size(inter, &value);
    CHECK(value == (alone ? size - 1 : 1), "lopsided remote size %d", value);
    MPI_Comm_size(inter, &value);
    CHECK(value == (alone ? 1 : size - 1), "lopsided local size %d", value);
    if (alone) {
        for (int j = 0; j < size - 1; j++) {
            int received = -1;
            MPI_Status status;
            MPI_Recv(&received, 1, MPI_INT, MPI_ANY_SOURCE, 8, inter, &status);
            CHECK(received == status.MPI_SOURCE + 1, "world rank 0 got %d from remote rank %d", received, status.MPI_SOURCE);
        }
    } else {
        MPI_Send(&rank, 1, MPI_INT, 0, 8, inter);
    }
    MPI_Comm merged;
    MPI_Intercomm_merge(inter, alone, &merged);
    int merged_rank;
    MPI_Comm_rank(merged, &merged_rank);
    CHECK(merged_rank == (alone ? size - 1 : rank - 1), "lopsided merge: world rank %d has merged rank %d", rank, merged_rank);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&side);
    MPI_Comm_free(&peer);
}

static void errors(MPI_Comm inter)
{
#ifdef TEST_BRAID_ONLY
    int value;
    /* Remote queries need an intercommunicator (MPICH answers as if the remote group were the
     * local one, Open MPI gives size 0 but fails MPI_Comm_remote_group). */
    CHECK(MPI_Comm_remote_size(MPI_COMM_WORLD, &value) == MPI_ERR_COMM, "MPI_Comm_remote_size(world)");
    MPI_Group group;
    CHECK(MPI_Comm_remote_group(MPI_COMM_WORLD, &group) == MPI_ERR_COMM, "MPI_Comm_remote_group(world)");
    CHECK(MPI_Comm_remote_size(MPI_COMM_NULL, &value) == MPI_ERR_COMM, "MPI_Comm_remote_size(MPI_COMM_NULL)");
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm result = MPI_COMM_WORLD;
    CHECK(MPI_Intercomm_merge(MPI_COMM_WORLD, 0, &result) == MPI_ERR_COMM, "MPI_Intercomm_merge of an intracommunicator");
    CHECK(MPI_Intercomm_create(inter, 0, MPI_COMM_WORLD, other, 3, &result) == MPI_ERR_COMM, "MPI_Intercomm_create from an intercommunicator");
    CHECK(MPI_Intercomm_create(MPI_COMM_SELF, 1, MPI_COMM_WORLD, other, 3, &result) == MPI_ERR_RANK, "MPI_Intercomm_create with local_leader 1 of 1");
    CHECK(MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, other, -3, &result) == MPI_ERR_TAG, "MPI_Intercomm_create with tag -3");
    CHECK(MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, size, 3, &result) == MPI_ERR_RANK, "MPI_Intercomm_create with remote_leader == size");
    CHECK(MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, rank, 3, &result) == MPI_ERR_RANK, "MPI_Intercomm_create with itself as remote leader");
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    CHECK(MPI_Comm_create_group(inter, world, 0, &result) == MPI_ERR_COMM, "MPI_Comm_create_group of an intercommunicator");
    MPI_Group_free(&world);
    /* MPI defines no prefix reductions on intercommunicators (intercomm_coll tests the rest). */
    CHECK(MPI_Scan(&rank, &value, 1, MPI_INT, MPI_SUM, inter) == MPI_ERR_COMM, "MPI_Scan on an intercommunicator");
    /* Splitting by shared memory keeps both groups whole (the tests run on one node). */
    MPI_Comm node;
    MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int same;
    MPI_Comm_compare(inter, node, &same);
    CHECK(same == MPI_CONGRUENT, "MPI_Comm_split_type of an intercommunicator: compare = %d", same);
    MPI_Comm_free(&node);
    int dims[1] = {1}, periods[1] = {0};
    CHECK(MPI_Cart_create(inter, 1, dims, periods, 0, &result) == MPI_ERR_COMM, "MPI_Cart_create on an intercommunicator");
#else
    (void)inter;
#endif
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    require_ranks(2, "intercomm");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 8, "intercomm sizes its rank lists for at most 8 ranks, got %d", size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    parity = rank % 2;
    other = 1 - parity;
    local_rank = rank / 2;
    local_size = count_of_parity(parity);
    remote_size = count_of_parity(other);

    MPI_Comm inter = even_odd();
    groups(inter);
    point_to_point(inter);
    duplicate(inter);
    merge(inter);
    split(inter);
    create(inter);
    lopsided();
    errors(inter);
    MPI_Comm_free(&inter);
    CHECK(inter == MPI_COMM_NULL, "MPI_Comm_free left the intercommunicator's handle");
    MPI_Group_free(&world_group);
    report_ok("intercomm");
    MPI_Finalize();
    return 0;
}
