#!/usr/bin/env bash
# A rank on and off the network core, as in "An Analysis of 10-Gigabit Ethernet Protocol Stacks
# in Multicore Environments" (Narayanaswamy, Balaji, Feng): a 2-node virtual cluster whose rails
# steer their receive processing to CPU 0 (`braid cluster up --rx-cpus 0`), and
# bench/compute_exchange.c: rank 0 computes much while rank 1 streams data to it.
#   on   `--network-cores ignore`: rank 0, the one that computes, on CPU 0 (the network core);
#   off  `--map-by pattern:PROFILE` (network cores avoided, by default): from a profile of the
#        job, the rank that computes most takes the core without network work, CPU 1.
# For each rail rate: the heavy rank's compute time and the loop's time, medians (min-max) of
# interleaved repetitions. All nodes share this machine's 2 CPUs: the streaming rank (node 1)
# runs on the CPU rank 0 leaves, so "off" puts it beside the receive processing.
#
# Usage:  bench/network_cores.sh [--reps 5] [--rates "1gbit 10gbit"] [--bytes 16777216] [--iterations 20]
# Needs root (the cluster) and `cargo build --release`. The cluster is removed on exit; every run
# is kept in bench/results/network-cores-<date>-raw.csv.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BRAID="$ROOT/target/release/braid"
REPS=5
RATES="1gbit 10gbit"
BYTES=16777216
ITERATIONS=20
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS="$2"; shift 2 ;;
        --rates) RATES="$2"; shift 2 ;;
        --bytes) BYTES="$2"; shift 2 ;;
        --iterations) ITERATIONS="$2"; shift 2 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "network_cores.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "network_cores.sh: building a virtual cluster needs root" >&2; exit 1; }
[ -x "$BRAID" ] || { echo "network_cores.sh: run cargo build --release first" >&2; exit 1; }
# shellcheck source=bench/cluster-lib.sh
source "$ROOT/bench/cluster-lib.sh"
bench_workspace network-cores nc
"$ROOT/bin/braidcc" -std=c99 -O2 "$ROOT/bench/compute_exchange.c" -o "$WORK/compute_exchange" || exit 1
ARGS=("$ITERATIONS" "$BYTES" 0)
echo "rate,placement,rep,cpu,compute,total" >"$RAW"
echo "# $(date -u +%FT%TZ): 2 nodes, rails' receive processing on CPU 0, $REPS reps, $ITERATIONS x $BYTES bytes; load $(cut -d' ' -f1-3 /proc/loadavg)"
for rate in $RATES; do
    sampled_cluster --nodes 2 --rails "$rate" --rx-cpus 0
    rm -rf "$WORK/profile"
    "$BRAID" run --profile "$WORK/profile" --cluster "$CLUSTER" -n 2 --ppn 1 "$WORK/compute_exchange" "${ARGS[@]}" >/dev/null 2>&1 || { echo "the profiled run failed" >&2; exit 1; }
    for rep in $(seq 1 "$REPS"); do
        for placement in on off; do
            case "$placement" in
                on) options=(--network-cores ignore) ;;
                off) options=(--map-by "pattern:$WORK/profile") ;;
            esac
            line="$("$BRAID" run --cluster "$CLUSTER" -n 2 --ppn 1 "${options[@]}" "$WORK/compute_exchange" "${ARGS[@]}" 2>"$WORK/err")" || { echo "FAIL $rate $placement: $(tail -3 "$WORK/err")" >&2; exit 1; }
            # compute_exchange: heavy rank 0 on CPU C: compute S s, total T s
            echo "$line" | awk -v rate="$rate" -v placement="$placement" -v rep="$rep" '{gsub(":", "", $7); print rate "," placement "," rep "," $7 "," $9 "," $12}' >>"$RAW"
        done
    done
    echo "rate $rate done"
done
echo
python3 - "$RAW" <<'PY'
import csv, statistics, sys
runs = {}
for row in csv.DictReader(open(sys.argv[1])):
    runs.setdefault((row["rate"], row["placement"]), []).append(row)
print("| rails | computing rank | its CPU | its compute time (s) | loop time (s) | off / on (loop) |")
print("|---|---|---|---|---|---|")
for rate in dict.fromkeys(rate for rate, _ in runs):
    medians = {}
    for placement in ("on", "off"):
        rows = runs[(rate, placement)]
        compute = [float(r["compute"]) for r in rows]
        total = [float(r["total"]) for r in rows]
        cpus = sorted({r["cpu"] for r in rows})
        medians[placement] = statistics.median(total)
        ratio = f"{medians['off'] / medians['on']:.2f}" if placement == "off" else ""
        label = "on the network core" if placement == "on" else "off it"
        print(f"| {rate} | {label} | {','.join(cpus)} | {statistics.median(compute):.3f} ({min(compute):.3f}-{max(compute):.3f}) | {statistics.median(total):.3f} ({min(total):.3f}-{max(total):.3f}) | {ratio} |")
PY
echo
echo "# every run: $RAW"
