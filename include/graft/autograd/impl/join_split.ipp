#pragma once
// Definitions for graft/autograd/join_split.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/join_split.hpp"

#include <memory>

namespace graft {

namespace detail {

/// Pieces of `split_size` (a SymInt, so that a captured graph computes the narrows' starts
/// and lengths from the input's size) along the wrapped dimension d of t; n is t's size there.
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> split_pieces(const Tensor& t, std::int64_t d, const SymInt& n,
                                                            const SymInt& split_size) {
    const std::int64_t size = n.value(), step = split_size.value();
    const std::int64_t count = step == 0 || size == 0 ? 1 : (size - 1) / step + 1;
    std::vector<Tensor> out;
    out.reserve(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
        const SymInt start = split_size * i;
        out.push_back(t.narrow_symint(d, start, i + 1 < count ? split_size : n - start));
    }
    return out;
}

}  // namespace detail

namespace autograd::detail {

/// Makes the views `pieces` of t along d (made with grad mode off, so without nodes of their
/// own) outputs 0..n-1 of one node `name`, as PyTorch's multi-output view nodes: its backward
/// joins the views' gradients (cat, or stack for unbind), zeros standing in for missing ones.
/// With grad mode on the views are marked multi_output_node, which refuses in-place writes to
/// them while autograd records (functions.ipp, handle_view_on_rebase).
GRAFT_INLINE std::vector<Tensor> record_multi_view(const char* name, const Tensor& t, std::int64_t d,
                                                   std::vector<Tensor> pieces, bool stacked) {
    if (!is_grad_enabled()) return pieces;  // track_view marked them no_grad_mode, as PyTorch
    for (const Tensor& p : pieces)
        if (view_meta* vm = tracked_view(p)) vm->creation = creation_meta::multi_output_node;
    auto node = make_node(name, t);
    if (!node || pieces.empty()) return pieces;
    std::vector<int_list> sizes;
    sizes.reserve(pieces.size());
    for (const Tensor& p : pieces) sizes.push_back(p.sizes());
    node->backward = [d, stacked, in = t.sizes(), type = t.type(), sizes = std::move(sizes)](
                         function_node&, const tensor_list& g, tensor_list& grad_inputs) {
        // Nothing to join for an empty input (cat would also skip 1-D empty pieces).
        if (graft::detail::numel_of(in) == 0) {
            grad_inputs.push_back(zeros(in, type));
            return;
        }
        std::vector<Tensor> parts;
        parts.reserve(sizes.size());
        for (std::size_t i = 0; i < sizes.size(); ++i)
            parts.push_back(i < g.size() && g[i].defined() ? g[i] : zeros(sizes[i], type));
        grad_inputs.push_back(stacked ? graft::stack(parts, d) : graft::cat(parts, d));
    };
    for (const Tensor& p : pieces) set_history(p, node);
    return pieces;
}

}  // namespace autograd::detail

GRAFT_INLINE Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim) {
    Tensor out = ops::cat(tensors, dim);
    if (!autograd::is_grad_enabled()) return out;
    bool any = false;
    for (const Tensor& t : tensors) any = any || autograd::detail::requires_grad(t);
    if (!any) return out;
    // The inputs' geometry along the joined dimension (ops::cat checked it).
    const auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.numel() == 0; };
    std::size_t ref = 0;
    while (ref < tensors.size() && skipped(tensors[ref])) ++ref;
    const std::int64_t d = graft::detail::wrap_dim("cat", dim, tensors[ref < tensors.size() ? ref : 0].dim());
    struct piece {
        std::int64_t start, length;
        dtype type;
        bool skipped;
    };
    auto pieces = std::make_shared<std::vector<piece>>();
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        const bool skip = ref < tensors.size() && skipped(t);
        const std::int64_t len = skip ? 0 : t.size(d);
        pieces->push_back({offset, len, t.type(), skip});
        offset += len;
    }
    auto node = std::allocate_shared<autograd::function_node>(
        graft::detail::pool_allocator<autograd::function_node>{}, "CatBackward0");
    for (const Tensor& t : tensors) node->add_next_edge(autograd::detail::gradient_edge(t));
    node->backward = [pieces, d](autograd::function_node& n, const autograd::tensor_list& g,
                                 autograd::tensor_list& grad_inputs) {
        for (std::size_t i = 0; i < pieces->size(); ++i) {
            const piece& p = (*pieces)[i];
            if (!n.needs_input_grad(i)) grad_inputs.emplace_back();
            else if (p.skipped) grad_inputs.push_back(zeros({0}, p.type));
            else grad_inputs.push_back(g[0].narrow(d, p.start, p.length).to(p.type));
        }
    };
    autograd::detail::set_history(out, std::move(node));
    return out;
}

GRAFT_INLINE Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim) {
    graft::detail::check(!tensors.empty(), "stack: expects a non-empty TensorList");
    for (std::size_t i = 0; i < tensors.size(); ++i)
        graft::detail::check(tensors[i].defined(), "stack: tensor ", i, " in the list is undefined");
    for (std::size_t i = 1; i < tensors.size(); ++i)
        graft::detail::check(tensors[i].sizes() == tensors[0].sizes(),
                             "stack: expects each tensor to be equal size, but got ", tensors[0].sizes(),
                             " at entry 0 and ", tensors[i].sizes(), " at entry ", i);
    const std::int64_t d = graft::detail::wrap_dim("stack", dim, tensors[0].dim() + 1);
    std::vector<Tensor> parts;
    parts.reserve(tensors.size());
    for (const Tensor& t : tensors) parts.push_back(t.unsqueeze(d));
    return cat(parts, d);
}

GRAFT_INLINE std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors) {
    int_list shape;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        graft::detail::check(tensors[i].defined(), "broadcast_tensors: tensor ", i, " is an undefined tensor");
        if (i == 0) {
            shape = tensors[i].sizes();
            continue;
        }
        int_list next;
        graft::detail::check(graft::detail::try_broadcast_shapes(shape, tensors[i].sizes(), next),
                             "broadcast_tensors: the sizes ", tensors[i].sizes(), " of tensor ", i,
                             " do not broadcast with ", shape, " (the shape of the tensors before it)");
        shape = std::move(next);
    }
    std::vector<Tensor> out;
    out.reserve(tensors.size());
    for (const Tensor& t : tensors) out.push_back(t.expand(shape));
    return out;
}

GRAFT_INLINE std::vector<Tensor> split(const Tensor& t, std::int64_t split_size, std::int64_t dim) {
    graft::detail::check(t.defined(), "split: got an undefined tensor");
    graft::detail::check(t.dim() > 0, "split: expects at least a 1-dimensional tensor");
    graft::detail::check(split_size >= 0, "split: expects split_size be non-negative, but got split_size=",
                         split_size);
    const std::int64_t d = graft::detail::wrap_dim("split", dim, t.dim());
    const std::int64_t n = t.size(d);
    graft::detail::check(split_size != 0 || n == 0,
                         "split: split_size can only be 0 if dimension size is 0, but got dimension size of ", n);
    std::vector<Tensor> out;
    {
        const autograd::no_grad guard;  // the views share the one node made below
        out = detail::split_pieces(t, d, t.sym_size(d), split_size);
    }
    return autograd::detail::record_multi_view("SplitBackward0", t, d, std::move(out), false);
}

GRAFT_INLINE std::vector<Tensor> split_with_sizes(const Tensor& t, const int_list& split_sizes, std::int64_t dim) {
    graft::detail::check(t.defined(), "split_with_sizes: got an undefined tensor");
    graft::detail::check(t.dim() > 0, "split_with_sizes: expects at least a 1-dimensional tensor");
    const std::int64_t d = graft::detail::wrap_dim("split_with_sizes", dim, t.dim());
    const std::int64_t n = t.size(d);
    std::int64_t total = 0;
    bool fits = true;
    for (auto s : split_sizes) {
        graft::detail::check(s >= 0, "split_with_sizes: expects split_sizes have only non-negative entries, but got "
                                     "split_sizes=", split_sizes);
        fits = fits && graft::detail::add_fits(total, s, total);
    }
    graft::detail::check(fits && total == n, "split_with_sizes: expects split_sizes to sum exactly to ", n,
                         " (input tensor's size at dimension ", d, "), but got split_sizes=", split_sizes);
    std::vector<Tensor> out;
    out.reserve(split_sizes.size());
    {
        const autograd::no_grad guard;  // the views share the one node made below
        std::int64_t start = 0;
        for (auto s : split_sizes) {
            out.push_back(t.narrow(d, start, s));
            start += s;
        }
    }
    return autograd::detail::record_multi_view("SplitWithSizesBackward0", t, d, std::move(out), false);
}

GRAFT_INLINE std::vector<Tensor> split(const Tensor& t, const int_list& split_sizes, std::int64_t dim) {
    return split_with_sizes(t, split_sizes, dim);
}

GRAFT_INLINE std::vector<Tensor> chunk(const Tensor& t, std::int64_t chunks, std::int64_t dim) {
    graft::detail::check(t.defined(), "chunk: got an undefined tensor");
    graft::detail::check(t.dim() > 0, "chunk: expects at least a 1-dimensional tensor");
    graft::detail::check(chunks > 0, "chunk: expects `chunks` to be greater than 0, got: ", chunks);
    const std::int64_t d = graft::detail::wrap_dim("chunk", dim, t.dim());
    const SymInt n = t.sym_size(d);
    if (n.value() == 0) return split_with_sizes(t, int_list(static_cast<std::size_t>(chunks), 0), d);
    std::vector<Tensor> out;
    {
        const autograd::no_grad guard;  // the views share the one node made below
        // ceil(n / chunks) without overflow: (n - 1) / chunks + 1.
        out = detail::split_pieces(t, d, n, (n - 1) / chunks + 1);
    }
    return autograd::detail::record_multi_view("SplitBackward0", t, d, std::move(out), false);
}

GRAFT_INLINE std::vector<Tensor> unbind(const Tensor& t, std::int64_t dim) {
    graft::detail::check(t.defined(), "unbind: got an undefined tensor");
    graft::detail::check(t.dim() > 0, "unbind: Dimension specified as ", dim, " but tensor has no dimensions");
    const std::int64_t d = graft::detail::wrap_dim("unbind", dim, t.dim());
    std::vector<Tensor> out;
    out.reserve(static_cast<std::size_t>(t.size(d)));
    {
        const autograd::no_grad guard;  // the views share the one node made below
        for (std::int64_t i = 0; i < t.size(d); ++i) out.push_back(t.select(d, i));
    }
    return autograd::detail::record_multi_view("UnbindBackward0", t, d, std::move(out), true);
}

GRAFT_INLINE Tensor flatten(const Tensor& t, std::int64_t start_dim, std::int64_t end_dim) {
    graft::detail::check(t.defined(), "flatten: got an undefined tensor");
    const std::int64_t start = graft::detail::wrap_dim("flatten", start_dim, t.dim());
    const std::int64_t end = graft::detail::wrap_dim("flatten", end_dim, t.dim());
    graft::detail::check(start <= end, "flatten: flatten() has invalid args: start_dim cannot come after end_dim");
    if (t.dim() == 0) return t.reshape({1});
    if (start == end) return t;
    sym_int_list sizes;
    for (std::int64_t i = 0; i < start; ++i) sizes.push_back(t.sym_size(i));
    SymInt merged = t.sym_size(start);
    for (std::int64_t i = start + 1; i <= end; ++i) merged = merged * t.sym_size(i);
    sizes.push_back(merged);
    for (std::int64_t i = end + 1; i < t.dim(); ++i) sizes.push_back(t.sym_size(i));
    return t.reshape_symint(sizes);
}

// ---------------------------------------------------------------- methods

GRAFT_INLINE Tensor Tensor::flatten(std::int64_t start_dim, std::int64_t end_dim) const {
    return graft::flatten(*this, start_dim, end_dim);
}
GRAFT_INLINE std::vector<Tensor> Tensor::split(std::int64_t split_size, std::int64_t dim) const {
    return graft::split(*this, split_size, dim);
}
GRAFT_INLINE std::vector<Tensor> Tensor::split(const int_list& split_sizes, std::int64_t dim) const {
    return graft::split_with_sizes(*this, split_sizes, dim);
}
GRAFT_INLINE std::vector<Tensor> Tensor::split_with_sizes(const int_list& split_sizes, std::int64_t dim) const {
    return graft::split_with_sizes(*this, split_sizes, dim);
}
GRAFT_INLINE std::vector<Tensor> Tensor::chunk(std::int64_t chunks, std::int64_t dim) const {
    return graft::chunk(*this, chunks, dim);
}
GRAFT_INLINE std::vector<Tensor> Tensor::unbind(std::int64_t dim) const { return graft::unbind(*this, dim); }

}  // namespace graft
