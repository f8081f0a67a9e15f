#!/usr/bin/env bash
# Traces loaded 1 MiB transfers one by one, with the rails' TCP state beside them (needs root,
# iproute2, iperf3, python3 and `cargo build --release`). On a 2-node virtual cluster with an
# iperf3 flow on rail0 (as bench/multirail.sh's loaded phase), each strategy runs osu xfer with
# OSU_XFER_TIMES (every transfer's start and time), repetitions interleaved, while `ss -ti` in n0
# samples every TCP connection every 30 ms. Then, per run: the median, p99 and slowest
# transfers; the transfers over 3x the median, in spells (a gap of 10 or more transfers ends a
# spell); and, for each spell, the bytes each rail connection of n0 and the load flow
# retransmitted during it, its highest smoothed round trip, and how much of the CPUs' time the
# hypervisor gave to other guests (steal, from /proc/stat, sampled with `ss`).
#
# Usage: bench/xfer_trace.sh [--reps R] [--transfers N] [--rails RATES] [--mtu M]
#                            [--strategies "hetero weighted"] [--debug]
#   --reps R        repetitions of every strategy (default 2)
#   --transfers N   timed transfers per run (default 1000)
#   --rails RATES   the cluster's rails (default 2gbit,1gbit)
#   --mtu M         MTU of the links (default 1500)
#   --debug         run the ranks with BRAID_DEBUG=1 and break the slowest transfers of each run
#                   into their phases from the ranks' stamped lines: RTS (send to the receiver's
#                   match), CTS (to the sender's split), data (to the receive's completion, with
#                   what each rail brought and how long before the end its last chunk came), FIN
#                   and the reply; with the split and the hedges and takeovers during it
# Output: the summary on stdout; the traces in bench/results/xfer-trace-<date>/ (not kept in git,
# a few MB a run): <strategy>-<rep>.txt, start and time of every transfer; ss.txt, the samples;
# with --debug, <strategy>-<rep>.debug, the ranks' debug lines.
# The cluster, the flow and the sampler are removed on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BRAID="$ROOT/target/release/braid"
# shellcheck source=bench/cluster-lib.sh
source "$ROOT/bench/cluster-lib.sh"
REPS=2
TRANSFERS=1000
RAILS=2gbit,1gbit
MTU=1500
STRATEGIES="hetero weighted"
DEBUG=0
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) REPS="$2"; shift ;;
    --transfers) TRANSFERS="$2"; shift ;;
    --rails) RAILS="$2"; shift ;;
    --mtu) MTU="$2"; shift ;;
    --strategies) STRATEGIES="$2"; shift ;;
    --debug) DEBUG=1 ;;
    -h | --help) sed -n '2,/^set -euo/{/^#/p}' "$0"; exit 0 ;;
    *) echo "xfer_trace.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || { echo "xfer_trace.sh: --reps needs a positive number" >&2; exit 2; }
[[ "$TRANSFERS" =~ ^[1-9][0-9]*$ ]] || { echo "xfer_trace.sh: --transfers needs a positive number" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "xfer_trace.sh: building virtual clusters needs root" >&2; exit 1; }
[ -x "$BRAID" ] || { echo "xfer_trace.sh: run cargo build --release first" >&2; exit 1; }
for tool in ip tc iperf3 ss python3; do
    command -v "$tool" >/dev/null || { echo "xfer_trace.sh: $tool is not installed (scripts/setup)" >&2; exit 1; }
done

CLUSTER="xt$$"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/braid-xfer-trace.XXXXXX")"
OUT="$ROOT/bench/results/xfer-trace-$(date +%Y-%m-%d-%H%M%S)"
mkdir -p "$OUT"
export BRAID_PROFILE_DIR="$WORK/profiles"
LOAD_CLIENT=""
LOAD_SERVER=""
SAMPLER=""
cleanup() {
    [ -z "$SAMPLER" ] || kill "$SAMPLER" 2>/dev/null || true
    [ -z "$LOAD_CLIENT" ] || stop_rail0_load
    "$BRAID" cluster down "$CLUSTER" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

"$ROOT/bin/braidcc" -std=c99 -O2 "$ROOT/bench/osu.c" -o "$WORK/osu"
"$BRAID" cluster up "$CLUSTER" --nodes 2 --rails "$RAILS" --mtu "$MTU" >/dev/null
"$BRAID" sample --cluster "$CLUSTER" >"$WORK/sample.log" 2>&1 || { echo "braid sample failed:" >&2; cat "$WORK/sample.log" >&2; exit 1; }
RAIL0_BITS=$(rate_bits "${RAILS%%,*}") || exit 2
start_rail0_load $((RAIL0_BITS / 8 / 4)) || { echo "xfer_trace.sh: the iperf3 load on rail0 did not start" >&2; exit 1; }
(
    while true; do
        echo "T $(date +%s.%N) $(grep '^cpu ' /proc/stat)"
        ip netns exec "braid-$CLUSTER-n0" ss -tinH state established 2>/dev/null || true
        sleep 0.03
    done
) >"$OUT/ss.txt" &
SAMPLER=$!
echo "# cluster $CLUSTER: rails $RAILS, MTU $MTU, iperf3 on rail0; $REPS x ($STRATEGIES), $TRANSFERS transfers each" >&2
for rep in $(seq 1 "$REPS"); do
    for strategy in $STRATEGIES; do
        echo "# $strategy, repetition $rep of $REPS" >&2
        ERRORS="$OUT/$strategy-$rep.debug"
        if ! OSU_XFER_TIMES="$OUT/$strategy-$rep.txt" BRAID_STRATEGY=$strategy BRAID_DEBUG=$DEBUG \
            "$BRAID" run --cluster "$CLUSTER" -n 2 --ppn 1 "$WORK/osu" xfer -i "$TRANSFERS" -m 1048576 >/dev/null 2>"$ERRORS"; then
            grep -v '^braid: rank [0-9]* \[' "$ERRORS" >&2 || true
            exit 1
        fi
        [ "$DEBUG" = 1 ] || { cat "$ERRORS" >&2; rm "$ERRORS"; }
    done
done
kill "$SAMPLER" 2>/dev/null || true
SAMPLER=""

python3 - "$OUT" <<'EOF'
import bisect, glob, os, re, statistics, sys

out = sys.argv[1]
samples = []
lines = open(os.path.join(out, "ss.txt")).read().split("\n")
index = 0
while index < len(lines):
    line = lines[index]
    if line.startswith("T "):
        fields = line.split()
        # /proc/stat's machine line: the 8th count is steal, ticks the hypervisor ran others.
        counts = [int(count) for count in fields[3:]]
        samples.append((float(fields[1]), {}, (counts[7], sum(counts)) if len(counts) > 7 else (0, 0)))
    elif line and not line.startswith("\t") and samples and index + 1 < len(lines):
        fields = line.split()
        info = lines[index + 1]
        local, peer = fields[2], fields[3]
        # rail0's load flow goes to port 5299; Braid's connections are named by their local address.
        name = "load" if peer.endswith(":5299") else local.rsplit(":", 1)[0]
        value = lambda key: float(m.group(1)) if (m := re.search(key + r":([\d.]+)", info)) else 0.0
        connections = samples[-1][1]
        previous = connections.get((name, local), (0.0, 0.0))
        connections[(name, local)] = (value("bytes_retrans"), max(previous[1], value("rtt")))
        index += 1
    index += 1
times = [stamp for stamp, _, _ in samples]


def during(start, end):
    """Per connection name: bytes retransmitted between the samples around [start, end], and the
    highest smoothed round trip seen in them."""
    first, last = max(bisect.bisect_right(times, start) - 1, 0), min(bisect.bisect_left(times, end), len(samples) - 1)
    retransmitted, rtt = {}, {}
    for key, (bytes_then, _) in samples[first][1].items():
        if key in samples[last][1]:
            retransmitted[key[0]] = retransmitted.get(key[0], 0.0) + samples[last][1][key][0] - bytes_then
    for _, connections, _ in samples[first:last + 1]:
        for key, (_, round_trip) in connections.items():
            rtt[key[0]] = max(rtt.get(key[0], 0.0), round_trip)
    (steal_then, total_then), (steal_now, total_now) = samples[first][2], samples[last][2]
    stolen = (steal_now - steal_then) / (total_now - total_then) if total_now > total_then else 0.0
    return retransmitted, rtt, stolen


def phases(rows, debug):
    """Every transfer of a run cut into its phases by the ranks' stamped debug lines: a summary
    per phase, what the slowest 5% spent in each, and the slowest transfers one by one."""
    events = []
    for line in open(debug, errors="replace"):
        m = re.search(r"rank (\d+) \[(\d+\.\d+)\]: (.*)", line)
        if m:
            events.append((float(m.group(2)), int(m.group(1)), m.group(3)))
    events.sort()
    stamps = [stamp for stamp, _, _ in events]
    names = ["RTS", "CTS", "data", "FIN", "reply"]
    traced = []
    for i, (start, duration) in enumerate(rows):
        during = events[bisect.bisect_left(stamps, start):bisect.bisect_right(stamps, start + duration / 1e6)]
        first = lambda rank, word: next(((stamp, text) for stamp, r, text in during if r == rank and word in text), (None, ""))
        split, done = first(0, " split "), first(1, "receive from")
        marks = [start, first(1, "rendezvous from")[0], split[0], done[0], first(0, "FIN from")[0], start + duration / 1e6]
        if None in marks:
            continue
        moves = sum(1 for _, r, text in during if r == 0 and ("sends again" in text or "takes over" in text))
        early = [float(ago) for ago in re.findall(r"last ([\d.]+) ms ago", done[1])]
        traced.append({"index": i, "ms": duration / 1e3, "phases": [(b - a) * 1e3 for a, b in zip(marks, marks[1:])],
                       "split": split[1].split(" split ")[1], "control": split[1].rsplit("control rail ", 1)[-1],
                       "moves": moves, "early": max(early) if len(early) > 1 else 0.0, "arrived": done[1].split("complete: ")[-1]})
    if not traced:
        print("  no transfer could be cut into phases (were the debug lines stamped?)")
        return
    quantile = lambda values, q: sorted(values)[min(len(values) - 1, int(len(values) * q))]
    print(f"  phases of {len(traced)} transfers, ms (median / p90 / p99):", "; ".join(
        f"{name} {quantile(v, 0.5):.2f} / {quantile(v, 0.9):.2f} / {quantile(v, 0.99):.2f}" for name, v in ((name, [t["phases"][k] for t in traced]) for k, name in enumerate(names))))
    tail = sorted(traced, key=lambda t: t["ms"])[-max(1, len(traced) // 20):]
    total = sum(sum(t["phases"]) for t in tail)
    print("  the slowest 5% spent:", ", ".join(f"{name} {sum(t['phases'][k] for t in tail) / total * 100:.0f}%" for k, name in enumerate(names)),
          f"; one rail done before the other by a median {statistics.median(t['early'] for t in tail):.2f} ms")
    for control in sorted({t["control"] for t in traced}):
        with_it = [t for t in traced if t["control"] == control]
        print(f"  control rail {control}: {len(with_it)} transfers, RTS median {statistics.median(t['phases'][0] for t in with_it):.2f} ms, whole median {statistics.median(t['ms'] for t in with_it):.2f} ms")
    print("  slowest, in ms: RTS / CTS / data / FIN / reply")
    for t in sorted(tail[-8:], key=lambda t: t["index"]):
        cuts = " / ".join(f"{phase:.1f}" for phase in t["phases"])
        print(f"  {t['index']}: {t['ms']:.1f} ms = {cuts}; split {t['split']}; {t['moves']} hedges or takeovers; arrived {t['arrived']}")


for path in sorted(glob.glob(os.path.join(out, "*-*.txt"))):
    if path.endswith("ss.txt"):
        continue
    rows = [tuple(map(float, line.split())) for line in open(path)]
    durations = sorted(duration for _, duration in rows)
    median = statistics.median(durations)
    p99 = durations[min(len(durations) - 1, len(durations) * 99 // 100)]
    _, _, stolen = during(rows[0][0], rows[-1][0] + rows[-1][1] / 1e6)
    print(f"{os.path.basename(path)[:-4]}: median {median / 1e3:.1f} ms, p99 {p99 / 1e3:.1f} ms, slowest {', '.join(f'{d / 1e3:.0f}' for d in durations[-5:])} ms; "
          f"stolen by the hypervisor {stolen * 100:.1f}% of the CPUs' time")
    slow = [i for i, (_, duration) in enumerate(rows) if duration > 3 * median]
    spells = []
    for i in slow:
        if spells and i - spells[-1][-1] < 10:
            spells[-1].append(i)
        else:
            spells.append([i])
    for spell in spells:
        start, end = rows[spell[0]][0], rows[spell[-1]][0] + rows[spell[-1]][1] / 1e6
        retransmitted, rtt, stolen = during(start, end)
        text = ", ".join(f"{name} {retransmitted.get(name, 0) / 1e3:.0f} KB (rtt up to {rtt[name]:.1f} ms)" for name in sorted(rtt))
        worst = max(rows[i][1] for i in spell) / 1e3
        print(f"  transfers {spell[0]}-{spell[-1]} ({len(spell)} over 3x the median, up to {worst:.0f} ms, {end - start:.2f} s): retransmitted {text}; "
              f"stolen by the hypervisor {stolen * 100:.0f}% of the CPUs' time")
    debug = path[:-4] + ".debug"
    if os.path.exists(debug):
        phases(rows, debug)
print(f"traces: {out}")
EOF
