#!/usr/bin/env bash
# Braid's partitioner against METIS on the placement checks' jobs: for each job's measured
# matrix (8 ranks: tests/c/heavy_pairs.c and NPB CG, MG, FT, IS class A, profiled on this node),
# the bytes that cross nodes when 8 ranks go on 4 nodes of 2 by `braid place --policy pattern`
# (with --min-gain 0 and --message-cost 0: the pure partition, by bytes) and by METIS's
# `gpmetis` (k-way and recursive bisection, -ufactor=1, -ncuts=10), and whether METIS's parts
# fit (at most 2 ranks per node). METIS takes the same symmetric byte matrix as its edge weights.
#
# Usage:  bench/partition_vs_metis.sh [--benchmarks "heavy cg mg ft is"] [--class A]
# Needs `cargo build --release`, gpmetis (Debian's metis package) and for NPB the benchmarks
# built by scripts/nas (scripts/nas --benchmarks "cg mg ft is" --impls braid --reps 1).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BRAID="$ROOT/target/release/braid"
BENCHMARKS="heavy cg mg ft is"
CLASS=A
while [ $# -gt 0 ]; do
    case "$1" in
        --benchmarks) BENCHMARKS="$2"; shift 2 ;;
        --class) CLASS="$2"; shift 2 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "partition_vs_metis.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
command -v gpmetis >/dev/null || { echo "partition_vs_metis.sh: gpmetis is missing (apt-get install metis)" >&2; exit 1; }
[ -x "$BRAID" ] || { echo "partition_vs_metis.sh: run cargo build --release first" >&2; exit 1; }
NPB="${NPB_WORK:-/tmp/braid-nas}/braid/NPB3.4-MPI/bin"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/braid-metis.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
"$ROOT/bin/braidcc" -std=c99 -O2 "$ROOT/tests/c/heavy_pairs.c" -o "$WORK/heavy" || exit 1
echo "| job | braid place: bytes across | gpmetis k-way | gpmetis recursive bisection |"
echo "|---|---|---|---|"
for bench in $BENCHMARKS; do
    case "$bench" in
        heavy) program=("$WORK/heavy" 1048576 2) ;;
        *) program=("$NPB/$bench.$CLASS.x") ;;
    esac
    "$BRAID" run --profile "$WORK/$bench-profile" -n 8 "${program[@]}" >"$WORK/$bench.log" 2>&1 || { echo "FAIL $bench (see $WORK/$bench.log)" >&2; exit 1; }
    "$BRAID" place "$WORK/$bench-profile" --hosts a,b,c,d --ppn 2 --min-gain 0 --message-cost 0 -o "$WORK/$bench.placement" >"$WORK/$bench.table" || exit 1
    python3 - "$WORK" "$bench" <<'PY'
import subprocess, sys
work, bench = sys.argv[1], sys.argv[2]
rows = [[int(v) for v in line.split()] for line in open(f"{work}/{bench}-profile/bytes.mat") if line.strip()]
n = len(rows)
weight = [[rows[i][j] + rows[j][i] if i != j else 0 for j in range(n)] for i in range(n)]
total = sum(weight[i][j] for i in range(n) for j in range(i + 1, n))
def cut(part):
    return sum(weight[i][j] for i in range(n) for j in range(i + 1, n) if part[i] != part[j])
def share(part):
    return f"{100 * cut(part) / total:.1f}%" if total else "-"
nodes = {}
braid = []
for line in open(f"{work}/{bench}.placement"):
    if line.startswith("#"):
        continue
    rank, node, _ = line.split()
    braid.append(nodes.setdefault(node, len(nodes)))
# METIS's graph format: vertices and edges, then each vertex's neighbours and weights (1-based).
edges = sum(1 for i in range(n) for j in range(i + 1, n) if weight[i][j] > 0)
with open(f"{work}/{bench}.graph", "w") as graph:
    graph.write(f"{n} {edges} 001\n")
    for i in range(n):
        graph.write(" ".join(f"{j + 1} {weight[i][j]}" for j in range(n) if weight[i][j] > 0) + "\n")
cells = [f"{share(braid)} (fits)"]
for ptype in ("kway", "rb"):
    result = subprocess.run(["gpmetis", f"-ptype={ptype}", "-ufactor=1", "-ncuts=10", f"{work}/{bench}.graph", "4"], capture_output=True, text=True)
    try:
        part = [int(line) for line in open(f"{work}/{bench}.graph.part.4")]
    except OSError:
        cells.append("failed: " + (result.stdout + result.stderr).strip().splitlines()[-1])
        continue
    sizes = [part.count(k) for k in range(4)]
    fits = "fits" if max(sizes) <= 2 else f"does not fit: parts of {sizes}"
    cells.append(f"{share(part)} ({fits})")
name = "heavy pairs" if bench == "heavy" else bench.upper()
print(f"| {name} | " + " | ".join(cells) + " |")
PY
done
