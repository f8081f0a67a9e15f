#!/usr/bin/env bash
# What the job profiler costs: an NPB benchmark (default CG class A at 4 ranks) built by
# scripts/nas with Braid's wrappers, run unprofiled and with `braid run --profile`, interleaved
# (rep 1 of both, then rep 2, ...). Prints each run's time as NPB reports it ("Time in seconds"),
# then the medians, spreads (min-max) and the profiled/unprofiled ratio of the medians.
#
# Usage:  bench/profile_overhead.sh [--reps 7] [--benchmark cg] [--class A] [--ranks 4]
# Needs scripts/nas to have built the benchmark for Braid (scripts/nas --benchmarks cg --impls braid
# --reps 1), in NPB_WORK (default /tmp/braid-nas). Profiles go to a temporary directory, removed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPS=7
BENCH=cg
CLASS=A
RANKS=4
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS="$2"; shift 2 ;;
        --benchmark) BENCH="$2"; shift 2 ;;
        --class) CLASS="$2"; shift 2 ;;
        --ranks) RANKS="$2"; shift 2 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
BINARY="${NPB_WORK:-/tmp/braid-nas}/braid/NPB3.4-MPI/bin/$BENCH.$CLASS.x"
BRAID="$ROOT/target/release/braid"
[ -x "$BINARY" ] || { echo "$BINARY is missing: build it with scripts/nas --benchmarks $BENCH --class $CLASS --impls braid --reps 1" >&2; exit 1; }
WORK="$(mktemp -d /tmp/braid-profile-overhead.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
plain=()
profiled=()
run_once() {
    local log="$WORK/run.log"
    (cd "$WORK" && "$BRAID" run "$@" -n "$RANKS" "$BINARY") >"$log" 2>&1 || { echo "FAIL: $(tail -n 3 "$log")" >&2; return 1; }
    grep -q "Verification    =               SUCCESSFUL" "$log" || { echo "FAIL: did not verify" >&2; return 1; }
    awk '/Time in seconds =/ {print $5}' "$log"
}
for rep in $(seq 1 "$REPS"); do
    a="$(run_once)" || exit 1
    rm -rf "$WORK/profile"
    b="$(run_once --profile "$WORK/profile")" || exit 1
    [ -s "$WORK/profile/profile.json" ] || { echo "FAIL: the profiled run left no profile.json" >&2; exit 1; }
    echo "rep $rep: unprofiled $a s, profiled $b s"
    plain+=("$a")
    profiled+=("$b")
done
stats() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.3f %.3f %.3f", m, v[1], v[NR]}'; }
read -r pm pmin pmax <<<"$(stats "${plain[@]}")"
read -r qm qmin qmax <<<"$(stats "${profiled[@]}")"
echo "$BENCH.$CLASS at $RANKS ranks, $REPS interleaved reps: unprofiled median $pm s ($pmin-$pmax), profiled median $qm s ($qmin-$qmax), ratio $(awk -v a="$qm" -v b="$pm" 'BEGIN {printf "%.4f", a / b}')"
