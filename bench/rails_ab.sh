#!/usr/bin/env bash
# Two builds of Braid side by side on one 2-node virtual cluster, interleaved: is a change to the
# rails faster or slower? (Needs root, iproute2 and python3.) Each build is a directory holding
# its `braid` and `libbraid.so` (copies of target/release from the two trees), and may hold an
# `env` file of NAME=VALUE lines set for that build's runs only (to compare two settings of one
# build, e.g. BRAID_STRATEGY=weighted or BRAID_RAIL_HEDGE=off). The cluster is
# built once and its rails sampled once (by the second build's `braid sample`, profiles in a
# private directory); then every repetition runs, for build A and then build B, bench/osu.c's
# bw at 1 MiB (8 windows of 64) and 16 MiB (1 window), latency at 8 B and mr at 8 B, with
# BRAID_STRATEGY as set (default hetero). Prints per point and build the median, quartiles
# and extremes over the repetitions, and the load average after each repetition (this machine
# is shared: read the spreads with it). With --loaded N, the repetitions are followed by as many
# again under an iperf3 flow on rail0 (the fastest rail), each running osu xfer (N 1 MiB
# transfers one after another: median and p99) for both builds, A first in odd repetitions and
# B first in even ones; the per-repetition ratio B/A of the p99 is printed with its median (the
# flow's rate drifts, so pairs are compared). --only-loaded skips the unloaded repetitions.
#
# Usage: bench/rails_ab.sh DIR_A DIR_B [--reps R] [--rails "2gbit,1gbit"] [--mtu M]
#                          [--sessions rank|launcher] [--loaded N [--only-loaded]]
#   --sessions  launcher (default): the ranks in the launcher's session; rank: every rank in a
#               session of its own (`setsid -w`), as in bench/coll_cluster.sh
# Output: the table on stdout; every run in bench/results/rails-ab-<date>.csv
#   (build,repetition,bench,size,value,unit).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPS=5
RAILS=2gbit,1gbit
MTU=9000
SESSIONS=launcher
LOADED=0
ONLY_LOADED=0
[ $# -ge 2 ] || { sed -n '2,/^set -euo/{/^#/p}' "$0"; exit 2; }
A="$(cd "$1" && pwd)"
B="$(cd "$2" && pwd)"
shift 2
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) REPS="$2"; shift ;;
    --rails) RAILS="$2"; shift ;;
    --mtu) MTU="$2"; shift ;;
    --sessions) SESSIONS="$2"; shift ;;
    --loaded) LOADED="$2"; shift ;;
    --only-loaded) ONLY_LOADED=1 ;;
    *) echo "rails_ab.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || { echo "rails_ab.sh: --reps needs a positive number" >&2; exit 2; }
[[ "$LOADED" =~ ^[0-9]+$ ]] || { echo "rails_ab.sh: --loaded needs a number of transfers" >&2; exit 2; }
[ "$ONLY_LOADED" = 0 ] || [ "$LOADED" -gt 0 ] || { echo "rails_ab.sh: --only-loaded needs --loaded N" >&2; exit 2; }
# shellcheck source=bench/cluster-lib.sh
source "$ROOT/bench/cluster-lib.sh"
session_prefix rails_ab.sh "$SESSIONS"
RAIL0_BITS=$(rate_bits "${RAILS%%,*}") || exit 2
for dir in "$A" "$B"; do
    if [ ! -x "$dir/braid" ] || [ ! -f "$dir/libbraid.so" ]; then
        echo "rails_ab.sh: $dir has no braid and libbraid.so" >&2
        exit 2
    fi
    if [ -f "$dir/env" ] && grep -vqE '^(#.*|[A-Z_][A-Z0-9_]*=[^ ]*|)$' "$dir/env"; then
        echo "rails_ab.sh: $dir/env holds a line that is not NAME=VALUE" >&2
        exit 2
    fi
done
# The settings of a build's env file, as arguments of env(1).
build_env() {
    [ -f "$1/env" ] && grep -E '^[A-Z_]' "$1/env" || true
}
[ "$(id -u)" = 0 ] || { echo "rails_ab.sh: building virtual clusters needs root" >&2; exit 1; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/braid-rails-ab.XXXXXX")"
CSV="$ROOT/bench/results/rails-ab-$(date +%Y-%m-%d-%H%M%S).csv"
mkdir -p "$ROOT/bench/results"
export BRAID_PROFILE_DIR="$WORK/profiles"
CLUSTER="ab$$"
BRAID="$B/braid"
LOAD_CLIENT=""
LOAD_SERVER=""
trap 'kill $LOAD_CLIENT $LOAD_SERVER 2>/dev/null || true; "$B/braid" cluster down "$CLUSTER" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# Each build's osu links its own libbraid.so (rpath).
BRAID_LIBDIR="$A" "$ROOT/bin/braidcc" -std=c99 -O2 "$ROOT/bench/osu.c" -o "$WORK/osu-a"
BRAID_LIBDIR="$B" "$ROOT/bin/braidcc" -std=c99 -O2 "$ROOT/bench/osu.c" -o "$WORK/osu-b"
"$B/braid" cluster up "$CLUSTER" --nodes 2 --rails "$RAILS" --mtu "$MTU" >/dev/null
"$B/braid" sample --cluster "$CLUSTER" >"$WORK/sample.log" 2>&1 || { cat "$WORK/sample.log" >&2; exit 1; }
export BRAID_STRATEGY="${BRAID_STRATEGY:-hetero}"

echo "build,repetition,bench,size,value,unit" >"$CSV"
for rep in $(seq 1 "$REPS"); do
    [ "$ONLY_LOADED" = 0 ] || break
    for build in a b; do
        dir=$A
        [ "$build" = b ] && dir=$B
        for args in "bw -n 1048576 -m 1048576 -i 8" "bw -n 16777216 -m 16777216 -i 1" "latency -n 8 -m 8" "mr -n 8 -m 8"; do
            # shellcheck disable=SC2046,SC2086
            timeout 180 env $(build_env "$dir") "$dir/braid" run --cluster "$CLUSTER" -n 2 --ppn 1 "${SESSION[@]}" "$WORK/osu-$build" $args 2>>"$WORK/errors.log" \
                | grep -v '^#' | grep ',' | sed "s/^/$build,$rep,/" >>"$CSV" || echo "# failed: build $build osu $args" >&2
        done
    done
    echo "# repetition $rep of $REPS done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
if [ "$LOADED" -gt 0 ]; then
    start_rail0_load $((RAIL0_BITS / 8 / 4)) || { echo "rails_ab.sh: no iperf3 load on rail0" >&2; exit 1; }
    for rep in $(seq 1 "$REPS"); do
        order="a b"
        [ $((rep % 2)) = 1 ] || order="b a"
        for build in $order; do
            dir=$A
            [ "$build" = b ] && dir=$B
            # shellcheck disable=SC2046
            timeout 180 env $(build_env "$dir") "$dir/braid" run --cluster "$CLUSTER" -n 2 --ppn 1 "${SESSION[@]}" "$WORK/osu-$build" xfer -i "$LOADED" -m 1048576 2>>"$WORK/errors.log" \
                | grep -v '^#' | grep ',' | sed "s/^/$build,$rep,/" >>"$CSV" || echo "# failed: build $build osu xfer" >&2
        done
        echo "# loaded repetition $rep of $REPS done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    done
    stop_rail0_load
fi
python3 - "$CSV" "$A" "$B" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
names = {"a": sys.argv[2], "b": sys.argv[3]}
points = sorted({(row["bench"], int(row["size"]), row["unit"]) for row in rows})
print("bench,size,unit,build,median,q1,q3,min,max,n")
for bench, size, unit in points:
    for build in "ab":
        values = sorted(float(row["value"]) for row in rows if row["build"] == build and row["bench"] == bench and int(row["size"]) == size)
        if values:
            n = len(values)
            print(f"{bench},{size},{unit},{names[build]},{statistics.median(values):.1f},{values[n // 4]:.1f},{values[3 * n // 4]:.1f},{values[0]:.1f},{values[-1]:.1f},{n}")
p99 = {(row["build"], row["repetition"]): float(row["value"]) for row in rows if row["bench"] == "xfer_p99"}
ratios = sorted(p99[("b", rep)] / p99[("a", rep)] for build, rep in p99 if build == "a" and ("b", rep) in p99)
if ratios:
    print(f"# loaded xfer p99, B/A per repetition: {' '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}")
EOF
echo "# every run: $CSV"
