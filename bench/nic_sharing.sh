#!/usr/bin/env bash
# One vs two ranks per node sharing a NIC, as in "Impacts of Network Bandwidth and Dual-Core
# Processors on Scalability" (Brightwell, Underwood, Vaughan), at this machine's scale: a 2-node
# virtual cluster with one shaped rail per node (its NIC), and the paper's measurement set:
# ping-pong latency (8 B), streaming bandwidth (1 MiB messages, windows of 64), message rate (8 B),
# and MPI_Allreduce, MPI_Alltoall and MPI_Reduce (MPI_INT sums; alltoall: bytes per destination).
# Three layouts:
#   1/node      2 ranks, one per node: one pair across the nodes;
#   2/node      4 ranks, two per node (blocked): pairs 0-2 and 1-3 cross the nodes at once, so
#               they share each NIC; ranks of one node talk through shared memory;
#   2/node-vn   the same with BRAID_SHM=off, the paper's "virtual node mode": every message, also
#               between the ranks of one node, goes through the NIC.
# Point-to-point rows give the per-pair figure (latency averaged over pairs, bandwidth and rate
# divided by the pairs) beside the sum over pairs; collectives give the slowest rank's mean time
# per call (bench/coll.c). Repetitions run interleaved (rep 1 of every layout, then rep 2, ...);
# the table shows medians with min-max.
#
# Usage:  bench/nic_sharing.sh [--reps 3] [--rail 1gbit] [--sizes 8,65536,1048576]
# Needs root (the cluster) and `cargo build --release`. The cluster is removed on exit; every run's
# figures are kept in bench/results/nic-sharing-<date>-raw.csv (layout,rep,bench,bytes,value,unit).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BRAID="$ROOT/target/release/braid"
REPS=3
RAIL=1gbit
SIZES=8,65536,1048576
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS="$2"; shift 2 ;;
        --rail) RAIL="$2"; shift 2 ;;
        --sizes) SIZES="$2"; shift 2 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "nic_sharing.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || { echo "nic_sharing.sh: --reps needs a positive number" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "nic_sharing.sh: building a virtual cluster needs root" >&2; exit 1; }
[ -x "$BRAID" ] && [ -f "$ROOT/target/release/libbraid.so" ] || { echo "nic_sharing.sh: run cargo build --release first" >&2; exit 1; }

# shellcheck source=bench/cluster-lib.sh
source "$ROOT/bench/cluster-lib.sh"
bench_workspace nic-sharing ns

"$ROOT/bin/braidcc" -std=c99 -O2 "$ROOT/bench/osu.c" -o "$WORK/osu" || exit 1
"$ROOT/bin/braidcc" -std=c99 -O2 "$ROOT/bench/coll.c" -o "$WORK/coll" || exit 1
sampled_cluster --nodes 2 --rails "$RAIL"

# Layout name, ranks, ranks per node, extra environment.
LAYOUTS=("1/node 2 1 BRAID_SHM=on" "2/node 4 2 BRAID_SHM=on" "2/node-vn 4 2 BRAID_SHM=off")
echo "layout,rep,bench,bytes,value,unit" >"$RAW"
# run LAYOUT REP PROGRAM ARGS...: appends the program's `bench,bytes,value,unit` lines.
run() {
    local layout="$1" rep="$2" name ranks ppn setting
    shift 2
    read -r name ranks ppn setting <<<"$layout"
    if ! env "$setting" timeout 300 "$BRAID" run --cluster "$CLUSTER" -n "$ranks" --ppn "$ppn" "$@" >"$WORK/out" 2>"$WORK/err"; then
        echo "FAIL $name rep $rep: $* ($(tail -3 "$WORK/err"))" >&2
        exit 1
    fi
    grep -v '^#' "$WORK/out" | grep ',' | sed "s|^|$name,$rep,|" >>"$RAW"
}
echo "# $(date -u +%FT%TZ): 2 nodes, one $RAIL rail each, $REPS reps; load $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq 1 "$REPS"); do
    for layout in "${LAYOUTS[@]}"; do
        run "$layout" "$rep" "$WORK/osu" multi_lat -n 8 -m 8
        run "$layout" "$rep" "$WORK/osu" multi_bw -n 1048576 -m 1048576
        run "$layout" "$rep" "$WORK/osu" mr
        run "$layout" "$rep" "$WORK/coll" -c allreduce,alltoall,reduce -s "$SIZES" -t 0.3
        echo "rep $rep ${layout%% *} done"
    done
done
echo
python3 - "$RAW" <<'PY'
import csv, statistics, sys
runs = {}
for row in csv.DictReader(open(sys.argv[1])):
    runs.setdefault((row["bench"], int(row["bytes"]), row["layout"]), []).append(float(row["value"]))
layouts = ["1/node", "2/node", "2/node-vn"]
pairs = {"1/node": 1, "2/node": 2, "2/node-vn": 2}
names = {"multi_lat": "latency per pair (us)", "multi_bw": "bandwidth per pair (MB/s)", "mr": "message rate per pair (msg/s)",
         "allreduce": "allreduce (us)", "alltoall": "alltoall (us)", "reduce": "reduce (us)"}
def cell(values, scale=1.0):
    values = [v / scale for v in values]
    med = statistics.median(values)
    fmt = (lambda v: f"{v:.3g}") if med < 1000 else (lambda v: f"{v:,.0f}")
    return f"{fmt(med)} ({fmt(min(values))}-{fmt(max(values))})"
print("| measurement | bytes | " + " | ".join(layouts) + " | 2/node / 1/node | 2/node-vn / 1/node |")
print("|---|---|" + "---|" * (len(layouts) + 2))
order = ["multi_lat", "multi_bw", "mr", "allreduce", "alltoall", "reduce"]
for bench, size in sorted({(b, s) for b, s, _ in runs}, key=lambda k: (order.index(k[0]) if k[0] in order else 99, k[1])):
    per_pair = bench in ("multi_bw", "mr")
    cells, medians = [], []
    for layout in layouts:
        values = runs.get((bench, size, layout), [])
        scale = pairs[layout] if per_pair else 1.0
        cells.append(cell(values, scale) if values else "-")
        medians.append(statistics.median(v / scale for v in values) if values else None)
    ratio = lambda m: f"{m / medians[0]:.2f}" if m and medians[0] else "-"
    print(f"| {names.get(bench, bench)} | {size} | " + " | ".join(cells) + f" | {ratio(medians[1])} | {ratio(medians[2])} |")
PY
echo
echo "# every run: $RAW"
