#!/usr/bin/env bash
# graft's LSTM and BatchNorm2d training steps against libtorch's, one thread, thread CPU time
# (bench/README.md, "Recurrent layers and BatchNorm against libtorch"). Runs the two programs
# alternately, `rounds` times each (every program interleaves its own rows' repetitions), and
# prints each row's median over the rounds of the per-round medians, with the load average
# before and after:
#   bash bench/rnn/run.sh <build dir> [rounds=5] [repetitions per round=15]
# The build dir is one configured with -DGRAFT_BUILD_BENCH=ON, after
#   cmake --build <build dir> --target graft_bench_rnn graft_bench_rnn_torch
# (graft_bench_rnn_torch exists when libtorch was found; without it only graft's rows run).
# Debian's libtorch calls the system's libblas.so.3, which is the reference (netlib) BLAS unless
# an optimized one is selected, and allocates through glibc's malloc, which maps and unmaps
# every large buffer (page faults on each first touch, counted in the thread's CPU time): its
# rows as installed are "/torch". When OpenBLAS is installed (apt-get install
# libopenblas0-pthread), libtorch runs a second time with OpenBLAS loaded first (LD_LIBRARY_PATH,
# whatever the system's choice) and glibc told to keep freed memory (MALLOC_MMAP_THRESHOLD_,
# MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_: reuse, as a caching allocator does; graft has one):
# rows "/torch_tuned".
set -euo pipefail
build="${1:?usage: run.sh <build dir> [rounds] [repetitions]}"
rounds="${2:-5}"
reps="${3:-15}"
graft_bin="$build/bench/bench_rnn_graft"
torch_bin="$build/bench/bench_rnn_torch"
openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)  ($(date -u '+%Y-%m-%d %H:%M UTC'))"
for ((r = 0; r < rounds; ++r)); do
    "$graft_bin" "$reps" >>"$out"
    if [ -x "$torch_bin" ]; then
        LD_LIBRARY_PATH="" "$torch_bin" "$reps" torch >>"$out"
        if [ -e "$openblas/libblas.so.3" ]; then
            LD_LIBRARY_PATH="$openblas" MALLOC_MMAP_THRESHOLD_=4000000000 MALLOC_TRIM_THRESHOLD_=4000000000 \
                MALLOC_TOP_PAD_=100000000 "$torch_bin" "$reps" torch_tuned >>"$out"
        fi
    fi
done
echo "load average at end:   $(cut -d' ' -f1-3 /proc/loadavg)  ($(date -u '+%Y-%m-%d %H:%M UTC'))"
printf '%-28s %12s %12s %8s\n' "row (ms per step)" "median" "best min" "rounds"
awk '{ med[$1] = med[$1] " " $2; if (!($1 in best) || $3 < best[$1]) best[$1] = $3; n[$1]++ }
     END {
         for (k in med) {
             m = split(substr(med[k], 2), v, " ");
             for (i = 1; i <= m; ++i) for (j = i + 1; j <= m; ++j) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
             printf "%-28s %12.3f %12.3f %8d\n", k, v[int((m + 1) / 2)], best[k], n[k]
         }
     }' "$out" | sort
