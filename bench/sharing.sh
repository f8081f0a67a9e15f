#!/usr/bin/env bash
# Network sharing, as in "Impact of Network Sharing in Multi-core Architectures" (Narayanaswamy,
# Balaji, Feng), at this machine's scale: the same 4 ranks of NPB CG, MG, FT and IS (class A) as
# 4 nodes x 1 rank, 2 x 2 and 1 x 4 on a virtual cluster whose nodes each have one shaped rail
# (their NIC), every run profiled (`braid run --profile`). For each benchmark and layout it prints
# NPB's time, the share of the ranks' time inside MPI, the bytes within and across nodes, and the
# rail's bytes and active time per node (the NIC sharing), as medians over the repetitions, which
# run interleaved (rep 1 of every layout, then rep 2, ...).
#
# Usage:  bench/sharing.sh [--reps 3] [--benchmarks "cg mg ft is"] [--class A] [--rail 1gbit]
#                          [--keep DIR]
# Needs root (the cluster) and the benchmarks built by scripts/nas for Braid (scripts/nas
# --benchmarks "cg mg ft is" --impls braid --reps 1). The cluster (sharing<pid>) is removed on exit;
# the profiles are kept in --keep DIR (default: a temporary directory, removed).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BRAID="$ROOT/target/release/braid"
REPS=3
BENCHMARKS="cg mg ft is"
CLASS=A
RAIL=1gbit
KEEP=""
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS="$2"; shift 2 ;;
        --benchmarks) BENCHMARKS="$2"; shift 2 ;;
        --class) CLASS="$2"; shift 2 ;;
        --rail) RAIL="$2"; shift 2 ;;
        --keep) KEEP="$2"; shift 2 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
BIN="${NPB_WORK:-/tmp/braid-nas}/braid/NPB3.4-MPI/bin"
for bench in $BENCHMARKS; do
    [ -x "$BIN/$bench.$CLASS.x" ] || { echo "$BIN/$bench.$CLASS.x is missing: scripts/nas --benchmarks \"$BENCHMARKS\" --class $CLASS --impls braid --reps 1" >&2; exit 1; }
done
CLUSTER="sharing$$"
WORK="${KEEP:-$(mktemp -d /tmp/braid-sharing.XXXXXX)}"
mkdir -p "$WORK"
cleanup() {
    "$BRAID" cluster down "$CLUSTER" >/dev/null 2>&1
    [ -z "$KEEP" ] && rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=bench/cluster-lib.sh
source "$ROOT/bench/cluster-lib.sh"
sampled_cluster --nodes 4 --rails "$RAIL"
# Layout name and its placement: nodes x ranks per node, blocked.
LAYOUTS=("4x1:--ppn 1" "2x2:--ppn 2" "1x4:--ppn 4")
echo "# $(date -u +%FT%TZ) class $CLASS, 4 ranks, one $RAIL rail per node, $REPS reps; profiles in $WORK"
for rep in $(seq 1 "$REPS"); do
    for bench in $BENCHMARKS; do
        for layout in "${LAYOUTS[@]}"; do
            name="${layout%%:*}"
            dir="$WORK/$bench-$name-$rep"
            rm -rf "$dir"
            # shellcheck disable=SC2086 # the placement is two words
            if ! "$BRAID" run --profile "$dir" --cluster "$CLUSTER" -n 4 ${layout#*:} "$BIN/$bench.$CLASS.x" >"$dir.log" 2>&1 ||
                ! grep -q "Verification    =               SUCCESSFUL" "$dir.log"; then
                echo "FAIL $bench $name rep $rep (see $dir.log)"
                exit 1
            fi
            time="$(awk '/Time in seconds =/ {print $5}' "$dir.log")"
            echo "run $bench $name rep $rep: $time s"
            python3 - "$dir/profile.json" "$time" >>"$WORK/rows.tsv" <<'PY'
import json, sys
profile = json.load(open(sys.argv[1]))
node = {r["rank"]: r["node"] for r in profile["ranks"]}
intra = inter = 0
for i, row in enumerate(profile["bytes"]):
    for j, b in enumerate(row):
        if node.get(i) == node.get(j):
            intra += b
        else:
            inter += b
wall = sum(r["wall_time"] for r in profile["ranks"])
mpi = sum(r["mpi_time"] for r in profile["ranks"])
rail_bytes = [sum(n["bytes_sent"]) for n in profile["rails"]]
active = [max(n["active_time"]) for n in profile["rails"]]
ranks_on_rail = [max(n["ranks_using"]) for n in profile["rails"]]
path = sys.argv[1].split("/")[-2]
bench, layout, rep = path.rsplit("-", 2)
print("\t".join(map(str, [bench, layout, rep, sys.argv[2], 100 * mpi / wall, intra, inter,
      max(rail_bytes) if rail_bytes else 0, max(active) if active else 0, max(ranks_on_rail) if ranks_on_rail else 0])))
PY
        done
    done
done
echo
python3 - "$WORK/rows.tsv" <<'PY'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
groups = {}
for bench, layout, rep, time, comm, intra, inter, rail, active, users in rows:
    groups.setdefault((bench, layout), []).append((float(time), float(comm), int(intra), int(inter), int(rail), float(active), int(users)))
print("| benchmark | layout | time (s), median (min-max) | inside MPI | bytes within nodes | bytes across nodes | across | busiest rail: bytes sent by its node, active time, ranks on it |")
print("|---|---|---|---|---|---|---|---|")
mib = 1024 * 1024
for (bench, layout), runs in sorted(groups.items(), key=lambda item: (item[0][0], ["4x1", "2x2", "1x4"].index(item[0][1]))):
    times = [r[0] for r in runs]
    med = lambda k: statistics.median(r[k] for r in runs)
    total = med(2) + med(3)
    share = 100 * med(3) / total if total else 0
    rail = f"{med(4) / mib:.1f} MiB, {med(5):.2f} s, {runs[0][6]}" if med(4) else "none"
    print(f"| {bench.upper()} | {layout} | {statistics.median(times):.2f} ({min(times):.2f}-{max(times):.2f}) | {med(1):.0f}% | {med(2) / mib:.1f} MiB | {med(3) / mib:.1f} MiB | {share:.0f}% | {rail} |")
PY
