/* Large puts and gets, as bandwidth benchmarks make them: rank 0 moves buffers of 64 KiB to
 * 3 MiB, at aligned and odd offsets, into and out of every other rank's window while those ranks
 * wait in MPI_Barrier (so an implementation may copy with their idle cores). Every put is read
 * back around its span: the span holds the new bytes and the bytes on either side are what they
 * were. Allocated windows and MPI_Win_create windows over heap memory; any number of ranks. */
#define _POSIX_C_SOURCE 200112L
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define WINDOW_BYTES ((4L << 20) + 16384)
#define GUARD 64L
#define ROUNDS 24

static const long lengths[] = {65536, 65536 + 24, 1L << 20, (1L << 20) + 4093, (3L << 20) + 5};
static const long offsets[] = {GUARD, GUARD + 3, 4096, GUARD + 1, 8191};
#define CASES ((int)(sizeof lengths / sizeof lengths[0]))

static unsigned char pattern(long seed, long i) { return (unsigned char)(i * 131 + seed * 7 + (i >> 12)); }

/* Puts case `c` of round `round` into `target`'s window and checks the span around it. */
static void put_and_check(MPI_Win win, int target, int round, int c, unsigned char *source, unsigned char *before, unsigned char *after)
{
    long len = lengths[c], offset = offsets[c], span = len + 2 * GUARD;
    long seed = (long)round * CASES + c + target;
    for (long i = 0; i < len; i++)
        source[i] = pattern(seed, i);
    MPI_Get(before, (int)span, MPI_BYTE, target, offset - GUARD, (int)span, MPI_BYTE, win);
    MPI_Win_flush(target, win);
    MPI_Put(source, (int)len, MPI_BYTE, target, offset, (int)len, MPI_BYTE, win);
    MPI_Win_flush(target, win);
    MPI_Get(after, (int)span, MPI_BYTE, target, offset - GUARD, (int)span, MPI_BYTE, win);
    MPI_Win_flush(target, win);
    for (long i = 0; i < GUARD; i++) {
        CHECK(after[i] == before[i], "target %d round %d case %d: byte %ld before the span changed (%d, was %d)", target, round, c, GUARD - i, after[i], before[i]);
        CHECK(after[GUARD + len + i] == before[GUARD + len + i], "target %d round %d case %d: byte %ld after the span changed", target, round, c, i);
    }
    if (memcmp(after + GUARD, source, (size_t)len) != 0) {
        long i = 0;
        while (after[GUARD + i] == source[i])
            i++;
        CHECK(0, "target %d round %d case %d (%ld bytes at %ld): byte %ld is %d, put %d", target, round, c, len, offset, i, after[GUARD + i], source[i]);
    }
}

static void exercise(MPI_Win win, unsigned char *memory, int rank, int size)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        unsigned char *source = malloc((size_t)WINDOW_BYTES), *before = malloc((size_t)WINDOW_BYTES), *after = malloc((size_t)WINDOW_BYTES);
        CHECK(source && before && after, "out of memory");
        for (int target = 1; target < size; target++) {
            MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
            for (int round = 0; round < ROUNDS; round++)
                for (int c = 0; c < CASES; c++)
                    put_and_check(win, target, round, c, source, before, after);
            MPI_Win_unlock(target, win);
        }
        free(source);
        free(before);
        free(after);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank > 0) {
        /* The last put of the last round is what the owner sees. */
        int c = CASES - 1;
        long seed = (long)(ROUNDS - 1) * CASES + c + rank;
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
        for (long i = 0; i < lengths[c]; i++)
            CHECK(memory[offsets[c] + i] == pattern(seed, i), "the owner reads byte %ld of the last put as %d, expected %d", i, memory[offsets[c] + i], pattern(seed, i));
        MPI_Win_unlock(rank, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs at least 2 ranks");

    unsigned char *base;
    MPI_Win win;
    MPI_Win_allocate(WINDOW_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0xA5, (size_t)WINDOW_BYTES);
    exercise(win, base, rank, size);
    MPI_Win_free(&win);

    void *heap = NULL;
    CHECK(posix_memalign(&heap, 4096, (size_t)WINDOW_BYTES) == 0, "out of memory");
    memset(heap, 0x5A, (size_t)WINDOW_BYTES);
    MPI_Win_create(heap, WINDOW_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    exercise(win, heap, rank, size);
    MPI_Win_free(&win);
    free(heap);

    MPI_Finalize();
    return 0;
}
