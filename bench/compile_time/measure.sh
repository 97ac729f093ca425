#!/usr/bin/env bash
# Compile time of graft translation units (bench/README.md, "Compile time"): user CPU
# seconds and peak memory of g++ for each TU here, with the test suite's flags
# (extern kernels: the SIMD kernels are compiled in another TU). Run from anywhere:
#   bash bench/compile_time/measure.sh [extra compiler flags...]
# e.g. '-DHWY_DISABLED_TARGETS=(HWY_SSSE3|HWY_SSE4|HWY_AVX3_DL|HWY_AVX3)' for fewer targets.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cxx="${CXX:-g++}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
printf '%-20s %10s %10s\n' "translation unit" "user s" "peak MB"
for tu in eager_op eager_autograd expr_evaluate expr_function; do
    /usr/bin/time -f '%U %M' -o "$out/time" "$cxx" -std=c++20 -O3 -DNDEBUG -DGRAFT_KERNELS_EXTERN "$@" \
        -I"$root/include" -c "$here/$tu.cpp" -o "$out/$tu.o"
    read -r user kb < "$out/time"
    printf '%-20s %10s %10d\n' "$tu" "$user" "$((kb / 1024))"
done
