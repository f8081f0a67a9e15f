#!/usr/bin/env bash
# Runs examples/shared_table.c on Braid, Open MPI and MPICH, both modes (window, messages), at 2
# and 4 ranks on this node, interleaved (the implementation order rotates every round), and
# prints the median lookup rate of each with its spread and the load average.
# Usage: examples/compare-shared-table.sh [--reps R] [--seconds S] [--ranks "2 4"] [--sessions rank|launcher]
#   --sessions launcher (default): each launcher's own layout; rank: every rank in a session of its
#   own (`setsid -w` in front of the program for Braid and Open MPI; MPICH's launcher does this
#   itself), so that under autogroup scheduling each rank gets its own share of the CPUs, as in
#   bench/compare.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPS=5
SECONDS_EACH=1
RANKS="2 4"
SESSIONS=launcher
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) REPS="$2"; shift 2 ;;
    --seconds) SECONDS_EACH="$2"; shift 2 ;;
    --ranks) RANKS="$2"; shift 2 ;;
    --sessions) SESSIONS="$2"; shift 2 ;;
    *) sed -n '2,9p' "$0" >&2; exit 2 ;;
    esac
done
case "$SESSIONS" in
launcher) SESSION="" ;;
rank) SESSION="setsid -w" ;;
*) echo "compare-shared-table.sh: --sessions takes rank or launcher, not '$SESSIONS'" >&2; exit 2 ;;
esac
WORK="$(mktemp -d "${TMPDIR:-/tmp}/braid-shared-table.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
IMPLS=()
for impl in braid openmpi mpich; do
    case "$impl" in braid) cc="$ROOT/bin/braidcc" ;; openmpi) cc=mpicc.openmpi ;; mpich) cc=mpicc.mpich ;; esac
    if "$cc" -std=c99 -O2 -o "$WORK/shared_table-$impl" "$ROOT/examples/shared_table.c" 2>"$WORK/build-$impl.log"; then
        IMPLS+=("$impl")
    else
        echo "# skipping $impl: $(head -c 160 "$WORK/build-$impl.log")" >&2
    fi
done
launch() {
    case "$1" in
    braid) echo "$ROOT/target/release/braid run -n $2 $SESSION" ;;
    openmpi) echo "mpirun.openmpi --oversubscribe -n $2 $SESSION" ;;
    mpich) echo "mpiexec.mpich -n $2" ;;
    esac
}
echo "impl,mode,ranks,rep,lookups_per_s,load1" >"$WORK/raw.csv"
for ranks in $RANKS; do
    for rep in $(seq 1 "$REPS"); do
        for turn in $(seq 0 $((${#IMPLS[@]} - 1))); do
            impl="${IMPLS[$(((rep + turn) % ${#IMPLS[@]}))]}"
            for mode in window messages; do
                read -r load1 _ </proc/loadavg
                # shellcheck disable=SC2046
                if line="$(timeout 300 $(launch "$impl" "$ranks") "$WORK/shared_table-$impl" "$mode" "$SECONDS_EACH" 2>"$WORK/err" </dev/null)"; then
                    echo "$impl,$mode,$ranks,$rep,$(echo "$line" | grep '^shared_table' | cut -d, -f4),$load1" >>"$WORK/raw.csv"
                else
                    echo "# $impl $mode n=$ranks failed: $(tail -n 2 "$WORK/err" | tr '\n' ' ' | head -c 200)" >&2
                fi
            done
        done
    done
done
echo "# shared_table: medians of $REPS interleaved rounds of $SECONDS_EACH s each; lookups/s over all looking-up ranks [lowest highest]"
tail -n +2 "$WORK/raw.csv" | sort -t, -k1,1 -k2,2 -k3,3n -k5,5g | awk -F, '
    function flush() { if (n) printf "%-8s %-9s n=%s %12.0f  [%.0f %.0f]\n", k[1], k[2], k[3], (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2), v[1], v[n] }
    { key = $1 "," $2 "," $3; if (key != last) { flush(); n = 0; last = key; split(key, k, ",") } v[++n] = $5 }
    END { flush() }'
echo "# load average (1 min) during the runs: $(tail -n +2 "$WORK/raw.csv" | cut -d, -f6 | sort -g | awk '{v[++n] = $1} END {if (n) printf "median %s [%s %s]", v[int((n + 1) / 2)], v[1], v[n]}')"
