/* Shared helpers of the end-to-end C tests: every failed check names the rank, the place and
 * the values involved, then ends the whole job with MPI_Abort so the runner sees a failure. */
#ifndef BRAID_TEST_CHECK_H
#define BRAID_TEST_CHECK_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline int check_world_rank(void)
{
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

#define CHECK(condition, ...)                                                               \
    do {                                                                                    \
        if (!(condition)) {                                                                 \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", check_world_rank(),      \
                    __FILE__, __LINE__, #condition);                                        \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fputc('\n', stderr);                                                            \
            fflush(stderr);                                                                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                   \
        }                                                                                   \
    } while (0)

/* The error class of a return code; MPI_SUCCESS stays itself (implementations may return codes
 * that are not classes, and MPI_Error_class of MPI_SUCCESS is MPI_SUCCESS anyway). */
static inline int class_of(int code)
{
    int class_ = code;
    if (code != MPI_SUCCESS)
        MPI_Error_class(code, &class_);
    return class_;
}

/* Checks that `code` is of class `expected` or `alternative` (the same class twice where only one
 * is right); an error must also have a non-empty MPI_Error_string. Use the macros below. */
static inline void expect_class_at(const char *file, int line, int code, int expected, int alternative, const char *call)
{
    int class_ = class_of(code);
    char text[MPI_MAX_ERROR_STRING] = "";
    int length = 0;
    if (code != MPI_SUCCESS)
        MPI_Error_string(code, text, &length);
    if (class_ != expected && class_ != alternative) {
        char expected_text[MPI_MAX_ERROR_STRING] = "";
        MPI_Error_string(expected, expected_text, &length);
        fprintf(stderr, "rank %d: %s:%d: check failed: %s returned class %d (%s), expected %d (%s)", check_world_rank(), file, line, call, class_,
                code == MPI_SUCCESS ? "success" : text, expected, expected_text);
        if (alternative != expected)
            fprintf(stderr, " or %d", alternative);
        fputc('\n', stderr);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CHECK(code == MPI_SUCCESS || text[0] != '\0', "%s:%d: %s: MPI_Error_string of code %d is empty", file, line, call, code);
}

/* expect_class(code, class, "what was called"): the call returned an error of `class`. */
#define expect_class(code, expected, call) expect_class_at(__FILE__, __LINE__, (code), (expected), (expected), (call))
/* The same where the standard leaves the class open between two that both make sense. */
#define expect_either_class(code, expected, alternative, call) expect_class_at(__FILE__, __LINE__, (code), (expected), (alternative), (call))
/* EXPECT_CLASS(MPI_Call(...), class): the call's own text names it in the message. */
#define EXPECT_CLASS(call, expected) expect_class_at(__FILE__, __LINE__, (call), (expected), (expected), #call)
#define EXPECT_EITHER_CLASS(call, expected, alternative) expect_class_at(__FILE__, __LINE__, (call), (expected), (alternative), #call)

/* Ends the test on rank 0 with the line the runner's log shows. */
static inline void report_ok(const char *name)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (check_world_rank() == 0) {
        int size;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        printf("%s: ok on %d rank%s\n", name, size, size == 1 ? "" : "s");
        fflush(stdout);
    }
}

/* A test started with fewer ranks than it needs fails rather than passing vacuously. */
static inline void require_ranks(int minimum, const char *name)
{
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < minimum) {
        if (check_world_rank() == 0)
            fprintf(stderr, "%s needs at least %d ranks, got %d\n", name, minimum, size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Adds one to the int64 at displacement `disp` of `target`'s window with a compare-and-swap
 * loop, starting from the guess `seen`, inside a passive-target epoch. */
static inline void add_one_by_compare_and_swap(MPI_Win win, int target, MPI_Aint disp, int64_t seen)
{
    for (;;) {
        int64_t next = seen + 1, result = -1;
        MPI_Compare_and_swap(&next, &seen, &result, MPI_INT64_T, target, disp, win);
        MPI_Win_flush(target, win);
        if (result == seen)
            return;
        seen = result;
    }
}

#endif
