#!/usr/bin/env bash
# MPI-IO speed, side by side in one run: IOR's MPI-IO backend (built unmodified by scripts/ior)
# on Braid, MPICH and Open MPI, on the same folders (a tmpfs and a disk-backed one), with the
# implementations interleaved within each repetition. Cases, at --ranks processes on one shared
# file, each written then read back (by the neighbouring rank, -C) and checked (-W -R):
#   coll-strided    collective (-c), 32 segments (-s 32) of 256 KiB blocks in 64 KiB transfers:
#                   the ranks' blocks interleave in the file
#   indep-contig    independent, one 16 MiB block per rank in 1 MiB transfers
# Prints, per folder, case and phase, the median bandwidth in MiB/s with [lowest highest] over
# the repetitions for each implementation (each repetition starting with the next one, after a
# sync), and Braid's ratio to the better peer (higher is better).
#
# Usage:  bench/io.sh [--ranks 4] [--reps 5] [--dirs "/dev/shm /var/tmp"]
# Needs `cargo build --release`, Debian's mpich and openmpi-bin, and IOR built by
# `scripts/ior build --impl braid|mpich|openmpi` (this script builds what is missing). Keeps every
# run in bench/results/io-<date>-raw.csv.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RANKS=4
REPS=5
DIRS="/dev/shm /var/tmp"
while [ $# -gt 0 ]; do
    case "$1" in
        --ranks) RANKS="$2"; shift 2 ;;
        --reps) REPS="$2"; shift 2 ;;
        --dirs) DIRS="$2"; shift 2 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "io.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
IOR_WORK="${IOR_WORK:-/tmp/braid-ior}"
IMPLS=(braid mpich openmpi)
for impl in "${IMPLS[@]}"; do
    if [ ! -x "$IOR_WORK/$impl/src/ior" ]; then
        "$ROOT/scripts/ior" build --impl "$impl" >/dev/null || { echo "io.sh: cannot build IOR for $impl (see scripts/ior)" >&2; exit 1; }
    fi
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
launch() {
    case "$1" in
    braid) echo "$ROOT/target/release/braid run -n $RANKS" ;;
    mpich) echo "mpiexec.mpich -n $RANKS" ;;
    openmpi) echo "mpirun.openmpi --oversubscribe -n $RANKS" ;;
    esac
}
CASES=("coll-strided:-c -s 32 -b 256k -t 64k" "indep-contig:-b 16m -t 1m")
RAW="$ROOT/bench/results/io-$(date -u +%Y-%m-%d-%H%M%S)-raw.csv"
mkdir -p "$ROOT/bench/results"
echo "rep,dir,case,impl,phase,mib_per_s" >"$RAW"
for rep in $(seq 1 "$REPS"); do
    for dir in $DIRS; do
        for entry in "${CASES[@]}"; do
            name="${entry%%:*}"
            args="${entry#*:}"
            # Each repetition starts with another implementation, and every run with the page
            # cache's dirty data written back, so that no run pays for the previous one's.
            for slot in 0 1 2; do
                impl="${IMPLS[$(((slot + rep) % 3))]}"
                sync
                work="$(mktemp -d "$dir/braid-io-bench.XXXXXX")"
                # shellcheck disable=SC2086
                out="$(timeout 300 $(launch "$impl") "$IOR_WORK/$impl/src/ior" -a MPIIO -w -r -W -R -e -C -Q 1 $args -o "$work/file" 2>&1)"
                rm -rf "$work"
                for phase in write read; do
                    value="$(echo "$out" | awk -v phase="$phase" '$1 == phase && $2 ~ /^[0-9.]+$/ { print $2; exit }')"
                    [ -n "$value" ] && echo "$rep,$dir,$name,$impl,$phase,$value" >>"$RAW"
                done
            done
        done
    done
done
python3 - "$RAW" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = []
for row in rows:
    key = (row["dir"], row["case"], row["phase"])
    if key not in keys:
        keys.append(key)
print(f"{'folder':<10} {'case':<14} {'phase':<6} " + " ".join(f"{impl + ' MiB/s':>30}" for impl in ("braid", "mpich", "openmpi")) + "  braid/best peer")
for key in keys:
    cells, medians = [], {}
    for impl in ("braid", "mpich", "openmpi"):
        values = [float(r["mib_per_s"]) for r in rows if (r["dir"], r["case"], r["phase"]) == key and r["impl"] == impl]
        if values:
            medians[impl] = statistics.median(values)
            cells.append(f"{medians[impl]:>10.0f} [{min(values):.0f} {max(values):.0f}]".rjust(30))
        else:
            cells.append("failed".rjust(30))
    peers = [medians[p] for p in ("mpich", "openmpi") if p in medians]
    ratio = f"{medians['braid'] / max(peers):.2f}" if "braid" in medians and peers else "-"
    print(f"{key[0]:<10} {key[1]:<14} {key[2]:<6} " + " ".join(cells) + f"  {ratio:>6}")
print(f"raw: {sys.argv[1]}")
PY
