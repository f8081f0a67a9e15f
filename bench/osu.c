/* osu-style micro-benchmarks in one program, for Braid and its peers (bench/compare.sh).
 *
 * Usage: osu BENCH [-q] [-n MIN_BYTES] [-m MAX_BYTES] [-i ITERATIONS] [-v BYTES] [-w MILLISECONDS]
 *                  [-W allocate|create]
 *   latency    ping-pong between ranks 0 and 1, one-way time (us), sizes 0 .. 4 MiB
 *   bw         rank 0 streams windows of 64 non-blocking sends to rank 1 (MB/s), 1 B .. 16 MiB
 *   bibw       both ranks stream windows of 64 at once (MB/s, both directions summed)
 *   mr         message rate of 8-byte messages, windows of 64, summed over pairs (msg/s);
 *              with more than 2 ranks, rank i pairs with rank i + N/2
 *   multi_bw   streaming bandwidth summed over all pairs (MB/s)
 *   multi_lat  ping-pong latency averaged over all pairs (us)
 *   ring       a token passes around all ranks: time per hop (us); meant for oversubscription
 *   allreduce  time per MPI_Allreduce (MPI_SUM on ints) at small sizes, slowest rank (us)
 *   waitcpu    the lower half of the ranks compute for -w ms (default 50) and then send; the
 *              upper half wait in MPI_Recv. Reports the waiting ranks' CPU use (user + system
 *              time over wall time, in percent, averaged over the waiting ranks)
 *   xfer       rank 0 sends one message of -m bytes (default 1 MiB) to rank 1 and waits for its
 *              empty reply, -i times (default 400, quick 100): median and p99 of those
 *              times (us), as the rows xfer_median and xfer_p99 (for transfers under load);
 *              with OSU_XFER_TIMES=FILE rank 0 also writes every transfer there, in order, as
 *              "<start, seconds since the epoch> <time in us>" (to line up with other traces)
 *   put_lat, get_lat  one-sided: rank 0 puts/gets into rank 1's window under MPI_Win_lock
 *              (shared), one operation then MPI_Win_flush per iteration (us per operation)
 *   put_bw, get_bw  the same with 64 operations per flush (MB/s)
 *   fop_lat    MPI_Fetch_and_op (int64 sum) then a flush (us); 8 bytes only
 *   fop_rate   every rank adds to its own int64 in rank 0's window (fetch-and-op, flush) at
 *              once: the operations of all ranks per second (Mops/s)
 *   -W         the one-sided window: MPI_Win_allocate (default) or MPI_Win_create over malloc'd
 *              memory (rows named *_create)
 *   -A         the window gets the info hint acc_single_intrinsic=true (its accumulates are single
 *              elements of predefined types; rows named *_hint)
 *   -q         quick: fewer iterations and sizes (a smoke run)
 *   -v BYTES   bw, bibw: time as many windows per size as move at least BYTES one way, in place of
 *              the iteration count (to measure over as long a stretch as a reference, e.g.
 *              iperf3's seconds at the rails' rate)
 * Output (rank 0, stdout): `# ...` comment lines and one `bench,size,value,unit` line per point.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define WINDOW 64

static int rank, size;
static int quick;
static long min_bytes = -1, max_bytes = -1, iterations_option = -1, volume_option = -1, compute_ms = 50;
static char *send_buffer, *receive_buffer;

static void die(const char *message)
{
    if (rank == 0)
        fprintf(stderr, "osu: %s\n", message);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* Iterations for one size: many for small messages, fewer as the bytes moved grow. */
static long iterations_for(long bytes, long small_count)
{
    if (iterations_option > 0)
        return iterations_option;
    long count = quick ? small_count / 5 : small_count;
    if (bytes > 8192)
        count = count * 8192 / bytes;
    return count < 10 ? 10 : count;
}

static void emit(const char *bench, long bytes, double value, const char *unit)
{
    if (rank == 0) {
        printf("%s,%ld,%.6g,%s\n", bench, bytes, value, unit);
        fflush(stdout);
    }
}

/* Sizes 0 (if allowed), 1, 2, 4 ... up to the maximum; quick mode takes every fourth power. */
static long next_size(long bytes)
{
    if (bytes == 0)
        return 1;
    return quick ? bytes * 4 : bytes * 2;
}

static long first_size(long default_min)
{
    return min_bytes >= 0 ? min_bytes : default_min;
}

static long last_size(long default_max)
{
    return max_bytes >= 0 ? max_bytes : default_max;
}

static void allocate(long bytes)
{
    send_buffer = malloc((size_t)bytes + 1);
    receive_buffer = malloc((size_t)bytes + 1);
    if (!send_buffer || !receive_buffer)
        die("out of memory");
    memset(send_buffer, 'a', (size_t)bytes + 1);
    memset(receive_buffer, 'b', (size_t)bytes + 1);
}

/* Ping-pong between `me` and `peer`; returns one-way time in microseconds. */
static double ping_pong(int peer, int initiator, long bytes, long iterations)
{
    long warmup = iterations / 10 + 1;
    double start = 0;
    for (long i = 0; i < warmup + iterations; i++) {
        if (i == warmup)
            start = MPI_Wtime();
        if (initiator) {
            MPI_Send(send_buffer, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(receive_buffer, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(receive_buffer, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(send_buffer, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - start) * 1e6 / (2.0 * (double)iterations);
}

/* One direction of windowed streaming; returns the seconds the timed iterations took. */
static double stream(int peer, int sender, int both_ways, long bytes, long iterations)
{
    MPI_Request requests[2 * WINDOW];
    long warmup = iterations / 10 + 1;
    double start = 0;
    char ack;
    for (long i = 0; i < warmup + iterations; i++) {
        if (i == warmup)
            start = MPI_Wtime();
        int posted = 0;
        if (!sender || both_ways)
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(receive_buffer, (int)bytes, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &requests[posted++]);
        if (sender || both_ways)
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(send_buffer, (int)bytes, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &requests[posted++]);
        MPI_Waitall(posted, requests, MPI_STATUSES_IGNORE);
        if (sender)
            MPI_Recv(&ack, 1, MPI_CHAR, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI_Send(&ack, 1, MPI_CHAR, peer, 3, MPI_COMM_WORLD);
    }
    return MPI_Wtime() - start;
}

/* Pairs for the multi-pair benchmarks: rank i < N/2 with rank i + N/2; an odd last rank idles. */
static int pair_peer(void)
{
    int half = size / 2;
    if (rank < half)
        return rank + half;
    if (rank < 2 * half)
        return rank - half;
    return MPI_PROC_NULL;
}

static void latency(void)
{
    if (size < 2)
        die("latency needs 2 ranks");
    long max = last_size(4L << 20);
    allocate(max);
    for (long bytes = first_size(0); bytes <= max; bytes = next_size(bytes)) {
        double one_way = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank < 2)
            one_way = ping_pong(1 - rank, rank == 0, bytes, iterations_for(bytes, 10000));
        emit("latency", bytes, one_way, "us");
    }
}

static void bandwidth(const char *bench, int both_ways)
{
    if (size < 2)
        die("bw and bibw need 2 ranks");
    long max = last_size(16L << 20);
    allocate(max);
    for (long bytes = first_size(1); bytes <= max; bytes = next_size(bytes)) {
        long iterations = iterations_for(bytes, 200);
        if (volume_option > 0)
            iterations = (volume_option + bytes * WINDOW - 1) / (bytes * WINDOW);
        double seconds = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank < 2)
            seconds = stream(1 - rank, rank == 0, both_ways, bytes, iterations);
        double moved = (double)bytes * WINDOW * (double)iterations * (both_ways ? 2 : 1);
        emit(bench, bytes, moved / seconds / 1e6, "MB/s");
    }
}

/* Streams between every pair at once; returns the sum over pairs of bytes (or messages) / s. */
static double all_pairs_rate(long bytes, long iterations, int count_messages)
{
    int peer = pair_peer();
    double rate = 0, total = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (peer != MPI_PROC_NULL && rank < peer) {
        double seconds = stream(peer, 1, 0, bytes, iterations);
        double units = (count_messages ? 1.0 : (double)bytes) * WINDOW * (double)iterations;
        rate = units / seconds;
    } else if (peer != MPI_PROC_NULL) {
        stream(peer, 0, 0, bytes, iterations);
    }
    MPI_Reduce(&rate, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return total;
}

static void message_rate(void)
{
    if (size < 2)
        die("mr needs 2 ranks");
    allocate(8);
    emit("mr", 8, all_pairs_rate(8, iterations_for(8, 2000), 1), "msg/s");
}

static void multi_bandwidth(void)
{
    if (size < 2)
        die("multi_bw needs 2 ranks");
    long max = last_size(4L << 20);
    allocate(max);
    for (long bytes = first_size(1); bytes <= max; bytes = next_size(bytes))
        emit("multi_bw", bytes, all_pairs_rate(bytes, iterations_for(bytes, 200), 0) / 1e6, "MB/s");
}

static void multi_latency(void)
{
    if (size < 2)
        die("multi_lat needs 2 ranks");
    long max = last_size(1L << 20);
    allocate(max);
    for (long bytes = first_size(0); bytes <= max; bytes = next_size(bytes)) {
        int peer = pair_peer();
        double one_way = 0, sum = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (peer != MPI_PROC_NULL)
            one_way = ping_pong(peer, rank < peer, bytes, iterations_for(bytes, 5000));
        MPI_Reduce(&one_way, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        emit("multi_lat", bytes, sum / (size / 2 * 2), "us");
    }
}

static void ring(void)
{
    if (size < 2)
        die("ring needs 2 ranks");
    long laps = iterations_option > 0 ? iterations_option : quick ? 200 : 1000;
    int next = (rank + 1) % size, previous = (rank + size - 1) % size;
    long token = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (long lap = 0; lap < laps; lap++) {
        if (rank == 0) {
            MPI_Send(&token, 1, MPI_LONG, next, 4, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_LONG, previous, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&token, 1, MPI_LONG, previous, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token++;
            MPI_Send(&token, 1, MPI_LONG, next, 4, MPI_COMM_WORLD);
        }
    }
    double elapsed = MPI_Wtime() - start;
    if (rank == 0 && token != laps * (size - 1))
        die("ring token arrived with the wrong value");
    emit("ring", (long)sizeof(long), elapsed * 1e6 / ((double)laps * size), "us");
}

static void allreduce(void)
{
    long max = last_size(1024);
    int *in = malloc((size_t)max + sizeof(int)), *out = malloc((size_t)max + sizeof(int));
    if (!in || !out)
        die("out of memory");
    for (long i = 0; i < max / (long)sizeof(int) + 1; i++)
        in[i] = (int)i;
    for (long bytes = first_size(4); bytes <= max; bytes = bytes < 4 ? 4 : next_size(bytes)) {
        int count = (int)(bytes / (long)sizeof(int));
        long iterations = iterations_option > 0 ? iterations_option : quick ? 200 : 2000;
        MPI_Barrier(MPI_COMM_WORLD);
        for (long i = 0; i < iterations / 10 + 1; i++)
            MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        double start = MPI_Wtime();
        for (long i = 0; i < iterations; i++)
            MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        double mine = (MPI_Wtime() - start) * 1e6 / (double)iterations, slowest = 0;
        MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        emit("allreduce", (long)count * (long)sizeof(int), slowest, "us");
    }
    free(in);
    free(out);
}

/* One-sided: rank 0 operates on rank 1's window under a shared lock, completing with
 * MPI_Win_flush (OSU's "-s flush"); the window from MPI_Win_allocate, or with -W create from
 * MPI_Win_create over malloc'd memory. put/get: one op then a flush per iteration (latency, us)
 * or RMA_WINDOW ops then a flush (bandwidth, MB/s); fop: MPI_Fetch_and_op of an int64 sum. */
#define RMA_WINDOW 64
static int window_create, accumulate_hint;

static MPI_Win rma_window(long bytes, char **base)
{
    MPI_Win win;
    MPI_Info info = MPI_INFO_NULL;
    if (accumulate_hint) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "acc_single_intrinsic", "true");
    }
    if (window_create) {
        *base = malloc((size_t)bytes + 8);
        if (!*base)
            die("out of memory");
        memset(*base, 0, (size_t)bytes + 8);
        MPI_Win_create(*base, bytes + 8, 1, info, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate(bytes + 8, 1, info, MPI_COMM_WORLD, base, &win);
    }
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    return win;
}

static void rma_free(MPI_Win *win, char *base)
{
    MPI_Win_free(win);
    if (window_create)
        free(base);
}

/* kind: 0 put, 1 get, 2 fetch-and-op; per: ops per flush. Returns microseconds per op. */
static double rma_ops(MPI_Win win, int kind, long bytes, long iterations, int per)
{
    long warmup = iterations / 10 + 1;
    double start = 0;
    int64_t one = 1, old = 0;
    MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
    for (long i = 0; i < warmup + iterations; i++) {
        if (i == warmup)
            start = MPI_Wtime();
        for (int w = 0; w < per; w++) {
            if (kind == 0)
                MPI_Put(send_buffer, (int)bytes, MPI_CHAR, 1, 0, (int)bytes, MPI_CHAR, win);
            else if (kind == 1)
                MPI_Get(receive_buffer, (int)bytes, MPI_CHAR, 1, 0, (int)bytes, MPI_CHAR, win);
            else
                MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 1, 0, MPI_SUM, win);
        }
        MPI_Win_flush(1, win);
    }
    double elapsed = MPI_Wtime() - start;
    MPI_Win_unlock(1, win);
    return elapsed * 1e6 / ((double)iterations * per);
}

static void one_sided(const char *bench, int kind, int bandwidth)
{
    if (size < 2)
        die("one-sided benchmarks need 2 ranks");
    long max = last_size(kind == 2 ? 8 : 4L << 20);
    allocate(max);
    for (long bytes = first_size(kind == 2 ? 8 : 1); bytes <= max; bytes = next_size(bytes)) {
        char *base;
        MPI_Win win = rma_window(max, &base);
        int per = bandwidth ? RMA_WINDOW : 1;
        double us = 0;
        if (rank == 0)
            us = rma_ops(win, kind, bytes, iterations_for(bytes, bandwidth ? 200 : 10000), per);
        MPI_Barrier(MPI_COMM_WORLD);
        rma_free(&win, base);
        if (bandwidth)
            emit(bench, bytes, (double)bytes / us, "MB/s");
        else
            emit(bench, bytes, us, "us");
        if (kind == 2)
            break;
    }
}

static void put_latency(void) { one_sided(window_create ? "put_lat_create" : "put_lat", 0, 0); }
static void get_latency(void) { one_sided(window_create ? "get_lat_create" : "get_lat", 1, 0); }
static void put_bandwidth(void) { one_sided(window_create ? "put_bw_create" : "put_bw", 0, 1); }
static void get_bandwidth(void) { one_sided(window_create ? "get_bw_create" : "get_bw", 1, 1); }
static void fop_latency(void)
{
    static const char *names[2][2] = {{"fop_lat", "fop_lat_hint"}, {"fop_lat_create", "fop_lat_create_hint"}};
    one_sided(names[window_create][accumulate_hint], 2, 0);
}

/* Every rank adds to its own int64 in rank 0's window with fetch-and-op and a flush, all at
 * once under lock_all: the operations per second of all ranks together (millions). */
static void fop_rate(void)
{
    long iterations = iterations_for(8, 10000);
    char *base;
    MPI_Win win = rma_window(8L * size, &base);
    int64_t one = 1, old = 0;
    MPI_Win_lock_all(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (long i = 0; i < iterations; i++) {
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 8L * rank, MPI_SUM, win);
        MPI_Win_flush(0, win);
    }
    double elapsed = MPI_Wtime() - start, slowest = 0;
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    rma_free(&win, base);
    static const char *names[2][2] = {{"fop_rate", "fop_rate_hint"}, {"fop_rate_create", "fop_rate_create_hint"}};
    emit(names[window_create][accumulate_hint], 8, (double)size * (double)iterations / slowest / 1e6, "Mops/s");
}

static double cpu_seconds(void)
{
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec * 1e-6 + (double)usage.ru_stime.tv_sec +
           (double)usage.ru_stime.tv_usec * 1e-6;
}

/* Keeps a core busy for `milliseconds` without calling MPI. */
static void compute(long milliseconds)
{
    volatile double sink = 0;
    double until = MPI_Wtime() + (double)milliseconds / 1000.0;
    while (MPI_Wtime() < until)
        for (int i = 0; i < 1000; i++)
            sink += i * 0.5;
}

static void wait_cpu(void)
{
    if (size < 2)
        die("waitcpu needs 2 ranks");
    int half = size / 2, rounds = iterations_option > 0 ? (int)iterations_option : quick ? 3 : 10;
    int computing = rank < half, waiting = rank >= half && rank < 2 * half;
    int peer = computing ? rank + half : rank - half;
    long token = 0;
    double percent = 0, sum = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double cpu_start = cpu_seconds(), wall_start = MPI_Wtime();
    for (int round = 0; round < rounds; round++) {
        if (computing) {
            compute(compute_ms);
            MPI_Send(&token, 1, MPI_LONG, peer, 5, MPI_COMM_WORLD);
        } else if (waiting) {
            MPI_Recv(&token, 1, MPI_LONG, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    if (waiting)
        percent = 100.0 * (cpu_seconds() - cpu_start) / (MPI_Wtime() - wall_start);
    MPI_Reduce(&percent, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    emit("waitcpu", compute_ms, sum / half, "%");
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Times of single transfers, one at a time, with their spread (median and 99th percentile). */
static void transfer_times(void)
{
    long bytes = last_size(1 << 20);
    long count = iterations_option > 0 ? iterations_option : quick ? 100 : 400;
    double *times = malloc((size_t)count * sizeof *times);
    struct timespec *started = malloc((size_t)count * sizeof *started);
    if (!times || !started)
        die("out of memory");
    allocate(bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < count + count / 10 + 1; i++) {
        long timed = i - (count / 10 + 1);
        if (rank == 0) {
            double start = MPI_Wtime();
            if (timed >= 0)
                clock_gettime(CLOCK_REALTIME, &started[timed]);
            MPI_Send(send_buffer, (int)bytes, MPI_CHAR, 1, 6, MPI_COMM_WORLD);
            MPI_Recv(receive_buffer, 0, MPI_CHAR, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (timed >= 0)
                times[timed] = (MPI_Wtime() - start) * 1e6;
        } else if (rank == 1) {
            MPI_Recv(receive_buffer, (int)bytes, MPI_CHAR, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(send_buffer, 0, MPI_CHAR, 0, 6, MPI_COMM_WORLD);
        }
    }
    const char *trace = getenv("OSU_XFER_TIMES");
    if (rank == 0 && trace) {
        FILE *out = fopen(trace, "w");
        if (!out)
            die("cannot write OSU_XFER_TIMES");
        for (long i = 0; i < count; i++)
            fprintf(out, "%lld.%09ld %.1f\n", (long long)started[i].tv_sec, started[i].tv_nsec, times[i]);
        fclose(out);
    }
    qsort(times, (size_t)count, sizeof *times, compare_doubles);
    emit("xfer_median", bytes, times[count / 2], "us");
    emit("xfer_p99", bytes, times[(count * 99) / 100 < count ? (count * 99) / 100 : count - 1], "us");
    free(times);
    free(started);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2)
        die("usage: osu latency|bw|bibw|mr|multi_bw|multi_lat|ring|allreduce|waitcpu|xfer|put_lat|get_lat|put_bw|get_bw|fop_lat|fop_rate [-q] [-n MIN] [-m MAX] [-i ITERATIONS] [-v BYTES] [-w MS] [-W allocate|create] [-A]");
    const char *bench = argv[1];
    int option;
    optind = 2;
    while ((option = getopt(argc, argv, "qn:m:i:v:w:W:A")) != -1) {
        switch (option) {
        case 'q': quick = 1; break;
        case 'n': min_bytes = atol(optarg); break;
        case 'm': max_bytes = atol(optarg); break;
        case 'i': iterations_option = atol(optarg); break;
        case 'v': volume_option = atol(optarg); break;
        case 'w': compute_ms = atol(optarg); break;
        case 'W': window_create = strcmp(optarg, "create") == 0; break;
        case 'A': accumulate_hint = 1; break;
        default: die("unknown option");
        }
    }
    if (rank == 0) {
        char library[MPI_MAX_LIBRARY_VERSION_STRING];
        int length;
        MPI_Get_library_version(library, &length);
        library[strcspn(library, "\n")] = '\0';
        printf("# osu %s ranks=%d%s library=%.80s\n", bench, size, quick ? " quick" : "", library);
    }
    struct {
        const char *name;
        void (*run)(void);
    } benches[] = {{"latency", latency}, {"mr", message_rate}, {"multi_bw", multi_bandwidth}, {"multi_lat", multi_latency},
                   {"ring", ring},       {"allreduce", allreduce}, {"waitcpu", wait_cpu},
                   {"xfer", transfer_times}, {"put_lat", put_latency}, {"get_lat", get_latency},
                   {"put_bw", put_bandwidth}, {"get_bw", get_bandwidth}, {"fop_lat", fop_latency}, {"fop_rate", fop_rate}};
    int found = 0;
    if (strcmp(bench, "bw") == 0 || strcmp(bench, "bibw") == 0) {
        bandwidth(bench, strcmp(bench, "bibw") == 0);
        found = 1;
    }
    for (size_t i = 0; !found && i < sizeof benches / sizeof benches[0]; i++) {
        if (strcmp(bench, benches[i].name) == 0) {
            benches[i].run();
            found = 1;
        }
    }
    if (!found)
        die("unknown benchmark (latency, bw, bibw, mr, multi_bw, multi_lat, ring, allreduce, waitcpu, xfer, put_lat, get_lat, put_bw, get_bw, fop_lat, fop_rate)");
    free(send_buffer);
    free(receive_buffer);
    MPI_Finalize();
    return 0;
}
