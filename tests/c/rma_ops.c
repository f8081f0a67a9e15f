/* One-sided operations under every synchronisation, on every window flavor: MPI_Win_create,
 * MPI_Win_allocate, MPI_Win_allocate_shared (on a communicator of one node) and
 * MPI_Win_create_dynamic. Fence: put, get, accumulate with derived datatypes on both sides.
 * Passive target: lock/unlock (shared and exclusive), flush, lock_all, fetch_and_op,
 * compare_and_swap, get_accumulate (MPI_SUM, MPI_REPLACE, MPI_NO_OP), request-based operations,
 * fetch_and_op of seven predefined types and operations.
 * PSCW: post/start/complete/wait and MPI_Win_test. Then put, get and accumulate of half a
 * megabyte on created and allocated windows. Every result is checked. Any number of ranks. */
#include "check.h"
#include <stdint.h>
#include <string.h>

#define N 16

enum flavor { CREATE, ALLOCATE, SHARED, DYNAMIC, FLAVORS };
static const char *flavor_name[] = {"create", "allocate", "shared", "dynamic"};

static int rank, size;
static MPI_Comm comm; /* the communicator of the window under test */

/* A window of N ints per rank of `flavor`; *base is this rank's memory; disps[r] is the
 * displacement of rank r's element 0 (an address for dynamic windows). */
static MPI_Win make_window(enum flavor flavor, int **base, MPI_Aint *disps)
{
    MPI_Win win;
    int *memory = NULL;
    switch (flavor) {
    case CREATE:
        memory = malloc(N * sizeof(int));
        MPI_Win_create(memory, N * sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &win);
        break;
    case ALLOCATE:
        MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &memory, &win);
        break;
    case SHARED:
        MPI_Win_allocate_shared(N * sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &memory, &win);
        break;
    default:
        memory = malloc(N * sizeof(int));
        MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &win);
        MPI_Win_attach(win, memory, N * sizeof(int));
        break;
    }
    MPI_Aint mine = 0;
    if (flavor == DYNAMIC)
        MPI_Get_address(memory, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, disps, 1, MPI_AINT, comm);
    if (flavor != DYNAMIC)
        for (int r = 0; r < size; r++)
            disps[r] = 0;
    *base = memory;
    return win;
}

/* Displacement of element `index` of rank `r`'s memory. */
static MPI_Aint at(enum flavor flavor, const MPI_Aint *disps, int r, int index)
{
    return flavor == DYNAMIC ? disps[r] + index * (MPI_Aint)sizeof(int) : index;
}

static void free_window(enum flavor flavor, MPI_Win *win, int *memory)
{
    if (flavor == DYNAMIC)
        MPI_Win_detach(*win, memory);
    MPI_Win_free(win);
    CHECK(*win == MPI_WIN_NULL, "MPI_Win_free left the handle");
    if (flavor == CREATE || flavor == DYNAMIC)
        free(memory);
}

static void local_store(MPI_Win win, int *memory, int index, int value)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    memory[index] = value;
    MPI_Win_unlock(rank, win);
}

static void fence_epochs(enum flavor flavor)
{
    MPI_Aint disps[64];
    int *memory;
    MPI_Win win = make_window(flavor, &memory, disps);
    for (int i = 0; i < N; i++)
        local_store(win, memory, i, -1);
    MPI_Barrier(comm);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    /* Put 4 ints to the right neighbour's elements 0..3; get the left one's back later. */
    int values[4] = {rank * 10, rank * 10 + 1, rank * 10 + 2, rank * 10 + 3};
    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    MPI_Put(values, 4, MPI_INT, right, at(flavor, disps, right, 0), 4, MPI_INT, win);
    /* A strided target: every other int of elements 8..15 gets 1 added by every rank. */
    MPI_Datatype every_other;
    MPI_Type_vector(4, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    MPI_Win_fence(0, win);
    int ones[4] = {1, 1, 1, 1};
    for (int r = 0; r < size; r++)
        MPI_Accumulate(ones, 4, MPI_INT, r, at(flavor, disps, r, 8), 1, every_other, MPI_SUM, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < 4; i++)
        CHECK(memory[i] == left * 10 + i, "%s fence put: element %d is %d, expected %d", flavor_name[flavor], i, memory[i], left * 10 + i);
    for (int i = 8; i < N; i++)
        CHECK(memory[i] == (i % 2 == 0 ? size - 1 : -1), "%s fence accumulate: element %d is %d", flavor_name[flavor], i, memory[i]);
    /* Get with a strided origin: the right neighbour's elements 0..3 into every other int. */
    int got[8];
    for (int i = 0; i < 8; i++)
        got[i] = -7;
    MPI_Get(got, 1, every_other, right, at(flavor, disps, right, 0), 4, MPI_INT, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    for (int i = 0; i < 4; i++) {
        CHECK(got[2 * i] == rank * 10 + i, "%s fence get: %d is %d, expected %d", flavor_name[flavor], 2 * i, got[2 * i], rank * 10 + i);
        CHECK(got[2 * i + 1] == -7, "%s fence get wrote a gap", flavor_name[flavor]);
    }
    MPI_Type_free(&every_other);
    free_window(flavor, &win, memory);
}

static void passive_epochs(enum flavor flavor)
{
    MPI_Aint disps[64];
    int *memory;
    MPI_Win win = make_window(flavor, &memory, disps);
    for (int i = 0; i < N; i++)
        local_store(win, memory, i, 0);
    MPI_Barrier(comm);
    /* Every rank adds rank+1 to rank 0's element 0 under an exclusive lock, by fetch_and_op. */
    int one = rank + 1, fetched = -1;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Fetch_and_op(&one, &fetched, MPI_INT, 0, at(flavor, disps, 0, 0), MPI_SUM, win);
    MPI_Win_unlock(0, win);
    CHECK(fetched >= 0, "%s fetch_and_op fetched %d", flavor_name[flavor], fetched);
    /* Compare-and-swap: exactly one rank swaps element 1 from 0 to its rank + 100. */
    int mine = rank + 100, zero = 0, old = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Compare_and_swap(&mine, &zero, &old, MPI_INT, 0, at(flavor, disps, 0, 1), win);
    MPI_Win_flush(0, win);
    int winner = old == 0;
    MPI_Win_unlock(0, win);
    int winners = 0;
    MPI_Allreduce(&winner, &winners, 1, MPI_INT, MPI_SUM, comm);
    CHECK(winners == 1, "%s compare_and_swap: %d ranks swapped", flavor_name[flavor], winners);
    MPI_Barrier(comm);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        CHECK(memory[0] == size * (size + 1) / 2, "%s fetch_and_op total %d", flavor_name[flavor], memory[0]);
        CHECK(memory[1] >= 100 && memory[1] < 100 + size, "%s compare_and_swap left %d", flavor_name[flavor], memory[1]);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(comm);
    /* lock_all: each rank writes its rank into element 2 + rank % 8 of every rank, with Rput,
     * then reads it back with get_accumulate(MPI_NO_OP) and Rget. */
    MPI_Win_lock_all(0, win);
    int slot = 2 + rank % 8;
    for (int r = 0; r < size; r++) {
        MPI_Request request;
        MPI_Rput(&rank, 1, MPI_INT, r, at(flavor, disps, r, slot), 1, MPI_INT, win, &request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    MPI_Win_flush_all(win);
    for (int r = 0; r < size; r++) {
        int back = -1, again = -1;
        MPI_Get_accumulate(NULL, 0, MPI_INT, &back, 1, MPI_INT, r, at(flavor, disps, r, slot), 1, MPI_INT, MPI_NO_OP, win);
        MPI_Request request;
        MPI_Rget(&again, 1, MPI_INT, r, at(flavor, disps, r, slot), 1, MPI_INT, win, &request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        MPI_Win_flush(r, win);
        if (size <= 8) {
            CHECK(back == rank, "%s get_accumulate(MPI_NO_OP) from %d: %d", flavor_name[flavor], r, back);
            CHECK(again == rank, "%s rget from %d: %d", flavor_name[flavor], r, again);
        }
    }
    /* get_accumulate(MPI_REPLACE) swaps; Raccumulate adds. */
    int swapped = -1, put_back = 7;
    MPI_Get_accumulate(&put_back, 1, MPI_INT, &swapped, 1, MPI_INT, rank, at(flavor, disps, rank, 12), 1, MPI_INT, MPI_REPLACE, win);
    MPI_Request request;
    MPI_Raccumulate(&put_back, 1, MPI_INT, rank, at(flavor, disps, rank, 12), 1, MPI_INT, MPI_SUM, win, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    MPI_Win_flush_local_all(win);
    MPI_Win_unlock_all(win);
    CHECK(swapped == 0, "%s get_accumulate(MPI_REPLACE) fetched %d", flavor_name[flavor], swapped);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    CHECK(memory[12] == 14, "%s element 12 is %d, expected 14", flavor_name[flavor], memory[12]);
    MPI_Win_unlock(rank, win);
    MPI_Barrier(comm);
    free_window(flavor, &win, memory);
}

/* Fetch-and-op of one element of several predefined types and operations: each rank works on
 * its right neighbour's memory under an exclusive lock, twice per element (so the second fetch
 * returns the first result), and the neighbour checks what is left. The elements sit inside the
 * window's ints at 8-byte aligned offsets. */
static void fetch_and_op_kinds(enum flavor flavor)
{
    MPI_Aint disps[64];
    int *memory;
    MPI_Win win = make_window(flavor, &memory, disps);
    char *bytes = (char *)memory;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    *(double *)(bytes + 8) = 1.5;              /* MPI_MAX */
    *(unsigned *)(bytes + 16) = 0xF0F0u;       /* MPI_BXOR */
    *(float *)(bytes + 20) = 2.0f;             /* MPI_PROD */
    *(int64_t *)(bytes + 24) = 5;              /* MPI_REPLACE */
    *(short *)(bytes + 32) = 9;                /* MPI_MIN */
    *(int *)(bytes + 36) = 77;                 /* MPI_NO_OP */
    *(unsigned char *)(bytes + 40) = 0x0Fu;    /* MPI_BOR on MPI_UINT8_T */
    MPI_Win_unlock(rank, win);
    MPI_Barrier(comm);
    int right = (rank + 1) % size;
    /* Byte offset `offset` of rank `right`'s memory as a displacement in the window's units. */
#define DISP(offset) (flavor == DYNAMIC ? disps[right] + (offset) : (MPI_Aint)(offset) / (MPI_Aint)sizeof(int))
    double d_in = 3.25, d_out[2];
    unsigned u_in = 0xFF00u, u_out[2];
    float f_in = 1.5f, f_out[2];
    int64_t l_in = 1000 + rank, l_out[2];
    short s_in = 4, s_out[2];
    int i_in = -1, i_out[2];
    unsigned char c_in = 0x30u, c_out[2];
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    for (int k = 0; k < 2; k++) {
        MPI_Fetch_and_op(&d_in, &d_out[k], MPI_DOUBLE, right, DISP(8), MPI_MAX, win);
        MPI_Fetch_and_op(&u_in, &u_out[k], MPI_UNSIGNED, right, DISP(16), MPI_BXOR, win);
        MPI_Fetch_and_op(&f_in, &f_out[k], MPI_FLOAT, right, DISP(20), MPI_PROD, win);
        MPI_Fetch_and_op(&l_in, &l_out[k], MPI_INT64_T, right, DISP(24), MPI_REPLACE, win);
        MPI_Fetch_and_op(&s_in, &s_out[k], MPI_SHORT, right, DISP(32), MPI_MIN, win);
        MPI_Fetch_and_op(&i_in, &i_out[k], MPI_INT, right, DISP(36), MPI_NO_OP, win);
        MPI_Fetch_and_op(&c_in, &c_out[k], MPI_UINT8_T, right, DISP(40), MPI_BOR, win);
        MPI_Win_flush(right, win);
    }
    MPI_Win_unlock(right, win);
#undef DISP
    const char *name = flavor_name[flavor];
    CHECK(d_out[0] == 1.5 && d_out[1] == 3.25, "%s fetch_and_op MAX fetched %g, %g", name, d_out[0], d_out[1]);
    CHECK(u_out[0] == 0xF0F0u && u_out[1] == 0x0FF0u, "%s fetch_and_op BXOR fetched %x, %x", name, u_out[0], u_out[1]);
    CHECK(f_out[0] == 2.0f && f_out[1] == 3.0f, "%s fetch_and_op PROD fetched %g, %g", name, f_out[0], f_out[1]);
    CHECK(l_out[0] == 5 && l_out[1] == 1000 + rank, "%s fetch_and_op REPLACE fetched %lld, %lld", name, (long long)l_out[0], (long long)l_out[1]);
    CHECK(s_out[0] == 9 && s_out[1] == 4, "%s fetch_and_op MIN fetched %d, %d", name, s_out[0], s_out[1]);
    CHECK(i_out[0] == 77 && i_out[1] == 77, "%s fetch_and_op NO_OP fetched %d, %d", name, i_out[0], i_out[1]);
    CHECK(c_out[0] == 0x0Fu && c_out[1] == 0x3Fu, "%s fetch_and_op BOR fetched %x, %x", name, c_out[0], c_out[1]);
    MPI_Barrier(comm);
    int left = (rank + size - 1) % size;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    CHECK(*(double *)(bytes + 8) == 3.25, "%s MAX left %g", name, *(double *)(bytes + 8));
    CHECK(*(unsigned *)(bytes + 16) == 0xF0F0u, "%s BXOR left %x", name, *(unsigned *)(bytes + 16));
    CHECK(*(float *)(bytes + 20) == 4.5f, "%s PROD left %g", name, *(float *)(bytes + 20));
    CHECK(*(int64_t *)(bytes + 24) == 1000 + left, "%s REPLACE left %lld", name, (long long)*(int64_t *)(bytes + 24));
    CHECK(*(short *)(bytes + 32) == 4, "%s MIN left %d", name, *(short *)(bytes + 32));
    CHECK(*(int *)(bytes + 36) == 77, "%s NO_OP left %d", name, *(int *)(bytes + 36));
    CHECK(*(unsigned char *)(bytes + 40) == 0x3Fu, "%s BOR left %x", name, *(unsigned char *)(bytes + 40));
    MPI_Win_unlock(rank, win);
    MPI_Barrier(comm);
    free_window(flavor, &win, memory);
}

static void pscw_epochs(enum flavor flavor)
{
    MPI_Aint disps[64];
    int *memory;
    MPI_Win win = make_window(flavor, &memory, disps);
    for (int i = 0; i < N; i++)
        local_store(win, memory, i, 0);
    MPI_Barrier(comm);
    MPI_Group world_group, neighbours;
    MPI_Comm_group(comm, &world_group);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int ranks[2] = {left, right};
    MPI_Group_incl(world_group, size >= 3 ? 2 : 1, size >= 3 ? ranks : &ranks[1], &neighbours);
    /* Expose to both neighbours, access both: each puts its rank into its slot 0 (left) or 1
     * (right) of the target. */
    MPI_Win_post(neighbours, 0, win);
    MPI_Win_start(neighbours, 0, win);
    MPI_Put(&rank, 1, MPI_INT, right, at(flavor, disps, right, 0), 1, MPI_INT, win);
    if (size >= 3)
        MPI_Put(&rank, 1, MPI_INT, left, at(flavor, disps, left, 1), 1, MPI_INT, win);
    MPI_Win_complete(win);
    int done = 0;
    while (!done)
        MPI_Win_test(win, &done);
    CHECK(memory[0] == left, "%s pscw: element 0 is %d, expected %d", flavor_name[flavor], memory[0], left);
    if (size >= 3)
        CHECK(memory[1] == right, "%s pscw: element 1 is %d, expected %d", flavor_name[flavor], memory[1], right);
    /* A second round with MPI_Win_wait. */
    MPI_Win_post(neighbours, MPI_MODE_NOSTORE, win);
    MPI_Win_start(neighbours, 0, win);
    int value = rank + 50;
    MPI_Accumulate(&value, 1, MPI_INT, right, at(flavor, disps, right, 4), 1, MPI_INT, MPI_SUM, win);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    CHECK(memory[4] == left + 50, "%s pscw accumulate: %d", flavor_name[flavor], memory[4]);
    MPI_Group_free(&neighbours);
    MPI_Group_free(&world_group);
    free_window(flavor, &win, memory);
}

/* Operations far larger than a request frame, on windows of `flavor` holding BIG ints per rank:
 * a contiguous put of 128 KiB at an offset (its data follows the request, and may land straight in the
 * window), a strided put of more runs than a request frame holds, a large get and a large
 * accumulate, each checked everywhere, with the elements around them untouched. */
#define BIG (1 << 17)
static void large_operations(enum flavor flavor)
{
    MPI_Win win;
    int *memory = NULL;
    if (flavor == ALLOCATE) {
        MPI_Win_allocate(BIG * sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &memory, &win);
    } else {
        memory = malloc(BIG * sizeof(int));
        MPI_Win_create(memory, BIG * sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &win);
    }
    int *origin = malloc(BIG * sizeof(int));
    const int offset = 1000, count = BIG / 4, strided = 700;
    for (int i = 0; i < BIG; i++)
        memory[i] = -1;
    int target = (rank + 1) % size, source = (rank + size - 1) % size;
    for (int i = 0; i < count; i++)
        origin[i] = rank * 1000000 + i;
    MPI_Win_fence(0, win);
    MPI_Put(origin, count, MPI_INT, target, offset, count, MPI_INT, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < BIG; i++) {
        int expected = i >= offset && i < offset + count ? source * 1000000 + (i - offset) : -1;
        CHECK(memory[i] == expected, "%s: large put: element %d is %d, expected %d", flavor_name[flavor], i, memory[i], expected);
    }
    /* The next epoch's operations may reach this rank as soon as the others leave the fence. */
    MPI_Barrier(comm);
    /* Every other int of the far half: 700 runs, more than a request frame carries. */
    MPI_Datatype every_other;
    MPI_Type_vector(strided, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    MPI_Put(origin, strided, MPI_INT, target, BIG / 2 + 1, 1, every_other, win);
    MPI_Win_fence(0, win);
    for (int j = 0; j < strided; j++) {
        CHECK(memory[BIG / 2 + 1 + 2 * j] == source * 1000000 + j, "%s: strided put: element %d is %d", flavor_name[flavor], j, memory[BIG / 2 + 1 + 2 * j]);
        CHECK(memory[BIG / 2 + 2 + 2 * j] == -1, "%s: strided put wrote a gap", flavor_name[flavor]);
    }
    MPI_Barrier(comm);
    /* Get back what this rank put, and add a large vector to it. */
    for (int i = 0; i < count; i++)
        origin[i] = 0;
    MPI_Get(origin, count, MPI_INT, target, offset, count, MPI_INT, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < count; i++)
        CHECK(origin[i] == rank * 1000000 + i, "%s: large get: element %d is %d", flavor_name[flavor], i, origin[i]);
    MPI_Accumulate(origin, count, MPI_INT, target, offset, count, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    for (int i = offset; i < offset + count; i++)
        CHECK(memory[i] == 2 * (source * 1000000 + (i - offset)), "%s: large accumulate: element %d is %d", flavor_name[flavor], i, memory[i]);
    MPI_Type_free(&every_other);
    MPI_Win_free(&win);
    if (flavor != ALLOCATE)
        free(memory);
    free(origin);
}

/* No element at all: MPI_SUM on MPI_BYTE is undefined, but with a count of 0 there is nothing
 * to apply it to, and the calls succeed (as mpi4py's tests expect of every library). */
static void zero_counts(void)
{
    char *memory, origin = 0, result = 0;
    MPI_Win win;
    MPI_Win_allocate(16, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &memory, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int target = (rank + 1) % size;
    MPI_Win_fence(0, win);
    int got = MPI_Get_accumulate(&origin, 0, MPI_BYTE, &result, 0, MPI_BYTE, target, 0, 0, MPI_BYTE, MPI_SUM, win);
    int accumulated = MPI_Accumulate(&origin, 0, MPI_BYTE, target, 0, 0, MPI_BYTE, MPI_SUM, win);
    MPI_Win_fence(0, win);
    CHECK(got == MPI_SUCCESS && accumulated == MPI_SUCCESS, "zero-count accumulates: %d %d", got, accumulated);
    MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* The shared flavor needs a communicator of one node: that of this rank's node. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_size;
    MPI_Comm_size(node, &node_size);
    for (int flavor = 0; flavor < FLAVORS; flavor++) {
        comm = flavor == SHARED ? node : MPI_COMM_WORLD;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        fence_epochs(flavor);
        passive_epochs(flavor);
        fetch_and_op_kinds(flavor);
        pscw_epochs(flavor);
    }
    comm = MPI_COMM_WORLD;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    large_operations(CREATE);
    large_operations(ALLOCATE);
    zero_counts();
    MPI_Comm_free(&node);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("rma_ops: every flavor and synchronisation passed\n");
    MPI_Finalize();
    return 0;
}
