#pragma once
// graft::nn layers (torch.nn.Linear, activations, Flatten, Identity) and containers
// (Sequential, ModuleList). Every layer calls graft::nn::functional, so autograd, capture and
// the executor see ordinary ops. Construct them with std::make_shared (graft/nn/module.hpp
// explains why). A new layer is a few lines, e.g. a dropout layer:
//
//   struct Dropout : Module {
//       explicit Dropout(double p = 0.5) : Module("Dropout"), p(p) {}
//       Tensor forward(const Tensor& x) override { return functional::dropout(x, p, is_training()); }
//       double p;
//   };
//
// and a layer with weights registers them in its constructor:
// `Tensor& weight = register_parameter("weight", empty({n}, dtype::float32));`.
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "graft/core/factories.hpp"
#include "graft/nn/functional.hpp"
#include "graft/nn/module.hpp"

namespace graft::nn {

/// y = x W^T + b (torch.nn.Linear): weight [out_features, in_features], bias [out_features]
/// (absent when `bias` is false), initialized as PyTorch's reset_parameters:
/// kaiming_uniform_(weight, a = sqrt(5)), bias ~ U(-1/sqrt(in), 1/sqrt(in)).
class Linear : public Module {
public:
    GRAFT_INLINE Linear(std::int64_t in_features, std::int64_t out_features, bool bias = true,
                        dtype type = dtype::float32);
    /// The same, drawing the initial values from `gen`.
    GRAFT_INLINE Linear(std::int64_t in_features, std::int64_t out_features, bool bias, dtype type, generator& gen);
    /// Draws new initial values (PyTorch's reset_parameters).
    GRAFT_INLINE void reset_parameters(generator& gen = default_generator());
    /// x [..., in_features] -> [..., out_features]; another last size is a graft::error naming Linear.
    GRAFT_INLINE Tensor forward(const Tensor& input) override;
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;

    const std::int64_t in_features;
    const std::int64_t out_features;
    Tensor& weight;
    Tensor& bias;  // undefined without bias
};

/// Returns its input (torch.nn.Identity).
class Identity : public Module {
public:
    Identity() : Module("Identity") {}
    Tensor forward(const Tensor& input) override { return input; }
};

/// Merges dimensions start_dim..end_dim (torch.nn.Flatten; the defaults keep the batch dim).
class Flatten : public Module {
public:
    explicit Flatten(std::int64_t start_dim = 1, std::int64_t end_dim = -1)
        : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
    Tensor forward(const Tensor& input) override { return input.flatten(start_dim, end_dim); }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    std::int64_t start_dim;
    std::int64_t end_dim;
};

class ReLU : public Module {
public:
    ReLU() : Module("ReLU") {}
    Tensor forward(const Tensor& input) override { return functional::relu(input); }
};

class GELU : public Module {
public:
    /// approximate: "none" (exact, erf) or "tanh"; anything else is a graft::error.
    GRAFT_INLINE explicit GELU(std::string approximate = "none");
    Tensor forward(const Tensor& input) override { return functional::gelu(input, approximate); }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    std::string approximate;
};

class SiLU : public Module {
public:
    SiLU() : Module("SiLU") {}
    Tensor forward(const Tensor& input) override { return functional::silu(input); }
};

class Sigmoid : public Module {
public:
    Sigmoid() : Module("Sigmoid") {}
    Tensor forward(const Tensor& input) override { return functional::sigmoid(input); }
};

class Tanh : public Module {
public:
    Tanh() : Module("Tanh") {}
    Tensor forward(const Tensor& input) override { return functional::tanh(input); }
};

class Softplus : public Module {
public:
    explicit Softplus(double beta = 1.0, double threshold = 20.0)
        : Module("Softplus"), beta(beta), threshold(threshold) {}
    Tensor forward(const Tensor& input) override { return functional::softplus(input, beta, threshold); }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    double beta;
    double threshold;
};

class LeakyReLU : public Module {
public:
    explicit LeakyReLU(double negative_slope = 0.01) : Module("LeakyReLU"), negative_slope(negative_slope) {}
    Tensor forward(const Tensor& input) override { return functional::leaky_relu(input, negative_slope); }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    double negative_slope;
};

/// softmax along `dim` (required: PyTorch's implicit dim is deprecated).
class Softmax : public Module {
public:
    explicit Softmax(std::int64_t dim) : Module("Softmax"), dim(dim) {}
    Tensor forward(const Tensor& input) override { return functional::softmax(input, dim); }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    std::int64_t dim;
};

class LogSoftmax : public Module {
public:
    explicit LogSoftmax(std::int64_t dim) : Module("LogSoftmax"), dim(dim) {}
    Tensor forward(const Tensor& input) override { return functional::log_softmax(input, dim); }
    [[nodiscard]] GRAFT_INLINE std::string extra_repr() const override;
    std::int64_t dim;
};

namespace detail {
/// The element list shared by Sequential and ModuleList: children named "0", "1", ...
class module_sequence : public Module {
public:
    using Module::Module;
    /// Appends a module (registered as child str(size())); null is an error.
    GRAFT_INLINE void push_back(std::shared_ptr<Module> module);
    void append(std::shared_ptr<Module> module) { push_back(std::move(module)); }
    /// Element i; negative i counts from the end (as Python); out of range is an error.
    [[nodiscard]] GRAFT_INLINE const std::shared_ptr<Module>& operator[](std::int64_t i) const;
    /// Element i as a M (a graft::error when it is not one).
    template <class M>
    [[nodiscard]] std::shared_ptr<M> at(std::int64_t i) const {
        auto r = std::dynamic_pointer_cast<M>((*this)[i]);
        graft::detail::check(r != nullptr, type_name(), "::at(", i, "): element is a ", (*this)[i]->type_name(),
                             ", not the requested type");
        return r;
    }
    [[nodiscard]] std::size_t size() const noexcept { return items_.size(); }
    [[nodiscard]] bool empty() const noexcept { return items_.empty(); }
    [[nodiscard]] auto begin() const noexcept { return items_.begin(); }
    [[nodiscard]] auto end() const noexcept { return items_.end(); }

protected:
    std::vector<std::shared_ptr<Module>> items_;
};
}  // namespace detail

/// Modules applied in order, each to the previous one's output (torch.nn.Sequential).
/// Sequential(a, b, c) or Sequential({a, b, c}) with shared_ptrs to modules.
class Sequential : public detail::module_sequence {
public:
    Sequential() : module_sequence("Sequential") {}
    GRAFT_INLINE explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
    template <class... Ms>
        requires(sizeof...(Ms) > 0 && (std::is_base_of_v<Module, Ms> && ...))
    explicit Sequential(std::shared_ptr<Ms>... modules) : Sequential(std::vector<std::shared_ptr<Module>>{modules...}) {}
    /// The input through every module in order (the input itself when empty).
    GRAFT_INLINE Tensor forward(const Tensor& input) override;
};

/// A list of modules registered as children (torch.nn.ModuleList); it has no forward.
class ModuleList : public detail::module_sequence {
public:
    ModuleList() : module_sequence("ModuleList") {}
    GRAFT_INLINE explicit ModuleList(std::vector<std::shared_ptr<Module>> modules);
    /// Appends every module of `modules`.
    GRAFT_INLINE void extend(const std::vector<std::shared_ptr<Module>>& modules);
};

}  // namespace graft::nn

#if GRAFT_HAS_CODE
#include "graft/nn/impl/modules.ipp"
#endif
