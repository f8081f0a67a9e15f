#!/usr/bin/env python3
"""The multinode bars, read from the result files of one bench/bars.sh run (see its header).

Each bar prints what was measured and whether it held. The figures come from the benchmarks'
own result files; nothing is measured here.

Usage: bench/bars.py [--multirail CSV]... [--rail-cpu CSV]... [--coll POINTS_CSV]
                     [--latency-quiet RAW_CSV]... [--latency-loaded RAW_CSV]...
"""
import argparse
import csv
import re
import statistics
from collections import defaultdict

EFFICIENCY_SIZES = {65536: 85.0, 1 << 20: 95.0, 4 << 20: 95.0, 16 << 20: 95.0}
LOADED_P99_MAX = 0.8
CPU_PER_BYTE_MAX = 1.3
COLLECTIVE_MAX = 0.8
COLLECTIVES = ("allreduce", "bcast", "alltoall")
COLLECTIVE_SIZES = (8, 65536, 4194304)
AGREEMENT_MIN = 90.0
LATENCY_MEDIAN_MAX = 1.0
LATENCY_ROUND_MAX = 1.5

verdicts = []


def bar(name, measured, held):
    verdicts.append(held)
    print(f"{'held' if held else 'NOT held':<9} {name}: {measured}")


def mtu_of(path):
    match = re.search(r"mtu(\d+)", path)
    return match.group(1) if match else "?"


def multirail(path):
    mtu = mtu_of(path)
    rows = list(csv.DictReader(open(path)))
    rails_sum = defaultdict(float)
    value = {}
    for row in rows:
        if row["impl"] == "iperf3":
            if row["variant"].startswith("rail"):
                rails_sum[row["rails"]] += float(row["value"])
            continue
        value[(row["rails"], row["variant"], row["load"], row["bench"], int(row["size"]))] = float(row["value"])
    for rails, total in rails_sum.items():
        shares, held = [], True
        for size, least in EFFICIENCY_SIZES.items():
            bandwidth = value.get((rails, "hetero", "none", "bw", size))
            label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
            if bandwidth is None:
                shares.append(f"{label} -")
                held = False
                continue
            share = bandwidth * 8 / total * 100
            shares.append(f"{label} {share:.0f}%")
            held &= share >= least
        bar(f"MTU {mtu}, {rails}: hetero >= 95% of the rails' iperf3 sum (85% at 64 KiB)", ", ".join(shares), held)
        hetero = value.get((rails, "hetero", "rail0", "xfer_p99", 1 << 20))
        weighted = value.get((rails, "weighted", "rail0", "xfer_p99", 1 << 20))
        if hetero is None or weighted is None:
            bar(f"MTU {mtu}, {rails}: loaded p99 <= {LOADED_P99_MAX}x weighted's", "not measured", False)
        else:
            ratio = hetero / weighted
            measured = f"{hetero / 1e3:.1f} / {weighted / 1e3:.1f} ms = {ratio:.2f}{repetitions(path, rails)}"
            bar(f"MTU {mtu}, {rails}: loaded p99 <= {LOADED_P99_MAX}x weighted's", measured, ratio <= LOADED_P99_MAX)


def repetitions(path, rails):
    """The loaded p99 ratio of each repetition, with the share of the CPUs' time the hypervisor
    took during each strategy's transfers, from the run's raw file (rows in run order)."""
    raw = path[: -len(".csv")] + "-raw.csv"
    try:
        rows = [row for row in csv.DictReader(open(raw)) if row["rails"] == rails and row["impl"] == "braid"]
    except OSError:
        return ""
    series = lambda variant, bench: [float(row["value"]) for row in rows if row["variant"] == variant and row["bench"] == bench]
    ratios = [h / w for h, w in zip(series("hetero", "xfer_p99"), series("weighted", "xfer_p99"))]
    if not ratios:
        return ""
    text = f"; per repetition {', '.join(f'{r:.2f}' for r in ratios)}"
    steal = {variant: series(variant, "xfer_steal") for variant in ("hetero", "weighted")}
    if all(steal.values()):
        text += "; hypervisor steal " + ", ".join(f"{h:.1f}/{w:.1f}%" for h, w in zip(steal["hetero"], steal["weighted"])) + " (hetero/weighted)"
    return text


def rail_cpu(path):
    mtu = mtu_of(path)
    per_byte = defaultdict(list)
    for row in csv.DictReader(open(path)):
        if row["variant"] == "idle" or float(row["machine_cpu_s"]) <= 0:
            continue
        per_byte[row["variant"]].append(float(row["bytes"]) / float(row["machine_cpu_s"]))
    if "iperf3" not in per_byte:
        bar(f"MTU {mtu}: CPU per byte <= {CPU_PER_BYTE_MAX}x iperf3's", "no iperf3 run", False)
        return
    base = statistics.median(per_byte["iperf3"])
    for variant, values in sorted(per_byte.items()):
        if not variant.startswith("braid-"):
            continue
        ratio = base / statistics.median(values)
        bar(f"MTU {mtu}: CPU per byte of {variant} <= {CPU_PER_BYTE_MAX}x iperf3's", f"{ratio:.2f}x", ratio <= CPU_PER_BYTE_MAX)


def collectives(path):
    rows = list(csv.DictReader(open(path)))
    worst, missing = None, 0
    for row in rows:
        if row["collective"] not in COLLECTIVES or int(row["size"]) not in COLLECTIVE_SIZES:
            continue
        if not row["auto_over_openmpi"]:
            missing += 1
            continue
        ratio = float(row["auto_over_openmpi"])
        if worst is None or ratio > worst[0]:
            worst = (ratio, f"{row['placement']} {row['collective']} {row['size']} B")
    if worst is None:
        bar(f"collectives <= {COLLECTIVE_MAX}x Open MPI", "no Open MPI runs", False)
    else:
        bar(f"collectives <= {COLLECTIVE_MAX}x Open MPI", f"at most {worst[0]:.2f} ({worst[1]})" + (f"; {missing} points without Open MPI" if missing else ""), worst[0] <= COLLECTIVE_MAX and missing == 0)
    judged = [row for row in rows if row["ok"] in ("yes", "NO")]
    agreeing = sum(row["ok"] == "yes" for row in judged)
    share = 100 * agreeing / len(judged) if judged else 0.0
    misses = ", ".join(f"{row['placement']} {row['collective']} {row['size']} B" for row in judged if row["ok"] == "NO")
    bar(f"cost model agrees with the measured best in >= {AGREEMENT_MIN:.0f}%", f"{agreeing}/{len(judged)} ({share:.0f}%)" + (f"; missed {misses}" if misses else ""), share >= AGREEMENT_MIN)
    slower = [f"{row['placement']} {row['collective']} {row['size']} B ({float(row['auto_beats_off']):.2f})" for row in rows if row["pick"] == "hier" and row["auto_beats_off"] and float(row["auto_beats_off"]) < 0.5]
    bar("never slower than flat (auto's hierarchical form wins most pairs of runs)", ", ".join(slower) if slower else "everywhere", not slower)


def latency_rounds(paths):
    """Per round (a repetition of one run), Braid's 8-byte latency over Open MPI's."""
    ratios = []
    for path in paths:
        by_rep = defaultdict(dict)
        for row in csv.DictReader(open(path)):
            if row["bench"] == "latency" and row["size"] == "8":
                by_rep[row["rep"]][row["impl"]] = float(row["value"])
        ratios.append([rep["braid"] / rep["openmpi"] for rep in by_rep.values() if "braid" in rep and "openmpi" in rep])
    return ratios


def latency(paths, condition):
    for index, ratios in enumerate(latency_rounds(paths), 1):
        if not ratios:
            bar(f"8 B latency {condition}, run {index}", "no rounds", False)
            continue
        median, top = statistics.median(ratios), max(ratios)
        bar(f"8 B latency {condition}, run {index}: median round <= {LATENCY_MEDIAN_MAX}x Open MPI, none above {LATENCY_ROUND_MAX}x",
            f"median {median:.2f}, rounds {min(ratios):.2f}-{top:.2f} ({len(ratios)})", median <= LATENCY_MEDIAN_MAX and top <= LATENCY_ROUND_MAX)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--multirail", action="append", default=[])
    parser.add_argument("--rail-cpu", action="append", default=[])
    parser.add_argument("--coll")
    parser.add_argument("--latency-quiet", action="append", default=[])
    parser.add_argument("--latency-loaded", action="append", default=[])
    args = parser.parse_args()
    for path in args.multirail:
        multirail(path)
    for path in args.rail_cpu:
        rail_cpu(path)
    if args.coll:
        collectives(args.coll)
    latency(args.latency_quiet, "quiet")
    latency(args.latency_loaded, "with two nice-19 loops")
    print(f"{sum(verdicts)} of {len(verdicts)} held")


if __name__ == "__main__":
    main()
