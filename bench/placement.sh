#!/usr/bin/env bash
# Placement by the measured pattern against blocked and round-robin placement, as the network
# sharing study (Narayanaswamy, Balaji, Feng: CG faster blocked, MG worse blocked, no fixed rule
# right) calls for: 8 ranks on a virtual cluster of 4 nodes x 2, one shaped rail per node.
# For each program: one profiled run (blocked), `braid place` on its profile, then interleaved
# repetitions of blocked (--map-by core), cyclic (--map-by node) and pattern (--placement).
# Programs: tests/c/heavy_pairs.c (pairs that blocked and cyclic both split; 4 MiB per pair and
# iteration, 10 iterations) and NPB CG, MG, FT, IS class A.
# Prints per program and placement: the median time (min-max), the share of bytes across nodes
# that `braid place` predicts, and pattern's time against the better of blocked and cyclic.
#
# Usage:  bench/placement.sh [--reps 5] [--benchmarks "heavy cg mg ft is"] [--class A] [--rail 1gbit]
# Needs root (the cluster), `cargo build --release`, and for NPB the benchmarks built by
# scripts/nas (scripts/nas --benchmarks "cg mg ft is" --impls braid --reps 1). The cluster is
# removed on exit; every run is kept in bench/results/placement-<date>-raw.csv.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BRAID="$ROOT/target/release/braid"
REPS=5
BENCHMARKS="heavy cg mg ft is"
CLASS=A
RAIL=1gbit
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS="$2"; shift 2 ;;
        --benchmarks) BENCHMARKS="$2"; shift 2 ;;
        --class) CLASS="$2"; shift 2 ;;
        --rail) RAIL="$2"; shift 2 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "placement.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "placement.sh: building a virtual cluster needs root" >&2; exit 1; }
[ -x "$BRAID" ] || { echo "placement.sh: run cargo build --release first" >&2; exit 1; }
NPB="${NPB_WORK:-/tmp/braid-nas}/braid/NPB3.4-MPI/bin"
# shellcheck source=bench/cluster-lib.sh
source "$ROOT/bench/cluster-lib.sh"
bench_workspace placement pl

"$ROOT/bin/braidcc" -std=c99 -O2 "$ROOT/tests/c/heavy_pairs.c" -o "$WORK/heavy" || exit 1
# program NAME: the command line of benchmark NAME.
program() {
    case "$1" in
        heavy) echo "$WORK/heavy 4194304 10" ;;
        *) echo "$NPB/$1.$CLASS.x" ;;
    esac
}
for bench in $BENCHMARKS; do
    [ "$bench" = heavy ] || [ -x "$NPB/$bench.$CLASS.x" ] || { echo "$NPB/$bench.$CLASS.x is missing: scripts/nas --benchmarks \"$bench\" --class $CLASS --impls braid --reps 1" >&2; exit 1; }
done
sampled_cluster --nodes 4 --rails "$RAIL"

# time_of LOG: the run's time in seconds (NPB's "Time in seconds", or heavy_pairs' line).
time_of() {
    awk '/Time in seconds =/ {print $5} /^heavy_pairs:/ {print $4}' "$1"
}
# run BENCH PLACEMENT REP ARGS...: one run, its time appended to the raw file.
run() {
    local bench="$1" placement="$2" rep="$3" log="$WORK/$1-$2-$3.log"
    shift 3
    # shellcheck disable=SC2046 # the program's command line is words
    if ! timeout 600 "$BRAID" run --cluster "$CLUSTER" -n 8 --ppn 2 "$@" $(program "$bench") >"$log" 2>&1 ||
        { [ "$bench" != heavy ] && ! grep -q "Verification    =               SUCCESSFUL" "$log"; }; then
        echo "FAIL $bench $placement rep $rep (see $log)" >&2
        trap '"$BRAID" cluster down "$CLUSTER" >/dev/null 2>&1' EXIT # keep the logs
        exit 1
    fi
    echo "$bench,$placement,$rep,$(time_of "$log")" >>"$RAW"
}

echo "bench,placement,rep,seconds" >"$RAW"
echo "# $(date -u +%FT%TZ): 8 ranks on 4 nodes x 2, one $RAIL rail per node, $REPS reps; load $(cut -d' ' -f1-3 /proc/loadavg)"
for bench in $BENCHMARKS; do
    run "$bench" profiled 0 --profile "$WORK/$bench-profile"
    "$BRAID" place "$WORK/$bench-profile" --cluster "$CLUSTER" --ppn 2 -o "$WORK/$bench.placement" >"$WORK/$bench.predicted" || exit 1
done
for rep in $(seq 1 "$REPS"); do
    for bench in $BENCHMARKS; do
        run "$bench" blocked "$rep" --map-by core
        run "$bench" cyclic "$rep" --map-by node
        run "$bench" pattern "$rep" --placement "$WORK/$bench.placement"
    done
    echo "rep $rep done"
done
echo
for bench in $BENCHMARKS; do
    echo "## $bench: predicted bytes across nodes"
    grep -E '^(blocked|cyclic|pattern) ' "$WORK/$bench.predicted"
done
echo
python3 - "$RAW" "$WORK" $BENCHMARKS <<'PY'
import csv, re, statistics, sys
raw, work, benches = sys.argv[1], sys.argv[2], sys.argv[3:]
times = {}
for row in csv.DictReader(open(raw)):
    if row["placement"] != "profiled":
        times.setdefault((row["bench"], row["placement"]), []).append(float(row["seconds"]))
print("| program | blocked (s) | cyclic (s) | pattern (s) | across nodes: blocked / cyclic / pattern | pattern / better of the two |")
print("|---|---|---|---|---|---|")
for bench in benches:
    shares = {}
    for line in open(f"{work}/{bench}.predicted"):
        match = re.match(r"^(blocked|cyclic|pattern)\s.*?([\d.]+)%", line)
        if match:
            shares[match.group(1)] = match.group(2)
    cells, medians = [], {}
    for placement in ("blocked", "cyclic", "pattern"):
        values = times.get((bench, placement), [])
        medians[placement] = statistics.median(values)
        cells.append(f"{medians[placement]:.3f} ({min(values):.3f}-{max(values):.3f})")
    better = min(medians["blocked"], medians["cyclic"])
    name = "heavy pairs" if bench == "heavy" else bench.upper()
    print(f"| {name} | " + " | ".join(cells) + f" | {shares.get('blocked')}% / {shares.get('cyclic')}% / {shares.get('pattern')}% | {medians['pattern'] / better:.2f} |")
PY
echo
echo "# every run: $RAW"
