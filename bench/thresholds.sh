#!/usr/bin/env bash
# Sweeps Braid's intra-node thresholds on this machine, to choose their defaults by measurement:
#   BRAID_SHM_INLINE_MAX  (ring cells vs pool buffer)   -> latency at 64 B..4 KiB
#   BRAID_EAGER_MAX       (eager vs rendezvous)         -> latency and bandwidth at 4 KiB..256 KiB
#   BRAID_CMA_CHUNK       (process_vm_readv piece)      -> bandwidth at 1..16 MiB
# Each setting's runs are interleaved over R repetitions; medians are printed.
# Usage: bench/thresholds.sh [R]     (needs `cargo build --release`)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bin/braidcc -O2 -o "$out/osu" bench/osu.c
braid=target/release/braid

# sweep VARIABLE "VALUES" BENCH ARGS... : prints "variable value bench size median"
sweep() {
    local variable=$1 values=$2 bench=$3
    shift 3
    for rep in $(seq "$reps"); do
        for value in $values; do
            env "$variable=$value" $braid run -n 2 "$out/osu" "$bench" "$@" | grep -v '^#' | sed "s/^/$value,/" >> "$out/$variable.$bench"
        done
    done
    python3 - "$out/$variable.$bench" "$variable" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    value, bench, size, result, unit = line.strip().split(",")
    rows[(int(size), value, bench, unit)].append(float(result))
for (size, value, bench, unit), results in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1])):
    print(f"{sys.argv[2]:22} {value:>8} {bench:8} {size:>9} {statistics.median(results):12.3f} {unit}")
PY
}

sweep BRAID_SHM_INLINE_MAX "256 512 1024 2048 4096" latency -n 64 -m 4096 -i 20000
sweep BRAID_EAGER_MAX "8k 16k 32k 64k 128k" latency -n 4096 -m 262144 -i 2000
sweep BRAID_EAGER_MAX "8k 16k 32k 64k 128k" bw -n 4096 -m 262144 -i 200
sweep BRAID_CMA_CHUNK "256k 1m 4m 16m" bw -n 1048576 -m 16777216 -i 20
