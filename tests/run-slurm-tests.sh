#!/usr/bin/env bash
# Braid under a real Slurm started here: a one-node cluster (this machine; slurmctld and slurmd of
# Debian's Slurm 22.05, as root, authentication off, its own ports and spool in a temporary
# directory), then MPI programs built with braidcc run as users run them there:
#   srun --mpi=pmix (Braid speaks PMIx through OpenPMIx) and srun --mpi=pmi2 (Slurm's PMI-2
#   plug-in, which Braid's PMI-1 client speaks to): ring and collectives at 4 ranks in one job,
#   MPI_Abort, and a rank killed by SIGKILL ending the job within 2 s with the rank named;
#   braid run inside salloc: its ranks are job steps started by srun on the allocation's nodes.
# After every case no rank process and no /dev/shm/braid-* file may be left. Slurm is stopped and
# its directory removed at the end, whatever happened.
#
# Usage:  tests/run-slurm-tests.sh          (root; slurmctld, slurmd and srun installed: scripts/setup)
#         NPB_CG=/path/to/cg.A.x tests/run-slurm-tests.sh   also runs NAS CG (built with braidfort)
#                                                            at 4 ranks both ways and checks it verifies
# Output: `PASS name` / `FAIL name (why)` per case, then `N passed, N failed`; exit 0 only if all passed.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/braid-slurm.XXXXXX")"
TIMEOUT="${TIMEOUT:-60}"
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1 ($2)"; failed=$((failed + 1)); }
summary() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; }

stop_slurm() {
    for daemon in slurmd slurmctld; do
        [ -s "$WORK/$daemon.pid" ] && kill "$(cat "$WORK/$daemon.pid")" 2>/dev/null
    done
    sleep 1
    for daemon in slurmd slurmctld; do
        [ -s "$WORK/$daemon.pid" ] && kill -9 "$(cat "$WORK/$daemon.pid")" 2>/dev/null
    done
    pkill -9 -f "slurmstepd.*$WORK" 2>/dev/null
    rm -rf "$WORK"
}
trap stop_slurm EXIT

if [ "$(id -u)" -ne 0 ]; then
    fail "setup" "needs root, to start slurmctld and slurmd"; summary; exit 1
fi
for tool in slurmctld slurmd srun salloc sinfo scontrol; do
    if ! command -v "$tool" >/dev/null; then
        fail "setup" "$tool is not installed (Debian's slurmctld, slurmd, slurm-client: scripts/setup installs them)"; summary; exit 1
    fi
done
for needed in "$ROOT/bin/braidcc" "$ROOT/target/release/braid"; do
    [ -x "$needed" ] || { fail "setup" "$needed is missing: run cargo build --release first"; summary; exit 1; }
done

# --- the programs
mkdir -p "$WORK/bin" "$WORK/logs" "$WORK/state" "$WORK/spool"
for program in ring collectives abort_code kill_rank spawn; do
    if ! "$ROOT/bin/braidcc" -O2 -DTEST_BRAID_ONLY -I"$ROOT/tests/c" "$ROOT/tests/c/$program.c" -o "$WORK/bin/$program" 2>"$WORK/logs/build-$program.log"; then
        fail "build $program" "$(head -c 300 "$WORK/logs/build-$program.log")"
    fi
done

# --- Slurm: one node, this machine, on ports of its own.
node="$(hostname -s)"
base=$((20000 + RANDOM % 20000))
cpus=$(($(nproc) > 4 ? $(nproc) : 4))
cat >"$WORK/slurm.conf" <<EOF
ClusterName=braidtest
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
SlurmctldPort=$base
SlurmdPort=$((base + 1))
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/logs/slurmctld.log
SlurmdLogFile=$WORK/logs/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
SchedulerType=sched/builtin
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$node CPUs=$cpus State=UNKNOWN
PartitionName=braid Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF="$WORK/slurm.conf"
slurmctld >"$WORK/logs/slurmctld.out" 2>&1 && slurmd >"$WORK/logs/slurmd.out" 2>&1
ready=no
for _ in $(seq 1 50); do
    if [ "$(sinfo -h -o %t 2>/dev/null)" = idle ]; then ready=yes; break; fi
    sleep 0.2
done
if [ "$ready" != yes ]; then
    fail "setup" "the Slurm node did not come up: $(tail -n 2 "$WORK/logs/slurmctld.log" "$WORK/logs/slurmd.log" 2>/dev/null | tr '\n' ' ' | head -c 300)"
    summary; exit 1
fi

# --- running a case
shm_files() { ls -1 /dev/shm 2>/dev/null | grep '^braid-' | sort; }
# run NAME -- COMMAND...: runs it with a time limit; sets RC, OUT, ERR, ELAPSED_MS and LEFTOVER.
run() {
    local name="$1" before start
    shift 2
    OUT="$WORK/logs/$(echo "$name" | tr -c 'A-Za-z0-9=._-' '_').out"
    ERR="${OUT%.out}.err"
    before="$(shm_files)"
    start=$(date +%s%N)
    timeout -k 5 "$TIMEOUT" "$@" >"$OUT" 2>"$ERR" </dev/null
    RC=$?
    ELAPSED_MS=$((($(date +%s%N) - start) / 1000000))
    LEFTOVER=""
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        local rest files
        rest="$(pgrep -f "$WORK/bin/" | tr '\n' ' ')"
        files="$(comm -13 <(echo "$before") <(shm_files) | tr '\n' ' ')"
        [ -z "$rest$files" ] && return
        LEFTOVER="left behind: processes ${rest:-none}, files ${files:-none}"
        sleep 0.3
    done
    pkill -9 -f "$WORK/bin/" 2>/dev/null
}
explain() { grep -v '^\s*$' "$1" 2>/dev/null | tail -n 2 | tr '\n' ' ' | head -c 300; }
succeeds() {
    local name="$1" expect="$2"
    shift 2
    run "$name" -- "$@"
    if [ "$RC" -ne 0 ]; then fail "$name" "exit $RC: $(explain "$ERR")"
    elif [ -n "$LEFTOVER" ]; then fail "$name" "$LEFTOVER"
    elif ! grep -q -- "$expect" "$OUT"; then fail "$name" "no '$expect' in the output: $(explain "$OUT")"
    else pass "$name"; fi
}

for mpi in pmix pmi2; do
    succeeds "ring srun --mpi=$mpi n=4" "ring: 4 ranks" srun --mpi="$mpi" -n 4 "$WORK/bin/ring"
    succeeds "collectives srun --mpi=$mpi n=4" "ok on 4 ranks" srun --mpi="$mpi" -n 4 "$WORK/bin/collectives"
    name="abort_code srun --mpi=$mpi n=3"
    run "$name" -- srun --mpi="$mpi" -n 3 "$WORK/bin/abort_code"
    if [ "$RC" -eq 0 ] || [ "$RC" -eq 124 ]; then fail "$name" "exit $RC: MPI_Abort did not end the job with an error"
    elif [ -n "$LEFTOVER" ]; then fail "$name" "$LEFTOVER"
    else pass "$name"; fi
done

# MPI_Comm_spawn under srun --mpi=pmix: Braid does not ask a PMIx launcher to spawn (Slurm's
# would refuse anyway); the call fails with an error that says so, and the job ends.
name="spawn srun --mpi=pmix n=1"
run "$name" -- srun --mpi=pmix -n 1 "$WORK/bin/spawn"
if [ "$RC" -eq 0 ] || [ "$RC" -eq 124 ]; then fail "$name" "exit $RC: expected MPI_Comm_spawn to fail: $(explain "$ERR")"
elif ! grep -q "PMIx launcher" "$ERR"; then fail "$name" "the error does not name the PMIx launcher: $(explain "$ERR")"
elif [ -n "$LEFTOVER" ]; then fail "$name" "$LEFTOVER"
else pass "$name"; fi

# A rank killed by SIGKILL: the job ends within 2 s of its death, and the rank is named.
killed() {
    local name="$1" named="$2"
    shift 2
    rm -f "$WORK/stamp"
    run "$name" -- "$@" "$WORK/bin/kill_rank" "$WORK/stamp"
    local ended=$(($(date +%s%N) / 1000000))
    if [ ! -s "$WORK/stamp" ]; then fail "$name" "rank 1 never reached its SIGKILL (exit $RC: $(explain "$ERR"))"; return; fi
    local after=$((ended - $(cat "$WORK/stamp")))
    if [ "$RC" -eq 0 ] || [ "$RC" -eq 124 ]; then fail "$name" "exit $RC after a rank was killed"
    elif [ "$after" -gt 2500 ]; then fail "$name" "the job ended ${after} ms after the rank died (the bar is 2 s; 0.5 s of it is this script's checks)"
    elif ! grep -q -E -- "$named" "$ERR"; then fail "$name" "the rank is not named ('$named'): $(explain "$ERR")"
    elif [ -n "$LEFTOVER" ]; then fail "$name" "$LEFTOVER"
    else pass "$name (ended ${after} ms after the kill)"; fi
}
# Slurm's PMIx server ends the step itself ("task 1: Killed"); its PMI-2 server does not, and the
# ranks that wait for rank 1 find its process gone (BRAID_PEER_CHECK_MS) and abort the job.
killed "kill_rank srun --mpi=pmix n=3" "task 1" srun --mpi=pmix -n 3
killed "kill_rank srun --mpi=pmi2 n=3" "rank 1 is unreachable: its process .* ended" srun --mpi=pmi2 -n 3

# braid run inside an allocation: ranks are job steps on the allocation's nodes.
succeeds "ring braid run in salloc n=4" "ring: 4 ranks" salloc --quiet -n 4 "$ROOT/target/release/braid" run -n 4 "$WORK/bin/ring"
name="braid run in salloc starts job steps"
run "$name" -- salloc --quiet -n 2 "$ROOT/target/release/braid" run -n 2 --tag-output sh -c 'echo "step ${SLURM_STEP_ID:-none}"'
steps="$(grep -c 'step [0-9]' "$OUT")"
if [ "$RC" -ne 0 ] || [ "$steps" -ne 2 ]; then fail "$name" "exit $RC, $steps of 2 ranks ran as job steps: $(explain "$OUT") $(explain "$ERR")"; else pass "$name"; fi
killed "kill_rank braid run in salloc n=3" "rank 1" salloc --quiet -n 3 "$ROOT/target/release/braid" run -n 3

if [ -n "${NPB_CG:-}" ]; then
    for mpi in pmix pmi2; do
        succeeds "NAS CG srun --mpi=$mpi n=4" "Verification    =               SUCCESSFUL" srun --mpi="$mpi" -n 4 "$NPB_CG"
    done
    succeeds "NAS CG braid run in salloc n=4" "Verification    =               SUCCESSFUL" salloc --quiet -n 4 "$ROOT/target/release/braid" run -n 4 "$NPB_CG"
fi
summary
