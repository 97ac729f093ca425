#!/usr/bin/env bash
# Instructions per call of the chain at N elements (default 16) through jit::script's optimized
# plan and through ex::evaluate_into, under callgrind (repeatable where time is not), and their
# ratio: issue 15's "jit per call <= 2.5x evaluate_into" floor.
#   bench/callgrind_chain.sh [build dir (default build)] [N] [calls]
set -euo pipefail
build="${1:-build}"
n="${2:-16}"
calls="${3:-1000}"
bin="$build/bench/callgrind_chain"
if [ ! -x "$bin" ]; then
  echo "callgrind_chain.sh: $bin not found: cmake --build $build --target graft_bench_callgrind_chain" >&2
  exit 1
fi
command -v valgrind >/dev/null || { echo "callgrind_chain.sh: valgrind not found (apt-get install valgrind)" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
per_call() {
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/$1.out" "$bin" "$1" "$n" "$calls" \
    >/dev/null 2>"$out/$1.log"
  local total
  total="$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/$1.log")"
  echo $((total / calls))
}
jit="$(per_call jit)"
expr="$(per_call expr_into)"
printf 'N=%s, %s calls: jit %s instructions per call, evaluate_into %s: ratio %s (load %s)\n' \
  "$n" "$calls" "$jit" "$expr" "$(awk -v a="$jit" -v b="$expr" 'BEGIN { printf "%.2f", a / b }')" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
