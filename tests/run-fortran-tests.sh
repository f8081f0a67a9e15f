#!/usr/bin/env bash
# End-to-end Fortran tests: builds every program in tests/fortran (mpif.h in fixed form, the `mpi`
# and `mpi_f08` modules in free form, .F90 preprocessed) with the implementation's Fortran wrapper and runs it at 1-4
# ranks (4 ranks are oversubscribed on a 2-core machine).
#
# Usage:  tests/run-fortran-tests.sh                  # against Braid (bin/braidfort; needs
#                                                     # `cargo build --release` and gfortran)
#         MPI_IMPL=mpich tests/run-fortran-tests.sh   # the same programs with mpifort.mpich
#         MPI_IMPL=openmpi tests/run-fortran-tests.sh # ... or mpifort.openmpi
#         ONLY=f77 tests/run-fortran-tests.sh         # only the cases whose name contains "f77"
# Output: one line per case, `PASS name` or `FAIL name (why)`, then `N passed, N failed`.
# Exit status: 0 only if every case passed. Logs of failed cases stay in $LOG_DIR (printed).
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SOURCES="$ROOT/tests/fortran"
MPI_IMPL="${MPI_IMPL:-braid}"
ONLY="${ONLY:-}"
TIMEOUT="${TIMEOUT:-60}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/braid-ftests.XXXXXX")"
BUILD="$WORK/bin"
LOG_DIR="$WORK/logs"
mkdir -p "$BUILD" "$LOG_DIR"
passed=0
failed=0

if ! command -v gfortran >/dev/null; then
    echo "FAIL setup (gfortran is not installed: run scripts/setup, or apt-get install gfortran)"
    echo "0 passed, 1 failed"
    exit 1
fi
case "$MPI_IMPL" in
braid)
    # TEST_BRAID_ONLY (in the preprocessed .F90 programs) guards checks that the peers fail.
    FC=("$ROOT/bin/braidfort" -DTEST_BRAID_ONLY)
    LAUNCH=("$ROOT/target/release/braid" run -n)
    if [ ! -x "$ROOT/target/release/braid" ] || [ ! -e "$ROOT/target/release/fortran/include/mpi.mod" ]; then
        echo "FAIL setup (target/release/braid or the Fortran modules are missing: run cargo build --release with gfortran installed)"
        echo "0 passed, 1 failed"
        exit 1
    fi
    ;;
mpich)
    FC=(mpifort.mpich)
    LAUNCH=(mpiexec.mpich -n)
    ;;
openmpi)
    # Open MPI's wrapper does not add -fallow-argument-mismatch, which mpif.h programs need with
    # gfortran 10 and later.
    FC=(mpifort.openmpi -fallow-argument-mismatch)
    # Its default one-sided components (rdma, ucx) refuse a window of a single process here:
    # sm and pt2pt serve every count.
    LAUNCH=(mpirun.openmpi --oversubscribe --mca osc sm,pt2pt -n)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    ;;
*)
    echo "MPI_IMPL must be braid, mpich or openmpi, not '$MPI_IMPL'" >&2
    exit 2
    ;;
esac

finish() {
    local pids
    pids="$(pgrep -f "$BUILD/" || true)"
    # Only processes running our own freshly built binaries can match $BUILD.
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    if [ "$failed" -eq 0 ]; then rm -rf "$WORK"; else rm -rf "$BUILD"; fi
}
trap finish EXIT

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1 ($2)"; failed=$((failed + 1)); }
selected() { [ -z "$ONLY" ] || [[ "$1" == *"$ONLY"* ]]; }
explain() {
    local line
    line="$(grep -m1 -E 'check failed|Error|error|failed|Abort' "$1" 2>/dev/null)"
    [ -z "$line" ] && line="$(grep -v '^\s*$' "$1" 2>/dev/null | tail -n1)"
    echo "${line:0:200}"
}

echo "# implementation: $MPI_IMPL; logs: $LOG_DIR"
PROGRAMS=(f77_layer.f f90_module.f90 f08_module.f90 rma_module.F90 io_module.f90)
# MPI 4 programs: Open MPI 4.1 does not have their functions.
[ "$MPI_IMPL" != openmpi ] && PROGRAMS+=(persistent_coll.f90 large_count.F90)
# Spawning and ports: Debian's MPICH 4.0.2 (ch4:ucx) has no MPI_Open_port.
[ "$MPI_IMPL" != mpich ] && PROGRAMS+=(dynamic.f90)
# MPI 4.1's communicator and session buffers: newer than both peers here.
[ "$MPI_IMPL" = braid ] && PROGRAMS+=(bsend_buffers.f90)
for source in "${PROGRAMS[@]}"; do
    program="${source%.*}"
    selected "$program" || continue
    if ! "${FC[@]}" -O2 -o "$BUILD/$program" "$SOURCES/$source" >"$LOG_DIR/build-$program.log" 2>&1; then
        fail "build $program" "$(explain "$LOG_DIR/build-$program.log")"
        continue
    fi
    for ranks in 1 2 3 4; do
        name="$program n=$ranks"
        log="$LOG_DIR/${program}_$ranks.log"
        timeout -k 5 "$TIMEOUT" "${LAUNCH[@]}" "$ranks" "$BUILD/$program" >"$log" 2>&1 </dev/null
        rc=$?
        if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
            fail "$name" "timed out after ${TIMEOUT}s"
        elif [ "$rc" -ne 0 ]; then
            fail "$name" "exit $rc: $(explain "$log")"
        elif ! grep -q "^$program: 0 failures" "$log"; then
            fail "$name" "no '$program: 0 failures' line: $(explain "$log")"
        else
            pass "$name"
        fi
    done
done

[ "$failed" -gt 0 ] && echo "# logs of failed cases: $LOG_DIR"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
