// Compile-time baseline: graft.hpp and one eager op (bench/compile_time/measure.sh).
#include <graft/graft.hpp>
int main() { graft::Tensor x = graft::ones({4}); return (x + x).sum().item<float>() > 0 ? 0 : 1; }
