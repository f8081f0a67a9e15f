#!/usr/bin/env bash
# Multirail benchmark on 2-node virtual clusters (needs root, iproute2, iperf3, python3 and
# `cargo build --release`). For each rail set (2gbit+1gbit, then 2gbit+1gbit+250mbit):
#   1. builds the cluster (`braid cluster up`), measures each rail alone with iperf3 (server in n1,
#      client in n0, both bound to the rail's addresses, $IPERF_SECONDS s each);
#   2. `braid sample --cluster` (profiles in a private directory, so they are fresh);
#   3. bench/osu.c bw and latency from 8 B to 16 MiB with each BRAID_STRATEGY (single, greedy, iso,
#      weighted, hetero), one rank per node;
#   4. with an iperf3 flow loading rail0 (the fastest rail): median and p99 time of 1 MiB transfers
#      (osu xfer) and 8-byte latency for each strategy;
#   5. the same with Open MPI's TCP multirail (`--mca btl tcp,self` over every rail), with its
#      default weights and with hand-set `btl_tcp_bandwidth_<rail>`; mpirun runs inside n0 with an
#      rsh agent that maps each node's management address to `ip netns exec <node>`.
# Efficiency = bandwidth / sum of the single-rail iperf3 bandwidths. iperf3 also runs on all rails
# at once, which says how much of that sum this machine's CPUs can carry.
#
# Usage: bench/multirail.sh [--full] [--reps R] [--mtu M] [--no-openmpi] [--rails "2gbit,1gbit 2gbit,1gbit,250mbit"]
#                           [--phases "bandwidths latencies loaded"] [--transfers N]
#   (default) quick: sizes every fourth power of two (8 B, then 16 B, 64 B, ... 1 MiB, 4 MiB,
#             16 MiB); from 64 KiB up each size is timed over as many bytes as the rails carry
#             in iperf3's 3 s (one at a time), so that Braid and the reference are measured over
#             about as long a stretch
#   --full    every power of two, osu's default iteration counts
#   --transfers N  1 MiB transfers timed under load (default 400, so that p99 is the 4th slowest,
#             not the slowest; osu adds N/10 + 1 untimed ones first)
#   --phases  which phases to run (default all three; a partial run prints what it has and draws
#             no plots)
#   --reps R  run every strategy and variant R times, interleaved (repetition 1 of all, then 2,
#             ...), and keep the median of each point (default 1)
#   STRATEGIES (environment): the Braid strategies to run (default "single greedy iso weighted
#             hetero"), e.g. STRATEGIES="weighted hetero" for the loaded comparison alone
#   --mtu M   MTU of the cluster's links (default 9000). With 1500, a 2-vCPU machine spends its
#             CPUs on per-packet work through the veths and tbf (two hops a packet) before the
#             3 rails are full, so that run measures CPU contention more than rails.
# Output: a table on stdout; every point in bench/results/multirail-<date>.csv
#   (rails,impl,variant,load,bench,size,value,unit; medians over the repetitions, every repetition
#   in multirail-<date>-raw.csv; the loaded phase also records xfer_steal, the share of the
#   CPUs' time the hypervisor took during each run's transfers); bandwidth and latency curves
#   per rail set in docs/img/multirail-<rails>-{bandwidth,latency}.svg (drawn by braid-report).
# Everything it starts (clusters bm<pid>*, iperf3 processes, scratch files) is removed on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BRAID="$ROOT/target/release/braid"
# shellcheck source=bench/cluster-lib.sh
source "$ROOT/bench/cluster-lib.sh"
MODE=quick
REPS=1
MTU=9000
OPENMPI=1
RAIL_SETS="2gbit,1gbit 2gbit,1gbit,250mbit"
STRATEGIES="${STRATEGIES:-single greedy iso weighted hetero}"
PHASES="bandwidths latencies loaded"
TRANSFERS=400
while [ $# -gt 0 ]; do
    case "$1" in
    --full) MODE=full ;;
    --no-openmpi) OPENMPI=0 ;;
    --reps) REPS="$2"; shift ;;
    --mtu) MTU="$2"; shift ;;
    --rails) RAIL_SETS="$2"; shift ;;
    --phases) PHASES="$2"; shift ;;
    --transfers) TRANSFERS="$2"; shift ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/p}' "$0"; exit 0 ;;
    *) echo "multirail.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || { echo "multirail.sh: --reps needs a positive number" >&2; exit 2; }
[[ "$MTU" =~ ^[1-9][0-9]*$ ]] || { echo "multirail.sh: --mtu needs a positive number" >&2; exit 2; }
[[ "$TRANSFERS" =~ ^[1-9][0-9]*$ ]] || { echo "multirail.sh: --transfers needs a positive number" >&2; exit 2; }
for phase in $PHASES; do
    case "$phase" in bandwidths | latencies | loaded) ;; *) echo "multirail.sh: unknown phase $phase (bandwidths, latencies, loaded)" >&2; exit 2 ;; esac
done
wanted() { [[ " $PHASES " == *" $1 "* ]]; }
IPERF_SECONDS=3
# Quick: osu's quick counts below 64 KiB; from 64 KiB up, each size is timed over as many bytes
# as the rails carry in iperf3's window (VOLUME, set per rail set), so that a hiccup of the
# machine weighs on both alike. Quick steps sizes by 4 from 16 B and from 64 KiB, so 64 KiB,
# 1 MiB, 4 MiB and 16 MiB are all measured.
if [ "$MODE" = quick ]; then
    OSU_MODE=(-q)
    SMALL=(-n 16 -m 16384)
    LARGE=(-n 65536 -m 4194304)
    HUGE=(-n 16777216 -m 16777216)
    LATENCY=(-n 16 -m 16777216)
else
    OSU_MODE=()
    SMALL=(-n 8 -m 65536)
    LARGE=(-n 131072 -m 8388608)
    HUGE=(-n 16777216 -m 16777216)
    LATENCY=(-n 16 -m 16777216)
fi
# The longest any one benchmark run may take before it is killed (and reported as missing).
RUN_LIMIT=${RUN_LIMIT:-180}

for tool in ip tc ethtool iperf3 python3; do
    command -v "$tool" >/dev/null || { echo "multirail.sh: $tool is not installed" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "multirail.sh: building virtual clusters needs root" >&2; exit 1; }
[ -x "$BRAID" ] && [ -f "$ROOT/target/release/libbraid.so" ] || { echo "multirail.sh: run cargo build --release first" >&2; exit 1; }
if [ "$OPENMPI" = 1 ] && ! command -v mpirun.openmpi >/dev/null; then
    echo "# Open MPI (mpirun.openmpi) is not installed: its columns are skipped"
    OPENMPI=0
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/braid-multirail.XXXXXX")"
STAMP="multirail-$(date +%Y-%m-%d-%H%M%S)-mtu$MTU"
CSV="$ROOT/bench/results/$STAMP.csv"
RAW="$ROOT/bench/results/$STAMP-raw.csv"
mkdir -p "$ROOT/bench/results"
export BRAID_PROFILE_DIR="$WORK/profiles"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
CLUSTER=""
BACKGROUND=()

# Drops PID from the processes cleanup ends (once it has ended by itself).
forget() {
    local kept=() pid
    for pid in "${BACKGROUND[@]}"; do
        [ "$pid" = "$1" ] || kept+=("$pid")
    done
    BACKGROUND=("${kept[@]}")
}

cleanup() {
    local pid
    kill ${LOAD_CLIENT:-} ${LOAD_SERVER:-} 2>/dev/null || true
    for pid in "${BACKGROUND[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    BACKGROUND=()
    if [ -n "$CLUSTER" ]; then
        "$BRAID" cluster down "$CLUSTER" >/dev/null 2>&1 || true
        CLUSTER=""
    fi
}
trap 'cleanup; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

"$ROOT/bin/braidcc" -std=c99 -O2 "$ROOT/bench/osu.c" -o "$WORK/osu-braid"
if [ "$OPENMPI" = 1 ]; then
    mpicc.openmpi -std=c99 -O2 "$ROOT/bench/osu.c" -o "$WORK/osu-openmpi"
fi
echo "rails,impl,variant,load,bench,size,value,unit" >"$RAW"

# record RAILS IMPL VARIANT LOAD < osu output: appends its data lines to the CSV.
record() {
    grep -v '^#' | grep ',' | sed "s/^/$1,$2,$3,$4,/" >>"$RAW" || true
}

# The machine's ticks since boot that the hypervisor gave to other guests (steal), and all of
# them, from /proc/stat.
cpu_ticks() {
    awk '/^cpu / { total = 0; for (i = 2; i <= NF; i++) total += $i; print $9, total }' /proc/stat
}

# stolen_during POINT COMMAND...: runs COMMAND and records, as xfer_steal of POINT (its
# "rails,impl,variant" columns), the share of the CPUs' time the hypervisor took meanwhile,
# which slows every transfer of the run alike.
stolen_during() {
    local point=$1 steal_before total_before steal_after total_after
    shift
    read -r steal_before total_before < <(cpu_ticks)
    "$@"
    read -r steal_after total_after < <(cpu_ticks)
    awk -v steal=$((steal_after - steal_before)) -v total=$((total_after - total_before)) -v row="$point,rail0,xfer_steal,1048576" \
        'BEGIN { printf "%s,%.2f,%%\n", row, (total > 0 ? 100 * steal / total : 0) }' >>"$RAW"
}

# Address of node N on network NET (mgmt, rail0, ...), from `braid cluster status`.

# iperf3 from n0 to n1 for SECONDS over each rail in RAIL..., all at once; prints the Mbit/s
# received in all.
iperf_rails() {
    local seconds=$1 rail servers=() clients=()
    shift
    for rail in "$@"; do
        ip netns exec "braid-$CLUSTER-n1" iperf3 -s -1 -B "$(cluster_address 1 "rail$rail")" -p $((5201 + rail)) >/dev/null 2>&1 &
        servers+=("$!")
        BACKGROUND+=("$!")
    done
    sleep 0.3
    for rail in "$@"; do
        ip netns exec "braid-$CLUSTER-n0" iperf3 -c "$(cluster_address 1 "rail$rail")" -B "$(cluster_address 0 "rail$rail")" \
            -p $((5201 + rail)) -t "$seconds" -J >"$WORK/iperf-rail$rail.json" &
        clients+=("$!")
    done
    wait "${clients[@]}" "${servers[@]}" 2>/dev/null || true
    for rail in "${servers[@]}"; do
        forget "$rail"
    done
    python3 -c 'import json,sys; print("%.1f" % (sum(json.load(open(f))["end"]["sum_received"]["bits_per_second"] for f in sys.argv[1:]) / 1e6))' \
        "$WORK"/iperf-rail*.json
    rm -f "$WORK"/iperf-rail*.json
}

# Starts an iperf3 flow on rail0 that lasts until cleanup (or `stop_rail0_load`), moving at least a
# quarter of the rail's rate; exits if it cannot be started.
start_load() {
    if ! start_rail0_load $((RAIL0_BITS / 8 / 4)); then
        echo "multirail.sh: no iperf3 load on rail0; the loaded phase cannot run" >&2
        exit 1
    fi
}

braid_osu() {
    timeout "$RUN_LIMIT" "$BRAID" run --cluster "$CLUSTER" -n 2 --ppn 1 "$WORK/osu-braid" "$@" 2>>"$WORK/errors.log" || echo "# failed: braid osu $*" >&2
}

# Open MPI over the cluster: mpirun inside n0, ranks started through the rsh agent.
openmpi_osu() {
    local variant=$1
    shift
    local rails_list weights=() rail=0 rate
    rails_list=$(IFS=,; echo "${RAIL_NAMES[*]}")
    if [ "$variant" = hand-set ]; then
        for rate in "${RAIL_MBITS[@]}"; do
            weights+=(--mca "btl_tcp_bandwidth_rail$rail" "$rate")
            rail=$((rail + 1))
        done
    fi
    (cd "$WORK" && timeout "$RUN_LIMIT" ip netns exec "braid-$CLUSTER-n0" mpirun.openmpi --allow-run-as-root -np 2 \
        --host "$(cluster_address 0 mgmt),$(cluster_address 1 mgmt)" --bind-to none --mca plm_rsh_agent "$WORK/rsh-agent" \
        --mca btl tcp,self --mca btl_tcp_if_include "$rails_list" --mca oob_tcp_if_include mgmt \
        "${weights[@]}" "$WORK/osu-openmpi" "$@" 2>>"$WORK/errors.log") || echo "# failed: Open MPI ($variant) osu $*" >&2
}

# The loaded 1 MiB transfers of one repetition, recorded for RAILS: braid_xfer RAILS STRATEGY,
# openmpi_xfer RAILS VARIANT.
braid_xfer() {
    BRAID_STRATEGY=$2 braid_osu xfer -i "$TRANSFERS" -m 1048576 | record "$1" braid "$2" rail0
}
openmpi_xfer() {
    openmpi_osu "$2" xfer -i "$TRANSFERS" -m 1048576 | record "$1" openmpi "$2" rail0
}


# bw, then latency, 8 B .. 16 MiB, through RUNNER (braid_osu or openmpi_osu VARIANT).
bandwidths() {
    local volume=()
    [ "$MODE" = quick ] && volume=(-v "$VOLUME")
    "$@" bw "${OSU_MODE[@]}" -n 8 -m 8
    "$@" bw "${OSU_MODE[@]}" "${SMALL[@]}"
    "$@" bw "${OSU_MODE[@]}" "${LARGE[@]}" "${volume[@]}"
    "$@" bw "${OSU_MODE[@]}" "${HUGE[@]}" "${volume[@]}"
}
latencies() {
    "$@" latency "${OSU_MODE[@]}" -n 8 -m 8
    "$@" latency "${OSU_MODE[@]}" "${LATENCY[@]}"
}

index=0
for rails in $RAIL_SETS; do
    index=$((index + 1))
    CLUSTER="bm$$r$index"
    tag=${rails//,/+}
    echo "# cluster $CLUSTER: rails $rails" >&2
    "$BRAID" cluster up "$CLUSTER" --nodes 2 --rails "$rails" --mtu "$MTU" >/dev/null
    IFS=, read -r -a rates <<<"$rails"
    RAIL0_BITS=$(rate_bits "${rates[0]}") || exit 2
    RAIL_NAMES=()
    RAIL_MBITS=()
    for rail in "${!rates[@]}"; do
        RAIL_NAMES+=("rail$rail")
        mbits=$(iperf_rails "$IPERF_SECONDS" "$rail")
        RAIL_MBITS+=("${mbits%.*}")
        echo "$tag,iperf3,rail$rail,none,rail_mbits,0,$mbits,Mbit/s" >>"$RAW"
    done
    echo "$tag,iperf3,all,none,rails_at_once_mbits,0,$(iperf_rails "$IPERF_SECONDS" "${!rates[@]}"),Mbit/s" >>"$RAW"
    # What the rails carry, one at a time, in iperf3's window: the bytes each bandwidth is timed over.
    VOLUME=$(IFS=+; echo $(((${RAIL_MBITS[*]}) * 1000000 / 8 * IPERF_SECONDS)))
    "$BRAID" sample --cluster "$CLUSTER" >"$WORK/sample.log" 2>&1 || { echo "# braid sample failed:" >&2; cat "$WORK/sample.log" >&2; }

    if [ "$OPENMPI" = 1 ]; then
        write_rsh_agent "$WORK/rsh-agent" 2
    fi
    # Latencies run in a phase of their own, interleaved across implementations: each follows
    # another latency run, not its own implementation's 16 MiB stream.
    for phase in bandwidths latencies; do
        wanted "$phase" || continue
        for rep in $(seq 1 "$REPS"); do
            for strategy in $STRATEGIES; do
                echo "# braid $strategy $phase (repetition $rep of $REPS)" >&2
                BRAID_STRATEGY=$strategy $phase braid_osu | record "$tag" braid "$strategy" none
            done
            if [ "$OPENMPI" = 1 ]; then
                for variant in default hand-set; do
                    echo "# Open MPI $variant $phase (repetition $rep of $REPS)" >&2
                    $phase openmpi_osu "$variant" | record "$tag" openmpi "$variant" none
                done
            fi
        done
    done

    wanted loaded || { cleanup; continue; }
    start_load
    for rep in $(seq 1 "$REPS"); do
        for strategy in $STRATEGIES; do
            stolen_during "$tag,braid,$strategy" braid_xfer "$tag" "$strategy"
            BRAID_STRATEGY=$strategy braid_osu latency -n 8 -m 8 | record "$tag" braid "$strategy" rail0
        done
        if [ "$OPENMPI" = 1 ]; then
            for variant in default hand-set; do
                stolen_during "$tag,openmpi,$variant" openmpi_xfer "$tag" "$variant"
                openmpi_osu "$variant" latency -n 8 -m 8 | record "$tag" openmpi "$variant" rail0
            done
        fi
    done
    stop_rail0_load
    cleanup
done

# Medians over the repetitions: one row per point, in the order of first appearance.
python3 - "$RAW" "$CSV" <<'EOF'
import csv, statistics, sys

points = {}
with open(sys.argv[1]) as raw:
    for row in csv.DictReader(raw):
        key = tuple(row[field] for field in ("rails", "impl", "variant", "load", "bench", "size", "unit"))
        points.setdefault(key, []).append(float(row["value"]))
with open(sys.argv[2], "w") as out:
    out.write("rails,impl,variant,load,bench,size,value,unit\n")
    for (rails, impl, variant, load, bench, size, unit), values in points.items():
        out.write(f"{rails},{impl},{variant},{load},{bench},{size},{statistics.median(values):g},{unit}\n")
EOF

python3 - "$CSV" <<'EOF'
import csv, sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
value = defaultdict(dict)
rails_sum = defaultdict(float)
at_once = {}
for row in rows:
    if row["impl"] == "iperf3":
        if row["bench"] == "rails_at_once_mbits":
            at_once[row["rails"]] = float(row["value"])
            continue
        rails_sum[row["rails"]] += float(row["value"])
        print(f'{row["rails"]:>22} {row["variant"]}: iperf3 {float(row["value"]):.0f} Mbit/s')
        continue
    value[(row["rails"], row["impl"], row["variant"], row["load"], row["bench"])][int(row["size"])] = float(row["value"])

def cell(series, size, scale=1.0, fmt="{:.0f}"):
    return fmt.format(series[size] * scale) if size in series else "-"

for rails, total in rails_sum.items():
    print(f"\nrails {rails}: sum of single-rail iperf3 = {total:.0f} Mbit/s; efficiency = bw / sum")
    if rails in at_once:
        print(f"  iperf3 on all rails at once: {at_once[rails]:.0f} Mbit/s ({at_once[rails] / total * 100:.0f}% of the sum)")
    sizes = [65536, 1 << 20, 16 << 20]
    print(f'{"impl":<8}{"variant":<10}' + "".join(f'{"eff@" + label:>10}' for label in ["64K", "1M", "16M"])
          + f'{"bw@16M":>9}{"lat@8B":>9}{"lat@1M":>9}{"xfer1M med":>12}{"p99":>8}{"lat@8B":>9}')
    print(f'{"":<18}' + f'{"%":>10}' * 3 + f'{"MB/s":>9}{"us":>9}{"us":>9}{"us (rail0 loaded)":>29}')
    keys = sorted({(impl, variant) for (r, impl, variant, load, bench) in value if r == rails},
                  key=lambda key: (key[0] != "braid", key))
    for impl, variant in keys:
        bw = value.get((rails, impl, variant, "none", "bw"), {})
        lat = value.get((rails, impl, variant, "none", "latency"), {})
        med = value.get((rails, impl, variant, "rail0", "xfer_median"), {})
        p99 = value.get((rails, impl, variant, "rail0", "xfer_p99"), {})
        loaded_lat = value.get((rails, impl, variant, "rail0", "latency"), {})
        effs = [cell(bw, size, 8 / total * 100) for size in sizes]
        print(f"{impl:<8}{variant:<10}" + "".join(f"{e:>10}" for e in effs) + f"{cell(bw, 16 << 20):>9}{cell(lat, 8, 1, '{:.1f}'):>9}"
              + f"{cell(lat, 1 << 20):>9}{cell(med, 1 << 20):>12}{cell(p99, 1 << 20):>8}{cell(loaded_lat, 8, 1, '{:.1f}'):>9}")
print(f"CSV: {sys.argv[1]} (medians; every repetition in the -raw file)")
EOF
if ! { wanted bandwidths && wanted latencies; }; then
    echo "# partial run: the plots in docs/img are left as they are" >&2
elif (cd "$ROOT" && cargo build --release -q -p braid-report); then
    "$ROOT/target/release/braid-report" "$CSV" "$ROOT/docs/img" | sed 's|^|# |'
else
    echo "# braid-report did not build; no plots" >&2
fi
if [ -s "$WORK/errors.log" ]; then
    echo "# stderr of the runs (last 20 lines):" >&2
    tail -20 "$WORK/errors.log" >&2
fi
