#pragma once
// graft::optim::LBFGS (torch.optim.LBFGS): limited-memory BFGS over all parameters as one flat
// vector, with an optional strong-Wolfe line search. Each step calls a closure that re-evaluates
// the loss and its gradients, several times. Manual: docs/optim.md.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "graft/optim/optimizer.hpp"

namespace graft::optim {

/// PyTorch's LBFGS (its algorithm, after minFunc): per step() up to max_iter iterations and
/// max_eval closure evaluations; the direction comes from the last history_size pairs of
/// parameter and gradient differences (two-loop recursion), the step length is lr (lr times
/// min(1, 1 / |g|_1) on the very first iteration) or found by a strong-Wolfe line search
/// (line_search_fn = "strong_wolfe"). An iteration stops the step on |g|_inf <= tolerance_grad,
/// or when the step or the loss changes by less than tolerance_change.
/// Options (group keys): "lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change",
/// "history_size", "line_search_fn" (0: none, 1: strong_wolfe).
/// State (one entry, under the first parameter's index, as PyTorch): "func_evals", "n_iter" and,
/// after the first iteration, "d", "t", "old_dirs", "old_stps", "ro", "H_diag",
/// "prev_flat_grad", "prev_loss" (the lists old_dirs / old_stps stacked into [k, n] tensors).
/// One parameter group only; step() needs a closure. The directions are computed in double
/// precision whatever the parameters' dtype.
class LBFGS : public Optimizer {
public:
    /// max_eval defaults to max_iter * 5 / 4; line_search_fn is empty (PyTorch's None) or
    /// "strong_wolfe". Errors: negative lr; max_iter, max_eval or history_size below 1; a NaN
    /// tolerance; another line_search_fn.
    GRAFT_INLINE explicit LBFGS(std::vector<Tensor> params, double lr = 1, std::int64_t max_iter = 20,
                                std::optional<std::int64_t> max_eval = std::nullopt, double tolerance_grad = 1e-7,
                                double tolerance_change = 1e-9, std::int64_t history_size = 100,
                                std::string_view line_search_fn = {});

    /// An error: LBFGS evaluates the loss several times per step and needs step(closure).
    GRAFT_INLINE void step() override;
    /// Runs up to max_iter iterations, calling `closure` (zero the gradients, compute the loss,
    /// call backward, return the loss as a one-element tensor) with gradients enabled; returns
    /// the closure's first loss. If the closure throws, the parameters and the state are restored
    /// to what they were before the step and the exception propagates.
    GRAFT_INLINE Tensor step(const std::function<Tensor()>& closure) override;

    [[nodiscard]] GRAFT_INLINE OptimizerStateDict state_dict() const override;
    /// Restores a state_dict of an LBFGS over parameters with the same number of elements;
    /// a malformed one is a graft::error and leaves the optimizer unchanged.
    GRAFT_INLINE void load_state_dict(const OptimizerStateDict& state_dict) override;

protected:
    GRAFT_INLINE void check_options(const options_map& o) const override;
    [[nodiscard]] std::vector<std::string> state_keys() const override { return {}; }
    [[nodiscard]] bool uses_step() const override { return false; }
    GRAFT_INLINE void update(const options_map& o, Tensor& param, const Tensor& grad, ParamState& state) override;

private:
    using vec = std::vector<double>;
    /// PyTorch's state, in double precision. History entries are shared and never changed,
    /// so a step works on a cheap copy and commits it only when it succeeds.
    struct history {
        std::int64_t func_evals = 0, n_iter = 0;
        bool started = false;        // func_evals and n_iter exist (a step has begun)
        bool has_direction = false;  // d, t, old_dirs, ... exist (an iteration has run)
        vec d, prev_flat_grad;
        double t = 0, H_diag = 1, prev_loss = 0;
        std::vector<std::shared_ptr<const vec>> old_dirs, old_stps;
        vec ro;
    };

    [[nodiscard]] GRAFT_INLINE std::int64_t numel() const;
    [[nodiscard]] GRAFT_INLINE vec gather_flat_grad() const;
    GRAFT_INLINE void add_grad(double t, const vec& d);
    [[nodiscard]] GRAFT_INLINE std::vector<Tensor> clone_params() const;
    GRAFT_INLINE void set_params(const std::vector<Tensor>& values);
    [[nodiscard]] GRAFT_INLINE Tensor run(const std::function<Tensor()>& closure, history& st);

    history lbfgs_state_;
};

}  // namespace graft::optim

#if GRAFT_HAS_CODE
#include "graft/optim/impl/lbfgs.ipp"
#endif
