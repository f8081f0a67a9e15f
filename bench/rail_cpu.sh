#!/usr/bin/env bash
# CPU per byte on the rails: iperf3 against a Braid stream, on a 2-node virtual cluster (needs
# root, iproute2, iperf3, python3 and `cargo build --release`).
#
# For each repetition, interleaved, with the same cluster:
#   idle     nothing runs: the machine's own load (other users), subtracted from the others
#   iperf3   one iperf3 flow per rail, all at once (client in n0, server in n1)
#   iperf3-one-receiver  the same with every server bound to the last CPU and every client to
#            the first (with --layouts): the layout of a Braid stream, one receiving process
#            and one sending, so that the kernel's receive work for all the rails lands where
#            one process reads; iperf3-spread-receivers binds only the clients, to the first CPU
#   braid-S  bench/osu.c bw with S-byte messages (BRAID_STRATEGY=hetero unless set), one rank per
#            node
#   base-S   the same against the libbraid.so in --baseline DIR (a build of other code), so that
#            before and after are measured interleaved on the same cluster
# Each variant runs for WARM seconds, then is measured for WINDOW seconds (steady state, start-up
# left out), then stopped. Measured over the window:
#   bytes    bytes received on n1's rail interfaces (/proc/net/dev in n1: wire bytes, headers
#            included, the same count for both)
#   machine  CPU time of the whole machine from /proc/stat: user + nice + system + irq + softirq
#   procs    utime + stime of the workload's own processes (/proc/<pid>/stat): the two ranks, or
#            the iperf3 clients and servers
# Output: one line per run, then per variant the median and range of Mbit/s, MB moved per
# machine CPU-second (raw, and with the idle load subtracted), MB per process CPU-second, and
# their ratio to iperf3's. Every run goes to bench/results/rail-cpu-<date>.csv.
#
# Usage: bench/rail_cpu.sh [--reps R] [--mtu M] [--rails 2gbit,1gbit,250mbit] [--sizes "1048576 16777216"]
#                          [--warm S] [--window S] [--perf DIR] [--baseline DIR] [--layouts]
#   --layouts    also run the two bound iperf3 variants above (needs 2 or more CPUs)
#   --perf DIR   also record `perf record -e cpu-clock -a -g` over the window of the first
#                repetition of each variant into DIR/<variant>.data
# BRAID_* variables set by the caller reach the ranks (BRAID_STRATEGY defaults to hetero).
# Everything it starts (cluster rc<pid>, iperf3 and braid processes, scratch files) is removed on
# exit; traffic stays inside the cluster's namespaces.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BRAID="$ROOT/target/release/braid"
# shellcheck source=bench/cluster-lib.sh
source "$ROOT/bench/cluster-lib.sh"
REPS=3
MTU=1500
RAILS="2gbit,1gbit,250mbit"
SIZES="1048576 16777216"
WARM=1
WINDOW=3
PERF_DIR=""
BASELINE=""
LAYOUTS=0
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) REPS="$2"; shift ;;
    --mtu) MTU="$2"; shift ;;
    --rails) RAILS="$2"; shift ;;
    --sizes) SIZES="$2"; shift ;;
    --warm) WARM="$2"; shift ;;
    --window) WINDOW="$2"; shift ;;
    --perf) PERF_DIR="$2"; shift ;;
    --baseline) BASELINE="$2"; shift ;;
    --layouts) LAYOUTS=1 ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/p}' "$0"; exit 0 ;;
    *) echo "rail_cpu.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
for number in "$REPS" "$MTU" "$WARM" "$WINDOW"; do
    [[ "$number" =~ ^[1-9][0-9]*$ ]] || { echo "rail_cpu.sh: --reps, --mtu, --warm and --window need positive whole numbers" >&2; exit 2; }
done
for tool in ip tc iperf3 python3; do
    command -v "$tool" >/dev/null || { echo "rail_cpu.sh: $tool is not installed" >&2; exit 1; }
done
[ -z "$BASELINE" ] || [ -f "$BASELINE/libbraid.so" ] || { echo "rail_cpu.sh: no libbraid.so in $BASELINE" >&2; exit 1; }
[ -z "$PERF_DIR" ] || command -v perf >/dev/null || { echo "rail_cpu.sh: --perf needs perf" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "rail_cpu.sh: building virtual clusters needs root" >&2; exit 1; }
LAST_CPU=$(($(nproc) - 1))
[ "$LAYOUTS" = 0 ] || [ "$LAST_CPU" -ge 1 ] || { echo "rail_cpu.sh: --layouts needs 2 or more CPUs" >&2; exit 1; }
[ -x "$BRAID" ] && [ -f "$ROOT/target/release/libbraid.so" ] || { echo "rail_cpu.sh: run cargo build --release first" >&2; exit 1; }
export BRAID_STRATEGY="${BRAID_STRATEGY:-hetero}"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/braid-rail-cpu.XXXXXX")"
CSV="$ROOT/bench/results/rail-cpu-$(date +%Y-%m-%d-%H%M%S)-mtu$MTU.csv"
mkdir -p "$ROOT/bench/results"
export BRAID_PROFILE_DIR="$WORK/profiles"
CLUSTER="rc$$"
CLUSTER_UP=0
RUNNING=()

cleanup() {
    local pid
    for pid in "${RUNNING[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    RUNNING=()
    if [ "$CLUSTER_UP" = 1 ]; then
        "$BRAID" cluster down "$CLUSTER" >/dev/null 2>&1 || true
        CLUSTER_UP=0
    fi
}
trap 'cleanup; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

"$ROOT/bin/braidcc" -std=c99 -O2 "$ROOT/bench/osu.c" -o "$WORK/osu-braid"
if [ -n "$BASELINE" ]; then
    BRAID_LIBDIR="$(cd "$BASELINE" && pwd)" "$ROOT/bin/braidcc" -std=c99 -O2 "$ROOT/bench/osu.c" -o "$WORK/osu-base"
fi

IFS=, read -r -a RATES <<<"$RAILS"
CLUSTER_UP=1
"$BRAID" cluster up "$CLUSTER" --nodes 2 --rails "$RAILS" --mtu "$MTU" >/dev/null
N0="braid-$CLUSTER-n0"
N1="braid-$CLUSTER-n1"
CLUSTER_STATUS="$("$BRAID" cluster status "$CLUSTER")"
# Address of node N on network NET (mgmt, rail0, ...).
"$BRAID" sample --cluster "$CLUSTER" >"$WORK/sample.log" 2>&1 || { echo "rail_cpu.sh: braid sample failed:" >&2; cat "$WORK/sample.log" >&2; exit 1; }

# One snapshot: machine busy ticks, bytes received on n1's rails, and the workload's ticks.
TICKS_PER_SECOND=$(getconf CLK_TCK)
snapshot() {
    local now busy softirq bytes procs kernel
    now=$(date +%s.%N)
    read -r busy softirq < <(awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8, $7 + $8 }' /proc/stat)
    # "railN:" and the byte count touch once the count is wide enough.
    bytes=$(ip netns exec "$N1" cat /proc/net/dev | sed 's/:/: /' | awk '$1 ~ /^rail[0-9]+:$/ { sum += $2 } END { printf "%.0f", sum }')
    procs=$(ticks_of $WATCHED)
    kernel=$(ticks_of $SOFTIRQ_THREADS)
    echo "$now $busy $bytes $procs $kernel $softirq"
}

# utime + stime (fields 14 and 15 of /proc/PID/stat) of the processes PID..., in ticks.
ticks_of() {
    local pid total=0 fields
    for pid in "$@"; do
        fields=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
        # The command name (field 2) of these processes has no spaces.
        total=$((total + $(awk '{ print $14 + $15 }' <<<"$fields")))
    done
    echo "$total"
}
SOFTIRQ_THREADS=$(pgrep -x 'ksoftirqd/[0-9]+' | tr '\n' ' ')

# Processes of the running workload: every process whose command line contains PATTERN.
watch_processes() {
    WATCHED=$(pgrep -f -- "$1" | tr '\n' ' ' || true)
}

# measure VARIANT REP: snapshots around the window; appends the run to the CSV.
measure() {
    local variant=$1 rep=$2 before after perf_pid=""
    sleep "$WARM"
    if [ -n "$PERF_DIR" ] && [ "$rep" = 1 ]; then
        mkdir -p "$PERF_DIR"
        perf record -q -e cpu-clock -a -g -o "$PERF_DIR/$variant.data" -- sleep "$WINDOW" >/dev/null 2>&1 &
        perf_pid=$!
        RUNNING+=("$perf_pid")
    fi
    before=$(snapshot)
    sleep "$WINDOW"
    after=$(snapshot)
    [ -z "${RAIL_CPU_DEBUG:-}" ] || echo "# $variant: $before / $after" >&2
    if [ -n "$perf_pid" ]; then
        wait "$perf_pid" || true
    fi
    python3 - "$variant" "$rep" "$WINDOW" "$TICKS_PER_SECOND" "$before" "$after" >>"$CSV" <<'EOF'
import sys
variant, rep, hz = sys.argv[1], sys.argv[2], float(sys.argv[4])
b = [float(x) for x in sys.argv[5].split()]
a = [float(x) for x in sys.argv[6].split()]
window, busy, moved = a[0] - b[0], (a[1] - b[1]) / hz, a[2] - b[2]
procs, kernel, softirq = (a[3] - b[3]) / hz, (a[4] - b[4]) / hz, (a[5] - b[5]) / hz
print(f"{variant},{rep},{window:.3f},{moved:.0f},{busy:.3f},{softirq:.3f},{procs:.3f},{kernel:.3f}")
EOF
    tail -1 "$CSV" | awk -F, -v load="$(cut -d' ' -f1 /proc/loadavg)" '{ printf "# %-14s rep %s: %7.1f Mbit/s, machine %.2f CPU-s (softirq %.2f), processes %.2f + ksoftirqd %.2f CPU-s (load %s)\n", $1, $2, $4 * 8 / $3 / 1e6, $5, $6, $7, $8, load }' >&2
}

run_idle() {
    WATCHED=""
    measure idle "$1"
}

# run_iperf3 REP [LABEL SERVER_CPUS CLIENT_CPUS]: the iperf3 flows, bound to those CPUs (taskset
# lists; "all" leaves them unbound).
run_iperf3() {
    local rep=$1 label=${2:-iperf3} server_cpus=${3:-all} client_cpus=${4:-all} rail pids=()
    local server_bind=() client_bind=()
    [ "$server_cpus" = all ] || server_bind=(taskset -c "$server_cpus")
    [ "$client_cpus" = all ] || client_bind=(taskset -c "$client_cpus")
    for rail in "${!RATES[@]}"; do
        ip netns exec "$N1" "${server_bind[@]}" iperf3 -s -1 -B "$(cluster_address 1 "rail$rail")" -p $((5201 + rail)) >/dev/null 2>&1 &
        pids+=("$!")
    done
    RUNNING+=("${pids[@]}")
    sleep 0.3
    for rail in "${!RATES[@]}"; do
        ip netns exec "$N0" "${client_bind[@]}" iperf3 -c "$(cluster_address 1 "rail$rail")" -B "$(cluster_address 0 "rail$rail")" -p $((5201 + rail)) \
            -t $((WARM + WINDOW + 2)) >/dev/null 2>&1 &
        pids+=("$!")
    done
    RUNNING+=("${pids[@]}")
    watch_processes "iperf3 -[sc] .*-p 52"
    measure "$label" "$rep"
    wait "${pids[@]}" 2>/dev/null || true
    RUNNING=()
}

# run_braid REP SIZE [PROGRAM LABEL]: osu bw streams from n0 to n1 (PROGRAM osu-braid, LABEL braid).
run_braid() {
    local rep=$1 size=$2 program=${3:-osu-braid} label=${4:-braid} launcher
    # Enough iterations to outlast the window at the rails' full rate; stopped after it.
    "$BRAID" run --cluster "$CLUSTER" -n 2 --ppn 1 "$WORK/$program" bw -n "$size" -m "$size" -i 100000 >/dev/null 2>>"$WORK/errors.log" &
    launcher=$!
    RUNNING+=("$launcher")
    sleep 0.5
    watch_processes "^$WORK/$program bw"
    measure "$label-$size" "$rep"
    [ -n "$WATCHED" ] || echo "rail_cpu.sh: no rank of $label-$size was found running" >&2
    kill "$launcher" 2>/dev/null || true
    wait "$launcher" 2>/dev/null || true
    RUNNING=()
}

echo "variant,rep,window_s,bytes,machine_cpu_s,machine_softirq_s,process_cpu_s,ksoftirqd_cpu_s" >"$CSV"
echo "# cluster $CLUSTER: rails $RAILS, MTU $MTU, BRAID_STRATEGY=$BRAID_STRATEGY${BASELINE:+, baseline $BASELINE}; $REPS repetitions of ${WARM} s warm-up + ${WINDOW} s window" >&2
for rep in $(seq 1 "$REPS"); do
    run_idle "$rep"
    run_iperf3 "$rep"
    if [ "$LAYOUTS" = 1 ]; then
        run_iperf3 "$rep" iperf3-one-receiver "$LAST_CPU" 0
        run_iperf3 "$rep" iperf3-spread-receivers all 0
    fi
    for size in $SIZES; do
        run_braid "$rep" "$size"
        if [ -n "$BASELINE" ]; then
            run_braid "$rep" "$size" osu-base base
        fi
    done
done

python3 - "$CSV" "$(nproc)" <<'EOF'
import csv, statistics, sys
from collections import defaultdict

runs = defaultdict(list)
for row in csv.DictReader(open(sys.argv[1])):
    runs[row["variant"]].append(row)
cpus = int(sys.argv[2])
idle = [float(r["machine_cpu_s"]) / float(r["window_s"]) for r in runs["idle"]]
idle_load = statistics.median(idle) if idle else 0.0

def figures(row):
    window, moved = float(row["window_s"]), float(row["bytes"])
    machine, softirq = float(row["machine_cpu_s"]), float(row["machine_softirq_s"])
    own = float(row["process_cpu_s"]) + float(row["ksoftirqd_cpu_s"])
    return {
        "mbits": moved * 8 / window / 1e6,
        "busy": machine / window / cpus * 100,
        "softirq": softirq / window / cpus * 100,
        "machine": moved / 1e6 / machine,
        "own": moved / 1e6 / own if own > 0 else float("nan"),
        "own_softirq": moved / 1e6 / (own + softirq) if own + softirq > 0 else float("nan"),
    }

def spread(values, digits=0):
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"

print(f"load of everything else (the idle windows): {spread([x / cpus * 100 for x in idle])}% of {cpus} CPUs busy")
print("MB/CPU-s: megabytes received on the rails per CPU-second; machine: user+nice+system+irq+softirq of")
print("the whole machine; own: utime+stime of the workload's processes and of ksoftirqd; own+si: that plus")
print("the machine's softirq time (softirq work interrupting other processes is charged to them, so 'own'")
print("misses it and 'own+si' counts what landed in the workload twice). Median (min-max).")
print(f'{"variant":<24}{"Mbit/s":>20}{"busy %":>14}{"softirq %":>14}{"MB/machine CPU-s":>20}{"MB/own CPU-s":>18}{"MB/own+si CPU-s":>18}')
table = {}
for variant, rows in runs.items():
    if variant == "idle":
        continue
    f = [figures(r) for r in rows]
    table[variant] = {key: [x[key] for x in f] for key in f[0]}
    cols = table[variant]
    print(f"{variant:<24}{spread(cols['mbits']):>20}{spread(cols['busy']):>14}{spread(cols['softirq']):>14}{spread(cols['machine']):>20}{spread(cols['own']):>18}{spread(cols['own_softirq']):>18}")
if "iperf3" in table:
    print("CPU per byte against iperf3 (iperf3's MB per CPU-second over the variant's, medians):")
    base = {key: statistics.median(values) for key, values in table["iperf3"].items()}
    for variant, cols in table.items():
        if variant == "iperf3":
            continue
        ratio = {key: base[key] / max(statistics.median(cols[key]), 1e-9) for key in ("machine", "own", "own_softirq")}
        share = statistics.median(cols["mbits"]) / base["mbits"] * 100
        print(f"  {variant:<24} machine {ratio['machine']:.2f}x, own {ratio['own']:.2f}x, own+si {ratio['own_softirq']:.2f}x; rate {share:.0f}% of iperf3's")
if idle_load > 0.5 * cpus:
    print(f"note: the machine was {idle_load / cpus * 100:.0f}% busy without this benchmark: the machine-wide figures then count")
    print("      the CPU taken from other work, not the CPU the traffic needs; 'own' and 'own+si' bracket it")
print(f"CSV: {sys.argv[1]}")
EOF
# Each Braid run is stopped by a signal once measured: only other messages are news.
if grep -v 'killed by signal 15 (SIGTERM)' "$WORK/errors.log" >"$WORK/news.log" 2>/dev/null && [ -s "$WORK/news.log" ]; then
    echo "# stderr of the runs (last 20 lines):" >&2
    tail -20 "$WORK/news.log" >&2
fi
