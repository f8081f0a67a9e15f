#!/usr/bin/env bash
# Communication/computation overlap of non-blocking collectives: the unmodified OSU benchmark
# (osu_iallreduce by default) on Braid (without and with BRAID_PROGRESS_THREAD), Open MPI and MPICH,
# run interleaved, medians of its "Overlap(%)" column per message size, and Braid/peer ratios.
#
# Usage: bench/overlap.sh [--reps R] [--ranks N] [--bench osu_iallreduce] [--sizes MIN:MAX]
#                         [--iterations I] [--impls "braid braid-progress openmpi mpich"]
#   defaults: R=7, N=4, sizes 4:65536, I=200 (OSU's warm-up 20). N above the core count
#   oversubscribes the cores (then nothing is bound).
# Needs the OSU build of scripts/external-suites for each implementation (built here when missing,
# in /tmp/braid-external/IMPL) and, for Braid, `cargo build --release`.
# Output: one line per (size, implementation) with the median overlap and the spread (min-max) of
# the repetitions, then Braid's difference to each peer in percentage points; raw values in bench/results/overlap-<date>-raw.csv.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPS=7
RANKS=4
BENCH=osu_iallreduce
SIZES=4:65536
ITERATIONS=200
IMPLS="braid braid-progress openmpi mpich"
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) REPS="$2"; shift ;;
    --ranks) RANKS="$2"; shift ;;
    --bench) BENCH="$2"; shift ;;
    --sizes) SIZES="$2"; shift ;;
    --iterations) ITERATIONS="$2"; shift ;;
    --impls) IMPLS="$2"; shift ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "overlap.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
EXTERNAL="${EXTERNAL_WORK_ROOT:-/tmp/braid-external}"

# The OSU build of an implementation (braid-progress shares Braid's).
build_of() { echo "${1%-progress}"; }
binary() { echo "$EXTERNAL/$(build_of "$1")/osu/src/c/mpi/collective/non_blocking/$BENCH"; }

launch() {
    local impl="$1" bind=core
    [ "$RANKS" -gt "$(nproc)" ] && bind=none
    case "$impl" in
    braid) echo "$ROOT/target/release/braid run -n $RANKS --bind-to $bind" ;;
    braid-progress) echo "env BRAID_PROGRESS_THREAD=on $ROOT/target/release/braid run -n $RANKS --bind-to $bind" ;;
    openmpi) echo "mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to $bind -n $RANKS" ;;
    mpich) echo "mpiexec.mpich -bind-to $bind -n $RANKS" ;;
    *) echo "overlap.sh: unknown implementation $impl" >&2; return 1 ;;
    esac
}

AVAILABLE=()
for impl in $IMPLS; do
    launch "$impl" >/dev/null || exit 2
    if [ ! -x "$(binary "$impl")" ]; then
        EXTERNAL_WORK="$EXTERNAL/$(build_of "$impl")" "$ROOT/scripts/external-suites" --impl "$(build_of "$impl")" --suite osu --only "$BENCH" --ranks "$RANKS" >/dev/null 2>&1 || true
    fi
    if [ -x "$(binary "$impl")" ]; then AVAILABLE+=("$impl"); else echo "# skipping $impl: $BENCH did not build" >&2; fi
done
[ "${#AVAILABLE[@]}" -gt 0 ] || { echo "overlap.sh: nothing to run" >&2; exit 1; }

mkdir -p "$ROOT/bench/results"
RAW="$ROOT/bench/results/overlap-$(date +%Y-%m-%d-%H%M%S)-raw.csv"
echo "impl,rep,size,overall_us,compute_us,comm_us,overlap_pct" >"$RAW"
echo "# overlap.sh: $BENCH, $RANKS ranks on $(nproc) cores, sizes $SIZES, $ITERATIONS iterations, $REPS interleaved repetitions: ${AVAILABLE[*]}"
for rep in $(seq 1 "$REPS"); do
    for turn in $(seq 0 $((${#AVAILABLE[@]} - 1))); do
        impl="${AVAILABLE[$(((rep + turn) % ${#AVAILABLE[@]}))]}"
        # shellcheck disable=SC2046
        if out="$(timeout -k 5 300 $(launch "$impl") "$(binary "$impl")" -m "$SIZES" -i "$ITERATIONS" -x 20 </dev/null 2>&1)"; then
            # Data lines: size, overall, compute, pure communication, overlap.
            echo "$out" | awk -v impl="$impl" -v rep="$rep" '$1 ~ /^[0-9]+$/ && NF >= 5 { print impl "," rep "," $1 "," $2 "," $3 "," $4 "," $5 }' >>"$RAW"
        else
            echo "# $impl failed (rep $rep): $(echo "$out" | tail -n 2 | tr '\n' ' ' | head -c 200)" >&2
        fi
    done
done

echo
echo "size impl median_overlap_pct min max median_comm_us reps"
# median COLUMN: the median of that column per (size, impl), as "size impl median min max n".
median() {
    tail -n +2 "$RAW" | sort -t, -k3,3n -k1,1 -k"$1","$1"g | awk -F, -v col="$1" '
        function flush() { if (n > 0) printf "%s %s %.2f %.2f %.2f %d\n", size, impl, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2), v[1], v[n], n }
        $3 != size || $1 != impl { flush(); size = $3; impl = $1; n = 0 }
        { v[++n] = $col }
        END { flush() }'
}
median 7 >"$RAW.medians"
median 6 | awk '{ print $3 }' | paste -d' ' "$RAW.medians" - | awk '{ print $1, $2, $3, $4, $5, $7, $6 }' | column -t

echo
echo "# median overlap of braid (and braid-progress) minus each peer's, in percentage points"
awk '
    { value[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; sizes[++n] = $1 } impls[$2] = 1 }
    END {
        for (i = 1; i <= n; i++) {
            s = sizes[i]; line = s
            for (b in impls) if (b ~ /^braid/) for (p in impls) if (p !~ /^braid/ && (s, b) in value && (s, p) in value)
                line = line sprintf("  %s-%s=%+.1f", b, p, value[s, b] - value[s, p])
            print line
        }
    }' "$RAW.medians"
rm -f "$RAW.medians"
echo "# every repetition: ${RAW#"$ROOT"/}"
