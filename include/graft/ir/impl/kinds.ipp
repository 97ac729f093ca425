#pragma once
// Definitions for graft/ir/kinds.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ir/kinds.hpp"

namespace graft::ir {

namespace detail {

GRAFT_INLINE const Tensor& tensor_arg(std::string_view op, std::span<const ivalue> in, std::size_t i) {
    const Tensor* t = std::get_if<Tensor>(&in[i]);
    graft::detail::check(t != nullptr, op, ": input ", i, " must be a tensor");
    return *t;
}

GRAFT_INLINE int_list to_int_list(const std::vector<std::int64_t>& v) {
    int_list r;
    for (auto x : v) r.push_back(x);
    return r;
}

/// A number attribute (int, float or bool) as a scalar.
[[nodiscard]] GRAFT_INLINE scalar number_attr(std::string_view op, const attribute_map& a, const char* name) {
    const auto it = a.find(name);
    graft::detail::check(it != a.end(), op, ": missing attribute '", name, "'");
    if (const auto* d = std::get_if<double>(&it->second)) return scalar(*d);
    if (const auto* i = std::get_if<std::int64_t>(&it->second)) return scalar(*i);
    if (const auto* b = std::get_if<bool>(&it->second)) return scalar(*b);
    graft::detail::fail(graft::detail::concat(op, ": attribute '", name, "' must be a number"));
}
/// Checks a kind's input count.
GRAFT_INLINE void check_inputs(std::string_view op, std::span<const ivalue> in, std::size_t n) {
    graft::detail::check(in.size() == n, op, ": expected ", n, " inputs, got ", in.size());
}
}  // namespace detail

namespace kinds {

GRAFT_INLINE std::vector<ivalue> constant::run(const attribute_map& a, std::span<const ivalue>) {
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
}

#define GRAFT_DETAIL_IR_KIND_RUN(ident, body)                                                             \
    GRAFT_INLINE std::vector<ivalue> ident::run([[maybe_unused]] const attribute_map& a,                  \
                                                std::span<const ivalue> in) {                             \
        constexpr std::string_view op = ident::info.name;                                                 \
        constexpr int n_in = ident::info.num_inputs;                                                      \
        graft::detail::check(in.size() == n_in, op, ": expected ", n_in, " inputs, got ", in.size());     \
        using graft::ir::detail::attr_of;                                                                 \
        using graft::ir::detail::attr_or;                                                                 \
        using graft::ir::detail::tensor_arg;                                                              \
        using graft::ir::detail::to_int_list;                                                             \
        body                                                                                              \
    }

// Reductions: `dims` (ints; absent or empty: every dimension), `keepdim` (bool, default false).
GRAFT_DETAIL_IR_KIND_RUN(sum, {
    const Tensor& t = tensor_arg(op, in, 0);
    if (!a.count("dims")) return {graft::sum(t)};
    return {graft::sum(t, to_int_list(attr_of<std::vector<std::int64_t>>(op, a, "dims")),
                       attr_or<bool>(op, a, "keepdim", false))};
})
GRAFT_DETAIL_IR_KIND_RUN(mean, {
    return {graft::mean(tensor_arg(op, in, 0), to_int_list(attr_or<std::vector<std::int64_t>>(op, a, "dims", {})),
                        attr_or<bool>(op, a, "keepdim", false))};
})
GRAFT_DETAIL_IR_KIND_RUN(amax, {
    if (attr_or<bool>(op, a, "nan_shares", false)) return {graft::max(tensor_arg(op, in, 0))};
    return {graft::amax(tensor_arg(op, in, 0), to_int_list(attr_or<std::vector<std::int64_t>>(op, a, "dims", {})),
                        attr_or<bool>(op, a, "keepdim", false))};
})
GRAFT_DETAIL_IR_KIND_RUN(amin, {
    if (attr_or<bool>(op, a, "nan_shares", false)) return {graft::min(tensor_arg(op, in, 0))};
    return {graft::amin(tensor_arg(op, in, 0), to_int_list(attr_or<std::vector<std::int64_t>>(op, a, "dims", {})),
                        attr_or<bool>(op, a, "keepdim", false))};
})
GRAFT_DETAIL_IR_KIND_RUN(matmul, { return {graft::matmul(tensor_arg(op, in, 0), tensor_arg(op, in, 1))}; })
GRAFT_DETAIL_IR_KIND_RUN(softmax, {
    return {graft::softmax(tensor_arg(op, in, 0), attr_of<std::int64_t>(op, a, "dim"))};
})
GRAFT_DETAIL_IR_KIND_RUN(log_softmax, {
    return {graft::log_softmax(tensor_arg(op, in, 0), attr_of<std::int64_t>(op, a, "dim"))};
})
GRAFT_DETAIL_IR_KIND_RUN(sum_to_size, {
    return {graft::sum_to_size(tensor_arg(op, in, 0), to_int_list(attr_of<std::vector<std::int64_t>>(op, a, "sizes")))};
})
GRAFT_DETAIL_IR_KIND_RUN(clone, { return {tensor_arg(op, in, 0).clone()}; })
GRAFT_DETAIL_IR_KIND_RUN(contiguous, { return {tensor_arg(op, in, 0).contiguous()}; })
GRAFT_DETAIL_IR_KIND_RUN(detach, { return {tensor_arg(op, in, 0).detach()}; })
GRAFT_DETAIL_IR_KIND_RUN(zeros_like, { return {graft::zeros_like(tensor_arg(op, in, 0))}; })
GRAFT_DETAIL_IR_KIND_RUN(ones_like, { return {graft::ones_like(tensor_arg(op, in, 0))}; })
GRAFT_DETAIL_IR_KIND_RUN(full_like, {
    return {graft::full_like(tensor_arg(op, in, 0), graft::ir::detail::number_attr(op, a, "value"))};
})
GRAFT_DETAIL_IR_KIND_RUN(normal_cdf, { return {graft::normal_cdf(tensor_arg(op, in, 0))}; })
GRAFT_DETAIL_IR_KIND_RUN(sign, { return {graft::sign(tensor_arg(op, in, 0))}; })
GRAFT_DETAIL_IR_KIND_RUN(binary_cross_entropy, {
    return {autograd::detail::binary_cross_entropy_elements(tensor_arg(op, in, 0), tensor_arg(op, in, 1))};
})
GRAFT_DETAIL_IR_KIND_RUN(fused_lstm_cell, {
    return {autograd::detail::fused_lstm_cell(tensor_arg(op, in, 0), tensor_arg(op, in, 1), tensor_arg(op, in, 2))};
})
GRAFT_DETAIL_IR_KIND_RUN(fused_lstm_cell_backward, {
    return {autograd::detail::fused_lstm_cell_backward(tensor_arg(op, in, 0), tensor_arg(op, in, 1),
                                                       tensor_arg(op, in, 2), tensor_arg(op, in, 3))};
})
GRAFT_DETAIL_IR_KIND_RUN(fused_gru_cell, {
    return {autograd::detail::fused_gru_cell(tensor_arg(op, in, 0), tensor_arg(op, in, 1), tensor_arg(op, in, 2))};
})
GRAFT_DETAIL_IR_KIND_RUN(fused_gru_cell_backward, {
    return {autograd::detail::fused_gru_cell_backward(tensor_arg(op, in, 0), tensor_arg(op, in, 1),
                                                      tensor_arg(op, in, 2), tensor_arg(op, in, 3))};
})
GRAFT_DETAIL_IR_KIND_RUN(logical_and, { return {graft::logical_and(tensor_arg(op, in, 0), tensor_arg(op, in, 1))}; })
GRAFT_DETAIL_IR_KIND_RUN(narrow_backward, {
    // Through narrow's own autograd (its backward is narrow), so graphs stay differentiable.
    const Tensor& g = tensor_arg(op, in, 0);
    const int_list sizes = to_int_list(attr_of<std::vector<std::int64_t>>(op, a, "sizes"));
    return {autograd::detail::narrow_embed(g, sizes, attr_of<std::int64_t>(op, a, "dim"),
                                           attr_of<std::int64_t>(op, a, "start"), attr_of<std::int64_t>(op, a, "length"))};
})

// Views: the output aliases the input's storage.
GRAFT_DETAIL_IR_KIND_RUN(reshape, {
    return {tensor_arg(op, in, 0).reshape(to_int_list(attr_of<std::vector<std::int64_t>>(op, a, "sizes")))};
})
GRAFT_DETAIL_IR_KIND_RUN(expand, {
    return {tensor_arg(op, in, 0).expand(to_int_list(attr_of<std::vector<std::int64_t>>(op, a, "sizes")))};
})
GRAFT_DETAIL_IR_KIND_RUN(permute, {
    return {tensor_arg(op, in, 0).permute(to_int_list(attr_of<std::vector<std::int64_t>>(op, a, "dims")))};
})
GRAFT_DETAIL_IR_KIND_RUN(transpose, {
    return {tensor_arg(op, in, 0).transpose(attr_of<std::int64_t>(op, a, "dim0"), attr_of<std::int64_t>(op, a, "dim1"))};
})
GRAFT_DETAIL_IR_KIND_RUN(narrow, {
    return {tensor_arg(op, in, 0).narrow(attr_of<std::int64_t>(op, a, "dim"), attr_of<std::int64_t>(op, a, "start"),
                                         attr_of<std::int64_t>(op, a, "length"))};
})
GRAFT_DETAIL_IR_KIND_RUN(select, {
    return {tensor_arg(op, in, 0).select(attr_of<std::int64_t>(op, a, "dim"), attr_of<std::int64_t>(op, a, "index"))};
})
GRAFT_DETAIL_IR_KIND_RUN(squeeze, {
    const Tensor& t = tensor_arg(op, in, 0);
    return {a.count("dim") ? t.squeeze(attr_of<std::int64_t>(op, a, "dim")) : t.squeeze()};
})
GRAFT_DETAIL_IR_KIND_RUN(unsqueeze, {
    return {tensor_arg(op, in, 0).unsqueeze(attr_of<std::int64_t>(op, a, "dim"))};
})
#undef GRAFT_DETAIL_IR_KIND_RUN

GRAFT_INLINE std::vector<ivalue> to::run(const attribute_map& a, std::span<const ivalue> in) {
    graft::detail::check(in.size() == 1, "to: expected 1 input, got ", in.size());
    const std::string& name = detail::attr_of<std::string>("to", a, "dtype");
    for (dtype t : {dtype::bool_, dtype::int64, dtype::float32, dtype::float64, dtype::int32, dtype::float16,
                    dtype::bfloat16})
        if (graft::name(t) == name) return {detail::tensor_arg("to", in, 0).to(t)};
    graft::detail::fail(graft::detail::concat("to: unknown dtype '", name, "'"));
}

namespace random_detail {
/// A dtype attribute by graft's dtype name.
[[nodiscard]] GRAFT_INLINE dtype dtype_attr(std::string_view op, const attribute_map& a) {
    const std::string& name = detail::attr_of<std::string>(op, a, "dtype");
    for (dtype t : {dtype::bool_, dtype::int64, dtype::float32, dtype::float64, dtype::int32, dtype::float16,
                    dtype::bfloat16})
        if (graft::name(t) == name) return t;
    graft::detail::fail(graft::detail::concat(op, ": unknown dtype '", name, "'"));
}
}  // namespace random_detail

GRAFT_INLINE std::vector<ivalue> rand::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("rand", in, 0);
    return {graft::rand(detail::to_int_list(detail::attr_of<std::vector<std::int64_t>>("rand", a, "sizes")),
                        random_detail::dtype_attr("rand", a))};
}
GRAFT_INLINE std::vector<ivalue> randn::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("randn", in, 0);
    return {graft::randn(detail::to_int_list(detail::attr_of<std::vector<std::int64_t>>("randn", a, "sizes")),
                         random_detail::dtype_attr("randn", a))};
}
GRAFT_INLINE std::vector<ivalue> randint::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("randint", in, 0);
    return {graft::randint(detail::attr_of<std::int64_t>("randint", a, "low"),
                           detail::attr_of<std::int64_t>("randint", a, "high"),
                           detail::to_int_list(detail::attr_of<std::vector<std::int64_t>>("randint", a, "sizes")),
                           random_detail::dtype_attr("randint", a))};
}
GRAFT_INLINE std::vector<ivalue> randperm::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("randperm", in, 0);
    return {graft::randperm(detail::attr_of<std::int64_t>("randperm", a, "n"), random_detail::dtype_attr("randperm", a))};
}
GRAFT_INLINE std::vector<ivalue> rand_like::run(const attribute_map&, std::span<const ivalue> in) {
    detail::check_inputs("rand_like", in, 1);
    return {graft::rand_like(detail::tensor_arg("rand_like", in, 0))};
}
GRAFT_INLINE std::vector<ivalue> randn_like::run(const attribute_map&, std::span<const ivalue> in) {
    detail::check_inputs("randn_like", in, 1);
    return {graft::randn_like(detail::tensor_arg("randn_like", in, 0))};
}
GRAFT_INLINE std::vector<ivalue> randint_like::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("randint_like", in, 1);
    return {graft::randint_like(detail::tensor_arg("randint_like", in, 0),
                                detail::attr_of<std::int64_t>("randint_like", a, "low"),
                                detail::attr_of<std::int64_t>("randint_like", a, "high"))};
}
GRAFT_INLINE std::vector<ivalue> bernoulli::run(const attribute_map&, std::span<const ivalue> in) {
    detail::check_inputs("bernoulli", in, 1);
    return {graft::bernoulli(detail::tensor_arg("bernoulli", in, 0))};
}
GRAFT_INLINE std::vector<ivalue> bernoulli_p::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("bernoulli_p", in, 1);
    return {graft::bernoulli(detail::tensor_arg("bernoulli_p", in, 0), detail::attr_of<double>("bernoulli_p", a, "p"))};
}

GRAFT_INLINE std::vector<ivalue> gelu::run(const attribute_map& a, std::span<const ivalue> in) {
    graft::detail::check(in.size() == 1, "gelu: expected 1 input, got ", in.size());
    return {graft::gelu(detail::tensor_arg("gelu", in, 0),
                        detail::attr_or<std::string>("gelu", a, "approximate", "none"))};
}

GRAFT_INLINE std::vector<ivalue> cat::run(const attribute_map& a, std::span<const ivalue> in) {
    std::vector<Tensor> tensors;
    tensors.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) tensors.push_back(detail::tensor_arg("cat", in, i));
    return {graft::cat(tensors, detail::attr_or<std::int64_t>("cat", a, "dim", 0))};
}

GRAFT_INLINE std::vector<ivalue> clamp::run(const attribute_map& a, std::span<const ivalue> in) {
    graft::detail::check(in.size() == 1, "clamp: expected 1 input, got ", in.size());
    const auto bound = [&](const char* name) -> std::optional<scalar> {
        const auto it = a.find(name);
        if (it == a.end()) return std::nullopt;
        if (const auto* d = std::get_if<double>(&it->second)) return scalar(*d);
        if (const auto* i = std::get_if<std::int64_t>(&it->second)) return scalar(*i);
        if (const auto* b = std::get_if<bool>(&it->second)) return scalar(*b);
        graft::detail::fail(graft::detail::concat("clamp: attribute '", name, "' must be a number"));
    };
    return {graft::clamp(detail::tensor_arg("clamp", in, 0), bound("min"), bound("max"))};
}

GRAFT_INLINE std::vector<ivalue> tril::run(const attribute_map& a, std::span<const ivalue> in) {
    graft::detail::check(in.size() == 1, "tril: expected 1 input, got ", in.size());
    return {graft::tril(detail::tensor_arg("tril", in, 0), detail::attr_or<std::int64_t>("tril", a, "diagonal", 0))};
}

GRAFT_INLINE std::vector<ivalue> triu::run(const attribute_map& a, std::span<const ivalue> in) {
    graft::detail::check(in.size() == 1, "triu: expected 1 input, got ", in.size());
    return {graft::triu(detail::tensor_arg("triu", in, 0), detail::attr_or<std::int64_t>("triu", a, "diagonal", 0))};
}

GRAFT_INLINE std::vector<ivalue> masked_fill::run(const attribute_map& a, std::span<const ivalue> in) {
    graft::detail::check(in.size() == 2, "masked_fill: expected 2 inputs, got ", in.size());
    return {graft::masked_fill(detail::tensor_arg("masked_fill", in, 0), detail::tensor_arg("masked_fill", in, 1),
                               detail::number_attr("masked_fill", a, "value"))};
}

GRAFT_INLINE std::vector<ivalue> argmax::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("argmax", in, 1);
    std::optional<std::int64_t> dim;
    if (a.count("dim")) dim = detail::attr_of<std::int64_t>("argmax", a, "dim");
    return {graft::argmax(detail::tensor_arg("argmax", in, 0), dim, detail::attr_or<bool>("argmax", a, "keepdim", false))};
}

GRAFT_INLINE std::vector<ivalue> argmin::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("argmin", in, 1);
    std::optional<std::int64_t> dim;
    if (a.count("dim")) dim = detail::attr_of<std::int64_t>("argmin", a, "dim");
    return {graft::argmin(detail::tensor_arg("argmin", in, 0), dim, detail::attr_or<bool>("argmin", a, "keepdim", false))};
}

GRAFT_INLINE std::vector<ivalue> logsumexp::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("logsumexp", in, 1);
    return {graft::logsumexp(detail::tensor_arg("logsumexp", in, 0),
                             detail::to_int_list(detail::attr_or<std::vector<std::int64_t>>("logsumexp", a, "dims", {})),
                             detail::attr_or<bool>("logsumexp", a, "keepdim", false))};
}

GRAFT_INLINE std::vector<ivalue> var::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("var", in, 1);
    return {graft::var(detail::tensor_arg("var", in, 0),
                       detail::to_int_list(detail::attr_or<std::vector<std::int64_t>>("var", a, "dims", {})),
                       detail::number_attr("var", a, "correction").to_double(),
                       detail::attr_or<bool>("var", a, "keepdim", false))};
}

GRAFT_INLINE std::vector<ivalue> std_::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("std", in, 1);
    return {graft::std(detail::tensor_arg("std", in, 0),
                       detail::to_int_list(detail::attr_or<std::vector<std::int64_t>>("std", a, "dims", {})),
                       detail::number_attr("std", a, "correction").to_double(),
                       detail::attr_or<bool>("std", a, "keepdim", false))};
}

GRAFT_INLINE std::vector<ivalue> gather::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("gather", in, 2);
    return {graft::gather(detail::tensor_arg("gather", in, 0), detail::attr_of<std::int64_t>("gather", a, "dim"),
                          detail::tensor_arg("gather", in, 1))};
}

GRAFT_INLINE std::vector<ivalue> scatter_add::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("scatter_add", in, 3);
    return {graft::scatter_add(detail::tensor_arg("scatter_add", in, 0),
                               detail::attr_of<std::int64_t>("scatter_add", a, "dim"),
                               detail::tensor_arg("scatter_add", in, 1), detail::tensor_arg("scatter_add", in, 2))};
}

GRAFT_INLINE std::vector<ivalue> index_select::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("index_select", in, 2);
    return {graft::index_select(detail::tensor_arg("index_select", in, 0),
                                detail::attr_of<std::int64_t>("index_select", a, "dim"),
                                detail::tensor_arg("index_select", in, 1))};
}

GRAFT_INLINE std::vector<ivalue> gather_backward::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("gather_backward", in, 2);
    return {autograd::detail::gather_backward(
        detail::tensor_arg("gather_backward", in, 0),
        detail::to_int_list(detail::attr_of<std::vector<std::int64_t>>("gather_backward", a, "sizes")),
        detail::attr_of<std::int64_t>("gather_backward", a, "dim"), detail::tensor_arg("gather_backward", in, 1))};
}

GRAFT_INLINE std::vector<ivalue> index_select_backward::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("index_select_backward", in, 2);
    return {autograd::detail::index_select_backward(
        detail::tensor_arg("index_select_backward", in, 0),
        detail::to_int_list(detail::attr_of<std::vector<std::int64_t>>("index_select_backward", a, "sizes")),
        detail::attr_of<std::int64_t>("index_select_backward", a, "dim"),
        detail::tensor_arg("index_select_backward", in, 1))};
}

GRAFT_INLINE std::vector<ivalue> im2col::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("im2col", in, 1);
    const auto list = [&](const char* name) {
        return detail::to_int_list(detail::attr_of<std::vector<std::int64_t>>("im2col", a, name));
    };
    return {graft::im2col(detail::tensor_arg("im2col", in, 0), list("kernel_size"), list("dilation"), list("padding"),
                          list("stride"))};
}

GRAFT_INLINE std::vector<ivalue> col2im::run(const attribute_map& a, std::span<const ivalue> in) {
    detail::check_inputs("col2im", in, 1);
    const auto list = [&](const char* name) {
        return detail::to_int_list(detail::attr_of<std::vector<std::int64_t>>("col2im", a, name));
    };
    return {graft::col2im(detail::tensor_arg("col2im", in, 0), list("output_size"), list("kernel_size"),
                          list("dilation"), list("padding"), list("stride"))};
}

GRAFT_INLINE std::vector<ivalue> index::run(const attribute_map&, std::span<const ivalue> in) {
    graft::detail::check(in.size() >= 2, "index: expected a tensor and at least one index, got ", in.size(), " inputs");
    std::vector<Tensor> indices;
    for (std::size_t i = 1; i < in.size(); ++i) indices.push_back(detail::tensor_arg("index", in, i));
    return {graft::index(detail::tensor_arg("index", in, 0), indices)};
}

GRAFT_INLINE std::vector<ivalue> index_put::run(const attribute_map& a, std::span<const ivalue> in) {
    graft::detail::check(in.size() >= 3, "index_put: expected a tensor, values and at least one index, got ",
                         in.size(), " inputs");
    std::vector<Tensor> indices;
    for (std::size_t i = 2; i < in.size(); ++i) indices.push_back(detail::tensor_arg("index_put", in, i));
    return {graft::index_put(detail::tensor_arg("index_put", in, 0), indices, detail::tensor_arg("index_put", in, 1),
                             detail::attr_or<bool>("index_put", a, "accumulate", false))};
}

GRAFT_INLINE std::vector<ivalue> index_backward::run(const attribute_map& a, std::span<const ivalue> in) {
    graft::detail::check(in.size() >= 2, "index_backward: expected a gradient and at least one index, got ",
                         in.size(), " inputs");
    std::vector<Tensor> indices;
    for (std::size_t i = 1; i < in.size(); ++i) indices.push_back(detail::tensor_arg("index_backward", in, i));
    return {autograd::detail::index_backward(
        detail::tensor_arg("index_backward", in, 0),
        detail::to_int_list(detail::attr_of<std::vector<std::int64_t>>("index_backward", a, "sizes")), indices)};
}

namespace index_detail {

GRAFT_INLINE Tensor flat_values(const Tensor& t) { return graft::detail::raw::contiguous(t.detach()); }

GRAFT_INLINE void check_index(std::string_view op, const Tensor& idx, std::int64_t n) {
    graft::detail::check(idx.type() == dtype::int64, op, ": the index must be an int64 tensor, got ", idx.type());
    for (auto i : idx.to_vector<std::int64_t>())
        graft::detail::check(i >= 0 && i < n, op, ": index ", i, " out of range for ", n, " elements");
}

GRAFT_INLINE Tensor take_values(const Tensor& base, const Tensor& idx) {
    const Tensor b = flat_values(base);
    Tensor out = empty(idx.sizes(), base.type());
    const auto index = idx.to_vector<std::int64_t>();
    graft::detail::visit_storage_dtype(base.type(), [&](auto z) {
        using T = decltype(z);
        const T* p = b.data_ptr<T>();
        T* o = out.data_ptr<T>();
        for (std::size_t k = 0; k < index.size(); ++k) o[k] = p[index[k]];
    });
    return out;
}

GRAFT_INLINE Tensor put_values(const Tensor& base, const Tensor& idx, const Tensor& src, bool accumulate) {
    if (is_storage_dtype(base.type()))  // accumulates in the compute dtype, rounded once per element
        return put_values(base.to(compute_dtype(base.type())), idx, src, accumulate).to(base.type());
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

GRAFT_INLINE std::vector<ivalue> take::run(const attribute_map&, std::span<const ivalue> in) {
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

GRAFT_INLINE std::vector<ivalue> put::run(const attribute_map& a, std::span<const ivalue> in) {
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

GRAFT_INLINE std::vector<ivalue> copy_::run(const attribute_map&, std::span<const ivalue> in) {
    graft::detail::check(in.size() == 2, "copy_: expected 2 inputs, got ", in.size());
    Tensor dst = detail::tensor_arg("copy_", in, 0);
    dst.copy_(detail::tensor_arg("copy_", in, 1));
    return {dst};
}

}  // namespace kinds

GRAFT_INLINE std::span<const kind_info* const> registered_kinds() {
    return detail::registry<all_kinds>::entries;
}

GRAFT_INLINE const kind_info* find_kind(std::string_view name) {
    for (const kind_info* k : registered_kinds())
        if (k->name == name) return k;
    return nullptr;
}

}  // namespace graft::ir
