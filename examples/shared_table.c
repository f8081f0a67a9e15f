/* Soft shared state on a node: a read-mostly table that every rank looks up and now and then
 * updates, kept two ways.
 *
 *   window    the ranks of a node share the table through MPI_Win_allocate_shared (rank 0 of the
 *             node holds it, the others map it with MPI_Win_shared_query); a batch of lookups
 *             reads it directly under MPI_Win_lock(MPI_LOCK_SHARED), an update writes it under
 *             MPI_Win_lock(MPI_LOCK_EXCLUSIVE).
 *   messages  rank 0 owns the table and serves the others: a batch of keys goes to it with
 *             MPI_Send and the entries come back; an update is a message it applies.
 *
 * Every entry keeps an invariant (check == 3 * value + key) that an update maintains, so a
 * lookup that sees a half-written entry is caught; the program fails if one does.
 *
 * Usage: shared_table window|messages [SECONDS]   (default 1). Every rank that looks up (in
 * `messages` mode, every rank but the owner) does batches of 16 lookups for that long; one batch
 * in 16 is followed by an update. Output (rank 0): one line
 *   shared_table,MODE,RANKS,LOOKUPS_PER_SECOND,NS_PER_LOOKUP
 * where the rate is every rank's lookups over the longest time a rank ran, and the time per
 * lookup is that rate's inverse per looking-up rank.
 * Build: mpicc -std=c99 -O2 -o shared_table shared_table.c (braidcc, mpicc.mpich, mpicc.openmpi).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENTRIES 4096
#define BATCH 16
#define UPDATE_EVERY 16

enum { TAG_LOOKUP = 1, TAG_UPDATE, TAG_DONE, TAG_ENTRIES };

struct entry {
    int64_t key, value, check;
};

static int rank, size;

static void fail(const char *what, int64_t key)
{
    fprintf(stderr, "shared_table: rank %d: %s (key %lld)\n", rank, what, (long long)key);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void verify(const struct entry *e, int64_t key)
{
    if (e->key != key || e->check != 3 * e->value + key)
        fail("a lookup saw an inconsistent entry", key);
}

/* A small xorshift generator per rank: the same keys whatever the library. */
static uint64_t state_of_rank;
static uint64_t next_random(void)
{
    state_of_rank ^= state_of_rank << 13;
    state_of_rank ^= state_of_rank >> 7;
    state_of_rank ^= state_of_rank << 17;
    return state_of_rank;
}

static void fill(struct entry *table)
{
    for (int64_t k = 0; k < ENTRIES; k++)
        table[k] = (struct entry){k, k, 3 * k + k};
}

/* Lookups done and the seconds they took, per rank. */
struct tally {
    double lookups, seconds;
};

static struct tally run_window(double seconds, MPI_Comm node)
{
    int node_rank;
    MPI_Comm_rank(node, &node_rank);
    struct entry *table;
    MPI_Win win;
    MPI_Aint bytes = node_rank == 0 ? (MPI_Aint)(ENTRIES * sizeof(struct entry)) : 0;
    MPI_Win_allocate_shared(bytes, sizeof(struct entry), MPI_INFO_NULL, node, &table, &win);
    MPI_Aint got;
    int unit;
    MPI_Win_shared_query(win, 0, &got, &unit, &table);
    if (node_rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        fill(table);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(node);
    double start = MPI_Wtime();
    long b = 0;
    for (; MPI_Wtime() - start < seconds; b++) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        for (int i = 0; i < BATCH; i++) {
            int64_t key = (int64_t)(next_random() % ENTRIES);
            verify(&table[key], key);
        }
        MPI_Win_unlock(0, win);
        if (b % UPDATE_EVERY == 0) {
            int64_t key = (int64_t)(next_random() % ENTRIES), value = (int64_t)(next_random() % 1000000);
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            table[key].value = value;
            table[key].check = 3 * value + key;
            MPI_Win_unlock(0, win);
        }
    }
    struct tally tally = {(double)b * BATCH, MPI_Wtime() - start};
    MPI_Barrier(node);
    MPI_Win_free(&win);
    return tally;
}

static void serve(int clients)
{
    struct entry *table = malloc(ENTRIES * sizeof *table);
    if (!table)
        fail("out of memory", 0);
    fill(table);
    int64_t keys[BATCH];
    struct entry reply[BATCH];
    MPI_Status status;
    while (clients > 0) {
        MPI_Recv(keys, BATCH, MPI_INT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
        if (status.MPI_TAG == TAG_DONE) {
            clients--;
        } else if (status.MPI_TAG == TAG_UPDATE) {
            table[keys[0]].value = keys[1];
            table[keys[0]].check = 3 * keys[1] + keys[0];
        } else {
            for (int i = 0; i < BATCH; i++)
                reply[i] = table[keys[i] % ENTRIES];
            MPI_Send(reply, (int)(BATCH * sizeof(struct entry)), MPI_BYTE, status.MPI_SOURCE, TAG_ENTRIES, MPI_COMM_WORLD);
        }
    }
    free(table);
}

static struct tally run_messages(double seconds)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        serve(size - 1);
        MPI_Barrier(MPI_COMM_WORLD);
        return (struct tally){0, 0};
    }
    int64_t keys[BATCH];
    struct entry entries[BATCH];
    double start = MPI_Wtime();
    long b = 0;
    for (; MPI_Wtime() - start < seconds; b++) {
        for (int i = 0; i < BATCH; i++)
            keys[i] = (int64_t)(next_random() % ENTRIES);
        MPI_Send(keys, BATCH, MPI_INT64_T, 0, TAG_LOOKUP, MPI_COMM_WORLD);
        MPI_Recv(entries, (int)(BATCH * sizeof(struct entry)), MPI_BYTE, 0, TAG_ENTRIES, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < BATCH; i++)
            verify(&entries[i], keys[i]);
        if (b % UPDATE_EVERY == 0) {
            int64_t update[BATCH] = {(int64_t)(next_random() % ENTRIES), (int64_t)(next_random() % 1000000)};
            MPI_Send(update, BATCH, MPI_INT64_T, 0, TAG_UPDATE, MPI_COMM_WORLD);
        }
    }
    struct tally tally = {(double)b * BATCH, MPI_Wtime() - start};
    MPI_Send(keys, BATCH, MPI_INT64_T, 0, TAG_DONE, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    return tally;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || (strcmp(argv[1], "window") != 0 && strcmp(argv[1], "messages") != 0)) {
        if (rank == 0)
            fprintf(stderr, "usage: shared_table window|messages [SECONDS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int window = strcmp(argv[1], "window") == 0;
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    state_of_rank = 0x9E3779B97F4A7C15ull ^ (uint64_t)(rank + 1) * 0x100000001B3ull;
    if (!window && size < 2) {
        if (rank == 0)
            fprintf(stderr, "shared_table: messages mode needs an owner and at least one other rank\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    struct tally tally = window ? run_window(seconds, node) : run_messages(seconds);
    double lookups, longest;
    MPI_Reduce(&tally.lookups, &lookups, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&tally.seconds, &longest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int lookers = window ? size : size - 1;
        double rate = lookups / longest;
        printf("shared_table,%s,%d,%.0f,%.1f\n", argv[1], size, rate, 1e9 * lookers / rate);
    }
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
