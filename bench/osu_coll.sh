#!/usr/bin/env bash
# Collectives on one node, as a user meets them: the unmodified OSU Micro-Benchmarks 7.4
# collective benchmarks, built with each library's compiler wrapper, run on Braid, Open MPI and
# MPICH side by side. The plan: at 2 ranks (one per core, bound) barrier, bcast, reduce,
# allreduce, allgather, alltoall, gather, scatter at 8 B, 1 KiB, 64 KiB and 1 MiB; at 4 ranks
# (two per core, unbound) bcast, allreduce and alltoall at 8 B and 64 KiB. Reductions on MPI_INT.
# Repetitions run interleaved (for each repetition every point, each library in an order that
# rotates), so drifting load hits all alike; the table gives the median of OSU's average latency
# (us) per library, the ratios of those medians Braid / Open MPI and Braid / MPICH, and the median
# (and range) of the ratios within each repetition.
#
# Usage:  bench/osu_coll.sh [--reps 5] [--impls "braid openmpi mpich"] [--only BENCH] [--iterations N]
# Needs `cargo build --release` and the peers (scripts/setup --peers). OSU's source comes from
# OSU_SOURCE (default /work/.mirror/sherrywong1220+osu-micro-benchmarks-7.4/repo, a git directory
# or a source tree); builds stay in $OSU_COLL_WORK (default /tmp/braid-osu-coll/IMPL).
# Output: the table on stdout; every run in bench/results/osu-coll-<date>-raw.csv
# (impl,ranks,bench,bytes,rep,us), the medians in osu-coll-<date>.csv, and docs/img/osu-coll.svg
# (Braid's time over each peer's at every point, drawn by braid-report).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPS=5
IMPLS="braid openmpi mpich"
ONLY=""
ITERATIONS=200
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS="$2"; shift 2 ;;
        --impls) IMPLS="$2"; shift 2 ;;
        --only) ONLY="$2"; shift 2 ;;
        --iterations) ITERATIONS="$2"; shift 2 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "osu_coll.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
SOURCE="${OSU_SOURCE:-/work/.mirror/sherrywong1220+osu-micro-benchmarks-7.4/repo}"
BASE="${OSU_COLL_WORK:-/tmp/braid-osu-coll}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
BENCHES="barrier bcast reduce allreduce allgather alltoall gather scatter"

# build IMPL: OSU's collective benchmarks with IMPL's wrappers, in $BASE/IMPL.
build() {
    local impl="$1" cc cxx dir="$BASE/$1"
    case "$impl" in
        braid) cc="$ROOT/bin/braidcc"; cxx="$ROOT/bin/braidcxx" ;;
        openmpi) cc=mpicc.openmpi; cxx=mpicxx.openmpi ;;
        mpich) cc=mpicc.mpich; cxx=mpicxx.mpich ;;
        *) echo "unknown implementation $impl" >&2; return 1 ;;
    esac
    command -v "$cc" >/dev/null || return 1
    if [ ! -x "$dir/src/c/mpi/collective/blocking/osu_alltoall" ]; then
        rm -rf "$dir" && mkdir -p "$dir/src"
        if [ -d "$SOURCE/.git" ] || [ -f "$SOURCE/HEAD" ]; then
            git --git-dir="$( [ -d "$SOURCE/.git" ] && echo "$SOURCE/.git" || echo "$SOURCE")" archive HEAD | tar -x -C "$dir/src" || return 1
        else
            cp -r "$SOURCE/." "$dir/src/" || return 1
        fi
        (cd "$dir/src" && ./configure CC="$cc" CXX="$cxx" >"$dir/configure.log" 2>&1) || return 1
        for bench in $BENCHES; do
            make -C "$dir/src/c/mpi/collective/blocking" "osu_$bench" >>"$dir/build.log" 2>&1 || return 1
        done
    fi
}

# launcher IMPL RANKS: the launch command, bound when every rank has its own core.
launcher() {
    local impl="$1" ranks="$2" bind=core
    [ "$ranks" -le "$(nproc)" ] || bind=none
    case "$impl" in
        braid) echo "$ROOT/target/release/braid run -n $ranks --bind-to $bind" ;;
        openmpi) echo "mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to $bind -n $ranks" ;;
        mpich) if [ "$bind" = core ]; then echo "mpiexec.mpich -bind-to core -n $ranks"; else echo "mpiexec.mpich -n $ranks"; fi ;;
    esac
}

AVAILABLE=()
for impl in $IMPLS; do
    if build "$impl"; then AVAILABLE+=("$impl"); else echo "# skipping $impl: it does not build (see $BASE/$impl)" >&2; fi
done
[ "${#AVAILABLE[@]}" -gt 0 ] || exit 1
PLAN=()
for bench in $BENCHES; do
    for size in 8 1024 65536 1048576; do
        [ "$bench" = barrier ] && [ "$size" != 8 ] && continue
        PLAN+=("2 $bench $size")
    done
done
for bench in bcast allreduce alltoall; do
    for size in 8 65536; do PLAN+=("4 $bench $size"); done
done
STAMP="osu-coll-$(date +%Y-%m-%d-%H%M%S)"
mkdir -p "$ROOT/bench/results"
RAW="$ROOT/bench/results/$STAMP-raw.csv"
echo "impl,ranks,bench,bytes,rep,us" >"$RAW"
echo "# $(date -u +%FT%TZ): OSU 7.4, $REPS interleaved reps, $ITERATIONS iterations per point; load $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq 1 "$REPS"); do
    for entry in "${PLAN[@]}"; do
        read -r ranks bench size <<<"$entry"
        [ -n "$ONLY" ] && [ "$bench" != "$ONLY" ] && continue
        count=${#AVAILABLE[@]}
        for turn in $(seq 0 $((count - 1))); do
            impl="${AVAILABLE[$(((turn + rep) % count))]}"
            binary="$BASE/$impl/src/c/mpi/collective/blocking/osu_$bench"
            args=(-i "$ITERATIONS" -x 20)
            [ "$bench" != barrier ] && args+=(-m "$size:$size")
            [[ "$bench" == *reduce* ]] && args+=(-T mpi_int)
            # shellcheck disable=SC2046 # the launcher is words
            if ! output="$(timeout 300 $(launcher "$impl" "$ranks") "$binary" "${args[@]}" 2>&1)"; then
                echo "FAIL $impl $ranks $bench $size: $(echo "$output" | tail -2)" >&2
                continue
            fi
            # Barrier prints the latency alone, the others "size latency".
            us="$(echo "$output" | awk -v bench="$bench" -v size="$size" '/^[[:space:]]*[0-9]/ { if (bench == "barrier") { print $1; exit } else if ($1 == size) { print $2; exit } }')"
            [ -n "$us" ] && echo "$impl,$ranks,$bench,$size,$rep,$us" >>"$RAW"
        done
    done
    echo "rep $rep done" >&2
done
python3 - "$RAW" "${RAW%-raw.csv}.csv" <<'PY'
import csv, statistics, sys
runs, by_rep = {}, {}
for row in csv.DictReader(open(sys.argv[1])):
    key = (int(row["ranks"]), row["bench"], int(row["bytes"]), row["impl"])
    runs.setdefault(key, []).append(float(row["us"]))
    by_rep.setdefault(key, {})[row["rep"]] = float(row["us"])
impls = [impl for impl in ("braid", "openmpi", "mpich") if any(key[3] == impl for key in runs)]
points = sorted({key[:3] for key in runs}, key=lambda k: (k[0], ["barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall", "gather", "scatter"].index(k[1]), k[2]))
def size_text(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1024 else f"{n} B"
head = "| ranks | benchmark | size | " + " | ".join(f"{impl} (us)" for impl in impls)
ratios = [other for other in ("openmpi", "mpich") if other in impls and "braid" in impls]
print(head + "".join(f" | braid / {other} | per repetition" for other in ratios) + " |")
print("|---" * (3 + len(impls) + 2 * len(ratios)) + "|")
with open(sys.argv[2], "w") as out:
    out.write("ranks,bench,bytes," + ",".join(impls) + "\n")
    for ranks, bench, size in points:
        medians = {impl: statistics.median(runs[(ranks, bench, size, impl)]) for impl in impls if (ranks, bench, size, impl) in runs}
        cells = [f"{medians[impl]:.2f}" if impl in medians else "-" for impl in impls]
        line = f"| {ranks} | {bench} | {size_text(size) if bench != 'barrier' else '-'} | " + " | ".join(cells)
        for other in ratios:
            line += f" | {medians['braid'] / medians[other]:.2f}" if "braid" in medians and other in medians else " | -"
            # The VM's speed drifts between repetitions; a repetition runs every library at
            # nearly the same time, so the ratio within each is steadier than the ratio of medians.
            mine, theirs = by_rep.get((ranks, bench, size, "braid"), {}), by_rep.get((ranks, bench, size, other), {})
            paired = sorted(mine[rep] / theirs[rep] for rep in mine if rep in theirs)
            line += f" | {statistics.median(paired):.2f} ({paired[0]:.2f}-{paired[-1]:.2f})" if paired else " | -"
        print(line + " |")
        out.write(f"{ranks},{bench},{size}," + ",".join(f"{medians.get(impl, '')}" for impl in impls) + "\n")
PY
if (cd "$ROOT" && cargo build --release -q -p braid-report); then
    "$ROOT/target/release/braid-report" "${RAW%-raw.csv}.csv" "$ROOT/docs/img" | sed 's|^|# |'
else
    echo "# braid-report did not build; no plot" >&2
fi
echo
echo "# every run: $RAW"
