#pragma once
// Definitions for graft/core/tensor.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/core/tensor.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace graft::detail {

GRAFT_INLINE std::shared_ptr<tensor_impl> make_tensor_impl() {
    return std::allocate_shared<tensor_impl>(pool_allocator<tensor_impl>{});
}

}  // namespace graft::detail

namespace graft::detail {

GRAFT_INLINE std::vector<Tensor> branch_ref::operator()(const std::vector<Tensor>& operands) const {
    return invoke(object, operands);
}

// Here rather than in op_observer.ipp: it needs Tensor complete.
GRAFT_INLINE std::vector<Tensor> op_observer::on_cond(const Tensor&, const branch_ref&, const branch_ref&,
                                                      const std::vector<Tensor>&) {
    fail("cond: not supported while this op observer is installed");
}

GRAFT_INLINE std::vector<Tensor> op_observer::on_while_loop(const branch_ref&, const branch_ref&,
                                                            const std::vector<Tensor>&) {
    fail("while_loop: not supported while this op observer is installed");
}

}  // namespace graft::detail

namespace graft {

namespace detail {

/// A contiguous tensor of `nbytes` (already checked to be sizes' element count times the
/// element size): empty() and empty_same_shape() differ only in how they get there.
GRAFT_INLINE Tensor empty_of_bytes(const int_list& sizes, dtype type, std::size_t nbytes) {
    auto impl = make_tensor_impl();
    impl->type = type;
    impl->sizes = sizes;
    assign_contiguous_strides(impl->strides, sizes);
    impl->data = make_storage(nbytes);
    Tensor t(std::move(impl));
    if (tl_op_observer) [[unlikely]]
        observe_alloc(t);
    return t;
}

}  // namespace detail

GRAFT_INLINE Tensor empty(const int_list& sizes, dtype type) {
    return detail::empty_of_bytes(
        sizes, type, detail::checked_bytes("empty", detail::checked_numel("empty", sizes), element_size(type)));
}

namespace detail {

GRAFT_INLINE Tensor empty_same_shape(const Tensor& t) {
    const tensor_impl& src = t.impl();
    return empty_of_bytes(src.sizes, src.type, static_cast<std::size_t>(numel_of(src.sizes)) * element_size(src.type));
}

}  // namespace detail

}  // namespace graft

namespace graft::detail {

GRAFT_INLINE int_list byte_strides(const Tensor& t) {
    int_list s = t.strides();
    const auto es = static_cast<std::int64_t>(t.element_size());
    for (auto& x : s) x *= es;
    return s;
}

GRAFT_INLINE void copy_elements(const Tensor& dst, const Tensor& src) {
    const int_list ds = byte_strides(dst), ss = byte_strides(src);
    visit_storage_dtype(dst.type(), [&](auto d) {
        using D = decltype(d);
        visit_storage_dtype(src.type(), [&](auto s) {
            using S = decltype(s);
            for_each_row<2>(dst.sizes(), {&ds, &ss},
                            {static_cast<char*>(dst.raw_data()), static_cast<char*>(src.raw_data())},
                            [](std::array<char*, 2> p, std::array<std::int64_t, 2> st, std::int64_t n) {
                                if constexpr (std::is_same_v<D, S>) {
                                    if (st[0] == sizeof(D) && st[1] == sizeof(S)) {
                                        std::memmove(p[0], p[1], static_cast<std::size_t>(n) * sizeof(D));
                                        return;
                                    }
                                }
                                for (std::int64_t i = 0; i < n; ++i) {
                                    S v;
                                    std::memcpy(&v, p[1] + i * st[1], sizeof(S));
                                    const D r = convert_element<D>(v);
                                    std::memcpy(p[0] + i * st[0], &r, sizeof(D));
                                }
                            });
        });
    });
}

GRAFT_INLINE bool compute_view_strides(const int_list& old_sizes, const int_list& old_strides,
                                       const int_list& new_sizes, int_list& new_strides) {
    new_strides.assign(new_sizes.size(), 0);
    if (old_sizes.empty()) {
        new_strides.assign(new_sizes.size(), 1);
        return true;
    }
    const std::int64_t numel = numel_of(old_sizes);
    if (numel == 0) {
        new_strides = contiguous_strides(new_sizes);
        return true;
    }
    std::int64_t view_d = static_cast<std::int64_t>(new_sizes.size()) - 1;
    std::int64_t chunk_base_stride = old_strides.back();
    std::int64_t tensor_numel = 1, view_numel = 1;
    for (std::int64_t tensor_d = static_cast<std::int64_t>(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
        const auto td = static_cast<std::size_t>(tensor_d);
        tensor_numel *= old_sizes[td];
        if (tensor_d == 0 || (old_sizes[td - 1] != 1 && old_strides[td - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[static_cast<std::size_t>(view_d)] == 1)) {
                new_strides[static_cast<std::size_t>(view_d)] = view_numel * chunk_base_stride;
                view_numel *= new_sizes[static_cast<std::size_t>(view_d)];
                --view_d;
            }
            if (view_numel != tensor_numel) return false;
            if (tensor_d > 0) {
                chunk_base_stride = old_strides[td - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

GRAFT_INLINE int_list infer_size(const char* op, int_list sizes, std::int64_t numel, const int_list& from) {
    std::int64_t known = 1;
    std::int64_t infer = -1;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] == -1) {
            check(infer < 0, op, ": only one dimension can be inferred, got ", sizes);
            infer = static_cast<std::int64_t>(i);
        } else {
            check(sizes[i] >= 0, op, ": invalid shape dimension ", sizes[i], " in ", sizes);
            if (!mul_fits(known, sizes[i], known))
                fail(concat(op, ": shape ", sizes, " has more elements than an int64 can count (input of size ",
                            numel, ", shape ", from, ")"));
        }
    }
    if (infer >= 0) {
        check(known != 0 && numel % known == 0, op, ": shape ", sizes, " is invalid for input of size ",
              numel, " (shape ", from, ")");
        sizes[static_cast<std::size_t>(infer)] = numel / known;
    } else {
        check(known == numel, op, ": shape ", sizes, " is invalid for input of size ", numel, " (shape ",
              from, ")");
    }
    return sizes;
}

}  // namespace graft::detail

namespace graft::detail::raw {

GRAFT_INLINE Tensor view_of(const Tensor& base, int_list sizes, int_list strides, std::int64_t offset) {
    (void)checked_numel("view", sizes);  // every view's element count must be countable
    auto v = make_tensor_impl();
    v->data = base.impl().data;
    v->type = base.impl().type;
    v->sizes = std::move(sizes);
    v->strides = std::move(strides);
    v->offset = offset;
    v->is_view = true;
    return Tensor(std::move(v));
}

GRAFT_INLINE Tensor alias(const Tensor& self) {
    return view_of(self, self.sizes(), self.strides(), self.storage_offset());
}

GRAFT_INLINE Tensor view(const Tensor& self, int_list new_sizes) {
    const detail::observed_op obs_;
    // Capture records the sizes as written: a -1 is inferred again from each call's sizes.
    const std::vector<std::int64_t> written = detail::to_vector(new_sizes);
    new_sizes = detail::infer_size("view", std::move(new_sizes), self.numel(), self.sizes());
    int_list new_strides;
    detail::check(detail::compute_view_strides(self.sizes(), self.strides(), new_sizes, new_strides),
                  "view: view size ", new_sizes, " is not compatible with input tensor's size ",
                  self.sizes(), " and stride ", self.strides(),
                  " (at least one dimension spans across two contiguous subspaces). Use reshape(...) instead.");
    Tensor out = view_of(self, std::move(new_sizes), std::move(new_strides), self.storage_offset());
    return obs_.done(out, "reshape", {self}, {{"sizes", written}});
}

GRAFT_INLINE Tensor reshape(const Tensor& self, int_list new_sizes) {
    const detail::observed_op obs_;
    const std::vector<std::int64_t> recorded = detail::to_vector(new_sizes);  // as written (-1 kept)
    new_sizes = detail::infer_size("reshape", std::move(new_sizes), self.numel(), self.sizes());
    int_list new_strides;
    if (detail::compute_view_strides(self.sizes(), self.strides(), new_sizes, new_strides))
        return obs_.done(view_of(self, std::move(new_sizes), std::move(new_strides), self.storage_offset()), "reshape",
                         {self}, {{"sizes", recorded}});
    return obs_.done(view(contiguous(self), std::move(new_sizes)), "reshape", {self}, {{"sizes", recorded}});
}

GRAFT_INLINE Tensor transpose(const Tensor& self, std::int64_t dim0, std::int64_t dim1) {
    const detail::observed_op obs_;
    const auto a = static_cast<std::size_t>(detail::wrap_dim("transpose", dim0, self.dim()));
    const auto b = static_cast<std::size_t>(detail::wrap_dim("transpose", dim1, self.dim()));
    int_list sz = self.sizes(), st = self.strides();
    if (!sz.empty()) {
        std::swap(sz[a], sz[b]);
        std::swap(st[a], st[b]);
    }
    return obs_.done(view_of(self, std::move(sz), std::move(st), self.storage_offset()), "transpose", {self},
                     {{"dim0", dim0}, {"dim1", dim1}});
}

GRAFT_INLINE Tensor t(const Tensor& self) {
    const detail::observed_op obs_;
    detail::check(self.dim() <= 2, "t: expects a tensor with <= 2 dimensions, but got a ", self.dim(), "-D tensor");
    if (self.dim() < 2) return alias(self);
    return obs_.done(transpose(self, 0, 1), "transpose", {self}, {{"dim0", std::int64_t{0}}, {"dim1", std::int64_t{1}}});
}

GRAFT_INLINE Tensor permute(const Tensor& self, const int_list& dims) {
    const detail::observed_op obs_;
    detail::check(static_cast<std::int64_t>(dims.size()) == self.dim(), "permute: number of dims ", dims.size(),
                  " does not match the tensor's rank ", self.dim(), " (sizes ", self.sizes(), ")");
    int_list sz(dims.size()), st(dims.size());
    std::vector<bool> seen(dims.size(), false);
    for (std::size_t i = 0; i < dims.size(); ++i) {
        const auto d = static_cast<std::size_t>(detail::wrap_dim("permute", dims[i], self.dim()));
        detail::check(!seen[d], "permute: repeated dim ", dims[i], " in ", dims);
        seen[d] = true;
        sz[i] = self.sizes()[d];
        st[i] = self.strides()[d];
    }
    return obs_.done(view_of(self, std::move(sz), std::move(st), self.storage_offset()), "permute", {self},
                     {{"dims", detail::to_vector(dims)}});
}

GRAFT_INLINE Tensor narrow(const Tensor& self, std::int64_t d, std::int64_t start, std::int64_t length) {
    const detail::observed_op obs_;
    detail::check(self.dim() > 0, "narrow: cannot be applied to a 0-dim tensor");
    const auto k = static_cast<std::size_t>(detail::wrap_dim("narrow", d, self.dim()));
    const std::int64_t n = self.sizes()[k];
    if (start < 0) start += n;
    detail::check(start >= 0 && start <= n, "narrow: start ", start, " out of range for dimension ", d,
                  " of size ", n);
    detail::check(length >= 0 && length <= n - start, "narrow: start (", start, ") + length (", length,
                  ") exceeds dimension size (", n, ")");
    int_list sz = self.sizes();
    sz[k] = length;
    return obs_.done(view_of(self, std::move(sz), self.strides(), self.storage_offset() + start * self.strides()[k]),
                     "narrow", {self}, {{"dim", d}, {"start", start}, {"length", length}});
}

GRAFT_INLINE Tensor narrow_backward(const Tensor& grad, const int_list& sizes, std::int64_t d, std::int64_t start,
                                    std::int64_t length) {
    const detail::observed_op obs_;
    detail::check(grad.defined(), "narrow_backward: the gradient is undefined");
    Tensor out = empty(sizes, grad.type());
    detail::check(out.dim() == grad.dim(), "narrow_backward: the gradient has ", grad.dim(), " dimensions, sizes ",
                  sizes, " have ", out.dim());
    fill_(out, 0);
    Tensor window = narrow(out, d, start, length);
    detail::check(window.sizes() == grad.sizes(), "narrow_backward: the gradient's sizes ", grad.sizes(),
                  " are not those of narrow(", d, ", ", start, ", ", length, ") of sizes ", sizes, ": ",
                  window.sizes());
    copy_(window, grad);
    return obs_.done(out, "narrow_backward", {grad},
                     {{"sizes", detail::to_vector(sizes)}, {"dim", d}, {"start", start}, {"length", length}});
}

GRAFT_INLINE Tensor slice(const Tensor& self, std::int64_t d, std::int64_t start, std::int64_t end, std::int64_t step) {
    detail::check(self.dim() > 0, "slice: cannot be applied to a 0-dim tensor");
    detail::check(step > 0, "slice: step must be positive, got ", step);
    const auto k = static_cast<std::size_t>(detail::wrap_dim("slice", d, self.dim()));
    const std::int64_t n = self.sizes()[k];
    // Python slice semantics: negative indices count from the end, out-of-range clamps.
    if (start < 0) start += n;
    if (end < 0) end += n;
    start = std::clamp<std::int64_t>(start, 0, n);
    end = std::clamp<std::int64_t>(end, start, n);
    int_list sz = self.sizes(), st = self.strides();
    sz[k] = end > start ? (end - start - 1) / step + 1 : 0;
    // With fewer than two elements the stride is never used: keep it rather than overflow.
    if (sz[k] > 1 && !detail::mul_fits(st[k], step, st[k]))
        detail::fail(detail::concat("slice: step ", step, " times stride ", self.strides()[k], " overflows int64"));
    return view_of(self, std::move(sz), std::move(st), self.storage_offset() + start * self.strides()[k]);
}

GRAFT_INLINE Tensor select(const Tensor& self, std::int64_t d, std::int64_t index) {
    const detail::observed_op obs_;
    detail::check(self.dim() > 0, "select: cannot be applied to a 0-dim tensor");
    const auto k = static_cast<std::size_t>(detail::wrap_dim("select", d, self.dim()));
    const std::int64_t n = self.sizes()[k];
    detail::check(index >= -n && index < n, "select: index ", index, " out of range for tensor of size ",
                  self.sizes(), " at dimension ", d);
    if (index < 0) index += n;
    int_list sz = self.sizes(), st = self.strides();
    const std::int64_t off = self.storage_offset() + index * st[k];
    sz.erase(sz.begin() + static_cast<std::ptrdiff_t>(k));
    st.erase(st.begin() + static_cast<std::ptrdiff_t>(k));
    return obs_.done(view_of(self, std::move(sz), std::move(st), off), "select", {self}, {{"dim", d}, {"index", index}});
}

GRAFT_INLINE Tensor squeeze(const Tensor& self) {
    const detail::observed_op obs_;
    int_list sz, st;
    for (std::size_t i = 0; i < self.sizes().size(); ++i)
        if (self.sizes()[i] != 1) {
            sz.push_back(self.sizes()[i]);
            st.push_back(self.strides()[i]);
        }
    return obs_.done(view_of(self, std::move(sz), std::move(st), self.storage_offset()), "squeeze", {self});
}

GRAFT_INLINE Tensor squeeze(const Tensor& self, std::int64_t d) {
    const detail::observed_op obs_;
    if (self.dim() == 0) {
        (void)detail::wrap_dim("squeeze", d, 0);
        return alias(self);
    }
    const auto k = static_cast<std::size_t>(detail::wrap_dim("squeeze", d, self.dim()));
    if (self.sizes()[k] != 1) return alias(self);
    int_list sz = self.sizes(), st = self.strides();
    sz.erase(sz.begin() + static_cast<std::ptrdiff_t>(k));
    st.erase(st.begin() + static_cast<std::ptrdiff_t>(k));
    return obs_.done(view_of(self, std::move(sz), std::move(st), self.storage_offset()), "squeeze", {self},
                     {{"dim", d}});
}

GRAFT_INLINE Tensor unsqueeze(const Tensor& self, std::int64_t d) {
    const detail::observed_op obs_;
    const auto k = static_cast<std::size_t>(detail::wrap_dim("unsqueeze", d, self.dim() + 1));
    int_list sz = self.sizes(), st = self.strides();
    const std::int64_t new_stride = k < sz.size() ? sz[k] * st[k] : 1;
    sz.insert(sz.begin() + static_cast<std::ptrdiff_t>(k), 1);
    st.insert(st.begin() + static_cast<std::ptrdiff_t>(k), new_stride);
    return obs_.done(view_of(self, std::move(sz), std::move(st), self.storage_offset()), "unsqueeze", {self}, {{"dim", d}});
}

GRAFT_INLINE Tensor expand(const Tensor& self, const int_list& target) {
    const detail::observed_op obs_;
    detail::check(target.size() >= self.sizes().size(), "expand: the number of sizes provided (", target.size(),
                  ") must be greater or equal to the number of dimensions in the tensor (", self.dim(), ")");
    const std::size_t lead = target.size() - self.sizes().size();
    int_list sz(target.size()), st(target.size());
    for (std::size_t i = 0; i < target.size(); ++i) {
        if (i < lead) {
            detail::check(target[i] >= 0, "expand: the expanded size ", target[i],
                          " is not allowed in a leading, non-existing dimension ", i);
            sz[i] = target[i];
            st[i] = 0;
            continue;
        }
        const std::int64_t have = self.sizes()[i - lead];
        const std::int64_t want = target[i] == -1 ? have : target[i];
        detail::check(want >= 0, "expand: the expanded size ", target[i], " at dimension ", i,
                      " is not allowed (sizes are >= 0, or -1 to keep the existing size). Target sizes: ", target);
        detail::check(have == want || have == 1, "expand: the expanded size of the tensor (", want,
                      ") must match the existing size (", have, ") at non-singleton dimension ", i,
                      ". Target sizes: ", target, ". Tensor sizes: ", self.sizes());
        sz[i] = want;
        st[i] = have == want ? self.strides()[i - lead] : 0;
    }
    const std::vector<std::int64_t> recorded = detail::to_vector(target);  // as written (-1 kept)
    return obs_.done(view_of(self, std::move(sz), std::move(st), self.storage_offset()), "expand", {self},
                     {{"sizes", recorded}});
}

GRAFT_INLINE Tensor broadcast_to(const Tensor& self, const int_list& target) {
    (void)broadcast_shapes(self.sizes(), target);  // throws with a clear message when incompatible
    return expand(self, target);
}

GRAFT_INLINE Tensor as_strided(const Tensor& self, int_list sz, int_list st, std::int64_t offset) {
    detail::check(sz.size() == st.size(), "as_strided: sizes ", sz, " and strides ",
                  st, " differ in length");
    detail::check_sizes("as_strided", sz);
    (void)detail::checked_numel("as_strided", sz);
    std::int64_t hi = offset;
    bool empty_view = false, fits = true;
    for (std::size_t i = 0; i < sz.size(); ++i) {
        detail::check(st[i] >= 0, "as_strided: negative strides are not supported");
        std::int64_t reach = 0;
        if (sz[i] == 0) empty_view = true;
        else fits = fits && detail::mul_fits(sz[i] - 1, st[i], reach) && detail::add_fits(hi, reach, hi);
    }
    detail::check(fits || empty_view, "as_strided: view with sizes ", sz, ", strides ", st, " and offset ", offset,
                  " reaches beyond what an int64 can address");
    const auto capacity = static_cast<std::int64_t>(self.impl().data->nbytes() / self.element_size());
    detail::check(offset >= 0 && (empty_view || hi < capacity), "as_strided: view with sizes ", sz,
                  ", strides ", st, " and offset ", offset,
                  " reaches beyond the storage of ", capacity, " elements");
    return view_of(self, std::move(sz), std::move(st), offset);
}

GRAFT_INLINE Tensor contiguous(const Tensor& self) {
    const detail::observed_op obs_;
    if (self.is_contiguous()) return self;
    return obs_.done(clone(self), "contiguous", {self});
}

GRAFT_INLINE Tensor clone(const Tensor& self) {
    const detail::observed_op obs_;
    Tensor out = empty(self.sizes(), self.type());
    detail::copy_elements(out, self);
    return obs_.done(out, "clone", {self});
}

GRAFT_INLINE Tensor to(const Tensor& self, dtype target) {
    const detail::observed_op obs_;
    if (target == self.type()) return self;
    Tensor out = empty(self.sizes(), target);
    detail::copy_elements(out, self);
    return obs_.done(out, "to", {self}, {{"dtype", std::string(name(target))}});
}

GRAFT_INLINE Tensor copy_(const Tensor& self, const Tensor& src) {
    const detail::observed_op obs_;
    detail::check(src.defined(), "copy_: source tensor is undefined");
    obs_.write(self, src);
    const Tensor b = broadcast_to(src, self.sizes());
    if (self.shares_storage_with(src)) {
        const Tensor tmp = clone(b);  // avoid reading what this copy has already overwritten
        detail::copy_elements(self, tmp);
    } else {
        detail::copy_elements(self, b);
    }
    self.bump_version();
    return self;
}

GRAFT_INLINE Tensor fill_(const Tensor& self, const scalar& value) {
    const detail::observed_op obs_;
    obs_.write(self, value);
    const int_list s = detail::byte_strides(self);
    detail::visit_storage_dtype(self.type(), [&](auto z) {
        using T = decltype(z);
        const T v = detail::scalar_to_element<T>(value);
        detail::for_each_row<1>(self.sizes(), {&s}, {static_cast<char*>(self.raw_data())},
                                [&](std::array<char*, 1> p, std::array<std::int64_t, 1> st, std::int64_t n) {
                                    for (std::int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * st[0], &v, sizeof(T));
                                });
    });
    self.bump_version();
    return self;
}

}  // namespace graft::detail::raw
