#pragma once
// Node kinds. A kind is a type (ir::kinds::...): its name in the text form,
// its arity, whether it is pure and elementwise, and how the interpreter runs
// it with eager graft ops. The elementwise kinds are generated from the op
// table (graft::ops::all_elementwise_ops), so an op added there is an IR kind
// too. `kind_v<K>` is K's registry entry; nodes point to it.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

#include "graft/autograd/functions.hpp"
#include "graft/autograd/tensor_methods.hpp"
#include "graft/core/error.hpp"
#include "graft/ops/table.hpp"

namespace graft::ir {

/// A value at run time: a tensor or a number.
using ivalue = std::variant<Tensor, double, std::int64_t, bool>;

/// A node attribute: int, float, bool, string, int list, float list or a constant tensor.
using attribute =
    std::variant<std::int64_t, double, bool, std::string, std::vector<std::int64_t>, std::vector<double>, Tensor>;
using attribute_map = std::map<std::string, attribute>;

/// What the registry knows about a kind.
struct kind_info {
    std::string_view name;
    int num_inputs = -1;   // -1: any number
    int num_outputs = 1;   // -1: any number
    int num_blocks = 0;
    bool pure = true;         // no side effects: dead-code and CSE passes may remove or merge it
    bool elementwise = false; // same-shape map over broadcast inputs (fusable)
    bool is_view = false;     // the output aliases the first input
    /// Runs the node on eager values (null for kinds the interpreter handles itself).
    std::vector<ivalue> (*run)(const attribute_map&, std::span<const ivalue>) = nullptr;
};

namespace detail {

[[nodiscard]] inline const Tensor& tensor_arg(std::string_view op, std::span<const ivalue> in, std::size_t i) {
    const Tensor* t = std::get_if<Tensor>(&in[i]);
    graft::detail::check(t != nullptr, op, ": input ", i, " must be a tensor");
    return *t;
}

[[nodiscard]] inline scalar number_arg(const ivalue& v) {
    if (const auto* d = std::get_if<double>(&v)) return *d;
    if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
    return std::get<bool>(v);
}

template <class T>
[[nodiscard]] const T& attr_of(std::string_view op, const attribute_map& a, const char* name) {
    auto it = a.find(name);
    graft::detail::check(it != a.end(), op, ": missing attribute '", name, "'");
    const T* p = std::get_if<T>(&it->second);
    graft::detail::check(p != nullptr, op, ": attribute '", name, "' has the wrong type");
    return *p;
}

template <class T>
[[nodiscard]] T attr_or(std::string_view op, const attribute_map& a, const char* name, T fallback) {
    return a.count(name) ? attr_of<T>(op, a, name) : fallback;
}

[[nodiscard]] inline int_list to_int_list(const std::vector<std::int64_t>& v) {
    int_list r;
    for (auto x : v) r.push_back(x);
    return r;
}

/// Runs op-table entry Op on tensors and numbers.
template <class Op>
std::vector<ivalue> run_table_op(const attribute_map&, std::span<const ivalue> in) {
    graft::detail::check(in.size() == static_cast<std::size_t>(Op::arity), Op::name, ": expected ", Op::arity,
                         " inputs, got ", in.size());
    if constexpr (Op::arity == 1) {
        return {Op::call(tensor_arg(Op::name, in, 0))};
    } else if constexpr (Op::kind == ops::op_kind::where) {
        const Tensor& c = tensor_arg(Op::name, in, 0);
        const auto operand = [&](std::size_t i, const ivalue& other) -> Tensor {
            if (const auto* t = std::get_if<Tensor>(&in[i])) return *t;
            const scalar s = number_arg(in[i]);
            const auto* o = std::get_if<Tensor>(&other);
            return full({}, s, o ? result_type(*o, s) : (s.is_floating_point() ? default_float_dtype : s.kind()));
        };
        return {Op::call(c, operand(1, in[2]), operand(2, in[1]))};
    } else {
        const auto* a = std::get_if<Tensor>(&in[0]);
        const auto* b = std::get_if<Tensor>(&in[1]);
        graft::detail::check(a || b, Op::name, ": at least one input must be a tensor");
        if (a && b) return {Op::call(*a, *b)};
        if (a) return {Op::call(*a, number_arg(in[1]))};
        const scalar s = number_arg(in[0]);
        if constexpr (Op::kind == ops::op_kind::compare) return {Op::call(full({}, s, result_type(*b, s)), *b)};
        else return {Op::call(s, *b)};
    }
}

}  // namespace detail

/// Kinds that are not in the op table.
namespace kinds {

/// A constant: attribute `value` (tensor or number), no inputs.
struct constant {
    static constexpr kind_info info{"prim::Constant", 0, 1, 0, true, false, false,
                                    [](const attribute_map& a, std::span<const ivalue>) -> std::vector<ivalue> {
                                        auto it = a.find("value");
                                        graft::detail::check(it != a.end(), "prim::Constant: missing attribute 'value'");
                                        return {std::visit(
                                            [](const auto& v) -> ivalue {
                                                using V = std::decay_t<decltype(v)>;
                                                if constexpr (std::is_same_v<V, Tensor> || std::is_same_v<V, double> ||
                                                              std::is_same_v<V, std::int64_t> ||
                                                              std::is_same_v<V, bool>)
                                                    return v;
                                                else
                                                    graft::detail::fail("prim::Constant: 'value' must be a tensor or a number");
                                            },
                                            it->second)};
                                    }};
};

/// If(cond) with two blocks (then, else); the outputs are the taken block's outputs.
struct if_ {
    static constexpr kind_info info{"prim::If", 1, -1, 2, true, false, false, nullptr};
};

/// Call(args...) of the graph held in its one block (block inputs = parameters,
/// block outputs = results); the inlining pass splices it into the caller.
struct call {
    static constexpr kind_info info{"prim::Call", -1, -1, 1, true, false, false, nullptr};
};

#define GRAFT_DETAIL_IR_KIND(ident, text, n_in, body)                                                     \
    struct ident {                                                                                        \
        static std::vector<ivalue> run([[maybe_unused]] const attribute_map& a, std::span<const ivalue> in) { \
            constexpr std::string_view op = text;                                                         \
            graft::detail::check(in.size() == n_in, op, ": expected ", n_in, " inputs, got ", in.size()); \
            using graft::ir::detail::attr_of;                                                             \
            using graft::ir::detail::attr_or;                                                             \
            using graft::ir::detail::tensor_arg;                                                          \
            using graft::ir::detail::to_int_list;                                                         \
            body                                                                                          \
        }                                                                                                 \
        static constexpr kind_info info{text, n_in, 1, 0, true, false, false, &run};                      \
    };
#define GRAFT_DETAIL_IR_VIEW_KIND(ident, text, n_in, body)                                                \
    struct ident {                                                                                        \
        static std::vector<ivalue> run([[maybe_unused]] const attribute_map& a, std::span<const ivalue> in) { \
            constexpr std::string_view op = text;                                                         \
            graft::detail::check(in.size() == n_in, op, ": expected ", n_in, " inputs, got ", in.size()); \
            using graft::ir::detail::attr_of;                                                             \
            using graft::ir::detail::tensor_arg;                                                          \
            using graft::ir::detail::to_int_list;                                                         \
            body                                                                                          \
        }                                                                                                 \
        static constexpr kind_info info{text, n_in, 1, 0, true, false, true, &run};                       \
    };

// Reductions: `dims` (ints; absent or empty: every dimension), `keepdim` (bool, default false).
GRAFT_DETAIL_IR_KIND(sum, "sum", 1, {
    const Tensor& t = tensor_arg(op, in, 0);
    if (!a.count("dims")) return {graft::sum(t)};
    return {graft::sum(t, to_int_list(attr_of<std::vector<std::int64_t>>(op, a, "dims")),
                       attr_or<bool>(op, a, "keepdim", false))};
})
GRAFT_DETAIL_IR_KIND(mean, "mean", 1, {
    return {graft::mean(tensor_arg(op, in, 0), to_int_list(attr_or<std::vector<std::int64_t>>(op, a, "dims", {})),
                        attr_or<bool>(op, a, "keepdim", false))};
})
GRAFT_DETAIL_IR_KIND(amax, "amax", 1, {
    return {graft::amax(tensor_arg(op, in, 0), to_int_list(attr_or<std::vector<std::int64_t>>(op, a, "dims", {})),
                        attr_or<bool>(op, a, "keepdim", false))};
})
GRAFT_DETAIL_IR_KIND(amin, "amin", 1, {
    return {graft::amin(tensor_arg(op, in, 0), to_int_list(attr_or<std::vector<std::int64_t>>(op, a, "dims", {})),
                        attr_or<bool>(op, a, "keepdim", false))};
})
GRAFT_DETAIL_IR_KIND(matmul, "matmul", 2, { return {graft::matmul(tensor_arg(op, in, 0), tensor_arg(op, in, 1))}; })
GRAFT_DETAIL_IR_KIND(softmax, "softmax", 1, {
    return {graft::softmax(tensor_arg(op, in, 0), attr_of<std::int64_t>(op, a, "dim"))};
})
GRAFT_DETAIL_IR_KIND(log_softmax, "log_softmax", 1, {
    return {graft::log_softmax(tensor_arg(op, in, 0), attr_of<std::int64_t>(op, a, "dim"))};
})
GRAFT_DETAIL_IR_KIND(sum_to_size, "sum_to_size", 1, {
    return {graft::sum_to_size(tensor_arg(op, in, 0), to_int_list(attr_of<std::vector<std::int64_t>>(op, a, "sizes")))};
})
GRAFT_DETAIL_IR_KIND(clone, "clone", 1, { return {tensor_arg(op, in, 0).clone()}; })
GRAFT_DETAIL_IR_KIND(contiguous, "contiguous", 1, { return {tensor_arg(op, in, 0).contiguous()}; })
GRAFT_DETAIL_IR_KIND(detach, "detach", 1, { return {tensor_arg(op, in, 0).detach()}; })
GRAFT_DETAIL_IR_KIND(zeros_like, "zeros_like", 1, { return {graft::zeros_like(tensor_arg(op, in, 0))}; })
GRAFT_DETAIL_IR_KIND(ones_like, "ones_like", 1, { return {graft::ones_like(tensor_arg(op, in, 0))}; })

// Views: the output aliases the input's storage.
GRAFT_DETAIL_IR_VIEW_KIND(reshape, "reshape", 1, {
    return {tensor_arg(op, in, 0).reshape(to_int_list(attr_of<std::vector<std::int64_t>>(op, a, "sizes")))};
})
GRAFT_DETAIL_IR_VIEW_KIND(expand, "expand", 1, {
    return {tensor_arg(op, in, 0).expand(to_int_list(attr_of<std::vector<std::int64_t>>(op, a, "sizes")))};
})
GRAFT_DETAIL_IR_VIEW_KIND(permute, "permute", 1, {
    return {tensor_arg(op, in, 0).permute(to_int_list(attr_of<std::vector<std::int64_t>>(op, a, "dims")))};
})
GRAFT_DETAIL_IR_VIEW_KIND(transpose, "transpose", 1, {
    return {tensor_arg(op, in, 0).transpose(attr_of<std::int64_t>(op, a, "dim0"), attr_of<std::int64_t>(op, a, "dim1"))};
})
GRAFT_DETAIL_IR_VIEW_KIND(narrow, "narrow", 1, {
    return {tensor_arg(op, in, 0).narrow(attr_of<std::int64_t>(op, a, "dim"), attr_of<std::int64_t>(op, a, "start"),
                                         attr_of<std::int64_t>(op, a, "length"))};
})
GRAFT_DETAIL_IR_VIEW_KIND(select, "select", 1, {
    return {tensor_arg(op, in, 0).select(attr_of<std::int64_t>(op, a, "dim"), attr_of<std::int64_t>(op, a, "index"))};
})
GRAFT_DETAIL_IR_VIEW_KIND(squeeze, "squeeze", 1, {
    const Tensor& t = tensor_arg(op, in, 0);
    return {a.count("dim") ? t.squeeze(attr_of<std::int64_t>(op, a, "dim")) : t.squeeze()};
})
GRAFT_DETAIL_IR_VIEW_KIND(unsqueeze, "unsqueeze", 1, {
    return {tensor_arg(op, in, 0).unsqueeze(attr_of<std::int64_t>(op, a, "dim"))};
})
#undef GRAFT_DETAIL_IR_KIND
#undef GRAFT_DETAIL_IR_VIEW_KIND

/// to[dtype="float64"](x): x converted to another dtype (graft's dtype names).
struct to {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in) {
        graft::detail::check(in.size() == 1, "to: expected 1 input, got ", in.size());
        const std::string& name = detail::attr_of<std::string>("to", a, "dtype");
        for (dtype t : {dtype::bool_, dtype::int64, dtype::float32, dtype::float64})
            if (graft::name(t) == name) return {detail::tensor_arg("to", in, 0).to(t)};
        graft::detail::fail(graft::detail::concat("to: unknown dtype '", name, "'"));
    }
    static constexpr kind_info info{"to", 1, 1, 0, true, false, false, &run};
};

/// gelu[approximate="none"|"tanh"](x).
struct gelu {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in) {
        graft::detail::check(in.size() == 1, "gelu: expected 1 input, got ", in.size());
        return {graft::gelu(detail::tensor_arg("gelu", in, 0),
                            detail::attr_or<std::string>("gelu", a, "approximate", "none"))};
    }
    static constexpr kind_info info{"gelu", 1, 1, 0, true, true, false, &run};
};

namespace index_detail {

/// Flat contiguous copy of t (no autograd).
[[nodiscard]] inline Tensor flat_values(const Tensor& t) { return graft::detail::raw::contiguous(t.detach()); }

inline void check_index(std::string_view op, const Tensor& idx, std::int64_t n) {
    graft::detail::check(idx.type() == dtype::int64, op, ": the index must be an int64 tensor, got ", idx.type());
    for (auto i : idx.to_vector<std::int64_t>())
        graft::detail::check(i >= 0 && i < n, op, ": index ", i, " out of range for ", n, " elements");
}

/// out = base.flatten()[idx] (shape of idx).
[[nodiscard]] inline Tensor take_values(const Tensor& base, const Tensor& idx) {
    const Tensor b = flat_values(base);
    Tensor out = empty(idx.sizes(), base.type());
    const auto index = idx.to_vector<std::int64_t>();
    graft::detail::visit_dtype(base.type(), [&](auto z) {
        using T = decltype(z);
        const T* p = b.data_ptr<T>();
        T* o = out.data_ptr<T>();
        for (std::size_t k = 0; k < index.size(); ++k) o[k] = p[index[k]];
    });
    return out;
}

/// out = base with out.flatten()[idx] = src (src broadcast to idx's shape, in base's dtype);
/// with `accumulate`, out.flatten()[idx] += src instead.
[[nodiscard]] inline Tensor put_values(const Tensor& base, const Tensor& idx, const Tensor& src, bool accumulate) {
    Tensor out = graft::detail::raw::clone(base.detach());
    const Tensor s = graft::detail::raw::contiguous(
        graft::detail::raw::to(graft::detail::raw::broadcast_to(src.detach(), idx.sizes()), base.type()));
    const auto index = idx.to_vector<std::int64_t>();
    graft::detail::visit_dtype(base.type(), [&](auto z) {
        using T = decltype(z);
        T* o = out.data_ptr<T>();
        const T* v = s.data_ptr<T>();
        for (std::size_t k = 0; k < index.size(); ++k) {
            if constexpr (std::is_same_v<T, bool>) o[index[k]] = accumulate ? (o[index[k]] || v[k]) : v[k];
            else o[index[k]] = accumulate ? static_cast<T>(o[index[k]] + v[k]) : v[k];
        }
    });
    return out;
}

}  // namespace index_detail

/// take(base, idx): the elements of base (in row-major order) at the positions in
/// idx, shaped like idx. Graph capture reads views of mutated tensors with it.
struct take {
    static std::vector<ivalue> run(const attribute_map&, std::span<const ivalue> in) {
        graft::detail::check(in.size() == 2, "take: expected 2 inputs, got ", in.size());
        const Tensor& base = detail::tensor_arg("take", in, 0);
        const Tensor& idx = detail::tensor_arg("take", in, 1);
        index_detail::check_index("take", idx, base.numel());
        Tensor out = index_detail::take_values(base, idx);
        auto node = autograd::detail::make_node("TakeBackward0", base);
        if (!node) return {out};
        node->backward = [sizes = base.sizes(), type = base.type(), idx](autograd::function_node&,
                                                                         const autograd::tensor_list& g) {
            return autograd::tensor_list{index_detail::put_values(zeros(sizes, type), idx, g[0], true)};
        };
        autograd::detail::set_history(out, node);
        return {out};
    }
    static constexpr kind_info info{"take", 2, 1, 0, true, false, false, &run};
};

/// put[accumulate=false](base, idx, src): a copy of base whose elements at the positions
/// in idx are src (broadcast to idx's shape), or have src added with accumulate=true
/// (repeated positions add up). Graph capture writes into views with it.
struct put {
    static std::vector<ivalue> run(const attribute_map& a, std::span<const ivalue> in) {
        graft::detail::check(in.size() == 3, "put: expected 3 inputs, got ", in.size());
        const Tensor& base = detail::tensor_arg("put", in, 0);
        const Tensor& idx = detail::tensor_arg("put", in, 1);
        const Tensor& src = detail::tensor_arg("put", in, 2);
        index_detail::check_index("put", idx, base.numel());
        (void)broadcast_shapes(src.sizes(), idx.sizes());
        const bool accumulate = detail::attr_or<bool>("put", a, "accumulate", false);
        Tensor out = index_detail::put_values(base, idx, src, accumulate);
        auto node = autograd::detail::make_node("PutBackward0", base, src);
        if (!node) return {out};
        node->backward = [idx, accumulate, ssizes = src.sizes(), stype = src.type()](autograd::function_node& n,
                                                                                     const autograd::tensor_list& g) {
            Tensor gb, gs;
            if (n.needs_input_grad(0))
                gb = accumulate ? g[0] : index_detail::put_values(g[0], idx, zeros({}, g[0].type()), false);
            if (n.needs_input_grad(1)) gs = graft::sum_to_size(index_detail::take_values(g[0], idx), ssizes).to(stype);
            return autograd::tensor_list{gb, gs};
        };
        autograd::detail::set_history(out, node);
        return {out};
    }
    static constexpr kind_info info{"put", 3, 1, 0, true, false, false, &run};
};

/// copy_(dst, src): writes src into dst (a mutation: not pure); the output is dst.
struct copy_ {
    static std::vector<ivalue> run(const attribute_map&, std::span<const ivalue> in) {
        graft::detail::check(in.size() == 2, "copy_: expected 2 inputs, got ", in.size());
        Tensor dst = detail::tensor_arg("copy_", in, 0);
        dst.copy_(detail::tensor_arg("copy_", in, 1));
        return {dst};
    }
    static constexpr kind_info info{"copy_", 2, 1, 0, false, false, true, &run};
};

}  // namespace kinds

/// An op-table entry as an IR kind.
template <class Op>
struct table_kind {
    static constexpr kind_info info{Op::name, Op::arity, 1, 0, true, true, false, &detail::run_table_op<Op>};
};

namespace detail {
template <class T>
struct table_kinds;
template <class... Ops>
struct table_kinds<std::tuple<Ops...>> {
    using type = std::tuple<table_kind<Ops>...>;
};
}  // namespace detail

/// Every kind the IR knows: the op table's elementwise ops, then the others.
using all_kinds = decltype(std::tuple_cat(
    std::declval<typename detail::table_kinds<ops::all_elementwise_ops>::type>(),
    std::declval<std::tuple<kinds::constant, kinds::if_, kinds::call, kinds::sum, kinds::mean, kinds::amax, kinds::amin,
                            kinds::matmul, kinds::softmax, kinds::log_softmax, kinds::sum_to_size, kinds::clone,
                            kinds::contiguous, kinds::detach, kinds::zeros_like, kinds::ones_like, kinds::reshape,
                            kinds::expand, kinds::permute, kinds::transpose, kinds::narrow, kinds::select,
                            kinds::squeeze, kinds::unsqueeze, kinds::copy_, kinds::to, kinds::gelu, kinds::take,
                            kinds::put>>()));

/// A kind type's registry entry: nodes of kind K point here.
template <class K>
inline constexpr const kind_info& kind_v = K::info;

/// The table kind for op-table entry Op.
template <class Op>
inline constexpr const kind_info& op_kind_v = table_kind<Op>::info;

namespace detail {
template <class T>
struct registry;
template <class... Ks>
struct registry<std::tuple<Ks...>> {
    static constexpr std::array<const kind_info*, sizeof...(Ks)> entries{&Ks::info...};
};
}  // namespace detail

/// Every registered kind, for lookup by name (the parser).
[[nodiscard]] inline std::span<const kind_info* const> registered_kinds() {
    return detail::registry<all_kinds>::entries;
}

/// The kind named `name`, or null.
[[nodiscard]] inline const kind_info* find_kind(std::string_view name) {
    for (const kind_info* k : registered_kinds())
        if (k->name == name) return k;
    return nullptr;
}

}  // namespace graft::ir
