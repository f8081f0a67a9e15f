#!/usr/bin/env bash
# Collectives across nodes: a 2-node virtual cluster (2 rails, like bench/multirail.sh), 2 ranks
# per node, blocked (ranks 0,1 on n0) and cyclic (--map-by node) placement. bench/coll.c times
# each collective at each size (the slowest rank's mean time per call) for Braid with
# BRAID_COLL_HIERARCHY=off, always and auto, and for Open MPI (`--mca btl tcp,self,vader`, its
# default collective component; mpirun inside n0 with an rsh agent, as in multirail.sh).
# Repetitions are interleaved (repetition 1 of every variant, then 2, ...); the table shows
# medians, auto/Open MPI and auto/flat ratios, and the cost model's choice at each point (from one
# untimed BRAID_DEBUG pass: the `coll model` lines) against the faster of off and always. The
# v-variants (gatherv, alltoallv) are chosen once for every size: their model column is empty.
#
# Usage: bench/coll_cluster.sh [--reps R] [--rails RATES] [--sizes LIST] [--collectives LIST]
#                              [--placements "blocked cyclic"] [--seconds S] [--no-openmpi]
#                              [--sessions rank|launcher]
#   --reps R        repetitions of every variant (default 3)
#   --rails RATES   the cluster's rails (default 2gbit,1gbit)
#   --sizes LIST    bytes, comma-separated (default 8,1024,65536,524288,4194304)
#   --collectives   comma-separated, as bench/coll.c names them (default: all of them)
#   --seconds S     timing per point and run (default 0.3)
#   --sessions      launcher (default): each launcher's own layout; rank: every rank in a session
#                   of its own (`setsid -w` in front of the program), so that under autogroup
#                   scheduling (/proc/sys/kernel/sched_autogroup_enabled) each rank gets a CPU share
#                   of its own against other work on the machine, as in bench/compare.sh
# A point counts as agreeing when auto chose the faster form, or when the two forms are within
# 5% of each other (a tie: either choice is right). The column auto<off is the share of (auto
# run, off run) pairs in which the auto run was faster: a run's time often falls in one of two
# modes on a small VM, so medians flip with how many runs landed in each, where this share does
# not (0.5: alike; where auto runs the flat form it is the same code as off).
# Output: the table on stdout; every run in bench/results/coll-cluster-<date>-raw.csv
# (placement,impl,variant,rep,collective,size,us), the medians in coll-cluster-<date>.csv and the
# table (with the model's predictions and verdicts) in coll-cluster-<date>-points.csv.
# The cluster and scratch files are removed on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BRAID="$ROOT/target/release/braid"
# shellcheck source=bench/cluster-lib.sh
source "$ROOT/bench/cluster-lib.sh"
REPS=3
RAILS=2gbit,1gbit
SIZES=8,1024,65536,524288,4194304
COLLECTIVES=allreduce,bcast,alltoall,allgather,reduce_scatter,gather,iallreduce,gatherv,alltoallv
PLACEMENTS="blocked cyclic"
SECONDS_PER_POINT=0.3
OPENMPI=1
SESSIONS=launcher
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) REPS="$2"; shift ;;
    --rails) RAILS="$2"; shift ;;
    --sizes) SIZES="$2"; shift ;;
    --collectives) COLLECTIVES="$2"; shift ;;
    --placements) PLACEMENTS="$2"; shift ;;
    --seconds) SECONDS_PER_POINT="$2"; shift ;;
    --no-openmpi) OPENMPI=0 ;;
    --sessions) SESSIONS="$2"; shift ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/p}' "$0"; exit 0 ;;
    *) echo "coll_cluster.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || { echo "coll_cluster.sh: --reps needs a positive number" >&2; exit 2; }
session_prefix coll_cluster.sh "$SESSIONS"
for placement in $PLACEMENTS; do
    case "$placement" in blocked | cyclic) ;; *) echo "coll_cluster.sh: unknown placement $placement" >&2; exit 2 ;; esac
done
[ "$(id -u)" = 0 ] || { echo "coll_cluster.sh: building virtual clusters needs root" >&2; exit 1; }
[ -x "$BRAID" ] && [ -f "$ROOT/target/release/libbraid.so" ] || { echo "coll_cluster.sh: run cargo build --release first" >&2; exit 1; }
if [ "$OPENMPI" = 1 ] && ! command -v mpirun.openmpi >/dev/null; then
    echo "# Open MPI (mpirun.openmpi) is not installed: its column is skipped"
    OPENMPI=0
fi
RUN_LIMIT=${RUN_LIMIT:-300}

WORK="$(mktemp -d "${TMPDIR:-/tmp}/braid-coll.XXXXXX")"
STAMP="coll-cluster-$(date +%Y-%m-%d-%H%M%S)"
CSV="$ROOT/bench/results/$STAMP.csv"
RAW="$ROOT/bench/results/$STAMP-raw.csv"
POINTS="$ROOT/bench/results/$STAMP-points.csv"
mkdir -p "$ROOT/bench/results"
export BRAID_PROFILE_DIR="$WORK/profiles"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
CLUSTER="bc$$"
CLUSTER_UP=0
cleanup() {
    if [ "$CLUSTER_UP" = 1 ]; then
        "$BRAID" cluster down "$CLUSTER" >/dev/null 2>&1 || true
        CLUSTER_UP=0
    fi
}
trap 'cleanup; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

"$ROOT/bin/braidcc" -std=c99 -O2 "$ROOT/bench/coll.c" -o "$WORK/coll-braid"
[ "$OPENMPI" = 1 ] && mpicc.openmpi -std=c99 -O2 "$ROOT/bench/coll.c" -o "$WORK/coll-openmpi"
echo "placement,impl,variant,rep,collective,size,us" >"$RAW"

echo "# cluster $CLUSTER: 2 nodes, rails $RAILS; load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
CLUSTER_UP=1
"$BRAID" cluster up "$CLUSTER" --nodes 2 --rails "$RAILS" >/dev/null
"$BRAID" sample --cluster "$CLUSTER" >"$WORK/sample.log" 2>&1 || { echo "# braid sample failed:" >&2; cat "$WORK/sample.log" >&2; }

# Address of node N on network NET (mgmt, rail0, ...), from `braid cluster status`.
RAIL_NAMES=$(IFS=,; read -r -a rates <<<"$RAILS"; for i in "${!rates[@]}"; do printf 'rail%s,' "$i"; done)
RAIL_NAMES=${RAIL_NAMES%,}
write_rsh_agent "$WORK/rsh-agent" 2

ARGS=(-c "$COLLECTIVES" -s "$SIZES" -t "$SECONDS_PER_POINT")
map_option() { [ "$1" = cyclic ] && echo node || echo core; }

# record PLACEMENT IMPL VARIANT REP < coll output
record() {
    grep -v '^#' | grep ',' | sed "s/^/$1,$2,$3,$4,/" >>"$RAW" || true
}

# braid_coll PLACEMENT MODE ARGS...: stderr goes to $ERRORS.
ERRORS="$WORK/errors.log"
braid_coll() {
    local placement=$1 mode=$2
    shift 2
    BRAID_COLL_HIERARCHY=$mode timeout "$RUN_LIMIT" "$BRAID" run --cluster "$CLUSTER" -n 4 --ppn 2 --map-by "$(map_option "$placement")" \
        "${SESSION[@]}" "$WORK/coll-braid" "$@" 2>>"$ERRORS" || echo "# failed: braid $mode $placement" >&2
}

openmpi_coll() {
    local placement=$1 map=slot
    [ "$placement" = cyclic ] && map=node
    (cd "$WORK" && timeout "$RUN_LIMIT" ip netns exec "braid-$CLUSTER-n0" mpirun.openmpi --allow-run-as-root -np 4 \
        --host "$(cluster_address 0 mgmt):2,$(cluster_address 1 mgmt):2" --map-by "$map" --bind-to none --mca plm_rsh_agent "$WORK/rsh-agent" \
        --mca btl tcp,self,vader --mca btl_tcp_if_include "$RAIL_NAMES" --mca oob_tcp_if_include mgmt \
        "${SESSION[@]}" "$WORK/coll-openmpi" "${ARGS[@]}" 2>>"$WORK/errors.log") || echo "# failed: Open MPI $placement" >&2
}

# The model's decisions: one call per point with BRAID_DEBUG, keeping the `coll model` lines.
for placement in $PLACEMENTS; do
    ERRORS="$WORK/model-$placement.log" BRAID_DEBUG=1 braid_coll "$placement" auto -c "$COLLECTIVES" -s "$SIZES" -i 1 >/dev/null
    grep 'coll model' "$WORK/model-$placement.log" | sed "s/^/$placement: /" >"$WORK/decisions-$placement.txt" || true
done

for rep in $(seq 1 "$REPS"); do
    for placement in $PLACEMENTS; do
        for mode in off always auto; do
            echo "# braid $mode $placement (repetition $rep of $REPS); load $(cut -d' ' -f1 /proc/loadavg)" >&2
            braid_coll "$placement" "$mode" "${ARGS[@]}" | record "$placement" braid "$mode" "$rep"
        done
        if [ "$OPENMPI" = 1 ]; then
            echo "# Open MPI $placement (repetition $rep of $REPS)" >&2
            openmpi_coll "$placement" | record "$placement" openmpi default "$rep"
        fi
    done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

cat "$WORK"/decisions-*.txt >"$WORK/decisions.txt" 2>/dev/null || true
python3 - "$RAW" "$CSV" "$WORK/decisions.txt" "$POINTS" <<'EOF'
import csv, re, statistics, sys
from collections import defaultdict

runs = defaultdict(list)
for row in csv.DictReader(open(sys.argv[1])):
    runs[(row["placement"], row["collective"], int(row["size"]), row["impl"] + ":" + row["variant"])].append(float(row["us"]))
median = {key: statistics.median(values) for key, values in runs.items()}


def faster_share(a, b):
    """The share of (a run, b run) pairs in which the a run was faster (ties count half)."""
    if not a or not b:
        return None
    wins = sum((x < y) + 0.5 * (x == y) for x in a for y in b)
    return wins / (len(a) * len(b))
with open(sys.argv[2], "w") as out:
    out.write("placement,collective,size,variant,us\n")
    for (placement, collective, size, variant), value in sorted(median.items()):
        out.write(f"{placement},{collective},{size},{variant},{value:g}\n")

# `coll model` lines: "<placement>: braid: coll model: <collective> <bytes> B: flat <ns> ns, hierarchical <ns> ns: <form>"
# (an allreduce's also "(node segment <ns> ns)" before the form, which may be "node segment"),
# or for a v-variant "<placement>: braid: coll model: <collective> any size (...): <form>".
decided = {}
any_size = {}
pattern = re.compile(r"^(\w+): .*coll model: (\w+) (\d+) B: flat ([\d.e+]+) ns, hierarchical ([\d.e+]+) ns(?: \(node segment [\d.e+]+ ns\))?: ([\w ]+)$")
any_pattern = re.compile(r"^(\w+): .*coll model: (\w+) any size .*: (\w+)$")
for line in open(sys.argv[3]):
    match = pattern.match(line.strip())
    if match:
        placement, collective, size, flat, hier, form = match.groups()
        decided[(placement, collective, int(size))] = (float(flat) / 1e3, float(hier) / 1e3, form)
    match = any_pattern.match(line.strip())
    if match:
        placement, collective, form = match.groups()
        any_size[(placement, collective)] = (None, None, form)

# The bench names collectives as MPI does; the model names the algorithm it runs.
model_name = {"iallreduce": "allreduce"}
points = sorted({key[:3] for key in median}, key=lambda key: (key[0], key[1], key[2]))
print(f'{"placement":<9}{"collective":<15}{"bytes":>8}{"off":>10}{"always":>10}{"auto":>10}{"openmpi":>10}'
      f'{"auto/ompi":>10}{"auto/off":>9}{"auto<off":>9}{"model flat/hier us":>21}{"pick":>6}{"best":>6}{"ok":>4}')
agree = total = 0
# Points where auto runs a hierarchical form and loses to the flat one in most pairs of runs.
slower = []
# Points where the model rates both forms alike (within 1%: on this layout they exchange the
# same messages, e.g. a blocked bcast), so that the measured "best" is noise.
alike_agree = alike_total = 0
table = open(sys.argv[4], "w")
# A table cell: empty where there is no value.
field = lambda value, fmt="{:g}": "" if value is None else fmt.format(value)
quotient = lambda a, b: a / b if a is not None and b else None
table.write("placement,collective,size,off,always,auto,openmpi,auto_over_openmpi,auto_over_off,auto_beats_off,model_flat_us,model_hier_us,pick,best,ok\n")
for placement, collective, size in points:
    get = lambda variant: median.get((placement, collective, size, variant))
    off, always, auto, ompi = get("braid:off"), get("braid:always"), get("braid:auto"), get("openmpi:default")
    cell = lambda value, fmt="{:.1f}": fmt.format(value) if value is not None else "-"
    ratio = lambda a, b: f"{a / b:.2f}" if a is not None and b else "-"
    # reduce_scatter's model bytes are the whole vector: n blocks of at least one int.
    model_size = max(size // 16, 1) * 16 if collective == "reduce_scatter" else size
    model = decided.get((placement, model_name.get(collective, collective), model_size)) or any_size.get((placement, collective))
    pick = best = ok = "-"
    if model and off is not None and always is not None:
        pick = "flat" if model[2] == "flat" else "hier"
        tie = abs(off - always) <= 0.05 * min(off, always)
        best = "tie" if tie else ("hier" if always < off else "flat")
        good = tie or best == pick
        ok = "yes" if good else "NO"
        agree += good
        total += 1
        if model[0] is not None and abs(model[0] - model[1]) <= 0.01 * min(model[0], model[1]):
            alike_agree += good
            alike_total += 1
    model_text = f"{model[0]:.0f}/{model[1]:.0f}" if model and model[0] is not None else "-"
    share = faster_share(runs.get((placement, collective, size, "braid:auto")), runs.get((placement, collective, size, "braid:off")))
    if share is not None and share < 0.5 and pick == "hier":
        slower.append(f"{placement} {collective} {size} B ({share:.2f})")
    print(f"{placement:<9}{collective:<15}{size:>8}{cell(off):>10}{cell(always):>10}{cell(auto):>10}{cell(ompi):>10}"
          f"{ratio(auto, ompi):>10}{ratio(auto, off):>9}{cell(share, '{:.2f}'):>9}{model_text:>21}{pick:>6}{best:>6}{ok:>4}")
    table.write(",".join([placement, collective, str(size), field(off), field(always), field(auto), field(ompi), field(quotient(auto, ompi), "{:.2f}"),
                          field(quotient(auto, off), "{:.2f}"), field(share, "{:.3f}"), field(model and model[0], "{:.1f}"), field(model and model[1], "{:.1f}"), pick, best, ok]) + "\n")
if total:
    print(f"model agreement: {agree}/{total} points ({100 * agree / total:.0f}%); a tie is within 5%")
    if alike_total < total:
        rest = total - alike_total
        print(f"  without the {alike_total} points where the model rates both forms alike: {agree - alike_agree}/{rest} ({100 * (agree - alike_agree) / rest:.0f}%)")
print("auto's hierarchical form slower than flat in most pairs of runs: " + (", ".join(slower) if slower else "nowhere"))
table.close()
print(f"CSV: {sys.argv[2]} (medians; every run in the -raw file; this table in {sys.argv[4]})")
EOF
if [ -s "$WORK/errors.log" ]; then
    echo "# stderr of the runs (last 20 lines):" >&2
    tail -20 "$WORK/errors.log" >&2
fi
