#pragma once
// Custom autograd Functions (torch.autograd.Function, torch::autograd::Function):
// a user-written forward run without recording, and a user-written backward run by
// the engine as the node of the outputs.
//
//   struct MyExp : autograd::Function<MyExp> {
//       static Tensor forward(autograd::FunctionCtx& ctx, const Tensor& x) {
//           Tensor y = exp(x);
//           ctx.save_for_backward(y);
//           return y;
//       }
//       static Tensor backward(autograd::FunctionCtx& ctx, const Tensor& g) {
//           return g * ctx.get_saved_variables()[0];
//       }
//   };
//   Tensor y = MyExp::apply(x);   // y.grad_fn()->name() == "MyExpBackward"
//
// `static constexpr bool once_differentiable = true;` in the class is Python's
// @once_differentiable: backward runs without recording, and differentiating its result
// again (create_graph, then a second backward) throws graft::error.
#include <any>
#include <concepts>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/autograd/engine.hpp"
#include "graft/autograd/grad_mode.hpp"
#include "graft/autograd/node.hpp"
#include "graft/autograd/saved_variable.hpp"
#include "graft/core/detail/op_observer.hpp"

namespace graft::autograd {

namespace detail {
struct custom_function_access;
}

/// The `ctx` of a custom Function: what forward leaves for backward. It is the Function's
/// node in the backward graph (name "<Name>Backward", next_functions, hooks), as PyTorch's
/// ctx is its node. Created for every apply; attached to the outputs only when some input
/// requires grad and grad mode is on.
class FunctionCtx : public Node {
public:
    explicit FunctionCtx(const char* name) : Node(name) {}

    /// Saves tensors (inputs, outputs or intermediates) for backward, as PyTorch's
    /// save_for_backward: version-checked (an in-place change before backward throws),
    /// routed through saved_tensors_hooks, freed after backward unless retain_graph.
    /// Call it in forward, once (a second call replaces the first).
    GRAFT_INLINE void save_for_backward(tensor_list tensors);
    template <class... Ts>
        requires(sizeof...(Ts) > 0 && (std::same_as<std::remove_cvref_t<Ts>, Tensor> && ...))
    void save_for_backward(const Ts&... tensors) {
        save_for_backward(tensor_list{tensors...});
    }
    /// The tensors save_for_backward saved, unpacked (in backward: saved outputs carry this
    /// node as grad_fn, so a backward written with graft's ops is differentiable again).
    [[nodiscard]] GRAFT_INLINE tensor_list get_saved_variables();

    /// Declares inputs that forward modified in place; each must also be returned as an output.
    GRAFT_INLINE void mark_dirty(const tensor_list& tensors);
    template <class... Ts>
        requires(sizeof...(Ts) > 0 && (std::same_as<std::remove_cvref_t<Ts>, Tensor> && ...))
    void mark_dirty(const Ts&... tensors) {
        mark_dirty(tensor_list{tensors...});
    }
    /// Declares outputs that get no gradient: they don't require grad, and backward receives a
    /// zero gradient for them (an undefined one with set_materialize_grads(false)).
    GRAFT_INLINE void mark_non_differentiable(const tensor_list& tensors);
    template <class... Ts>
        requires(sizeof...(Ts) > 0 && (std::same_as<std::remove_cvref_t<Ts>, Tensor> && ...))
    void mark_non_differentiable(const Ts&... tensors) {
        mark_non_differentiable(tensor_list{tensors...});
    }
    /// True when forward argument `i` (counting every argument after ctx, tensors or not) is a
    /// tensor that requires grad, as Python's ctx.needs_input_grad[i]: fixed when apply is
    /// called, whatever the grad mode (true under no_grad too, where nothing is recorded).
    [[nodiscard]] GRAFT_INLINE bool needs_input_grad(std::size_t i) const;
    /// With true (the default) undefined output gradients reach backward as zeros.
    void set_materialize_grads(bool value) noexcept { materialize_grads_ = value; }

    /// Non-tensor state for backward (PyTorch C++'s ctx->saved_data): sizes, flags, numbers.
    std::map<std::string, std::any> saved_data;

    GRAFT_INLINE void release_variables() override;
    [[nodiscard]] GRAFT_INLINE std::vector<std::string> describe_saved() const override;

protected:
    /// Undefined gradients become zeros (materialize_grads), as backward's arguments.
    GRAFT_INLINE void prepare_grads(tensor_list& grads) const;
    /// Checks backward's result (one gradient per forward argument) and keeps the tensor ones.
    [[nodiscard]] GRAFT_INLINE tensor_list finish_backward(tensor_list&& grads) const;
    /// once_differentiable with create_graph: the defined gradients become outputs of a node
    /// that throws when a second backward reaches it (PyTorch's DelayedError).
    GRAFT_INLINE void refuse_double_backward(tensor_list& grads) const;

private:
    friend struct detail::custom_function_access;

    std::vector<int> slot_of_arg_;          // forward argument -> next_functions index, -1 for non-tensors
    std::vector<bool> needs_input_grad_;    // per forward argument
    tensor_list to_save_, dirty_, non_differentiable_;  // filled during forward
    std::vector<detail::saved_variable> saved_;
    const char* function_name_ = "";        // the Function's name ("MyExp"), static storage
    bool in_forward_ = false;
    bool has_saved_ = false;
    bool materialize_grads_ = true;
};

/// The C++ frontend's name for the same context.
using AutogradContext = FunctionCtx;

namespace detail {

/// Non-template steps of Function::apply.
struct custom_function_access {
    /// Records which arguments are tensors, the edges and needs_input_grad; true when the
    /// outputs will be attached to the node (grad mode on and some input requires grad).
    GRAFT_INLINE static bool begin_forward(FunctionCtx& ctx, const char* function_name, const tensor_list& inputs,
                                           const std::vector<bool>& is_tensor_arg);
    /// Attaches the outputs (dirty inputs get the node as their new grad_fn, returned inputs
    /// become aliases), saves the tensors of save_for_backward and checks the marks.
    GRAFT_INLINE static void finish_forward(const std::shared_ptr<FunctionCtx>& ctx, const tensor_list& inputs,
                                            tensor_list& outputs, bool executable);
    /// Clears forward's bookkeeping after forward threw.
    GRAFT_INLINE static void abort_forward(FunctionCtx& ctx) noexcept;
    /// Refuses custom Functions inside graph capture.
    GRAFT_INLINE static void check_not_capturing(const char* node_name);
};

/// "Foo" for ns::Foo, from a compiler's pretty function name (see custom_node_name).
[[nodiscard]] GRAFT_INLINE std::string short_type_name(std::string_view pretty);

template <class T>
[[nodiscard]] constexpr std::string_view pretty_name_of() {
#if defined(__clang__) || defined(__GNUC__)
    return __PRETTY_FUNCTION__;
#else
    return __FUNCSIG__;
#endif
}

/// `Derived::name` when Derived has a static `name`, else the type's name (namespaces stripped).
template <class Derived>
[[nodiscard]] const char* custom_function_name() {
    static const std::string name = [] {
        if constexpr (requires { std::string_view(Derived::name); })
            return std::string(std::string_view(Derived::name));
        else
            return short_type_name(pretty_name_of<Derived>());
    }();
    return name.c_str();
}

/// "<Name>Backward" (Name from custom_function_name), as PyTorch names a Function's node after
/// its class.
template <class Derived>
[[nodiscard]] const char* custom_node_name() {
    static const std::string name = std::string(custom_function_name<Derived>()) + "Backward";
    return name.c_str();
}

/// True when Derived declares `static constexpr bool once_differentiable = true;`.
template <class Derived>
[[nodiscard]] consteval bool is_once_differentiable() {
    if constexpr (requires { { Derived::once_differentiable } -> std::convertible_to<bool>; })
        return static_cast<bool>(Derived::once_differentiable);
    else
        return false;
}

template <class T>
inline constexpr bool is_tensor_tuple_v = false;
template <class... Ts>
inline constexpr bool is_tensor_tuple_v<std::tuple<Ts...>> = (std::same_as<Ts, Tensor> && ...);

template <class Out>
inline constexpr bool is_forward_result_v = std::same_as<Out, Tensor> || std::same_as<Out, tensor_list> ||
                                            is_tensor_tuple_v<Out>;

template <class Out>
tensor_list to_tensor_list(Out&& out) {
    using O = std::remove_cvref_t<Out>;
    if constexpr (std::same_as<O, Tensor>) {
        return tensor_list{std::forward<Out>(out)};
    } else if constexpr (std::same_as<O, tensor_list>) {
        return std::forward<Out>(out);
    } else {
        return std::apply([](auto&&... ts) { return tensor_list{std::forward<decltype(ts)>(ts)...}; },
                          std::forward<Out>(out));
    }
}

template <class Out>
Out from_tensor_list(tensor_list&& list) {
    if constexpr (std::same_as<Out, Tensor>) {
        return std::move(list[0]);
    } else if constexpr (std::same_as<Out, tensor_list>) {
        return std::move(list);
    } else {
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
            return Out{std::move(list[I])...};
        }(std::make_index_sequence<std::tuple_size_v<Out>>{});
    }
}

/// The node of one Derived::apply: runs Derived::backward.
template <class Derived, class Out>
class custom_function_node final : public FunctionCtx {
public:
    explicit custom_function_node(const char* name) : FunctionCtx(name) {}

protected:
    tensor_list apply(tensor_list&& grads) override {
        prepare_grads(grads);
        if constexpr (is_once_differentiable<Derived>()) {
            // Python's @once_differentiable: backward runs unrecorded; with create_graph its
            // gradients are tied to a node that refuses a second differentiation.
            const bool create_graph = is_grad_enabled();
            tensor_list out;
            {
                no_grad guard;
                out = run_backward(grads);
            }
            if (create_graph) refuse_double_backward(out);
            return out;
        } else {
            return run_backward(grads);
        }
    }

private:
    tensor_list run_backward(tensor_list& grads) {
        FunctionCtx& ctx = *this;
        if constexpr (std::same_as<Out, Tensor>) {
            return finish_backward(to_tensor_list(Derived::backward(ctx, grads[0])));
        } else if constexpr (std::same_as<Out, tensor_list>) {
            return finish_backward(to_tensor_list(Derived::backward(ctx, grads)));
        } else {
            return finish_backward([&]<std::size_t... I>(std::index_sequence<I...>) {
                return to_tensor_list(Derived::backward(ctx, grads[I]...));
            }(std::make_index_sequence<std::tuple_size_v<Out>>{}));
        }
    }
};

template <class A>
inline constexpr bool is_tensor_arg_v = std::same_as<std::remove_cvref_t<A>, Tensor>;

}  // namespace detail

/// Base of a custom Function (CRTP). Derived provides
///   static R forward(FunctionCtx& ctx, Args... args);  R: Tensor, tensor_list or std::tuple<Tensor, ...>
///   static G backward(FunctionCtx& ctx, grads...);     one grad per output: a Tensor each for a Tensor
///                                                      or tuple result, one tensor_list for a tensor_list
/// where G is a Tensor (one forward argument) or a tensor_list with one gradient per forward
/// argument (undefined for arguments that are not tensors or need none). Optionally
/// `static constexpr const char* name = "MyFn";` names the node "MyFnBackward" (default: the
/// type's name), and `static constexpr bool once_differentiable = true;` runs backward without
/// recording and refuses a double backward through it (Python's @once_differentiable).
/// Derived::apply(args...) runs it. forward runs with grad mode off.
template <class Derived>
struct Function {
    template <class... Args>
    static auto apply(Args&&... args) {
        using Out = std::remove_cvref_t<decltype(Derived::forward(std::declval<FunctionCtx&>(),
                                                                  std::forward<Args>(args)...))>;
        static_assert(detail::is_forward_result_v<Out>,
                      "graft::autograd::Function<Derived>::apply(args...): Derived::forward(ctx, args...) must "
                      "return a Tensor, a tensor_list or a std::tuple of Tensors");
        const char* node_name = detail::custom_node_name<Derived>();
        detail::custom_function_access::check_not_capturing(node_name);
        auto node = std::make_shared<detail::custom_function_node<Derived, Out>>(node_name);
        tensor_list inputs;
        inputs.reserve(sizeof...(Args));
        (
            [&](const auto& a) {
                if constexpr (detail::is_tensor_arg_v<decltype(a)>) inputs.push_back(a);
            }(args),
            ...);
        const bool executable = detail::custom_function_access::begin_forward(
            *node, detail::custom_function_name<Derived>(), inputs, std::vector<bool>{detail::is_tensor_arg_v<Args>...});
        tensor_list outputs;
        try {
            no_grad guard;
            outputs = detail::to_tensor_list(Derived::forward(static_cast<FunctionCtx&>(*node),
                                                              std::forward<Args>(args)...));
        } catch (...) {
            detail::custom_function_access::abort_forward(*node);
            throw;
        }
        detail::custom_function_access::finish_forward(node, inputs, outputs, executable);
        return detail::from_tensor_list<Out>(std::move(outputs));
    }
};

}  // namespace graft::autograd

#if GRAFT_HAS_CODE
#include "graft/autograd/impl/custom_function.ipp"
#endif
