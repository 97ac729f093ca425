#pragma once
// Helpers shared by the test files that check ops' gradients against finite differences
// (not a test TU itself).
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>

#include <graft/graft.hpp>

namespace gt {

/// A leaf requiring grad with values uniform in [lo, hi), from a generator seeded with `seed`
/// (the same values on every run and every machine).
inline graft::Tensor leaf(const graft::int_list& sizes, std::uint64_t seed, graft::dtype type, double lo = -1.5,
                          double hi = 1.5) {
    graft::generator g(seed);
    return (graft::rand(sizes, type, g) * (hi - lo) + lo).detach().requires_grad_();
}
/// The same in float64, the dtype gradcheck wants.
inline graft::Tensor leaf(const graft::int_list& sizes, std::uint64_t seed, double lo = -1.5, double hi = 1.5) {
    return leaf(sizes, seed, graft::dtype::float64, lo, hi);
}

/// f's first and second derivatives at `in` against finite differences.
inline void check_grads(const std::function<graft::autograd::tensor_list(const graft::autograd::tensor_list&)>& f,
                        const graft::autograd::tensor_list& in) {
    REQUIRE(graft::autograd::gradcheck(f, in));
    REQUIRE(graft::autograd::gradgradcheck(f, in));
}

}  // namespace gt
