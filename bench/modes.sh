#!/usr/bin/env bash
# Small-message latency on this VM is bimodal: each run lands in a fast mode (about 0.15 us) or a
# slow one (about 0.35-0.7 us), depending on where the host puts the two vCPUs at the time. A
# median over repetitions then mostly says how often each library landed in which mode. This
# script splits every repetition of a compare.sh raw file at a threshold and compares the
# libraries within each mode.
#
# Usage: bench/modes.sh bench/results/DATE-raw.csv [THRESHOLD_US (default 0.25)] [MAX_BYTES (default 16)]
# Output: per size and mode, each library's count of repetitions and their median, and Braid's
# ratio to each peer's median in the same mode.
set -euo pipefail

RAW="${1:?usage: bench/modes.sh RAW.csv [THRESHOLD_US] [MAX_BYTES]}"
THRESHOLD="${2:-0.25}"
MAX_BYTES="${3:-16}"

awk -F, -v threshold="$THRESHOLD" -v max_bytes="$MAX_BYTES" '
    $3 == "latency" && $4 == 2 && $5 + 0 <= max_bytes {
        mode = ($6 + 0 < threshold) ? "fast" : "slow"
        key = $5 SUBSEP mode SUBSEP $1
        values[key, ++count[key]] = $6 + 0
        sizes[$5 + 0] = 1
        if (!($1 in seen)) { seen[$1] = 1; order[++nimpls] = $1 }
    }
    function median(key,    n, i, j, t, v) {
        n = count[key]
        for (i = 1; i <= n; i++) v[i] = values[key, i]
        for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    END {
        printf "%-6s %-5s", "size", "mode"
        for (i = 1; i <= nimpls; i++) printf " %18s", order[i] " (n, us)"
        for (i = 1; i <= nimpls; i++) if (order[i] != "braid") printf " %14s", "braid/" order[i]
        printf "\n"
        for (size = 0; size <= max_bytes; size++) {
            if (!(size in sizes)) continue
            split("fast slow", modes, " ")
            for (m = 1; m <= 2; m++) {
                printf "%-6s %-5s", size, modes[m]
                for (i = 1; i <= nimpls; i++) {
                    impl = order[i]
                    key = size SUBSEP modes[m] SUBSEP impl
                    if (count[key]) { med[impl] = median(key); printf " %11d %6.3f", count[key], med[impl] }
                    else { med[impl] = ""; printf " %18s", "-" }
                }
                for (i = 1; i <= nimpls; i++) {
                    impl = order[i]
                    if (impl == "braid") continue
                    if (med["braid"] != "" && med[impl] != "") printf " %14.2f", med["braid"] / med[impl]
                    else printf " %14s", "-"
                }
                printf "\n"
            }
        }
    }' "$RAW"
