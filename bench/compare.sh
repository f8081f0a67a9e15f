#!/usr/bin/env bash
# Braid against Open MPI and MPICH on this node, with bench/osu.c.
#
# Usage: bench/compare.sh [--full] [--reps R] [--impls "braid openmpi mpich"] [--only BENCH] [--no-plots]
#                         [--baseline DIR] [--background N] [--plan "RANKS BENCH ARGS..."]
#                         [--sessions rank|launcher]
#   (default) quick mode: R=3, every fourth power of two as message size, fewer iterations
#   --full    R=5, every power of two, full iteration counts, plus multi-pair runs at 4 ranks
#   --reps R  repetitions (medians are taken over them)
#   --impls   which implementations to run (those missing on this machine are skipped)
#   --only BENCH  run only the plan's BENCH entries (e.g. latency); implies --no-plots
#   --no-plots  skip drawing docs/img/*.svg
#   --baseline DIR  also run "braid-before": the Braid checkout in DIR (an older commit, built with
#             `cargo build --release -p braid-mpi -p braid-cli`), interleaved with the others, so the
#             braid/braid-before column is the change's ratio measured under the same load
#   --background N  keep N busy processes at nice 19 running during every benchmark (a node with a
#             low-priority job on it); they are ended on exit
#   --plan "RANKS BENCH ARGS..."  run this entry instead of the mode's plan (repeatable), e.g.
#             --plan "2 latency -n 8 -m 8" for 8-byte latency alone; implies --no-plots
#   --sessions rank|launcher  launcher (default): each launcher's own layout, as users get it
#             (Braid's and Open MPI's ranks share the launcher's session, MPICH's Hydra gives each
#             rank its own). rank: every rank in a session of its own (`setsid -w` in front of the
#             program for Braid and Open MPI). With autogroup scheduling
#             (/proc/sys/kernel/sched_autogroup_enabled) the kernel shares the CPUs between
#             sessions, so on a loaded machine ranks with a session each get more CPU; and a
#             rank's sched_yield only yields to tasks of its own session.
# Needs for Braid: `cargo build --release` (bin/braidcc, target/release/braid, libbraid.so).
#
# The implementations run INTERLEAVED so that drifting machine load hits all of them alike:
# for each benchmark, for rep in 1..R: braid, openmpi, mpich, in an order that rotates with rep,
# so that no implementation always follows the same one (a run right after MPICH's spinning
# 4-rank runs measured a few percent slower).
# Launch settings: 2-rank runs are bound one rank per core (Braid --bind-to core, Open MPI
# --bind-to core, MPICH -bind-to core); 4-rank runs oversubscribe the 2 cores and are not bound.
# Open MPI runs as root need --allow-run-as-root and --oversubscribe; its shared-memory (vader)
# and MPICH's shared-memory settings are left at their defaults.
#
# Output: a table of medians with Braid/peer ratios on stdout (the `better` column says whether
# lower or higher values win for that row); bench/results/<date>.csv (medians,
# the input of braid-report), bench/results/<date>-raw.csv (every repetition) and, through
# `braid-report`, docs/img/latency.svg, docs/img/bandwidth.svg and docs/img/oversubscribed.svg;
# bench/results/<date>-load.csv: the 1-minute load average at the start of every round (the
# background processes included), since a loaded node lands in the slow modes more often.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE=quick
REPS=""
IMPLS="braid openmpi mpich"
ONLY=""
PLOTS=1
BASELINE=""
BACKGROUND=0
CUSTOM_PLAN=()
SESSIONS=launcher
while [ $# -gt 0 ]; do
    case "$1" in
    --full) MODE=full ;;
    --reps) REPS="$2"; shift ;;
    --impls) IMPLS="$2"; shift ;;
    --no-plots) PLOTS=0 ;;
    --only) ONLY="$2"; PLOTS=0; shift ;;
    --baseline) BASELINE="$(cd "$2" && pwd)"; IMPLS="$IMPLS braid-before"; PLOTS=0; shift ;;
    --background) BACKGROUND="$2"; PLOTS=0; shift ;;
    --plan) CUSTOM_PLAN+=("$2"); PLOTS=0; shift ;;
    --sessions) SESSIONS="$2"; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "compare.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$SESSIONS" in rank | launcher) ;; *) echo "compare.sh: --sessions takes rank or launcher, not '$SESSIONS'" >&2; exit 2 ;; esac
[ -z "$REPS" ] && { [ "$MODE" = full ] && REPS=5 || REPS=3; }
RUN_TIMEOUT=180
WORK="$(mktemp -d "${TMPDIR:-/tmp}/braid-bench.XXXXXX")"
BUSY_PIDS=()
trap '[ "${#BUSY_PIDS[@]}" -gt 0 ] && kill "${BUSY_PIDS[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 1 "$BACKGROUND"); do
    nice -n 19 sh -c 'while :; do :; done' &
    BUSY_PIDS+=("$!")
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# build IMPL: compiles osu.c with that implementation's wrapper into $WORK/osu-IMPL.
build() {
    local compiler
    case "$1" in
    braid) compiler="$ROOT/bin/braidcc"; [ -x "$ROOT/target/release/braid" ] || return 1 ;;
    braid-before) compiler="$BASELINE/bin/braidcc"; [ -x "$BASELINE/target/release/braid" ] || return 1 ;;
    openmpi) compiler=mpicc.openmpi ;;
    mpich) compiler=mpicc.mpich ;;
    *) echo "compare.sh: unknown implementation $1" >&2; return 1 ;;
    esac
    command -v "$compiler" >/dev/null 2>&1 || [ -x "$compiler" ] || return 1
    "$compiler" -std=c99 -O2 -o "$WORK/osu-$1" "$ROOT/bench/osu.c" 2>"$WORK/build-$1.log"
}

# launcher IMPL RANKS: prints the launch command (bound when every rank has its own core).
launcher() {
    local impl="$1" ranks="$2" cores session=""
    cores="$(nproc)"
    [ "$SESSIONS" = rank ] && session="setsid -w"
    case "$impl" in
    braid | braid-before)
        local checkout="$ROOT"
        [ "$impl" = braid-before ] && checkout="$BASELINE"
        if [ "$ranks" -le "$cores" ]; then echo "$checkout/target/release/braid run -n $ranks --bind-to core $session"
        else echo "$checkout/target/release/braid run -n $ranks --bind-to none $session"; fi ;;
    openmpi)
        if [ "$ranks" -le "$cores" ]; then echo "mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to core -n $ranks $session"
        else echo "mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to none -n $ranks $session"; fi ;;
    mpich)
        if [ "$ranks" -le "$cores" ]; then echo "mpiexec.mpich -bind-to core -n $ranks"
        else echo "mpiexec.mpich -n $ranks"; fi ;;
    esac
}

AVAILABLE=()
for impl in $IMPLS; do
    if build "$impl"; then
        AVAILABLE+=("$impl")
    else
        echo "# skipping $impl: not available or osu.c does not build with it ($(head -c 160 "$WORK/build-$impl.log" 2>/dev/null))" >&2
    fi
done
[ "${#AVAILABLE[@]}" -gt 0 ] || { echo "compare.sh: no implementation available" >&2; exit 1; }

# Benchmarks: "RANKS ARGS..." (the bench name is the first argument to osu).
# One-sided: put/get latency at 8 B, bandwidth at 1 MiB, fetch-and-op latency, in windows of
# MPI_Win_allocate and (-W create, rows *_create) of MPI_Win_create.
RMA_PLAN=()
for window in allocate create; do
    RMA_PLAN+=("2 put_lat -n 8 -m 8 -W $window" "2 get_lat -n 8 -m 8 -W $window" "2 fop_lat -W $window"
        "2 put_bw -n 1048576 -m 1048576 -W $window" "2 get_bw -n 1048576 -m 1048576 -W $window")
done
if [ "$MODE" = full ]; then
    PLAN=("2 latency" "2 bw" "2 bibw" "2 mr" "4 mr" "4 multi_lat -m 65536" "4 multi_bw -m 1048576 -i 50" "2 ring" "4 ring" "2 allreduce" "4 allreduce" "2 waitcpu -w 50" "4 waitcpu -w 50" "${RMA_PLAN[@]}")
else
    PLAN=("2 latency -q -m 1048576" "2 bw -q -m 4194304" "2 bibw -q -m 4194304" "2 mr -q" "2 ring -q" "4 ring -q" "4 allreduce -q" "2 waitcpu -q -w 50" "4 waitcpu -q -w 50" "${RMA_PLAN[@]}")
fi

[ "${#CUSTOM_PLAN[@]}" -gt 0 ] && PLAN=("${CUSTOM_PLAN[@]}")

if [ -n "$ONLY" ]; then
    SELECTED=()
    for entry in "${PLAN[@]}"; do
        read -r _ bench _ <<<"$entry"
        [ "$bench" = "$ONLY" ] && SELECTED+=("$entry")
    done
    [ "${#SELECTED[@]}" -gt 0 ] || { echo "compare.sh: no $ONLY benchmark in the $MODE plan" >&2; exit 2; }
    PLAN=("${SELECTED[@]}")
fi

RAW="$WORK/raw.csv"
echo "impl,rep,bench,ranks,size,value,unit" >"$RAW"
LOAD="$WORK/load.csv"
echo "bench,ranks,rep,load1" >"$LOAD"
echo "# compare.sh: mode=$MODE reps=$REPS implementations=${AVAILABLE[*]} cores=$(nproc) background=$BACKGROUND $(date -u +%Y-%m-%dT%H:%M:%SZ)"
for entry in "${PLAN[@]}"; do
    read -r ranks args <<<"$entry"
    for rep in $(seq 1 "$REPS"); do
        read -r load1 _ </proc/loadavg
        echo "${args%% *},$ranks,$rep,$load1" >>"$LOAD"
        for turn in $(seq 0 $((${#AVAILABLE[@]} - 1))); do
            impl="${AVAILABLE[$(((rep + turn) % ${#AVAILABLE[@]}))]}"
            log="$WORK/run.log"
            # shellcheck disable=SC2046
            if timeout -k 5 "$RUN_TIMEOUT" $(launcher "$impl" "$ranks") "$WORK/osu-$impl" $args >"$log" 2>"$WORK/run.err" </dev/null; then
                grep -v '^#' "$log" | grep ',' | sed "s/^/$impl,$rep,/; s/^\([^,]*,[^,]*,[^,]*\),/\1,$ranks,/" >>"$RAW"
            else
                echo "# $impl: osu $args at $ranks ranks failed (rep $rep): $(tail -n 2 "$WORK/run.err" | tr '\n' ' ' | head -c 200)" >&2
            fi
        done
    done
    echo "# done: $ranks ranks, osu $args" >&2
done

# Medians over the repetitions: sort by key then value, then pick the middle of each run of keys.
MEDIANS="$WORK/medians.csv"
echo "impl,bench,ranks,size,median,unit,reps" >"$MEDIANS"
tail -n +2 "$RAW" | awk -F, '{print $1 "," $3 "," $4 "," $5 "," $7 "\t" $6}' | sort -t $'\t' -k1,1 -k2,2g |
    awk -F'\t' '
        function flush() { if (n > 0) { m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; split(key, k, ","); printf "%s,%s,%s,%s,%.6g,%s,%d\n", k[1], k[2], k[3], k[4], m, k[5], n } }
        $1 != key { flush(); key = $1; n = 0 }
        { v[++n] = $2 }
        END { flush() }' | sort -t, -k2,2 -k3,3n -k4,4n -k1,1 >>"$MEDIANS"

# Table: one row per (bench, ranks, size), the median of each implementation, Braid/peer ratios.
echo
{
    header="bench ranks size unit"
    for impl in "${AVAILABLE[@]}"; do header="$header $impl"; done
    has_braid=0
    for impl in "${AVAILABLE[@]}"; do [ "$impl" = braid ] && has_braid=1; done
    if [ "$has_braid" = 1 ]; then
        for impl in "${AVAILABLE[@]}"; do [ "$impl" != braid ] && header="$header braid/$impl"; done
    fi
    echo "$header better"
    tail -n +2 "$MEDIANS" | awk -F, -v impls="${AVAILABLE[*]}" -v has_braid="$has_braid" '
        BEGIN { count = split(impls, order, " ") }
        {
            row = $2 " " $3 " " $4 " " $6
            if (!(row in seen)) { seen[row] = 1; rows[++nrows] = row; size_of[row] = $4; bench_of[row] = $2 " " $3 }
            value[row, $1] = $5
        }
        END {
            for (r = 1; r <= nrows; r++) {
                row = rows[r]; line = row
                for (i = 1; i <= count; i++) line = line " " ((row, order[i]) in value ? value[row, order[i]] : "-")
                if (has_braid)
                    for (i = 1; i <= count; i++) {
                        if (order[i] == "braid") continue
                        b = value[row, "braid"]; p = value[row, order[i]]
                        line = line " " (((row, "braid") in value) && ((row, order[i]) in value) && p != 0 ? sprintf("%.3g", b / p) : "-")
                    }
                unit = row; sub(/.* /, "", unit)
                print line " " ((unit == "MB/s" || unit == "msg/s" || unit == "Mops/s") ? "higher" : "lower")
            }
        }'
} | column -t

# Per-round ratios: Braid's value over each peer's from the same repetition (round), so that a
# round where one of them landed in a slow mode shows, not only the medians.
echo
echo "# per-round ratios (braid/peer in each repetition): median [lowest highest] over the rounds"
tail -n +2 "$RAW" | awk -F, '
    { key = $3 " " $4 " " $5 " " $7; v[$1, $2, key] = $6; keys[key] = 1; impls[$1] = 1; reps[$2] = 1 }
    END {
        for (key in keys) for (impl in impls) {
            if (impl == "braid") continue
            n = 0
            for (rep in reps) if (((("braid", rep, key) in v)) && (((impl, rep, key) in v)) && v[impl, rep, key] != 0) r[++n] = v["braid", rep, key] / v[impl, rep, key]
            if (n == 0) continue
            for (i = 2; i <= n; i++) { x = r[i]; j = i - 1; while (j > 0 && r[j] > x) { r[j + 1] = r[j]; j-- } r[j + 1] = x }
            m = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
            printf "%s braid/%s %.3g [%.3g %.3g] n=%d\n", key, impl, m, r[1], r[n], n
        }
    }' | sort -k1,1 -k2,2n -k3,3n -k5,5 | column -t

mkdir -p "$ROOT/bench/results"
STAMP="$(date +%Y-%m-%d)"
[ -e "$ROOT/bench/results/$STAMP.csv" ] && STAMP="$(date +%Y-%m-%d-%H%M%S)"
cp "$MEDIANS" "$ROOT/bench/results/$STAMP.csv"
cp "$RAW" "$ROOT/bench/results/$STAMP-raw.csv"
cp "$LOAD" "$ROOT/bench/results/$STAMP-load.csv"
echo
echo "# load average (1 min) at the rounds' starts: $(tail -n +2 "$LOAD" | cut -d, -f4 | sort -g | awk '{v[++n] = $1} END {if (n) printf "median %s [%s %s]", v[int((n + 1) / 2)], v[1], v[n]}')"
echo "# medians: bench/results/$STAMP.csv   every repetition: bench/results/$STAMP-raw.csv   load: bench/results/$STAMP-load.csv"

if [ "$PLOTS" = 1 ]; then
    if (cd "$ROOT" && cargo build --release -q -p braid-report); then
        "$ROOT/target/release/braid-report" "$ROOT/bench/results/$STAMP.csv" "$ROOT/docs/img" | sed 's|^|# |'
    else
        echo "# braid-report did not build; no plots" >&2
    fi
fi
