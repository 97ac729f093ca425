#!/usr/bin/env bash
# Instructions per call of the chain at N elements (default 16) through jit::script's optimized
# plan, through ex::evaluate_into and through the same-math Highway hand loop, under callgrind
# (repeatable where time is not), and their ratios: issue 15's "jit per call <= 2.5x
# evaluate_into" floor (at N=16) and the instruction side of "hand loop / jit >= 0.9" (at 1M);
# then the instructions of a fresh script's first two calls (issue 15's first-calls floor),
# over calls / 10 fresh scripts, and of the chain's forward + backward through the
# differentiable plan and through eager autograd (the instruction side of the fwd+bwd floors),
# and of a loss with and without its mean as the fusion group's epilogue.
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
  local count="${2:-$calls}"
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/$1.out" "$bin" "$1" "$n" "$count" \
    >/dev/null 2>"$out/$1.log"
  local total
  total="$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/$1.log")"
  echo $((total / count))
}
jit="$(per_call jit)"
expr="$(per_call expr_into)"
hand="$(per_call hand)"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
printf 'N=%s, %s calls, instructions per call: jit %s, evaluate_into %s, hand loop %s\n' \
  "$n" "$calls" "$jit" "$expr" "$hand"
printf '  jit / evaluate_into %s, hand / jit %s, hand / evaluate_into %s (load %s)\n' \
  "$(ratio "$jit" "$expr")" "$(ratio "$hand" "$jit")" "$(ratio "$hand" "$expr")" "$(cut -d' ' -f1-3 /proc/loadavg)"
fresh=$(( calls / 10 > 0 ? calls / 10 : 1 ))
printf '  a fresh script'"'"'s first two calls: %s instructions (mean of %s scripts)\n' "$(per_call first_calls "$fresh")" "$fresh"
fb_jit="$(per_call fwdbwd)"
fb_eager="$(per_call fwdbwd_eager)"
printf '  forward + backward: jit %s, eager autograd %s instructions per call: eager / jit %s\n' \
  "$fb_jit" "$fb_eager" "$(ratio "$fb_eager" "$fb_jit")"
loss="$(per_call loss)"
loss_then="$(per_call loss_then_mean)"
printf '  loss mean((tanh(x*w+b) - t)^2): mean as the group'"'"'s epilogue %s, group then graft::mean %s instructions per call: %s\n' \
  "$loss" "$loss_then" "$(ratio "$loss_then" "$loss")"
