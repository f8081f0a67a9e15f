#!/usr/bin/env bash
# Every bar of the multinode work in one run, judged by bench/bars.py: needs what the benchmarks it
# calls need (root, iproute2, iperf3, python3, Open MPI, `cargo build --release`) and about 25
# minutes on a 2-vCPU machine. Nothing else should run meanwhile. In order:
#   multirail   bench/multirail.sh --reps 3 --no-openmpi --phases "bandwidths loaded" with the
#               strategies weighted and hetero, at MTU 1500 and 9000: hetero's share of the rails'
#               iperf3 sum on 2 and 3 rails, and its p99 of loaded 1 MiB transfers against weighted's
#   rail-cpu    bench/rail_cpu.sh --reps 3 --layouts at MTU 1500 and 9000: CPU per byte against iperf3
#   coll        bench/coll_cluster.sh --reps 5 --collectives allreduce,bcast,alltoall
#               --sizes 8,65536,4194304: against Open MPI, the cost model's agreement, auto
#               against flat
#   latency     bench/compare.sh --impls "braid openmpi" --reps 5 --plan "2 latency -n 8 -m 8",
#               RUNS times quiet and RUNS times with --background 2, alternating: 8-byte latency
#               rounds against Open MPI
#
# Usage: bench/bars.sh [--parts "multirail rail-cpu coll latency"] [--latency-runs RUNS]
#   --parts          which of the four to run (default all)
#   --latency-runs   runs of each latency condition (default 3)
# Output: each benchmark's own output, then one line per bar (held / NOT held, with the figures).
# The result files are the benchmarks' own, in bench/results; the verdicts are also kept in
# bench/results/bars-<date>.txt with the files they were read from.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PARTS="multirail rail-cpu coll latency"
LATENCY_RUNS=3
while [ $# -gt 0 ]; do
    case "$1" in
    --parts) PARTS="$2"; shift ;;
    --latency-runs) LATENCY_RUNS="$2"; shift ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/p}' "$0"; exit 0 ;;
    *) echo "bars.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
for part in $PARTS; do
    case "$part" in multirail | rail-cpu | coll | latency) ;; *) echo "bars.sh: unknown part $part (multirail, rail-cpu, coll, latency)" >&2; exit 2 ;; esac
done
[[ "$LATENCY_RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "bars.sh: --latency-runs needs a positive number" >&2; exit 2; }
wanted() { [[ " $PARTS " == *" $1 "* ]]; }

RESULTS="$ROOT/bench/results"
mkdir -p "$RESULTS"
MARK="$(mktemp "${TMPDIR:-/tmp}/braid-bars.XXXXXX")"
trap 'rm -f "$MARK"' EXIT
# newest PATTERN: the newest result file matching PATTERN written since the mark (none: fails).
newest() {
    local found
    found="$(find "$RESULTS" -maxdepth 1 -newer "$MARK" -name "$1" -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2-)"
    [ -n "$found" ] || { echo "bars.sh: the benchmark wrote no $1" >&2; return 1; }
    echo "$found"
}
# mark: later `newest` calls see only what is written from now on.
mark() { sleep 1; touch "$MARK"; }

ARGS=()
if wanted multirail; then
    for mtu in 1500 9000; do
        mark
        STRATEGIES="weighted hetero" "$ROOT/bench/multirail.sh" --reps 3 --mtu "$mtu" --no-openmpi --phases "bandwidths loaded"
        ARGS+=(--multirail "$(newest "multirail-*-mtu$mtu.csv")")
    done
fi
if wanted rail-cpu; then
    for mtu in 1500 9000; do
        mark
        "$ROOT/bench/rail_cpu.sh" --reps 3 --layouts --mtu "$mtu"
        ARGS+=(--rail-cpu "$(newest "rail-cpu-*-mtu$mtu.csv")")
    done
fi
if wanted coll; then
    mark
    "$ROOT/bench/coll_cluster.sh" --reps 5 --collectives allreduce,bcast,alltoall --sizes 8,65536,4194304
    ARGS+=(--coll "$(newest "coll-cluster-*-points.csv")")
fi
if wanted latency; then
    for run in $(seq 1 "$LATENCY_RUNS"); do
        for condition in quiet loaded; do
            background=()
            [ "$condition" = quiet ] || background=(--background 2)
            mark
            "$ROOT/bench/compare.sh" --impls "braid openmpi" --reps 5 "${background[@]}" --plan "2 latency -n 8 -m 8"
            ARGS+=("--latency-$condition" "$(newest "*-raw.csv")")
        done
    done
fi

VERDICTS="$RESULTS/bars-$(date +%Y-%m-%d-%H%M%S).txt"
{
    echo "# bench/bars.sh --parts \"$PARTS\" --latency-runs $LATENCY_RUNS; commit $(git -C "$ROOT" rev-parse --short HEAD)"
    echo "# files: ${ARGS[*]//"$ROOT"\//}"
    python3 "$ROOT/bench/bars.py" "${ARGS[@]}"
} | tee "$VERDICTS"
