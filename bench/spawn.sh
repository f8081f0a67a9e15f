#!/usr/bin/env bash
# A parent and the process it spawns, side by side on Braid and Open MPI (Debian's MPICH 4.0.2
# cannot spawn: no MPI_Open_port with its ucx netmod): bench/spawn_pingpong.c's half round trips
# (8 B, 64 KiB, 4 MiB) and MPI_Comm_spawn's own time, medians and [lowest highest] over
# interleaved repetitions, and Braid's ratio to Open MPI (lower is better).
#
# Usage:  bench/spawn.sh [--reps 7]
# Needs `cargo build --release` and Debian's openmpi-bin; builds into a temporary directory and
# keeps every run in bench/results/spawn-<date>-raw.csv.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPS=7
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS="$2"; shift 2 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "spawn.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$ROOT/bin/braidcc" -O2 -o "$WORK/braid" "$ROOT/bench/spawn_pingpong.c" || exit 1
mpicc.openmpi -O2 -o "$WORK/openmpi" "$ROOT/bench/spawn_pingpong.c" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RAW="$ROOT/bench/results/spawn-$(date -u +%Y-%m-%d-%H%M%S)-raw.csv"
mkdir -p "$ROOT/bench/results"
echo "rep,impl,what,value" >"$RAW"
for rep in $(seq 1 "$REPS"); do
    for impl in braid openmpi; do
        case "$impl" in
        braid) out="$(timeout 120 "$ROOT/target/release/braid" run -n 1 "$WORK/braid")" ;;
        openmpi) out="$(timeout 120 mpirun.openmpi --oversubscribe -n 1 "$WORK/openmpi" 2>/dev/null)" ;;
        esac
        echo "$out" | awk -v rep="$rep" -v impl="$impl" 'NF == 2 { print rep "," impl "," $1 "," $2 }' >>"$RAW"
    done
done
python3 - "$RAW" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
whats = []
for row in rows:
    if row["what"] not in whats:
        whats.append(row["what"])
def values(impl, what):
    return [float(r["value"]) for r in rows if r["impl"] == impl and r["what"] == what]
print(f"{'what':>8}  {'braid':>24}  {'openmpi':>24}  braid/openmpi")
for what in whats:
    b, o = values("braid", what), values("openmpi", what)
    if not b or not o:
        print(f"{what:>8}  missing runs (braid {len(b)}, openmpi {len(o)})")
        continue
    unit = "s" if what == "spawn" else "us"
    fmt = lambda v: f"{statistics.median(v):.3f} [{min(v):.3f} {max(v):.3f}]"
    label = f"{what} B" if what != "spawn" else "spawn"
    print(f"{label:>8}  {fmt(b):>24}  {fmt(o):>24}  {statistics.median(b) / statistics.median(o):.3f}  ({unit}, n={len(b)})")
PY
echo "# every run: $RAW"
