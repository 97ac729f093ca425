#pragma once
// gradcheck / gradgradcheck: compare autograd's Jacobians with central finite
// differences (torch.autograd.gradcheck). Use float64 inputs.
#include <functional>
#include <vector>

#include "graft/autograd/tensor_methods.hpp"

namespace graft::autograd {

struct gradcheck_options {
    double eps = 1e-6;
    double atol = 1e-5;
    double rtol = 1e-3;
    /// Throw graft::error describing the first mismatch (true), or return false.
    bool raise = true;
};

namespace detail {

/// Byte address of element `flat` (row-major order) of t.
[[nodiscard]] GRAFT_INLINE char* element_address(const Tensor& t, std::int64_t flat);

[[nodiscard]] GRAFT_INLINE double read_element(const Tensor& t, std::int64_t flat);

GRAFT_INLINE void write_element(const Tensor& t, std::int64_t flat, double value);

[[nodiscard]] GRAFT_INLINE std::vector<double> flatten_outputs(const tensor_list& outs);

}  // namespace detail

/// Checks the gradients of `f` at `inputs` (those requiring grad) against finite
/// differences. Returns true on success; on mismatch throws (or returns false).
GRAFT_INLINE bool gradcheck(const std::function<tensor_list(const tensor_list&)>& f, const tensor_list& inputs,
                            const gradcheck_options& opt = {});

/// Checks second derivatives: gradcheck of the function that returns the
/// gradients of `f` for fixed random output gradients (with create_graph).
GRAFT_INLINE bool gradgradcheck(const std::function<tensor_list(const tensor_list&)>& f, const tensor_list& inputs,
                                const gradcheck_options& opt = {});

}  // namespace graft::autograd

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/gradcheck.ipp"
#endif
