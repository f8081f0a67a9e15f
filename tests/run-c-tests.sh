#!/usr/bin/env bash
# End-to-end C tests: builds every program in tests/c and runs it at 1-4 ranks (4 ranks are
# oversubscribed on a 2-core machine), plus the forced two-copy path (BRAID_CMA=off), both wait
# policies, MPI_Abort and fatal-error exits, a rank killed by SIGKILL, a C++ program and header
# hygiene. After every run it checks that no rank process and no /dev/shm/braid-* file is left.
#
# Usage:  tests/run-c-tests.sh                  # against Braid (needs `cargo build --release`)
#         MPI_IMPL=mpich tests/run-c-tests.sh   # the same suite against MPICH (reference)
#         MPI_IMPL=openmpi tests/run-c-tests.sh # ... or Open MPI
#         ONLY=ring tests/run-c-tests.sh        # only the cases whose name contains "ring"
# Output: one line per case, `PASS name` or `FAIL name (why)`, then `N passed, N failed`.
# Exit status: 0 only if every case passed. Logs of failed cases stay in $LOG_DIR (printed).
# Braid-only checks (launcher messages, BRAID_* settings, running under mpiexec.hydra) are skipped for MPICH and Open MPI.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SOURCES="$ROOT/tests/c"
MPI_IMPL="${MPI_IMPL:-braid}"
ONLY="${ONLY:-}"
TIMEOUT="${TIMEOUT:-60}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/braid-ctests.XXXXXX")"
BUILD="$WORK/bin"
LOG_DIR="$WORK/logs"
mkdir -p "$BUILD" "$LOG_DIR"
passed=0
failed=0
failed_logs=0

case "$MPI_IMPL" in
braid)
    CC="$ROOT/bin/braidcc"
    CXX="$ROOT/bin/braidcxx"
    LAUNCH=("$ROOT/target/release/braid" run -n)
    CFLAGS=(-O2 -DTEST_BRAID_ONLY)
    CXXFLAGS=(-O2)
    for needed in "$CC" "$CXX" "$ROOT/target/release/braid"; do
        if [ ! -x "$needed" ]; then
            echo "FAIL setup ($needed is missing: run cargo build --release first)"
            echo "0 passed, 1 failed"
            exit 1
        fi
    done
    ;;
mpich)
    CC=mpicc.mpich
    CXX=mpicxx.mpich
    LAUNCH=(mpiexec.mpich -n)
    CFLAGS=(-O2)
    CXXFLAGS=(-O2)
    ;;
openmpi)
    CC=mpicc.openmpi
    CXX=mpicxx.openmpi
    LAUNCH=(mpirun.openmpi --oversubscribe -n)
    CFLAGS=(-O2)
    # Open MPI's own C++ bindings do not compile with -Wextra -Werror; the C interface is what we test.
    CXXFLAGS=(-O2 -DOMPI_SKIP_MPICXX)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    ;;
*)
    echo "MPI_IMPL must be braid, mpich or openmpi, not '$MPI_IMPL'" >&2
    exit 2
    ;;
esac
is_braid() { [ "$MPI_IMPL" = braid ]; }

finish() {
    local pids
    pids="$(pgrep -f "$BUILD/" || true)"
    # Only processes running our own freshly built binaries can match $BUILD.
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    if [ "$failed_logs" -eq 0 ]; then
        rm -rf "$WORK"
    else
        rm -rf "$BUILD"
    fi
}
trap finish EXIT

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() {
    echo "FAIL $1 ($2)"
    failed=$((failed + 1))
}
selected() { [ -z "$ONLY" ] || [[ "$1" == *"$ONLY"* ]]; }

shm_files() { ls -1 /dev/shm 2>/dev/null | grep '^braid-' | sort; }

# Files that appeared since `before`, are still there after a grace period and that no live
# process has open or mapped (other people's jobs may be running on this machine).
shm_leftovers() {
    local before="$1" file attempt fresh
    for attempt in 1 2 3 4 5; do
        fresh="$(comm -13 <(echo "$before") <(shm_files))"
        [ -z "$fresh" ] && return 0
        sleep 0.2
    done
    for file in $fresh; do
        [ -e "/dev/shm/$file" ] || continue
        if ! grep -qs "/dev/shm/$file" /proc/[0-9]*/maps && ! find /proc/[0-9]*/fd -lname "/dev/shm/$file" 2>/dev/null | grep -q .; then
            echo "$file"
        fi
    done
}

# Kills (by pid) and reports rank processes of our binaries that outlived their job.
leftover_processes() {
    local pids
    pids="$(pgrep -f "$BUILD/" || true)"
    [ -z "$pids" ] && return 0
    echo $pids
    kill -9 $pids 2>/dev/null
}

# First line of a log that explains a failure, shortened to fit on the PASS/FAIL line.
explain() {
    local line
    line="$(grep -m1 -E 'check failed|Fatal|error|Error|panicked|failed|survived|returned instead' "$1" 2>/dev/null)"
    [ -z "$line" ] && line="$(grep -v '^\s*$' "$1" 2>/dev/null | tail -n1)"
    echo "${line:0:200}"
}

# run_job NAME -- COMMAND...: runs one job under the timeout; sets RC, ELAPSED_MS, OUT, ERR and
# LEFTOVER (what was left behind, empty if nothing).
run_job() {
    local name="$1" before start end safe_name
    shift 2
    safe_name="$(echo "$name" | tr -c 'A-Za-z0-9=._-' '_')"
    OUT="$LOG_DIR/$safe_name.out"
    ERR="$LOG_DIR/$safe_name.err"
    before="$(shm_files)"
    start=$(date +%s%N)
    timeout -k 5 "$TIMEOUT" "$@" >"$OUT" 2>"$ERR" </dev/null
    RC=$?
    end=$(date +%s%N)
    ELAPSED_MS=$(((end - start) / 1000000))
    LEFTOVER=""
    local processes files
    processes="$(leftover_processes)"
    files="$(shm_leftovers "$before" | tr '\n' ' ')"
    [ -n "$processes" ] && LEFTOVER="rank processes left: $processes"
    if [ -n "$files" ]; then
        [ -n "$LEFTOVER" ] && LEFTOVER="$LEFTOVER; "
        LEFTOVER="${LEFTOVER}/dev/shm files left: $files"
        is_braid && for file in $files; do rm -f "/dev/shm/$file"; done
    fi
}

keep_logs() { failed_logs=$((failed_logs + 1)); }

# judge NAME: passes or fails the job run_job just ran, which had to succeed and leave nothing.
judge() {
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        fail "$1" "timed out after ${TIMEOUT}s"; keep_logs
    elif [ "$RC" -ne 0 ]; then
        fail "$1" "exit $RC: $(explain "$ERR")"; keep_logs
    elif [ -n "$LEFTOVER" ]; then
        fail "$1" "$LEFTOVER"; keep_logs
    else
        pass "$1"
    fi
}

# expect_success NAME RANKS [VAR=VALUE...] -- PROGRAM ARGS...
expect_success() {
    local name="$1" ranks="$2"
    shift 2
    local settings=()
    while [ "$1" != "--" ]; do settings+=("$1"); shift; done
    shift
    selected "$name" || return 0
    run_job "$name" -- env "${settings[@]}" "${LAUNCH[@]}" "$ranks" "$@"
    judge "$name"
}

compile_c() {
    local program="$1"
    shift
    "$CC" -std=c99 "${CFLAGS[@]}" "$@" -o "$BUILD/$program" "$SOURCES/$program.c" -lpthread >"$LOG_DIR/build-$program.log" 2>&1
}

echo "# implementation: $MPI_IMPL$(is_braid || echo ' (Braid-only checks skipped)'); logs: $LOG_DIR"

# Header hygiene: mpi.h must compile cleanly as strict C89, C99, C11 and C++ with every warning an
# error. Open MPI's own mpi.h uses long long unguarded, so its C89 case is skipped.
header_case() {
    local name="$1" log="$LOG_DIR/build-header-$2.log"
    shift 2
    selected "header $name" || return 0
    if "$@" -pedantic -Wall -Wextra -Werror -c -o "$BUILD/header.o" "$SOURCES/header_strict.c" >"$log" 2>&1; then
        pass "header $name"
    else
        fail "header $name" "$(explain "$log")"; keep_logs
    fi
}
[ "$MPI_IMPL" != openmpi ] && header_case "mpi.h -std=c89 -pedantic -Wall -Wextra -Werror" c89 "$CC" -std=c89
header_case "mpi.h -std=c99 -pedantic -Wall -Wextra -Werror" c99 "$CC" -std=c99
header_case "mpi.h -std=c11 -pedantic -Wall -Wextra -Werror" c11 "$CC" -std=c11
header_case "mpi.h C++ -pedantic -Wall -Wextra -Werror" cxx "$CXX" -x c++ "${CXXFLAGS[@]}"

PROGRAMS=(p2p_matching p2p_modes p2p_more collectives coll_forms nbc idup neighbors threads datatypes datatypes_more comms comms_more intercomm intercomm_coll attributes errors errhandlers topologies large ring fatal_error abort_code kill_rank unsupported conversions mpit pmpi_counts argerr_p2p argerr_coll argerr_objects rma_ops rma_win rma_single rma_threads rma_threads_shared soak rma_create_memory rma_atomics rma_large_copy self_cancel thread_wait status_error monitoring graph_reorder io_basic io_access io_views io_shared io_nonblocking io_atomic orphaned)
# MPI 4 programs: Open MPI 4.1 does not have their functions.
[ "$MPI_IMPL" != openmpi ] && PROGRAMS+=(persistent_coll mpi4_calls sessions split_hardware large_count)
# Partitioned communication: Debian's MPICH 4.0.2 (ch4:ucx) crashes inside MPI_Psend_init itself
# (ucp_am_send_nbx), and Open MPI 4.1 does not have it, so no peer here can run this one.
is_braid && PROGRAMS+=(partitioned)
# MPI_T events: Braid's own (an implementation defines its events; MPICH 4.0.2 has none of these).
is_braid && PROGRAMS+=(mpit_events)
# Ports, connections and spawning: Debian's MPICH 4.0.2 (ch4:ucx) refuses MPI_Open_port ("not
# supported with ucx netmod"); Open MPI runs them (the one-job cases of connect).
[ "$MPI_IMPL" != mpich ] && PROGRAMS+=(connect spawn)
# MPI 4.1's communicator and session buffers for buffered sends: newer than both peers here.
is_braid && PROGRAMS+=(bsend_buffers)
# A file system that fills up: Open MPI 4.1 returns MPI_SUCCESS for a write the file system
# refused with ENOSPC (its data silently lost), so it cannot run this one.
[ "$MPI_IMPL" != openmpi ] && PROGRAMS+=(io_errors)
# Neither peer lays out external32 files by the sizes it packs with (see the test's comment).
is_braid && PROGRAMS+=(io_datarep)
for program in "${PROGRAMS[@]}"; do
    if ! compile_c "$program"; then
        fail "build $program" "$(explain "$LOG_DIR/build-$program.log")"; keep_logs
    fi
done
built() { [ -x "$BUILD/$1" ]; }

# two_jobs NAME SERVER_RANKS CLIENT_RANKS [VAR=VALUE...] -- PROGRAM: a server job and a client
# job started apart, which find each other through a file (`PROGRAM server FILE`, `PROGRAM
# client FILE`); both must succeed.
two_jobs() {
    local name="$1" server_ranks="$2" client_ranks="$3"
    shift 3
    local settings=()
    while [ "$1" != "--" ]; do settings+=("$1"); shift; done
    shift
    selected "$name" || return 0
    local port_file="$WORK/port-$RANDOM$RANDOM"
    run_job "$name" -- bash -c 'server_ranks=$1 client_ranks=$2 file=$3 program=$4; shift 4
        "$@" "$server_ranks" "$program" server "$file" & server=$!
        "$@" "$client_ranks" "$program" client "$file"; client=$?
        wait "$server"; server=$?
        echo "server exit $server, client exit $client" >&2
        [ "$server" -eq 0 ] && [ "$client" -eq 0 ]' _ "$server_ranks" "$client_ranks" "$port_file" "$1" env "${settings[@]}" "${LAUNCH[@]}"
    judge "$name"
}

for ranks in 2 3 4; do built p2p_matching && expect_success "p2p_matching n=$ranks" "$ranks" -- "$BUILD/p2p_matching"; done
for ranks in 2 4; do built p2p_modes && expect_success "p2p_modes n=$ranks" "$ranks" -- "$BUILD/p2p_modes"; done
for ranks in 2 3 4; do built p2p_more && expect_success "p2p_more n=$ranks" "$ranks" -- "$BUILD/p2p_more"; done
is_braid && built p2p_more && expect_success "p2p_more n=2 BRAID_CMA=off" 2 BRAID_CMA=off -- "$BUILD/p2p_more"
for ranks in 1 2 3 4; do built collectives && expect_success "collectives n=$ranks" "$ranks" -- "$BUILD/collectives"; done
# Collectives on both sides of the switch between the node's shared slots and messages; on
# Braid also with the slots off, and with slots large enough to take every size.
for ranks in 1 2 3 4 8; do built coll_forms && expect_success "coll_forms n=$ranks" "$ranks" -- "$BUILD/coll_forms"; done
# Ranks at different thread levels (picked by PMI_RANK, which Open MPI's launcher does not set).
[ "$MPI_IMPL" != openmpi ] && built coll_forms && expect_success "coll_forms n=3 mixed thread levels" 3 -- "$BUILD/coll_forms" mixed
if is_braid && built coll_forms; then
    expect_success "coll_forms n=3 BRAID_COLL_SHM_SLOT=0" 3 BRAID_COLL_SHM_SLOT=0 -- "$BUILD/coll_forms"
    for ranks in 2 5 8; do expect_success "coll_forms n=$ranks BRAID_COLL_SHM_SLOT=1048576 BRAID_COLL_SHM_MAX=1048576" "$ranks" BRAID_COLL_SHM_SLOT=1048576 BRAID_COLL_SHM_MAX=1048576 -- "$BUILD/coll_forms"; done
    for ranks in 3 4; do expect_success "collectives n=$ranks BRAID_COLL_SHM_SLOT=1048576 BRAID_COLL_SHM_MAX=1048576" "$ranks" BRAID_COLL_SHM_SLOT=1048576 BRAID_COLL_SHM_MAX=1048576 -- "$BUILD/collectives"; done
fi
for ranks in 1 2 3 4; do built nbc && expect_success "nbc n=$ranks" "$ranks" -- "$BUILD/nbc"; done
for ranks in 1 2 3 4; do built persistent_coll && expect_success "persistent_coll n=$ranks" "$ranks" -- "$BUILD/persistent_coll"; done
for ranks in 1 3; do built mpi4_calls && expect_success "mpi4_calls n=$ranks" "$ranks" -- "$BUILD/mpi4_calls"; done
for ranks in 1 2 3; do built large_count && expect_success "large_count n=$ranks" "$ranks" -- "$BUILD/large_count"; done
# One message of INT_MAX + 9 bytes, sent and broadcast: 2 ranks hold 2 GiB each twice over.
available_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
if [ "${available_kib:-0}" -ge $((6 * 1024 * 1024)) ]; then
    built large_count && expect_success "large_count n=2 big (a message over INT_MAX bytes)" 2 -- "$BUILD/large_count" big
else
    echo "NOT RUN large_count n=2 big: it needs 6 GiB of available memory, this machine has $((available_kib / 1024)) MiB"
fi
for ranks in 1 3 4; do built sessions && expect_success "sessions n=$ranks" "$ranks" -- "$BUILD/sessions"; done
# Bound to a core each (2 ranks here), and more ranks than cores (unbound).
for ranks in 2 4; do built split_hardware && expect_success "split_hardware n=$ranks" "$ranks" -- "$BUILD/split_hardware"; done
for ranks in 1 3; do built sessions && expect_success "sessions n=$ranks MPI_Init beside a session" "$ranks" -- "$BUILD/sessions" mixed; done
built mpit_events && expect_success "mpit_events n=2" 2 -- "$BUILD/mpit_events"
built mpit_events && expect_success "mpit_events n=2 BRAID_UNEXPECTED_MARK=0" 2 BRAID_UNEXPECTED_MARK=0 -- "$BUILD/mpit_events" none
for ranks in 1 2 3 4; do built connect && expect_success "connect n=$ranks" "$ranks" -- "$BUILD/connect"; done
# Two jobs started apart: new processes to each other, reached over shared memory of their own.
if is_braid && built connect; then
    two_jobs "connect jobs 2+3" 2 3 -- "$BUILD/connect"
    two_jobs "connect jobs 1+1 BRAID_WAIT=block" 1 1 BRAID_WAIT=block -- "$BUILD/connect"
    two_jobs "connect jobs 2+2 BRAID_CMA=off" 2 2 BRAID_CMA=off -- "$BUILD/connect"
fi
for ranks in 2 3; do built bsend_buffers && expect_success "bsend_buffers n=$ranks" "$ranks" -- "$BUILD/bsend_buffers"; done
built bsend_buffers && expect_success "bsend_buffers n=2 BRAID_CMA=off BRAID_WAIT=block" 2 BRAID_CMA=off BRAID_WAIT=block -- "$BUILD/bsend_buffers"
for ranks in 1 2 3; do built spawn && expect_success "spawn n=$ranks" "$ranks" -- "$BUILD/spawn"; done
is_braid && built spawn && expect_success "spawn n=2 BRAID_WAIT=block" 2 BRAID_WAIT=block -- "$BUILD/spawn"
is_braid && built spawn && expect_success "spawn n=1 BRAID_CMA=off BRAID_PROGRESS_THREAD=on" 1 BRAID_CMA=off BRAID_PROGRESS_THREAD=on -- "$BUILD/spawn"
# Under MPICH's launcher: Braid's processes ask Hydra to spawn, and connect as they do under braid run.
if is_braid && built spawn && built connect && selected "mpiexec.hydra"; then
    for case in "spawn:1:" "connect:2:"; do
        IFS=: read -r program ranks argument <<<"$case"
        name="$program mpiexec.hydra n=$ranks"
        if ! command -v mpiexec.hydra >/dev/null; then
            fail "$name" "mpiexec.hydra is not installed"
            continue
        fi
        run_job "$name" -- mpiexec.hydra -n "$ranks" "$BUILD/$program" $argument
        judge "$name"
    done
fi
# Under a PMIx launcher: Open MPI's mpirun serves PMIx (through OpenPMIx), and Braid's processes
# speak it through the library they load: rank and size, the exchange of addresses, MPI_Abort,
# and the name service; MPI_Comm_spawn fails with a clear error.
if is_braid && selected "PMIx"; then
    if ! command -v mpirun.openmpi >/dev/null; then
        fail "ring PMIx mpirun.openmpi n=4" "mpirun.openmpi is not installed (Debian's openmpi-bin; scripts/setup installs it)"
    else
        PMIX_LAUNCH=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 mpirun.openmpi -n)
        for case in "ring:4" "collectives:4" "spawn:1" "connect:2"; do
            IFS=: read -r program ranks <<<"$case"
            name="$program PMIx mpirun.openmpi n=$ranks"
            built "$program" || continue
            run_job "$name" -- "${PMIX_LAUNCH[@]}" "$ranks" "$BUILD/$program"
            if [ "$program" = spawn ]; then
                # Braid does not ask a PMIx launcher to spawn (see pmix.rs): the call must fail
                # with a clear error, not hang nor start a singleton.
                if [ "$RC" -eq 0 ] || ! grep -q "PMIx launcher" "$ERR"; then
                    fail "$name" "exit $RC, expected MPI_Comm_spawn to fail naming the PMIx launcher: $(explain "$ERR")"; keep_logs
                else
                    pass "$name"
                fi
                continue
            fi
            if [ "$program" = connect ]; then
                # Names are published in the launcher's name service (PMIx_Publish, _Lookup, _Unpublish).
                judge "$name"
                continue
            fi
            judge "$name"
            grep -q "$ranks ranks" "$OUT" || fail "$name ranks" "the job did not see $ranks ranks: $(head -c 300 "$OUT")"
        done
        # OpenPMIx's hash store of job data keeps the first value a client read of another
        # process's key: the lists of posted keys must be new keys at every fence.
        if built ring; then
            name="ring PMIx mpirun.openmpi n=4 PMIX_MCA_gds=hash"
            run_job "$name" -- env PMIX_MCA_gds=hash "${PMIX_LAUNCH[@]}" 4 "$BUILD/ring"
            judge "$name"
        fi
        if built abort_code; then
            name="abort_code PMIx mpirun.openmpi n=3"
            run_job "$name" -- "${PMIX_LAUNCH[@]}" 3 "$BUILD/abort_code"
            if [ "$RC" -ne 7 ]; then fail "$name" "exit $RC, expected MPI_Abort's code 7"; keep_logs; else pass "$name"; fi
        fi
    fi
fi
for ranks in 1 2 3; do built partitioned && expect_success "partitioned n=$ranks" "$ranks" -- "$BUILD/partitioned"; done
for ranks in 2 3 4; do built idup && expect_success "idup n=$ranks" "$ranks" -- "$BUILD/idup"; done
is_braid && built idup && expect_success "idup n=3 BRAID_PROGRESS_THREAD=on" 3 BRAID_PROGRESS_THREAD=on -- "$BUILD/idup"
for ranks in 1 2 3 4; do built threads && expect_success "threads n=$ranks" "$ranks" -- "$BUILD/threads"; done
# Sends to the own rank, cancelled or received, then MPI_Request_get_status, at both thread levels.
for ranks in 1 2 3; do
    built self_cancel && expect_success "self_cancel n=$ranks" "$ranks" -- "$BUILD/self_cancel"
    built self_cancel && expect_success "self_cancel n=$ranks multiple" "$ranks" -- "$BUILD/self_cancel" multiple
done
# What the calls write into a status's MPI_ERROR field.
for ranks in 1 2; do built status_error && expect_success "status_error n=$ranks" "$ranks" -- "$BUILD/status_error"; done
# Waiting threads at MPI_THREAD_MULTIPLE wake when answered (by a peer, or by a thread of their
# own process) and, on Braid, sleep meanwhile. A missed wake-up would cost BRAID_BLOCK_TIMEOUT_MS.
# MPICH 4.0 never completes a receive from the own rank that another thread's send answers.
thread_wait_args=()
[ "$MPI_IMPL" = mpich ] && thread_wait_args=(no-self-wake)
for ranks in 1 2 3 4; do
    built thread_wait && expect_success "thread_wait n=$ranks" "$ranks" BRAID_BLOCK_TIMEOUT_MS=5000 -- "$BUILD/thread_wait" "${thread_wait_args[@]}"
done
is_braid && built thread_wait && expect_success "thread_wait n=2 BRAID_WAIT=block" 2 BRAID_WAIT=block BRAID_BLOCK_TIMEOUT_MS=5000 -- "$BUILD/thread_wait"
for ranks in 1 2 3 4; do built neighbors && expect_success "neighbors n=$ranks" "$ranks" -- "$BUILD/neighbors"; done
if is_braid && built nbc; then
    expect_success "nbc n=2 BRAID_PROGRESS_THREAD=on" 2 BRAID_PROGRESS_THREAD=on -- "$BUILD/nbc"
    expect_success "nbc n=4 BRAID_PROGRESS_THREAD=on" 4 BRAID_PROGRESS_THREAD=on -- "$BUILD/nbc"
fi
for ranks in 1 2 3 4; do built datatypes && expect_success "datatypes n=$ranks" "$ranks" -- "$BUILD/datatypes"; done
for ranks in 1 2 3 4; do built datatypes_more && expect_success "datatypes_more n=$ranks" "$ranks" -- "$BUILD/datatypes_more"; done
for ranks in 1 2 3 4; do built comms && expect_success "comms n=$ranks" "$ranks" -- "$BUILD/comms"; done
for ranks in 1 2 3 4; do built comms_more && expect_success "comms_more n=$ranks" "$ranks" -- "$BUILD/comms_more"; done
for ranks in 2 3 4; do built intercomm && expect_success "intercomm n=$ranks" "$ranks" -- "$BUILD/intercomm"; done
for ranks in 2 3 4; do built intercomm_coll && expect_success "intercomm_coll n=$ranks" "$ranks" -- "$BUILD/intercomm_coll"; done
for ranks in 1 2 3 4; do built attributes && expect_success "attributes n=$ranks" "$ranks" -- "$BUILD/attributes"; done
for ranks in 1 2 3; do built errors && expect_success "errors n=$ranks" "$ranks" -- "$BUILD/errors"; done
for ranks in 1 2 3 4; do built errhandlers && expect_success "errhandlers n=$ranks" "$ranks" -- "$BUILD/errhandlers"; done
for ranks in 1 2 3 4; do built topologies && expect_success "topologies n=$ranks" "$ranks" -- "$BUILD/topologies"; done
for ranks in 1 2 3; do built argerr_p2p && expect_success "argerr_p2p n=$ranks" "$ranks" -- "$BUILD/argerr_p2p"; done
for ranks in 1 2 3; do built argerr_coll && expect_success "argerr_coll n=$ranks" "$ranks" -- "$BUILD/argerr_coll"; done
for ranks in 1 2 3; do built argerr_objects && expect_success "argerr_objects n=$ranks" "$ranks" -- "$BUILD/argerr_objects"; done
for ranks in 1 2 3 4; do built mpit && expect_success "mpit n=$ranks" "$ranks" -- "$BUILD/mpit"; done
if built mpit && is_braid; then
    expect_success "mpit n=2 BRAID_EAGER_MAX=16384 BRAID_WAIT=block BRAID_RAILS=none" 2 BRAID_EAGER_MAX=16384 BRAID_WAIT=block BRAID_RAILS=none -- "$BUILD/mpit"
    expect_success "mpit n=3 BRAID_WAIT=poll" 3 BRAID_WAIT=poll -- "$BUILD/mpit"
fi
# Topology constructors with reorder: the process with new rank v plays vertex v (on one node
# Braid keeps every process where it is; across nodes the cluster tests see it renumber).
for ranks in 1 2 4; do
    for kind in adjacent general graph cart; do
        built graph_reorder && expect_success "graph_reorder n=$ranks $kind" "$ranks" -- "$BUILD/graph_reorder" "$kind" 1
    done
done
built graph_reorder && expect_success "graph_reorder n=3 adjacent no reorder" 3 -- "$BUILD/graph_reorder" adjacent 0
# MPI-IO: files in $TMPDIR (each run its own names, removed at the end).
for program in io_basic io_access io_views io_shared io_nonblocking io_atomic io_datarep; do
    for ranks in 1 2 3 4; do built "$program" && expect_success "$program n=$ranks" "$ranks" -- "$BUILD/$program"; done
done
# A full file system: a 1 MiB tmpfs mounted for these runs (needs root, as CI has).
if built io_errors && selected io_errors; then
    full="$WORK/full"
    mkdir -p "$full"
    if mount -t tmpfs -o size=1m tmpfs "$full" 2>"$LOG_DIR/mount-full.log"; then
        for ranks in 1 2 3; do expect_success "io_errors n=$ranks" "$ranks" -- "$BUILD/io_errors" "$full"; done
        umount "$full"
    else
        fail "io_errors" "cannot mount a 1 MiB tmpfs at $full (needs root): $(explain "$LOG_DIR/mount-full.log")"
    fi
fi
# Open MPI's monitoring variables under their names. Braid only: MPICH has none, and Debian's
# Open MPI 4.1 never registers its pml_monitoring_* variables (its monitoring PML is not
# interposed even with pml_monitoring_enable set), so there is no reference to run against.
if built monitoring && is_braid; then
    for ranks in 1 2 3; do expect_success "monitoring n=$ranks" "$ranks" -- "$BUILD/monitoring"; done
fi
if built large; then
    expect_success "large n=2" 2 -- "$BUILD/large"
    expect_success "large n=3" 3 -- "$BUILD/large"
    is_braid && expect_success "large n=2 BRAID_CMA=off" 2 BRAID_CMA=off -- "$BUILD/large"
fi
if built ring; then
    expect_success "ring n=2" 2 -- "$BUILD/ring" 2000
    expect_success "ring n=3" 3 -- "$BUILD/ring" 200
    expect_success "ring n=4" 4 -- "$BUILD/ring" 200
    if is_braid; then
        expect_success "ring n=2 BRAID_WAIT=block" 2 BRAID_WAIT=block -- "$BUILD/ring" 2000
        expect_success "ring n=4 BRAID_WAIT=block" 4 BRAID_WAIT=block -- "$BUILD/ring" 200
        expect_success "ring n=2 BRAID_WAIT=poll" 2 BRAID_WAIT=poll -- "$BUILD/ring" 2000
        if selected "ring mpiexec.hydra"; then
            if command -v mpiexec.hydra >/dev/null; then
                run_job "ring mpiexec.hydra n=2" -- mpiexec.hydra -n 2 "$BUILD/ring" 2000
                if [ "$RC" -ne 0 ]; then
                    fail "ring mpiexec.hydra n=2" "exit $RC: $(explain "$ERR")"; keep_logs
                elif ! grep -q "token 4000" "$OUT"; then
                    fail "ring mpiexec.hydra n=2" "no 'token 4000' line: $(head -c 200 "$OUT")"; keep_logs
                elif [ -n "$LEFTOVER" ]; then
                    fail "ring mpiexec.hydra n=2" "$LEFTOVER"; keep_logs
                else
                    pass "ring mpiexec.hydra n=2"
                fi
            else
                fail "ring mpiexec.hydra n=2" "mpiexec.hydra is not installed"
            fi
        fi
    fi
fi

for ranks in 1 2 3; do built unsupported && expect_success "unsupported n=$ranks" "$ranks" -- "$BUILD/unsupported"; done
for ranks in 1 2 3 4; do built conversions && expect_success "conversions n=$ranks" "$ranks" -- "$BUILD/conversions"; done
# Open MPI 4.1 has no one-sided component for a single process (MPI_Win_create fails with
# MPI_ERR_WIN), so its 1-rank runs are skipped.
for ranks in 1 2 3 4; do
    [ "$MPI_IMPL" = openmpi ] && [ "$ranks" -eq 1 ] && continue
    built rma_ops && expect_success "rma_ops n=$ranks" "$ranks" -- "$BUILD/rma_ops"
    built rma_win && expect_success "rma_win n=$ranks" "$ranks" -- "$BUILD/rma_win"
    built rma_single && expect_success "rma_single n=$ranks" "$ranks" -- "$BUILD/rma_single"
    built rma_create_memory && expect_success "rma_create_memory n=$ranks" "$ranks" -- "$BUILD/rma_create_memory"
    built rma_atomics && expect_success "rma_atomics n=$ranks" "$ranks" -- "$BUILD/rma_atomics"
    [ "$ranks" -ge 2 ] && built rma_large_copy && expect_success "rma_large_copy n=$ranks" "$ranks" -- "$BUILD/rma_large_copy"
done
# Accumulates as messages (the target applies them) beside its own lock-free ones.
is_braid && built rma_atomics && expect_success "rma_atomics n=3 BRAID_CMA=off BRAID_WIN_CREATE_SHARE=off" 3 BRAID_CMA=off BRAID_WIN_CREATE_SHARE=off -- "$BUILD/rma_atomics"
# Created windows' memory with single copies (not shared in place), and with a progress thread
# (a second thread: only whole pages are shared in place).
is_braid && built rma_create_memory && expect_success "rma_create_memory n=3 BRAID_WIN_CREATE_SHARE=off" 3 BRAID_WIN_CREATE_SHARE=off -- "$BUILD/rma_create_memory"
is_braid && built rma_create_memory && expect_success "rma_create_memory n=3 BRAID_PROGRESS_THREAD=on" 3 BRAID_PROGRESS_THREAD=on -- "$BUILD/rma_create_memory"
# Windows of MPI_Win_create and dynamic ones without single copies: every operation as messages.
is_braid && built rma_ops && expect_success "rma_ops n=3 BRAID_CMA=off" 3 BRAID_CMA=off -- "$BUILD/rma_ops"
is_braid && built rma_single && expect_success "rma_single n=3 BRAID_CMA=off" 3 BRAID_CMA=off -- "$BUILD/rma_single"
# One-sided communication from several threads at once (MPI_THREAD_MULTIPLE); with messages, a
# wait that held the other threads out of MPI would hang.
for ranks in 2 3 4; do built rma_threads && expect_success "rma_threads n=$ranks" "$ranks" -- "$BUILD/rma_threads"; done
is_braid && built rma_threads && expect_success "rma_threads n=3 BRAID_CMA=off" 3 BRAID_CMA=off -- "$BUILD/rma_threads"
for ranks in 2 3; do built rma_threads_shared && expect_success "rma_threads_shared n=$ranks" "$ranks" -- "$BUILD/rma_threads_shared"; done
is_braid && built rma_threads_shared && expect_success "rma_threads_shared n=3 BRAID_CMA=off BRAID_WIN_CREATE_SHARE=off" 3 BRAID_CMA=off BRAID_WIN_CREATE_SHARE=off -- "$BUILD/rma_threads_shared"
# The soak's short version on one node (scripts/soak runs it for 10 minutes on 2 virtual nodes).
built soak && expect_success "soak n=4 6 s" 4 -- "$BUILD/soak" 6 3
is_braid && built rma_ops && expect_success "rma_ops n=3 BRAID_PROGRESS_THREAD=on BRAID_CMA=off" 3 BRAID_PROGRESS_THREAD=on BRAID_CMA=off -- "$BUILD/rma_ops"

# The profiling interface: a tool library (pmpi_tool.c) defining MPI_ functions over their PMPI_
# twins, linked in front of the MPI library, then preloaded into a program not linked to it.
if built pmpi_counts && selected pmpi; then
    if "$CC" -std=c99 "${CFLAGS[@]}" -fPIC -shared -o "$BUILD/libpmpi_tool.so" "$SOURCES/pmpi_tool.c" >"$LOG_DIR/build-pmpi_tool.log" 2>&1 &&
        "$CC" -std=c99 "${CFLAGS[@]}" -o "$BUILD/pmpi_counts_linked" "$SOURCES/pmpi_counts.c" -L"$BUILD" -Wl,-rpath,"$BUILD" -lpmpi_tool \
            >>"$LOG_DIR/build-pmpi_tool.log" 2>&1; then
        for ranks in 2 3; do
            expect_success "pmpi tool linked n=$ranks" "$ranks" -- "$BUILD/pmpi_counts_linked" tool
            expect_success "pmpi tool preloaded n=$ranks" "$ranks" LD_PRELOAD="$BUILD/libpmpi_tool.so" -- "$BUILD/pmpi_counts" tool
        done
    else
        fail "build pmpi tool (shared library and linked program)" "$(explain "$LOG_DIR/build-pmpi_tool.log")"; keep_logs
    fi
    expect_success "pmpi no tool n=2" 2 -- "$BUILD/pmpi_counts" none
fi

if selected cxx_program; then
    if "$CXX" -Wall -Wextra -Werror "${CXXFLAGS[@]}" -o "$BUILD/cxx_program" "$SOURCES/cxx_program.cpp" >"$LOG_DIR/build-cxx_program.log" 2>&1; then
        expect_success "cxx_program n=2" 2 -- "$BUILD/cxx_program"
    else
        fail "build cxx_program (C++, -Wall -Wextra -Werror)" "$(explain "$LOG_DIR/build-cxx_program.log")"; keep_logs
    fi
fi

fatal_error_cases=("")
# MPI 4's MPI_ERRORS_ABORT: Open MPI 4.1 does not have it, and MPICH 4.0.2 fails an internal
# assertion in MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ABORT).
is_braid && fatal_error_cases+=(abort)
for fatal_case in "${fatal_error_cases[@]}"; do
if built fatal_error && selected fatal_error; then
    name="fatal_error n=2${fatal_case:+ $fatal_case}"
    run_job "$name" -- "${LAUNCH[@]}" 2 "$BUILD/fatal_error" $fatal_case
    if [ "$RC" -eq 0 ] || [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        fail "$name" "exit $RC: the job did not abort on an invalid rank"; keep_logs
    elif ! grep -q "MPI_Send" "$ERR"; then
        fail "$name" "stderr does not name MPI_Send: $(head -c 200 "$ERR")"; keep_logs
    elif is_braid && ! grep -qi "rank" "$ERR"; then
        fail "$name" "stderr does not explain the invalid rank: $(head -c 200 "$ERR")"; keep_logs
    elif [ -n "$LEFTOVER" ]; then
        fail "$name" "$LEFTOVER"; keep_logs
    else
        pass "$name"
    fi
fi
done

if built unsupported && selected "unsupported fatal"; then
    name="unsupported fatal n=2"
    run_job "$name" -- "${LAUNCH[@]}" 2 "$BUILD/unsupported" fatal
    if [ "$RC" -eq 0 ] || [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        fail "$name" "exit $RC: MPI_Win_fence on MPI_WIN_NULL did not end the job"; keep_logs
    # Open MPI 4.1's launcher loses the message of an aborting rank now and then (ORTE_ERROR_LOG).
    elif [ "$MPI_IMPL" != openmpi ] && ! grep -q "MPI_Win_fence" "$ERR"; then
        fail "$name" "stderr does not name MPI_Win_fence: $(head -c 200 "$ERR")"; keep_logs
    elif is_braid && ! grep -q "not a window" "$ERR"; then
        fail "$name" "stderr does not say MPI_WIN_NULL is not a window: $(head -c 200 "$ERR")"; keep_logs
    elif [ -n "$LEFTOVER" ]; then
        fail "$name" "$LEFTOVER"; keep_logs
    else
        pass "$name"
    fi
fi

if built abort_code && selected abort_code; then
    name="abort_code n=3"
    run_job "$name" -- "${LAUNCH[@]}" 3 "$BUILD/abort_code"
    if [ "$RC" -ne 7 ]; then
        fail "$name" "exit $RC, expected MPI_Abort's code 7"; keep_logs
    elif grep -q "survived" "$ERR"; then
        fail "$name" "$(explain "$ERR")"; keep_logs
    elif [ -n "$LEFTOVER" ]; then
        fail "$name" "$LEFTOVER"; keep_logs
    else
        pass "$name"
    fi
fi

# killed_rank NAME NAMED LIMIT_MS -- LAUNCHER...: rank 1 of 3 dies of SIGKILL; the job must end
# within LIMIT_MS, not with status 0, leave nothing, and (NAMED, an extended regex, for Braid)
# say which rank died.
killed_rank() {
    local name="$1" named="$2" limit_ms="$3" stamp="$WORK/kill-stamp" ended_ms reaction_ms
    shift 4
    selected "$name" || return 0
    rm -f "$stamp"
    run_job "$name" -- "$@" 3 "$BUILD/kill_rank" "$stamp"
    ended_ms=$(($(date +%s%N) / 1000000))
    if [ ! -s "$stamp" ]; then
        fail "$name" "rank 1 never reached its SIGKILL (exit $RC: $(explain "$ERR"))"; keep_logs
        return
    fi
    reaction_ms=$((ended_ms - $(cat "$stamp")))
    if [ "$reaction_ms" -ge "$limit_ms" ]; then
        fail "$name" "the job ended ${reaction_ms} ms after rank 1 died (limit $limit_ms ms, exit $RC)"; keep_logs
    elif [ "$RC" -eq 0 ]; then
        fail "$name" "exit 0 although rank 1 was killed"; keep_logs
    elif [ -n "$named" ] && ! grep -Eq "$named" "$ERR" "$OUT"; then
        fail "$name" "rank 1's death is not named ($named): $(head -c 200 "$ERR")"; keep_logs
    elif [ -n "$LEFTOVER" ]; then
        fail "$name" "$LEFTOVER"; keep_logs
    else
        pass "$name (stopped ${reaction_ms} ms after the kill)"
    fi
}
if built kill_rank; then
    if is_braid; then
        killed_rank "kill_rank n=3" 'rank 1\b.*(SIGKILL|signal 9)' 2000 -- "${LAUNCH[@]}"
        if selected "kill_rank n=3" && [ "$RC" -ne 137 ]; then fail "kill_rank n=3 status" "exit $RC, expected 128 + 9"; fi
        # Under the other launchers: Hydra ends the job itself, Open MPI's mpirun (PMIx) too, and
        # the ranks that wait for rank 1 find its process gone on their own (BRAID_PEER_CHECK_MS).
        # The 2 s bar holds for braid run, Hydra and Slurm; Open MPI's mpirun takes about 1 s of
        # its own to end a job (1.0-2.0 s seen here), so it gets 4 s.
        command -v mpiexec.hydra >/dev/null && killed_rank "kill_rank mpiexec.hydra n=3" 'signal 9|Killed|rank 1 is unreachable' 2000 -- mpiexec.hydra -n
        command -v mpirun.openmpi >/dev/null && killed_rank "kill_rank PMIx mpirun.openmpi n=3" 'rank 1|signal 9' 4000 -- env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 mpirun.openmpi -n
    else
        killed_rank "kill_rank n=3" "" 2000 -- "${LAUNCH[@]}"
    fi
fi

# braid run itself killed with SIGKILL while its ranks wait: they must notice and end within 2 s,
# leaving no process and no /dev/shm file.
if is_braid && built orphaned && selected orphaned; then
    name="orphaned n=3 (braid run killed)"
    ready="$WORK/orphaned-ready"
    rm -f "$ready"
    before="$(shm_files)"
    setsid "${LAUNCH[@]}" 3 "$BUILD/orphaned" "$ready" >"$LOG_DIR/orphaned.out" 2>&1 </dev/null &
    launcher=$!
    disown "$launcher"
    for _ in $(seq 1 100); do [ -s "$ready" ] && break; sleep 0.1; done
    if [ ! -s "$ready" ]; then
        fail "$name" "the ranks never started waiting: $(explain "$LOG_DIR/orphaned.out")"
        kill -9 "$launcher" 2>/dev/null
    else
        kill -9 "$launcher"
        killed_at=$(date +%s%N)
        while pgrep -f "$BUILD/orphaned" >/dev/null && [ $((($(date +%s%N) - killed_at) / 1000000)) -lt 5000 ]; do sleep 0.05; done
        gone_ms=$((($(date +%s%N) - killed_at) / 1000000))
        left="$(pgrep -f "$BUILD/orphaned" | tr '\n' ' ')"
        pkill -9 -f "$BUILD/orphaned" 2>/dev/null
        sleep 0.3
        files="$(comm -13 <(echo "$before") <(shm_files) | tr '\n' ' ')"
        if [ -n "$left" ] || [ "$gone_ms" -ge 2000 ]; then
            fail "$name" "ranks ${left:-} still ran ${gone_ms} ms after braid run was killed"
        elif [ -n "$files" ]; then
            fail "$name" "left /dev/shm files: $files"
        else
            pass "$name (ranks gone ${gone_ms} ms after the kill)"
        fi
    fi
fi

[ "$failed_logs" -gt 0 ] && echo "# logs of failed cases: $LOG_DIR"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
