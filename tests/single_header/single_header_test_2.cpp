// Second TU of the single-header check (see single_header_test.cpp).
#include <graft/graft.hpp>

float other_tu_sum(const float* a, std::size_t n) {
    return graft::kernels::reduce(graft::kernels::reduce_op::sum, a, n);
}
graft::kernels::target other_tu_target() { return graft::kernels::current_target(); }
