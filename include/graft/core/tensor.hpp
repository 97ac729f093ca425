#pragma once
// graft::Tensor: a cheap, reference-counted handle to a strided view of shared storage.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/core/detail/loop.hpp"
#include "graft/core/detail/op_observer.hpp"
#include "graft/core/dtype.hpp"
#include "graft/core/error.hpp"
#include "graft/core/scalar.hpp"
#include "graft/core/shape.hpp"
#include "graft/core/storage.hpp"

namespace graft {

class Tensor;
namespace indexing {
class TensorIndex;  // graft/autograd/indexing.hpp
}
namespace autograd {
class Node;
struct hook_handle;
namespace detail {
struct autograd_meta;
struct view_meta;
}  // namespace detail
}  // namespace autograd

namespace detail {

/// What a Tensor handle points to. Views share `data`, and with it the
/// storage's version counter.
struct tensor_impl {
    std::shared_ptr<storage> data;
    int_list sizes;
    int_list strides;  // in elements
    std::int64_t offset = 0;  // in elements
    dtype type = dtype::float32;
    std::shared_ptr<autograd::detail::autograd_meta> autograd;  // null until autograd needs it
    bool is_view = false;  // created by a view operation of another tensor
    std::shared_ptr<autograd::detail::view_meta> view;  // differentiable views: base (graft/autograd/view_meta.hpp)
};

/// A new, empty tensor_impl from the small-object pool.
[[nodiscard]] GRAFT_INLINE std::shared_ptr<tensor_impl> make_tensor_impl();

}  // namespace detail

/// A strided n-dimensional array. Copying a Tensor copies the handle, not the
/// data; views (`view`, `transpose`, `narrow`, ...) share storage and the
/// version counter with their base, as in PyTorch.
class Tensor {
public:
    /// An undefined tensor: every operation on it throws graft::error.
    Tensor() = default;
    explicit Tensor(std::shared_ptr<detail::tensor_impl> impl) : impl_(std::move(impl)) {}

    [[nodiscard]] bool defined() const noexcept { return impl_ != nullptr; }
    [[nodiscard]] const int_list& sizes() const { return impl().sizes; }
    [[nodiscard]] const int_list& strides() const { return impl().strides; }
    [[nodiscard]] std::int64_t size(std::int64_t dim) const {
        return sizes()[static_cast<std::size_t>(detail::wrap_dim("size", dim, dim_checked()))];
    }
    [[nodiscard]] std::int64_t stride(std::int64_t dim) const {
        return strides()[static_cast<std::size_t>(detail::wrap_dim("stride", dim, dim_checked()))];
    }
    [[nodiscard]] std::int64_t dim() const { return static_cast<std::int64_t>(sizes().size()); }
    [[nodiscard]] std::int64_t numel() const { return detail::numel_of(sizes()); }
    [[nodiscard]] dtype scalar_type() const { return impl().type; }
    [[nodiscard]] dtype type() const { return impl().type; }
    [[nodiscard]] std::int64_t storage_offset() const { return impl().offset; }
    [[nodiscard]] std::size_t element_size() const { return graft::element_size(type()); }
    [[nodiscard]] bool is_contiguous() const { return detail::is_contiguous_layout(sizes(), strides()); }
    /// True when this tensor was made by a view operation and shares another tensor's storage.
    [[nodiscard]] bool is_view() const { return impl().is_view; }
    /// Bumped by every in-place modification of this tensor or of any view of its storage.
    [[nodiscard]] std::uint64_t _version() const { return impl().data->version().load(std::memory_order_relaxed); }
    void bump_version() const { impl().data->version().fetch_add(1, std::memory_order_relaxed); }
    /// True when both handles refer to the same tensor object.
    [[nodiscard]] bool is_same(const Tensor& other) const noexcept { return impl_ == other.impl_; }
    /// True when the two tensors share storage.
    [[nodiscard]] bool shares_storage_with(const Tensor& other) const {
        return impl().data == other.impl().data;
    }

    /// Pointer to the first element; T must match the dtype.
    template <element T>
    [[nodiscard]] T* data_ptr() const {
        detail::check(dtype_of_v<T> == type(), "data_ptr: tensor has dtype ", type(), " but ", dtype_of_v<T>,
                      " was requested");
        return static_cast<T*>(impl().data->data()) + impl().offset;
    }
    [[nodiscard]] void* raw_data() const {
        return static_cast<char*>(impl().data->data()) + impl().offset * static_cast<std::int64_t>(element_size());
    }

    /// The value of a one-element tensor, converted to T.
    template <class T = double>
    [[nodiscard]] T item() const;
    /// All elements in row-major order, converted to T.
    template <class T>
    [[nodiscard]] std::vector<T> to_vector() const;

    // Views: share storage and version counter with *this.
    [[nodiscard]] Tensor view(int_list sizes) const;
    [[nodiscard]] Tensor reshape(int_list sizes) const;
    /// Dimensions start_dim..end_dim merged into one (torch.flatten; graft/autograd/join_split.hpp).
    [[nodiscard]] Tensor flatten(std::int64_t start_dim = 0, std::int64_t end_dim = -1) const;
    /// Views of pieces along dim (torch.split, split_with_sizes, chunk, unbind).
    [[nodiscard]] std::vector<Tensor> split(std::int64_t split_size, std::int64_t dim = 0) const;
    [[nodiscard]] std::vector<Tensor> split(const int_list& split_sizes, std::int64_t dim = 0) const;
    [[nodiscard]] std::vector<Tensor> split_with_sizes(const int_list& split_sizes, std::int64_t dim = 0) const;
    [[nodiscard]] std::vector<Tensor> chunk(std::int64_t chunks, std::int64_t dim = 0) const;
    [[nodiscard]] std::vector<Tensor> unbind(std::int64_t dim = 0) const;
    [[nodiscard]] Tensor transpose(std::int64_t dim0, std::int64_t dim1) const;
    [[nodiscard]] Tensor t() const;
    [[nodiscard]] Tensor permute(const int_list& dims) const;
    [[nodiscard]] Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
    [[nodiscard]] Tensor slice(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step = 1) const;
    [[nodiscard]] Tensor select(std::int64_t dim, std::int64_t index) const;
    [[nodiscard]] Tensor operator[](std::int64_t index) const { return select(0, index); }
    [[nodiscard]] Tensor squeeze() const;
    [[nodiscard]] Tensor squeeze(std::int64_t dim) const;
    [[nodiscard]] Tensor unsqueeze(std::int64_t dim) const;
    [[nodiscard]] Tensor expand(const int_list& sizes) const;
    [[nodiscard]] Tensor broadcast_to(const int_list& sizes) const;
    [[nodiscard]] Tensor as_strided(int_list sizes, int_list strides, std::int64_t offset) const;

    // Sizes under capture (graft/core/symint.hpp, PyTorch's SymInt API): outside capture these
    // are size(), view(), ... Under capture, sizes computed from sym_size() are recorded as
    // expressions of the inputs' sizes, so the graph serves other sizes.
    [[nodiscard]] SymInt sym_size(std::int64_t dim) const {
        return SymInt::size_of(size(dim), detail::tl_op_observer != nullptr);
    }
    [[nodiscard]] sym_int_list sym_sizes() const {
        sym_int_list r;
        for (std::int64_t d = 0; d < dim(); ++d) r.push_back(sym_size(d));
        return r;
    }
    [[nodiscard]] Tensor view_symint(const sym_int_list& sizes) const;
    [[nodiscard]] Tensor reshape_symint(const sym_int_list& sizes) const;
    [[nodiscard]] Tensor expand_symint(const sym_int_list& sizes) const;
    [[nodiscard]] Tensor narrow_symint(std::int64_t dim, const SymInt& start, const SymInt& length) const;

    // Copies.
    [[nodiscard]] Tensor contiguous() const;
    [[nodiscard]] Tensor clone() const;
    [[nodiscard]] Tensor to(dtype type) const;

    // In-place: bump the version counter.
    Tensor& copy_(const Tensor& src);
    Tensor& fill_(const scalar& value);
    Tensor& zero_() { return fill_(0); }
    Tensor& add_(const Tensor& other);
    Tensor& add_(const scalar& other);
    Tensor& sub_(const Tensor& other);
    Tensor& sub_(const scalar& other);
    Tensor& mul_(const Tensor& other);
    Tensor& mul_(const scalar& other);
    Tensor& div_(const Tensor& other);
    Tensor& div_(const scalar& other);
    Tensor& neg_();
    Tensor& exp_();
    Tensor& tanh_();
    Tensor& sigmoid_();
    Tensor& relu_();
    Tensor& sin_();
    /// In-place clamp / clamp_min / clamp_max / square (the result must keep this dtype).
    Tensor& clamp_(const std::optional<scalar>& min, const std::optional<scalar>& max = {});
    Tensor& clamp_min_(const scalar& min);
    Tensor& clamp_max_(const scalar& max);
    Tensor& square_();
    /// In-place tril / triu / masked_fill (graft/autograd/index_reduce.hpp).
    Tensor& tril_(std::int64_t diagonal = 0);
    Tensor& triu_(std::int64_t diagonal = 0);
    Tensor& masked_fill_(const Tensor& mask, const scalar& value);
    /// In-place scatter_add (graft/autograd/index_reduce.hpp): src added at index along dim.
    Tensor& scatter_add_(std::int64_t dim, const Tensor& index, const Tensor& src);

    // Autograd (defined in graft/autograd; include graft/graft.hpp).
    [[nodiscard]] bool requires_grad() const;
    /// Marks a leaf as requiring gradients (PyTorch's requires_grad_).
    Tensor& requires_grad_(bool enabled = true);
    [[nodiscard]] bool is_leaf() const;
    /// The accumulated gradient of a leaf (or of a tensor that retains its grad); undefined if none.
    [[nodiscard]] Tensor grad() const;
    /// Replaces (or with an undefined tensor, clears) the stored gradient.
    void set_grad(const Tensor& grad) const;
    [[nodiscard]] std::shared_ptr<autograd::Node> grad_fn() const;
    /// Which output of grad_fn this tensor is.
    [[nodiscard]] std::uint32_t output_nr() const;
    /// A tensor sharing storage and version counter but outside the graph.
    [[nodiscard]] Tensor detach() const;
    void retain_grad() const;
    [[nodiscard]] bool retains_grad() const;
    /// Runs the backward pass from this tensor (see autograd::backward).
    void backward(const Tensor& gradient = Tensor{}, bool retain_graph = false, bool create_graph = false,
                  const std::vector<Tensor>& inputs = {}) const;
    /// Calls `hook(grad)` when the gradient of this tensor is computed; a defined
    /// return value replaces the gradient.
    autograd::hook_handle register_hook(std::function<Tensor(const Tensor&)> hook) const;
    /// A hook that returns nothing only observes the gradient (PyTorch's hook returning None).
    template <class F>
        requires(std::is_invocable_v<F&, const Tensor&> && std::is_void_v<std::invoke_result_t<F&, const Tensor&>>)
    autograd::hook_handle register_hook(F hook) const;  // defined in graft/autograd/tensor_methods.hpp
    /// On a leaf: calls `hook(tensor)` after its .grad was accumulated. The hook gets the tensor
    /// itself (`p.sub_(...)` updates the parameter, as an optimizer step in the hook does) and
    /// returns nothing: a hook that returns a value does not compile (it would be ignored).
    template <class F>
        requires std::is_invocable_v<F&, Tensor&>
    autograd::hook_handle register_post_accumulate_grad_hook(F hook) const;  // see register_hook
    /// register_post_accumulate_grad_hook's non-template part.
    autograd::hook_handle register_post_accumulate_grad_hook_erased(std::function<void(const Tensor&)> hook) const;

    // Math methods, defined with the differentiable ops (include graft/graft.hpp).
    [[nodiscard]] Tensor sum() const;
    [[nodiscard]] Tensor sum(const int_list& dims, bool keepdim = false) const;
    [[nodiscard]] Tensor mean() const;
    [[nodiscard]] Tensor mean(const int_list& dims, bool keepdim = false) const;
    [[nodiscard]] Tensor amax(const int_list& dims = {}, bool keepdim = false) const;
    [[nodiscard]] Tensor amin(const int_list& dims = {}, bool keepdim = false) const;
    [[nodiscard]] Tensor exp() const;
    [[nodiscard]] Tensor log() const;
    [[nodiscard]] Tensor sqrt() const;
    [[nodiscard]] Tensor tanh() const;
    [[nodiscard]] Tensor sigmoid() const;
    [[nodiscard]] Tensor relu() const;
    [[nodiscard]] Tensor abs() const;
    [[nodiscard]] Tensor neg() const;
    [[nodiscard]] Tensor rsqrt() const;
    [[nodiscard]] Tensor sin() const;
    [[nodiscard]] Tensor cos() const;
    [[nodiscard]] Tensor log1p() const;
    [[nodiscard]] Tensor expm1() const;
    [[nodiscard]] Tensor sign() const;
    [[nodiscard]] Tensor square() const;
    [[nodiscard]] Tensor clamp(const std::optional<scalar>& min, const std::optional<scalar>& max = {}) const;
    [[nodiscard]] Tensor clamp(const Tensor& min, const Tensor& max) const;
    [[nodiscard]] Tensor clamp_min(const scalar& min) const;
    [[nodiscard]] Tensor clamp_max(const scalar& max) const;
    /// tril, triu, masked_fill, outer (graft/autograd/index_reduce.hpp).
    [[nodiscard]] Tensor tril(std::int64_t diagonal = 0) const;
    [[nodiscard]] Tensor triu(std::int64_t diagonal = 0) const;
    [[nodiscard]] Tensor masked_fill(const Tensor& mask, const scalar& value) const;
    [[nodiscard]] Tensor outer(const Tensor& other) const;
    /// argmax, argmin, max / min over a dim ((values, indices)), logsumexp, var, std,
    /// gather, scatter_add, index_select (graft/autograd/index_reduce.hpp).
    [[nodiscard]] Tensor argmax(std::optional<std::int64_t> dim = std::nullopt, bool keepdim = false) const;
    [[nodiscard]] Tensor argmin(std::optional<std::int64_t> dim = std::nullopt, bool keepdim = false) const;
    [[nodiscard]] std::tuple<Tensor, Tensor> max(std::int64_t dim, bool keepdim = false) const;
    [[nodiscard]] std::tuple<Tensor, Tensor> min(std::int64_t dim, bool keepdim = false) const;
    /// The largest / smallest element as a 0-dim tensor (torch's x.max() / x.min()): amax() / amin().
    [[nodiscard]] Tensor max() const;
    [[nodiscard]] Tensor min() const;
    [[nodiscard]] Tensor logsumexp(const int_list& dims, bool keepdim = false) const;
    [[nodiscard]] Tensor var(const int_list& dims = {}, double correction = 1.0, bool keepdim = false) const;
    [[nodiscard]] Tensor std(const int_list& dims = {}, double correction = 1.0, bool keepdim = false) const;
    [[nodiscard]] Tensor gather(std::int64_t dim, const Tensor& index) const;
    [[nodiscard]] Tensor scatter_add(std::int64_t dim, const Tensor& index, const Tensor& src) const;
    [[nodiscard]] Tensor index_select(std::int64_t dim, const Tensor& index) const;
    /// Advanced indexing with int64 index tensors on the leading dimensions: (*this)[index]
    /// is index(*this, {index}); index_put / index_put_ write (or add) values there
    /// (graft/autograd/advanced_index.hpp).
    [[nodiscard]] Tensor operator[](const Tensor& index) const;
    [[nodiscard]] Tensor index(const std::vector<Tensor>& indices) const;
    [[nodiscard]] Tensor index_put(const std::vector<Tensor>& indices, const Tensor& values,
                                   bool accumulate = false) const;
    Tensor& index_put_(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false);
    /// PyTorch's full indexing, as libtorch spells it (graft/autograd/indexing.hpp):
    /// t.index({Slice(), 0, None, Ellipsis, idx, mask}) is t[:, 0, None, ..., idx, mask], and
    /// t.index_put_({...}, v) is t[...] = v.
    [[nodiscard]] Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
    [[nodiscard]] Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
    Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values,
                       bool accumulate = false);
    Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const scalar& value);
    Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                       bool accumulate = false);
    [[nodiscard]] Tensor pow(const Tensor& exponent) const;
    [[nodiscard]] Tensor pow(const scalar& exponent) const;
    /// self + alpha * other (torch.add's alpha), and the other arithmetic as methods.
    [[nodiscard]] Tensor add(const Tensor& other, const scalar& alpha = 1) const;
    [[nodiscard]] Tensor add(const scalar& other, const scalar& alpha = 1) const;
    [[nodiscard]] Tensor sub(const Tensor& other, const scalar& alpha = 1) const;
    [[nodiscard]] Tensor sub(const scalar& other, const scalar& alpha = 1) const;
    [[nodiscard]] Tensor mul(const Tensor& other) const;
    [[nodiscard]] Tensor mul(const scalar& other) const;
    [[nodiscard]] Tensor div(const Tensor& other) const;
    [[nodiscard]] Tensor div(const scalar& other) const;
    [[nodiscard]] Tensor maximum(const Tensor& other) const;
    [[nodiscard]] Tensor minimum(const Tensor& other) const;
    [[nodiscard]] Tensor eq(const Tensor& other) const;
    [[nodiscard]] Tensor eq(const scalar& other) const;
    [[nodiscard]] Tensor ne(const Tensor& other) const;
    [[nodiscard]] Tensor ne(const scalar& other) const;
    [[nodiscard]] Tensor lt(const Tensor& other) const;
    [[nodiscard]] Tensor lt(const scalar& other) const;
    [[nodiscard]] Tensor le(const Tensor& other) const;
    [[nodiscard]] Tensor le(const scalar& other) const;
    [[nodiscard]] Tensor gt(const Tensor& other) const;
    [[nodiscard]] Tensor gt(const scalar& other) const;
    [[nodiscard]] Tensor ge(const Tensor& other) const;
    [[nodiscard]] Tensor ge(const scalar& other) const;
    /// In place, as add_/sub_/mul_/div_ (the tensor must be able to hold the result's dtype).
    Tensor& operator+=(const Tensor& other) { return add_(other); }
    Tensor& operator+=(const scalar& other) { return add_(other); }
    Tensor& operator-=(const Tensor& other) { return sub_(other); }
    Tensor& operator-=(const scalar& other) { return sub_(other); }
    Tensor& operator*=(const Tensor& other) { return mul_(other); }
    Tensor& operator*=(const scalar& other) { return mul_(other); }
    Tensor& operator/=(const Tensor& other) { return div_(other); }
    Tensor& operator/=(const scalar& other) { return div_(other); }
    [[nodiscard]] Tensor matmul(const Tensor& other) const;
    [[nodiscard]] Tensor softmax(std::int64_t dim) const;
    [[nodiscard]] Tensor log_softmax(std::int64_t dim) const;

    [[nodiscard]] const detail::tensor_impl& impl() const {
        if (impl_ == nullptr) [[unlikely]]
            detail::fail("graft: operation on an undefined tensor");
        return *impl_;
    }
    [[nodiscard]] const std::shared_ptr<detail::tensor_impl>& impl_ptr() const noexcept { return impl_; }

private:
    [[nodiscard]] std::int64_t dim_checked() const { return dim(); }

    std::shared_ptr<detail::tensor_impl> impl_;
};

/// A new tensor with uninitialized contents.
[[nodiscard]] GRAFT_INLINE Tensor empty(const int_list& sizes, dtype type = default_float_dtype);

namespace detail {

/// empty(t.sizes(), t.type()) for a defined tensor: its element count is known to be
/// addressable, so the size checks are skipped (the elementwise ops' output).
[[nodiscard]] GRAFT_INLINE Tensor empty_same_shape(const Tensor& t);
/// A contiguous tensor of `nbytes`, already checked to be sizes' element count times the
/// element size (callers that know their sizes are valid skip empty()'s checks).
[[nodiscard]] GRAFT_INLINE Tensor empty_of_bytes(const int_list& sizes, dtype type, std::size_t nbytes);

/// Byte strides of `t`, for for_each_row.
[[nodiscard]] GRAFT_INLINE int_list byte_strides(const Tensor& t);

template <class T>
inline constexpr bool is_half_type_v = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

/// One element converted as PyTorch converts it: float16/bfloat16 through float32 (a float64
/// is rounded to float32 first, then to 16 bits), floating to int32 truncated with
/// INT32_MIN for NaN and out-of-range values (x86's result), int64 to int32 wrapping.
template <class To, class From>
[[nodiscard]] constexpr To convert_element(From v) noexcept {
    if constexpr (std::is_same_v<To, From>) return v;
    else if constexpr (is_half_type_v<From>) return convert_element<To>(static_cast<float>(v));
    else if constexpr (is_half_type_v<To>) return To(static_cast<float>(v));
    else if constexpr (std::is_same_v<To, bool>) return v != From{};
    else if constexpr (std::is_same_v<To, std::int32_t> && std::is_floating_point_v<From>) {
        const double d = static_cast<double>(v);
        return d > -2147483649.0 && d < 2147483648.0 ? static_cast<std::int32_t>(d)
                                                      : std::int32_t{-2147483647 - 1};
    } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>)
        return static_cast<To>(float_to_int64(static_cast<double>(v)));  // NaN, inf: defined (scalar.hpp)
    else return static_cast<To>(v);
}

/// A C++ number as an element of type T: the compute types as scalar::to, the storage types
/// converted from the number's own kind (convert_element).
template <class T>
[[nodiscard]] constexpr T scalar_to_element(const scalar& s) noexcept {
    if constexpr (is_half_type_v<T> || std::is_same_v<T, std::int32_t>) {
        if (s.kind() == dtype::float64) return convert_element<T>(s.to_double());
        if (s.kind() == dtype::bool_) return convert_element<T>(s.to_int64() != 0);
        return convert_element<T>(s.to_int64());
    } else {
        return s.to<T>();
    }
}

/// dst[i] = convert(src[i]) elementwise; src is broadcast to dst's shape already.
GRAFT_INLINE void copy_elements(const Tensor& dst, const Tensor& src);

/// PyTorch's stride computation for `view`: the new strides, or empty when the
/// view would need a copy (a new dimension spans two non-contiguous chunks).
[[nodiscard]] GRAFT_INLINE bool compute_view_strides(const int_list& old_sizes, const int_list& old_strides,
                                                     const int_list& new_sizes, int_list& new_strides);

/// Resolves one -1 in `sizes` against `numel`, checking the product matches.
[[nodiscard]] GRAFT_INLINE int_list infer_size(const char* op, int_list sizes, std::int64_t numel,
                                             const int_list& from);

}  // namespace detail

namespace detail::raw {

// The view and copy operations without autograd: ops use these internally; the
// public Tensor methods (defined with autograd) call them and record the graph.

[[nodiscard]] GRAFT_INLINE Tensor contiguous(const Tensor& self);
[[nodiscard]] GRAFT_INLINE Tensor clone(const Tensor& self);
[[nodiscard]] GRAFT_INLINE Tensor view(const Tensor& self, int_list new_sizes);
[[nodiscard]] GRAFT_INLINE Tensor expand(const Tensor& self, const int_list& target);
[[nodiscard]] GRAFT_INLINE Tensor transpose(const Tensor& self, std::int64_t dim0, std::int64_t dim1);
[[nodiscard]] GRAFT_INLINE Tensor broadcast_to(const Tensor& self, const int_list& target);

/// A new tensor object viewing `base`'s storage and sharing its version counter.
[[nodiscard]] GRAFT_INLINE Tensor view_of(const Tensor& base, int_list sizes, int_list strides, std::int64_t offset);

[[nodiscard]] GRAFT_INLINE Tensor alias(const Tensor& self);
GRAFT_INLINE Tensor reshape(const Tensor& self, int_list new_sizes);
GRAFT_INLINE Tensor t(const Tensor& self);
GRAFT_INLINE Tensor permute(const Tensor& self, const int_list& dims);
GRAFT_INLINE Tensor narrow(const Tensor& self, std::int64_t d, std::int64_t start, std::int64_t length);
GRAFT_INLINE Tensor slice(const Tensor& self, std::int64_t d, std::int64_t start, std::int64_t end, std::int64_t step);
/// narrow's backward: zeros of `sizes` with grad written at narrow(d, start, length) (PyTorch's
/// slice_backward). One op, so that capture records its sizes as attributes, not positions.
GRAFT_INLINE Tensor narrow_backward(const Tensor& grad, const int_list& sizes, std::int64_t d, std::int64_t start,
                                    std::int64_t length);
GRAFT_INLINE Tensor select(const Tensor& self, std::int64_t d, std::int64_t index);
GRAFT_INLINE Tensor squeeze(const Tensor& self);
GRAFT_INLINE Tensor squeeze(const Tensor& self, std::int64_t d);
GRAFT_INLINE Tensor unsqueeze(const Tensor& self, std::int64_t d);
GRAFT_INLINE Tensor as_strided(const Tensor& self, int_list sz, int_list st, std::int64_t offset);
GRAFT_INLINE Tensor to(const Tensor& self, dtype target);
GRAFT_INLINE Tensor copy_(const Tensor& self, const Tensor& src);
GRAFT_INLINE Tensor fill_(const Tensor& self, const scalar& value);

}  // namespace detail::raw

template <class T>
inline std::vector<T> Tensor::to_vector() const {
    std::vector<T> out;
    detail::check_allocation(detail::checked_bytes("to_vector", numel(), sizeof(T)), "to_vector");
    try {
        out.reserve(static_cast<std::size_t>(numel()));
    } catch (const std::exception&) {  // bad_alloc, length_error: a huge (expanded) view
        detail::fail(detail::concat("to_vector: out of memory for ", numel(), " elements (sizes ", sizes(), ")"));
    }
    const int_list s = detail::byte_strides(*this);
    detail::visit_storage_dtype(type(), [&](auto z) {
        using S = decltype(z);
        detail::for_each_row<1>(sizes(), {&s}, {static_cast<char*>(raw_data())},
                                [&](std::array<char*, 1> p, std::array<std::int64_t, 1> st, std::int64_t n) {
                                    for (std::int64_t i = 0; i < n; ++i) {
                                        S v;
                                        std::memcpy(&v, p[0] + i * st[0], sizeof(S));
                                        out.push_back(detail::convert_element<T>(v));
                                    }
                                });
    });
    return out;
}

template <class T>
inline T Tensor::item() const {
    detail::observe_read("item", *this);
    detail::check(numel() == 1, "item: a Tensor with ", numel(), " elements cannot be converted to Scalar");
    return to_vector<T>().front();
}

}  // namespace graft

#if GRAFT_HAS_CODE
#include "graft/core/impl/tensor.ipp"
#endif
