/* Braid's job profiler: a PMPI interposer. Loaded in front of the MPI library (LD_PRELOAD, which
 * `braid run --profile DIR` sets up), it times every MPI call it knows (functions.h), counts the
 * bytes each call moves and which ranks they go to, and at MPI_Finalize writes one file per rank,
 * DIR/rank-N.json, that `braid report` (and `braid run --profile`) merge into DIR/profile.json.
 *
 * It is plain MPI, so the same source builds against Braid, MPICH or Open MPI (scripts/profiler-lib).
 * Where the library offers Braid's MPI_T performance variables, the rank file also carries what
 * the engine counted: bytes and messages to every rank including the collectives' own traffic,
 * the transport each peer is reached over, bytes per transport over time, protocol counters and
 * the time waiting ranks slept. Elsewhere the matrices come from the point-to-point calls.
 *
 * Phases: MPI_Pcontrol(1, "name") starts the phase "name", MPI_Pcontrol(-1, "name") ends it (IPM's
 * convention); calls outside any named phase belong to the phase "main". Other levels are ignored.
 * Files are written once, at MPI_Finalize, so a rank that dies leaves none. */
#define _GNU_SOURCE
#include <mpi.h>

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "functions.h"

/* Looked up by Braid's MPI_Init, which warns when BRAID_PROFILE is set without the profiler. */
const int braid_profiler_loaded = 1;

#define FN_ENUM(name) FN_##name,
enum { PROFILED_FUNCTIONS(FN_ENUM) FN_COUNT };
#define FN_NAME(name) "MPI_" #name,
static const char *const function_names[FN_COUNT] = {PROFILED_FUNCTIONS(FN_NAME)};

/* Message sizes in power-of-two buckets, as Open MPI's monitoring counts them: bucket 0 holds
 * empty messages, bucket k (k >= 1) sizes in [2^(k-1), 2^k). */
#define SIZE_BUCKETS 66
#define MAX_PHASES 32
#define PHASE_NAME_MAX 64
/* Bytes per transport are sampled at most this often, at the calls' boundaries. */
#define SAMPLE_INTERVAL 0.01
#define MAX_TRANSPORTS 16

struct function_stats {
    uint64_t calls;
    double time;
    uint64_t bytes;
    uint64_t sizes[SIZE_BUCKETS];
};

struct phase {
    char name[PHASE_NAME_MAX];
    int active;
    double entered_at, wall, mpi_time;
    struct function_stats functions[FN_COUNT];
    /* Point-to-point sends this rank's calls made, per destination world rank. */
    uint64_t *call_bytes, *call_messages;
    /* Their sizes, SIZE_BUCKETS buckets per destination. */
    uint64_t *call_sizes;
    /* What the engine counted per destination while the phase was active (Braid only). */
    uint64_t *engine_bytes, *engine_messages, *engine_start_bytes, *engine_start_messages;
};

struct sample {
    double time;
    uint64_t sent[MAX_TRANSPORTS], received[MAX_TRANSPORTS];
};

/* The engine's MPI_T performance variables the profiler reads, when the library has them. */
enum { PV_BYTES_SENT, PV_MESSAGES_SENT, PV_TRANSPORT_BYTES_SENT, PV_TRANSPORT_BYTES_RECEIVED, PV_TRANSPORT_NAMES, PV_PEER_TRANSPORT,
       PV_EAGER, PV_RENDEZVOUS, PV_UNEXPECTED, PV_UNEXPECTED_HIGH, PV_BLOCKED, PV_SLEEPS, PV_COUNT };
static const char *const pvar_names[PV_COUNT] = {
    "braid_bytes_sent", "braid_messages_sent", "braid_transport_bytes_sent", "braid_transport_bytes_received", "braid_transport_names",
    "braid_peer_transport", "braid_eager_sends", "braid_rendezvous_sends", "braid_unexpected_messages", "braid_unexpected_queue_high_watermark",
    "braid_wait_blocked_time", "braid_wait_sleeps"};

static struct {
    int on; /* between MPI_Init and MPI_Finalize, with a directory to write to */
    int depth;
    int rank, size;
    const char *dir;
    double started_at, mpi_time;
    struct phase *phases[MAX_PHASES];
    int phase_count, current;
    int phase_stack[MAX_PHASES], stack_depth;
    uint64_t cpus_seen[16]; /* CPUs the rank was seen on (at each sample), as a bit set of the first 1024 */
    int tools; /* MPI_T initialised */
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handles[PV_COUNT];
    int counts[PV_COUNT];
    int transports;
    struct sample *samples;
    size_t sample_count, sample_capacity;
    double last_sample;
} prof;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int size_bucket(uint64_t bytes)
{
    int bucket = 0;
    while (bytes) {
        bucket++;
        bytes >>= 1;
    }
    return bucket < SIZE_BUCKETS ? bucket : SIZE_BUCKETS - 1;
}

static uint64_t *zeroed(size_t n)
{
    uint64_t *array = calloc(n ? n : 1, sizeof *array);
    if (!array) {
        fprintf(stderr, "braid profiler: out of memory\n");
        abort();
    }
    return array;
}

/* The phase called `name`, made if new; -1 when there are too many. */
static int phase_named(const char *name)
{
    for (int i = 0; i < prof.phase_count; i++)
        if (strcmp(prof.phases[i]->name, name) == 0)
            return i;
    if (prof.phase_count == MAX_PHASES)
        return -1;
    struct phase *phase = calloc(1, sizeof *phase);
    if (!phase)
        return -1;
    snprintf(phase->name, sizeof phase->name, "%s", name);
    size_t n = (size_t)prof.size;
    phase->call_bytes = zeroed(n);
    phase->call_messages = zeroed(n);
    phase->call_sizes = zeroed(n * SIZE_BUCKETS);
    phase->engine_bytes = zeroed(n);
    phase->engine_messages = zeroed(n);
    phase->engine_start_bytes = zeroed(n);
    phase->engine_start_messages = zeroed(n);
    prof.phases[prof.phase_count] = phase;
    return prof.phase_count++;
}

/* ---- the engine's counters, through MPI_T ---- */

static int read_numbers(int which, uint64_t *out, int capacity)
{
    if (!prof.tools || prof.counts[which] <= 0 || prof.counts[which] > capacity)
        return 0;
    return PMPI_T_pvar_read(prof.session, prof.handles[which], out) == MPI_SUCCESS ? prof.counts[which] : 0;
}

static void open_engine_counters(void)
{
    int provided, num = 0;
    if (PMPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    prof.tools = 1;
    if (PMPI_T_pvar_session_create(&prof.session) != MPI_SUCCESS) {
        prof.tools = 0;
        return;
    }
    PMPI_T_pvar_get_num(&num);
    for (int i = 0; i < PV_COUNT; i++)
        prof.counts[i] = -1;
    for (int index = 0; index < num; index++) {
        char name[128], description[8];
        int name_len = sizeof name, desc_len = sizeof description, verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype datatype;
        MPI_T_enum enumtype;
        if (PMPI_T_pvar_get_info(index, name, &name_len, &verbosity, &var_class, &datatype, &enumtype, description, &desc_len, &bind, &readonly, &continuous, &atomic) != MPI_SUCCESS)
            continue;
        for (int which = 0; which < PV_COUNT; which++) {
            if (strcmp(name, pvar_names[which]) != 0)
                continue;
            int count = 0;
            if (PMPI_T_pvar_handle_alloc(prof.session, index, NULL, &prof.handles[which], &count) != MPI_SUCCESS)
                break;
            prof.counts[which] = count;
            if (!continuous)
                PMPI_T_pvar_start(prof.session, prof.handles[which]);
        }
    }
    prof.transports = prof.counts[PV_TRANSPORT_BYTES_SENT] > 0 && prof.counts[PV_TRANSPORT_BYTES_SENT] <= MAX_TRANSPORTS ? prof.counts[PV_TRANSPORT_BYTES_SENT] : 0;
}

static int engine_per_peer(void) { return prof.counts[PV_BYTES_SENT] == prof.size && prof.counts[PV_MESSAGES_SENT] == prof.size; }

/* Takes the engine's per-peer totals now. */
static int engine_totals(uint64_t *bytes, uint64_t *messages)
{
    if (!engine_per_peer())
        return 0;
    return read_numbers(PV_BYTES_SENT, bytes, prof.size) && read_numbers(PV_MESSAGES_SENT, messages, prof.size);
}

static void phase_begin(struct phase *phase)
{
    phase->active = 1;
    phase->entered_at = now();
    engine_totals(phase->engine_start_bytes, phase->engine_start_messages);
}

static void phase_end(struct phase *phase)
{
    if (!phase->active)
        return;
    phase->active = 0;
    phase->wall += now() - phase->entered_at;
    uint64_t *bytes = zeroed((size_t)prof.size), *messages = zeroed((size_t)prof.size);
    if (engine_totals(bytes, messages)) {
        for (int peer = 0; peer < prof.size; peer++) {
            phase->engine_bytes[peer] += bytes[peer] - phase->engine_start_bytes[peer];
            phase->engine_messages[peer] += messages[peer] - phase->engine_start_messages[peer];
        }
    }
    free(bytes);
    free(messages);
}

/* Notes the CPU the rank runs on, and the bytes each transport has moved so far. */
static void take_sample(double at)
{
    int cpu = sched_getcpu();
    if (cpu >= 0 && cpu < 1024)
        prof.cpus_seen[cpu / 64] |= UINT64_C(1) << (cpu % 64);
    prof.last_sample = at;
    if (!prof.transports)
        return;
    if (prof.sample_count == prof.sample_capacity) {
        size_t capacity = prof.sample_capacity ? 2 * prof.sample_capacity : 256;
        struct sample *grown = realloc(prof.samples, capacity * sizeof *grown);
        if (!grown)
            return;
        prof.samples = grown;
        prof.sample_capacity = capacity;
    }
    struct sample *sample = &prof.samples[prof.sample_count];
    memset(sample, 0, sizeof *sample);
    sample->time = at - prof.started_at;
    if (read_numbers(PV_TRANSPORT_BYTES_SENT, sample->sent, MAX_TRANSPORTS) && read_numbers(PV_TRANSPORT_BYTES_RECEIVED, sample->received, MAX_TRANSPORTS))
        prof.sample_count++;
}

/* ---- communicator ranks to world ranks ---- */

#define COMM_CACHE 512
struct comm_ranks {
    MPI_Fint key;
    int used;
    int size;
    int *world; /* world rank of each rank of the communicator (the remote group of an intercommunicator) */
};
static struct comm_ranks comm_cache[COMM_CACHE];

static int *world_ranks_of(MPI_Comm comm, int *size)
{
    MPI_Fint key = PMPI_Comm_c2f(comm);
    unsigned slot = (unsigned)key % COMM_CACHE;
    for (unsigned probe = 0; probe < COMM_CACHE; probe++, slot = (slot + 1) % COMM_CACHE) {
        if (comm_cache[slot].used && comm_cache[slot].key == key) {
            *size = comm_cache[slot].size;
            return comm_cache[slot].world;
        }
        if (!comm_cache[slot].used)
            break;
    }
    int inter = 0, n = 0;
    MPI_Group group, world_group;
    PMPI_Comm_test_inter(comm, &inter);
    if ((inter ? PMPI_Comm_remote_group(comm, &group) : PMPI_Comm_group(comm, &group)) != MPI_SUCCESS)
        return NULL;
    PMPI_Group_size(group, &n);
    PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    int *local = malloc((size_t)(n ? n : 1) * sizeof *local), *world = malloc((size_t)(n ? n : 1) * sizeof *world);
    if (!local || !world) {
        free(local);
        free(world);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        local[i] = i;
    PMPI_Group_translate_ranks(group, n, local, world_group, world);
    free(local);
    PMPI_Group_free(&group);
    PMPI_Group_free(&world_group);
    for (unsigned probe = 0; probe < COMM_CACHE; probe++, slot = (slot + 1) % COMM_CACHE) {
        if (!comm_cache[slot].used) {
            comm_cache[slot].used = 1;
            comm_cache[slot].key = key;
            comm_cache[slot].size = n;
            comm_cache[slot].world = world;
            *size = n;
            return world;
        }
    }
    free(world); /* a full cache: this send is not attributed */
    return NULL;
}

static void forget_comm(MPI_Comm comm)
{
    MPI_Fint key = PMPI_Comm_c2f(comm);
    for (int slot = 0; slot < COMM_CACHE; slot++) {
        if (comm_cache[slot].used && comm_cache[slot].key == key) {
            free(comm_cache[slot].world);
            comm_cache[slot].used = 0;
            comm_cache[slot].world = NULL;
            /* Open addressing: re-place the entries after it so that lookups still find them. */
            for (int next = (slot + 1) % COMM_CACHE; comm_cache[next].used; next = (next + 1) % COMM_CACHE) {
                struct comm_ranks moved = comm_cache[next];
                comm_cache[next].used = 0;
                unsigned place = (unsigned)moved.key % COMM_CACHE;
                while (comm_cache[place].used)
                    place = (place + 1) % COMM_CACHE;
                comm_cache[place] = moved;
            }
            return;
        }
    }
}

/* ---- the wrappers' bookkeeping ---- */

static inline double enter(void)
{
    if (!prof.on)
        return 0;
    prof.depth++;
    return now();
}

static inline void leave(int function, double started, uint64_t bytes)
{
    if (!prof.on)
        return;
    double end = now();
    prof.depth--;
    struct phase *phase = prof.phases[prof.current];
    struct function_stats *stats = &phase->functions[function];
    stats->calls++;
    stats->bytes += bytes;
    stats->sizes[size_bucket(bytes)]++;
    if (prof.depth == 0) {
        double spent = end - started;
        stats->time += spent;
        phase->mpi_time += spent;
        prof.mpi_time += spent;
        if (end - prof.last_sample >= SAMPLE_INTERVAL)
            take_sample(end);
    }
}

static uint64_t bytes_of(int count, MPI_Datatype datatype)
{
    int size = 0;
    if (count <= 0 || datatype == MPI_DATATYPE_NULL || PMPI_Type_size(datatype, &size) != MPI_SUCCESS || size < 0)
        return 0;
    return (uint64_t)count * (uint64_t)size;
}

static int comm_size(MPI_Comm comm)
{
    int n = 0, inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        PMPI_Comm_remote_size(comm, &n);
    else
        PMPI_Comm_size(comm, &n);
    return n;
}

static uint64_t sum_bytes(const int *counts, MPI_Datatype datatype, MPI_Comm comm)
{
    int n = comm_size(comm);
    if (!counts)
        return 0;
    uint64_t total = 0;
    for (int i = 0; i < n; i++)
        total += bytes_of(counts[i], datatype);
    return total;
}

static uint64_t sum_bytes_w(const int *counts, const MPI_Datatype *types, MPI_Comm comm)
{
    int n = comm_size(comm);
    if (!counts || !types)
        return 0;
    uint64_t total = 0;
    for (int i = 0; i < n; i++)
        total += bytes_of(counts[i], types[i]);
    return total;
}


/* A point-to-point send of `bytes` to `dest` of `comm`, for the call-level matrix. */
static void sent_to(int dest, MPI_Comm comm, uint64_t bytes)
{
    if (!prof.on || dest < 0)
        return;
    int world, n = 0;
    if (comm == MPI_COMM_WORLD) {
        world = dest;
    } else {
        int *ranks = world_ranks_of(comm, &n);
        if (!ranks || dest >= n)
            return;
        world = ranks[dest];
    }
    if (world < 0 || world >= prof.size)
        return;
    struct phase *phase = prof.phases[prof.current];
    phase->call_bytes[world] += bytes;
    phase->call_messages[world]++;
    phase->call_sizes[(size_t)world * SIZE_BUCKETS + (size_t)size_bucket(bytes)]++;
}

#define ENTER double prof_started = enter()
#define LEAVE(name, bytes) leave(FN_##name, prof_started, (uint64_t)(bytes))

/* ---- start and end ---- */

static void start_profiling(void)
{
    prof.dir = getenv("BRAID_PROFILE");
    if (!prof.dir || !*prof.dir)
        return;
    PMPI_Comm_rank(MPI_COMM_WORLD, &prof.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &prof.size);
    prof.started_at = now();
    prof.current = phase_named("main");
    open_engine_counters();
    phase_begin(prof.phases[prof.current]);
    take_sample(prof.started_at);
    prof.on = 1;
}

static void json_string(FILE *out, const char *text)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(out, "\\u%04x", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

static void json_numbers(FILE *out, const uint64_t *values, int n)
{
    fputc('[', out);
    for (int i = 0; i < n; i++)
        fprintf(out, "%s%llu", i ? "," : "", (unsigned long long)values[i]);
    fputc(']', out);
}

static void write_cpus(FILE *out, const uint64_t *set, int bits)
{
    int first = 1;
    fputc('[', out);
    for (int cpu = 0; cpu < bits; cpu++)
        if (set[cpu / 64] >> (cpu % 64) & 1) {
            fprintf(out, "%s%d", first ? "" : ",", cpu);
            first = 0;
        }
    fputc(']', out);
}

static void write_phase(FILE *out, const struct phase *phase, int engine)
{
    fprintf(out, "{\"name\":");
    json_string(out, phase->name);
    fprintf(out, ",\"wall_time\":%.9f,\"mpi_time\":%.9f,\"functions\":[", phase->wall, phase->mpi_time);
    int first = 1;
    for (int f = 0; f < FN_COUNT; f++) {
        const struct function_stats *stats = &phase->functions[f];
        if (!stats->calls)
            continue;
        fprintf(out, "%s{\"name\":\"%s\",\"calls\":%llu,\"time\":%.9f,\"bytes\":%llu,\"sizes\":", first ? "" : ",", function_names[f], (unsigned long long)stats->calls, stats->time,
                (unsigned long long)stats->bytes);
        json_numbers(out, stats->sizes, SIZE_BUCKETS);
        fputc('}', out);
        first = 0;
    }
    fprintf(out, "],\"call_bytes\":");
    json_numbers(out, phase->call_bytes, prof.size);
    fprintf(out, ",\"call_messages\":");
    json_numbers(out, phase->call_messages, prof.size);
    fprintf(out, ",\"call_sizes\":[");
    int listed = 0;
    for (int peer = 0; peer < prof.size; peer++) {
        if (!phase->call_messages[peer])
            continue;
        fprintf(out, "%s{\"peer\":%d,\"sizes\":", listed ? "," : "", peer);
        json_numbers(out, phase->call_sizes + (size_t)peer * SIZE_BUCKETS, SIZE_BUCKETS);
        fputc('}', out);
        listed = 1;
    }
    fputc(']', out);
    if (engine) {
        fprintf(out, ",\"engine_bytes\":");
        json_numbers(out, phase->engine_bytes, prof.size);
        fprintf(out, ",\"engine_messages\":");
        json_numbers(out, phase->engine_messages, prof.size);
    }
    fputc('}', out);
}

static uint64_t single(int which)
{
    uint64_t value = 0;
    if (prof.counts[which] == 1 && read_numbers(which, &value, 1))
        return value;
    return UINT64_MAX;
}

static void write_counter(FILE *out, const char *name, int which, int *first)
{
    uint64_t value = single(which);
    if (value == UINT64_MAX)
        return;
    fprintf(out, "%s\"%s\":%llu", *first ? "" : ",", name, (unsigned long long)value);
    *first = 0;
}

/* Makes `dir` and the folders above it (under launchers other than braid run, which makes it). */
static void make_dirs(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *slash = path + 1; *slash; slash++) {
        if (*slash == '/') {
            *slash = '\0';
            mkdir(path, 0777);
            *slash = '/';
        }
    }
    mkdir(path, 0777);
}

/* Writes DIR/rank-N.json, through a temporary file so that a reader never sees half of it. */
static void write_rank_file(double wall)
{
    char path[4096], partial[4200];
    make_dirs(prof.dir);
    snprintf(path, sizeof path, "%s/rank-%d.json", prof.dir, prof.rank);
    snprintf(partial, sizeof partial, "%s.partial", path);
    FILE *out = fopen(partial, "w");
    if (!out) {
        fprintf(stderr, "braid profiler: rank %d cannot write %s: %s\n", prof.rank, partial, strerror(errno));
        return;
    }
    char node[MPI_MAX_PROCESSOR_NAME] = "", library[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int length = 0;
    const char *named = getenv("BRAID_NODE_NAME");
    if (named && *named)
        snprintf(node, sizeof node, "%s", named);
    else
        PMPI_Get_processor_name(node, &length);
    PMPI_Get_library_version(library, &length);
    char *newline = strchr(library, '\n');
    if (newline)
        *newline = '\0';
    uint64_t allowed[16] = {0};
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask) == 0)
        for (int cpu = 0; cpu < 1024 && cpu < CPU_SETSIZE; cpu++)
            if (CPU_ISSET(cpu, &mask))
                allowed[cpu / 64] |= UINT64_C(1) << (cpu % 64);
    int engine = engine_per_peer();
    fprintf(out, "{\"schema\":\"braid-profile-rank/1\",\"library\":");
    json_string(out, library);
    fprintf(out, ",\"rank\":%d,\"size\":%d,\"pid\":%d,\"node\":", prof.rank, prof.size, (int)getpid());
    json_string(out, node);
    fprintf(out, ",\"cpus_allowed\":");
    write_cpus(out, allowed, 1024);
    fprintf(out, ",\"cpus_seen\":");
    write_cpus(out, prof.cpus_seen, 1024);
    fprintf(out, ",\"wall_time\":%.9f,\"mpi_time\":%.9f", wall, prof.mpi_time);
    double blocked = 0;
    if (prof.counts[PV_BLOCKED] == 1 && prof.tools && PMPI_T_pvar_read(prof.session, prof.handles[PV_BLOCKED], &blocked) == MPI_SUCCESS)
        fprintf(out, ",\"blocked_time\":%.9f", blocked);
    else
        fprintf(out, ",\"blocked_time\":null");
    fprintf(out, ",\"matrix_source\":\"%s\",\"phases\":[", engine ? "engine" : "calls");
    for (int i = 0; i < prof.phase_count; i++) {
        if (i)
            fputc(',', out);
        write_phase(out, prof.phases[i], engine);
    }
    fputc(']', out);
    if (prof.transports) {
        char names[1024] = "";
        if (prof.counts[PV_TRANSPORT_NAMES] > 0 && prof.counts[PV_TRANSPORT_NAMES] <= (int)sizeof names)
            PMPI_T_pvar_read(prof.session, prof.handles[PV_TRANSPORT_NAMES], names);
        fprintf(out, ",\"transports\":{\"names\":");
        json_string(out, names);
        uint64_t sent[MAX_TRANSPORTS] = {0}, received[MAX_TRANSPORTS] = {0};
        read_numbers(PV_TRANSPORT_BYTES_SENT, sent, MAX_TRANSPORTS);
        read_numbers(PV_TRANSPORT_BYTES_RECEIVED, received, MAX_TRANSPORTS);
        fprintf(out, ",\"bytes_sent\":");
        json_numbers(out, sent, prof.transports);
        fprintf(out, ",\"bytes_received\":");
        json_numbers(out, received, prof.transports);
        if (prof.counts[PV_PEER_TRANSPORT] == prof.size) {
            uint64_t *carriers = zeroed((size_t)prof.size);
            read_numbers(PV_PEER_TRANSPORT, carriers, prof.size);
            fprintf(out, ",\"peer_transport\":");
            json_numbers(out, carriers, prof.size);
            free(carriers);
        }
        fprintf(out, ",\"timeline\":[");
        for (size_t s = 0; s < prof.sample_count; s++) {
            fprintf(out, "%s{\"time\":%.6f,\"sent\":", s ? "," : "", prof.samples[s].time);
            json_numbers(out, prof.samples[s].sent, prof.transports);
            fprintf(out, ",\"received\":");
            json_numbers(out, prof.samples[s].received, prof.transports);
            fputc('}', out);
        }
        fprintf(out, "]}");
    }
    fprintf(out, ",\"protocol\":{");
    int first = 1;
    write_counter(out, "eager_sends", PV_EAGER, &first);
    write_counter(out, "rendezvous_sends", PV_RENDEZVOUS, &first);
    write_counter(out, "unexpected_messages", PV_UNEXPECTED, &first);
    write_counter(out, "unexpected_queue_high_watermark", PV_UNEXPECTED_HIGH, &first);
    write_counter(out, "wait_sleeps", PV_SLEEPS, &first);
    fprintf(out, "}}\n");
    int failed = ferror(out);
    if (fclose(out) != 0 || failed || rename(partial, path) != 0)
        fprintf(stderr, "braid profiler: rank %d could not write %s: %s\n", prof.rank, path, strerror(errno));
}

static void finish_profiling(void)
{
    if (!prof.on)
        return;
    double end = now();
    take_sample(end);
    for (int i = 0; i < prof.phase_count; i++)
        phase_end(prof.phases[i]);
    write_rank_file(end - prof.started_at);
    prof.on = 0;
    if (prof.tools) {
        PMPI_T_pvar_session_free(&prof.session);
        PMPI_T_finalize();
    }
}

/* ---- the wrappers ---- */

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        start_profiling();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        start_profiling();
    return rc;
}

int MPI_Finalize(void)
{
    finish_profiling();
    return PMPI_Finalize();
}

int MPI_Pcontrol(const int level, ...)
{
    if (!prof.on || (level != 1 && level != -1))
        return MPI_SUCCESS;
    va_list args;
    va_start(args, level);
    const char *name = va_arg(args, const char *);
    va_end(args);
    if (!name)
        return MPI_SUCCESS;
    int phase = phase_named(name);
    if (phase < 0)
        return MPI_SUCCESS;
    if (level == 1 && prof.stack_depth < MAX_PHASES) {
        prof.phase_stack[prof.stack_depth++] = prof.current;
        phase_end(prof.phases[prof.current]);
        prof.current = phase;
        phase_begin(prof.phases[phase]);
    } else if (level == -1 && prof.current == phase && prof.stack_depth > 0) {
        phase_end(prof.phases[phase]);
        prof.current = prof.phase_stack[--prof.stack_depth];
        phase_begin(prof.phases[prof.current]);
    }
    return MPI_SUCCESS;
}

#include "wrappers.h"
