#!/usr/bin/env bash
# Runs bench_ddp with 1 and 2 ranks, one after the other (issue 17's per-step figures).
#   bench/distributed/run_ddp.sh <build dir> [rounds] [steps per round]
# Needs the benchmarks built: cmake --build <build dir> --target graft_bench_ddp
set -euo pipefail
build="${1:?usage: run_ddp.sh <build dir> [rounds] [steps]}"
shift
flags=()
if mpirun --version 2>/dev/null | grep -q "Open MPI"; then
  [ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
fi
for np in 1 2; do
  mpirun -np "$np" "${flags[@]}" --bind-to core "$build/bench/bench_ddp" "$@"
done
