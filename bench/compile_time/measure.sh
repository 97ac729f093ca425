#!/usr/bin/env bash
# Compile cost of graft translation units against libtorch's (bench/README.md, "Compile
# time"): user CPU seconds and peak RSS of each compile, in one run, and the ratios the
# compile-cost floors are stated in. Run from anywhere, on a quiet machine:
#   bash bench/compile_time/measure.sh            # g++ and clang++-19 (when installed)
#   COMPILERS="g++" bash bench/compile_time/measure.sh
# libtorch's minimal TU is measured when its headers are installed (Debian:
# `apt-get install libtorch-dev`, for this measurement only: graft never uses it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
compilers="${COMPILERS:-g++ clang++-19}"
torch_inc=/usr/include/torch/csrc/api/include
flags=(-std=c++20 -O2 -I"$root/include")

# measure <label> <compiler> <args...>: prints "label compiler user_s peak_MB", records user s.
declare -A user_s
measure() {
    local label="$1" cxx="$2"
    shift 2
    if ! /usr/bin/time -f '%U %M' -o "$out/time" "$cxx" "$@" >"$out/log" 2>&1; then
        echo "FAILED: $cxx $*" >&2
        cat "$out/log" >&2
        return 1
    fi
    local u kb
    read -r u kb <"$out/time"
    user_s["$label/$cxx"]="$u"
    printf '%-44s %-12s %8.2f %8d\n' "$label" "$cxx" "$u" "$((kb / 1024))"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }'; }

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %-12s %8s %8s\n' "translation unit (-O2 unless noted)" "compiler" "user s" "peak MB"
for cxx in $compilers; do
    command -v "$cxx" >/dev/null || { echo "($cxx not installed: skipped)"; continue; }
    if [ -d "$torch_inc" ]; then
        measure "libtorch minimal (torch/torch.h)" "$cxx" -std=c++17 -O2 -I"$torch_inc" \
            -c "$here/minimal_torch.cpp" -o "$out/t.o"
    fi
    measure "minimal, header-only" "$cxx" "${flags[@]}" -c "$here/minimal.cpp" -o "$out/m.o"
    measure "minimal, compiled mode" "$cxx" "${flags[@]}" -DGRAFT_COMPILED_LIB -c "$here/minimal.cpp" -o "$out/mc.o"
    measure "minimal via graft/tensor.hpp, header-only" "$cxx" "${flags[@]}" -c "$here/minimal_tensor.cpp" -o "$out/mt.o"
    measure "minimal via graft/tensor.hpp, compiled" "$cxx" "${flags[@]}" -DGRAFT_COMPILED_LIB \
        -c "$here/minimal_tensor.cpp" -o "$out/mtc.o"
    measure "five layers, compiled mode" "$cxx" "${flags[@]}" -DGRAFT_COMPILED_LIB -c "$here/five_layers.cpp" -o "$out/f.o"
    measure "five layers, header-only" "$cxx" "${flags[@]}" -c "$here/five_layers.cpp" -o "$out/fh.o"
    printf '#include <graft/graft.hpp>\n' >"$out/all.cpp"
    printf '#include <graft/tensor.hpp>\n' >"$out/tensor.cpp"
    measure "graft.hpp -fsyntax-only, header-only" "$cxx" "${flags[@]}" -fsyntax-only "$out/all.cpp"
    measure "graft.hpp -fsyntax-only, compiled" "$cxx" "${flags[@]}" -DGRAFT_COMPILED_LIB -fsyntax-only "$out/all.cpp"
    measure "tensor.hpp -fsyntax-only, header-only" "$cxx" "${flags[@]}" -fsyntax-only "$out/tensor.cpp"
    measure "tensor.hpp -fsyntax-only, compiled" "$cxx" "${flags[@]}" -DGRAFT_COMPILED_LIB -fsyntax-only "$out/tensor.cpp"
    measure "library: src/kernels.cpp (once)" "$cxx" "${flags[@]}" -c "$root/src/kernels.cpp" -o "$out/k.o"
    measure "library: src/graft.cpp (once)" "$cxx" "${flags[@]}" -c "$root/src/graft.cpp" -o "$out/g.o"
    # Edit-rebuild of the main example in compiled mode: its TU, then the link.
    measure "examples/train_mlp.cpp, compiled mode" "$cxx" "${flags[@]}" -DGRAFT_COMPILED_LIB \
        -c "$root/examples/train_mlp.cpp" -o "$out/e.o"
    measure "link train_mlp with the library" "$cxx" "$out/e.o" "$out/k.o" "$out/g.o" -o "$out/train_mlp"
    # Both halves of the minimal program link and run (the compiled-mode objects are usable).
    "$cxx" "$out/mc.o" "$out/k.o" "$out/g.o" -o "$out/minimal" && "$out/minimal"
done

echo
echo "floors (ratios to the libtorch minimal TU of the same compiler; 'n/a' without libtorch):"
for cxx in $compilers; do
    t="${user_s["libtorch minimal (torch/torch.h)/$cxx"]:-0}"
    [ -n "${user_s["minimal, header-only/$cxx"]:-}" ] || continue
    printf '  %-10s minimal header-only / libtorch   %s  (floor <= 0.5)\n' "$cxx" "$(ratio "${user_s["minimal, header-only/$cxx"]}" "$t")"
    printf '  %-10s minimal compiled / libtorch      %s  (floor <= 0.2)\n' "$cxx" "$(ratio "${user_s["minimal, compiled mode/$cxx"]}" "$t")"
    printf '  %-10s five layers compiled / libtorch  %s  (floor <= 1.0)\n' "$cxx" "$(ratio "${user_s["five layers, compiled mode/$cxx"]}" "$t")"
    printf '  %-10s train_mlp edit-rebuild (compile + link) %.2f s user (floor <= 10 s)\n' "$cxx" \
        "$(awk -v a="${user_s["examples/train_mlp.cpp, compiled mode/$cxx"]}" -v b="${user_s["link train_mlp with the library/$cxx"]}" 'BEGIN{print a+b}')"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
