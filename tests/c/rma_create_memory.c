/* MPI_Win_create over the program's own memory, as programs place it: inside a larger malloc'd
 * block (the window's pages shared with other data of the block), over whole pages from
 * posix_memalign, and on the stack. What the program had in the memory before the window is
 * still there, the bytes next to the window are never touched, puts from the other ranks land in
 * the memory and the owner's stores are what they get, and after MPI_Win_free the memory keeps
 * its contents and goes on being ordinary memory (written, read, freed). Any number of ranks. */
#define _POSIX_C_SOURCE 200112L
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define WORDS 1536 /* 12288 bytes: three pages */

static int rank, size;

static int64_t expected_before(int owner, int i) { return owner * 1000003LL + i; }

/* One window over `words` (WORDS int64s): checks the contents kept, puts every rank's mark
 * into its right neighbour's word `rank`, reads the left neighbour's owner-written word, and
 * checks the memory after the window is freed. `where` names the placement in messages. */
static void exercise(int64_t *words, const char *where)
{
    for (int i = 0; i < WORDS; i++)
        words[i] = expected_before(rank, i);
    MPI_Win win;
    MPI_Win_create(words, WORDS * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    for (int i = 0; i < WORDS; i++)
        CHECK(words[i] == expected_before(rank, i), "%s: word %d changed to %lld at creation", where, i, (long long)words[i]);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    /* The owner stores into its last word; a neighbour reads it after a fence. */
    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    words[WORDS - 1] = -rank - 1;
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    int64_t mark = 1000 + rank, got = 0;
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    MPI_Put(&mark, 1, MPI_INT64_T, right, rank % (WORDS - 1), 1, MPI_INT64_T, win);
    MPI_Win_unlock(right, win);
    MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win);
    MPI_Get(&got, 1, MPI_INT64_T, left, WORDS - 1, 1, MPI_INT64_T, win);
    MPI_Win_unlock(left, win);
    CHECK(got == -left - 1, "%s: the owner's store read %lld, expected %d", where, (long long)got, -left - 1);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    int slot = left % (WORDS - 1);
    CHECK(words[slot] == 1000 + left, "%s: word %d is %lld, expected the left neighbour's put %d", where, slot, (long long)words[slot], 1000 + left);
    MPI_Win_unlock(rank, win);
    MPI_Win_free(&win);
    /* After the window: the contents stay and the memory is this process's to use. */
    CHECK(words[slot] == 1000 + left, "%s: word %d lost its put at MPI_Win_free", where, slot);
    CHECK(words[WORDS - 1] == -rank - 1, "%s: the last word lost its store at MPI_Win_free", where);
    for (int i = 0; i < WORDS - 1; i++)
        if (i != slot)
            CHECK(words[i] == expected_before(rank, i), "%s: word %d is %lld after MPI_Win_free", where, i, (long long)words[i]);
    for (int i = 0; i < WORDS; i++)
        words[i] = -i;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < WORDS; i++)
        CHECK(words[i] == -i, "%s: word %d changed after MPI_Win_free", where, i);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Inside a malloc'd block, with guard bytes around it. The window starts 16-byte aligned
     * but not on a page: MPICH 4.0.2 reads one word early from a created window whose base is
     * only 8-byte aligned. */
    size_t guard = 3008;
    unsigned char *block = malloc(guard + WORDS * sizeof(int64_t) + guard);
    CHECK(block != NULL, "malloc failed");
    memset(block, 0xA5, guard);
    memset(block + guard + WORDS * sizeof(int64_t), 0x5A, guard);
    exercise((int64_t *)(block + guard), "inside a malloc'd block");
    for (size_t i = 0; i < guard; i++) {
        CHECK(block[i] == 0xA5, "the guard byte %zu before the window is %#x", i, block[i]);
        CHECK(block[guard + WORDS * sizeof(int64_t) + i] == 0x5A, "the guard byte %zu after the window is %#x", i, block[guard + WORDS * sizeof(int64_t) + i]);
    }
    free(block);
    /* The heap goes on working over the pages the window used. */
    for (int round = 0; round < 100; round++) {
        char *again = calloc(1, 777 + round);
        CHECK(again != NULL && again[776 + round] == 0, "calloc after the window returned non-zero memory");
        free(again);
    }

    /* Whole pages. */
    void *pages = NULL;
    CHECK(posix_memalign(&pages, 4096, 3 * 4096) == 0, "posix_memalign failed");
    exercise(pages, "over whole pages");
    free(pages);

    /* On the stack. */
    int64_t on_stack[WORDS];
    exercise(on_stack, "on the stack");

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("rma_create_memory: every placement passed\n");
    MPI_Finalize();
    return 0;
}
