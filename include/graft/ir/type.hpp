#pragma once
// Types of IR values: a tensor type whose parts (dtype, sizes, strides,
// requires_grad) are each known or unknown, or a number type (int, float, bool)
// for scalar inputs and If conditions. The profiling executor refines unknown
// parts from what it observes; a size can be symbolic (unknown) while the rank
// is known.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graft/core/dtype.hpp"
#include "graft/core/error.hpp"
#include "graft/core/tensor.hpp"

namespace graft::ir {

/// What is known about a tensor value.
struct TensorType {
    std::optional<dtype> scalar_type;
    /// Engaged when the rank is known; each size may still be unknown (symbolic).
    std::optional<std::vector<std::optional<std::int64_t>>> sizes;
    std::optional<std::vector<std::int64_t>> strides;
    std::optional<bool> requires_grad;

    /// Nothing known: PyTorch's plain `Tensor`.
    [[nodiscard]] static TensorType unknown() { return {}; }
    /// Everything known, from a concrete tensor.
    [[nodiscard]] static TensorType of(const Tensor& t);
    [[nodiscard]] std::optional<std::size_t> rank() const {
        return sizes ? std::optional<std::size_t>(sizes->size()) : std::nullopt;
    }
    /// Every part known, no symbolic size.
    [[nodiscard]] bool complete() const;
    /// Does tensor t have this type (unknown parts match anything)?
    [[nodiscard]] bool matches(const Tensor& t) const;
    friend bool operator==(const TensorType&, const TensorType&) = default;
};

/// The category of an IR value.
enum class type_kind { tensor, int_, float_, bool_ };

/// An IR value's type.
struct Type {
    type_kind kind = type_kind::tensor;
    TensorType tensor;  // meaningful when kind == tensor

    [[nodiscard]] static Type tensor_type(TensorType t = {}) { return {type_kind::tensor, std::move(t)}; }
    [[nodiscard]] static Type int_type() { return {type_kind::int_, {}}; }
    [[nodiscard]] static Type float_type() { return {type_kind::float_, {}}; }
    [[nodiscard]] static Type bool_type() { return {type_kind::bool_, {}}; }
    [[nodiscard]] bool is_tensor() const { return kind == type_kind::tensor; }
    friend bool operator==(const Type&, const Type&) = default;
};

namespace detail {

/// PyTorch's names of tensor dtypes in graph types.
[[nodiscard]] GRAFT_INLINE const char* dtype_type_name(dtype t);

[[nodiscard]] GRAFT_INLINE std::optional<dtype> dtype_from_type_name(std::string_view s);

}  // namespace detail

/// Text form: `Tensor`, `Float`, `Float(4, *)`, `Tensor(4, 8)`,
/// `Float(4, 8, strides=[8, 1], requires_grad=0)`; `int`, `float`, `bool`.
GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const Type& t);

[[nodiscard]] GRAFT_INLINE std::string to_string(const Type& t);

}  // namespace graft::ir

#if GRAFT_HAS_GRAPH_CODE
#include "graft/ir/impl/type.ipp"
#endif
