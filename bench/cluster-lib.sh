# Shared by the benchmarks that run on a virtual cluster (multirail.sh, coll_cluster.sh,
# rail_cpu.sh, rails_ab.sh, nic_sharing.sh, placement.sh, network_cores.sh, sharing.sh);
# sourced, with BRAID (the braid binary) and CLUSTER (the cluster's name) set, or set by
# bench_workspace.

# bench_workspace NAME PREFIX: sets WORK (a scratch folder /tmp/braid-NAME.*), RAW (this run's
# bench/results/NAME-<date>-raw.csv) and CLUSTER (PREFIX<pid>), and removes the cluster and the
# scratch folder on exit.
bench_workspace() {
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/braid-$1.XXXXXX")"
    mkdir -p "$ROOT/bench/results"
    RAW="$ROOT/bench/results/$1-$(date +%Y-%m-%d-%H%M%S)-raw.csv"
    CLUSTER="$2$$"
    trap '"$BRAID" cluster down "$CLUSTER" >/dev/null 2>&1; rm -rf "$WORK"' EXIT
    trap 'exit 130' INT TERM
}

# sampled_cluster ARGS...: builds CLUSTER (`braid cluster up CLUSTER ARGS...`, taking down one of
# that name first) and samples its rails into WORK/rail-profiles (BRAID_PROFILE_DIR); on failure
# prints the log and exits.
sampled_cluster() {
    "$BRAID" cluster down "$CLUSTER" >/dev/null 2>&1
    export BRAID_PROFILE_DIR="$WORK/rail-profiles"
    "$BRAID" cluster up "$CLUSTER" "$@" >"$WORK/cluster.log" 2>&1 || { cat "$WORK/cluster.log" >&2; exit 1; }
    "$BRAID" sample --cluster "$CLUSTER" >>"$WORK/cluster.log" 2>&1 || { echo "braid sample failed:" >&2; cat "$WORK/cluster.log" >&2; exit 1; }
}

# session_prefix SCRIPT MODE: sets SESSION to what goes in front of each rank's program for
# `--sessions MODE`: nothing for launcher, `setsid -w` for rank (every rank in a session of its
# own, so that under autogroup scheduling each gets its own share of the CPUs); exits otherwise.
session_prefix() {
    case "$2" in
    launcher) SESSION=() ;;
    rank) SESSION=(setsid -w) ;;
    *) echo "$1: --sessions takes rank or launcher, not '$2'" >&2; exit 2 ;;
    esac
}

# cluster_address NODE NET: the address of node NODE (0, 1, ...) on network NET (mgmt, rail0, ...),
# from `braid cluster status`, or from CLUSTER_STATUS when the caller has kept a copy of it.
cluster_address() {
    local status="${CLUSTER_STATUS:-}"
    [ -n "$status" ] || status="$("$BRAID" cluster status "$CLUSTER")"
    awk -v node="braid-$CLUSTER-n$1" -v net="$2" '
        $1 == "node" { for (i = 2; i <= NF; i++) column[$i] = i }
        $1 == node { print $(column[net]) }' <<<"$status"
}

# write_rsh_agent FILE NODES: an rsh agent for Open MPI's mpirun (`--mca plm_rsh_agent FILE`) that
# runs a command in the namespaces of the node whose management address it is given. Each node gets
# a /dev/shm of its own, as a real node has: the namespaces share one host name, so Open MPI's
# shared-memory segment names would collide.
write_rsh_agent() {
    local file="$1" nodes="$2" node
    {
        echo '#!/bin/sh'
        echo '# Open MPI rsh agent: runs the command in the namespaces of the node with that address.'
        echo 'host=$1; shift'
        echo 'case $host in'
        for node in $(seq 0 $((nodes - 1))); do
            echo "$(cluster_address "$node" mgmt)) exec ip netns exec braid-$CLUSTER-n$node unshare -m sh -c \"mount -t tmpfs tmpfs /dev/shm && \$*\" ;;"
        done
        echo '*) echo "rsh agent: unknown host $host" >&2; exit 1 ;;'
        echo 'esac'
    } >"$file"
    chmod +x "$file"
}

# rate_bits RATE: the bits per second of a rail rate as `braid cluster up --rails` takes it
# (e.g. 250mbit, 2gbit); returns 1, saying so, for a rate not in kbit, mbit or gbit.
rate_bits() {
    case "$1" in
    *gbit) echo $((${1%gbit} * 1000000000)) ;;
    *mbit) echo $((${1%mbit} * 1000000)) ;;
    *kbit) echo $((${1%kbit} * 1000)) ;;
    *) echo "rail rate $1 is not in kbit, mbit or gbit" >&2; return 1 ;;
    esac
}

# start_rail0_load MIN_BYTES_PER_S: starts an iperf3 flow from n0 to n1 on rail0 that lasts until
# stop_rail0_load, with its server and client as LOAD_SERVER and LOAD_CLIENT, and checks that it
# moves at least MIN_BYTES_PER_S (a client that found no server yet exits at once: it is started
# again, up to three times). Returns 1 if it could not be started.
start_rail0_load() {
    local min="$1" server client attempt before after
    server=$(cluster_address 1 rail0)
    client=$(cluster_address 0 rail0)
    for attempt in 1 2 3; do
        ip netns exec "braid-$CLUSTER-n1" iperf3 -s -1 -B "$server" -p 5299 >/dev/null 2>&1 &
        LOAD_SERVER=$!
        sleep 0.3
        ip netns exec "braid-$CLUSTER-n0" iperf3 -c "$server" -B "$client" -p 5299 -t 3600 >/dev/null 2>&1 &
        LOAD_CLIENT=$!
        sleep 1
        before=$(rail0_sent)
        sleep 0.5
        after=$(rail0_sent)
        if kill -0 "$LOAD_CLIENT" 2>/dev/null && [ $((after - before)) -gt $((min / 2)) ]; then
            return 0
        fi
        echo "# the iperf3 load on rail0 did not start (attempt $attempt): $(((after - before) * 16 / 1000000)) Mbit/s" >&2
        stop_rail0_load
    done
    return 1
}

# Stops the flow start_rail0_load started, warning if it had ended on its own, and clears
# LOAD_CLIENT and LOAD_SERVER, so that an exit handler that kills them kills no reused pid.
stop_rail0_load() {
    kill -0 "$LOAD_CLIENT" 2>/dev/null || echo "# warning: the iperf3 load on rail0 had ended before it was stopped" >&2
    kill "$LOAD_CLIENT" "$LOAD_SERVER" 2>/dev/null || true
    wait "$LOAD_CLIENT" "$LOAD_SERVER" 2>/dev/null || true
    LOAD_CLIENT=""
    LOAD_SERVER=""
    sleep 0.5
}

# Bytes n0 has sent on rail0.
rail0_sent() {
    ip netns exec "braid-$CLUSTER-n0" cat /sys/class/net/rail0/statistics/tx_bytes
}
