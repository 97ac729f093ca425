#pragma once
// Types of IR values: a tensor type whose parts (dtype, sizes, strides,
// requires_grad) are each known or unknown, or a number type (int, float, bool)
// for scalar inputs and If conditions. The profiling executor refines unknown
// parts from what it observes; a size can be symbolic (unknown) while the rank
// is known.
#include <cstdint>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
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
    [[nodiscard]] static TensorType of(const Tensor& t) {
        TensorType r;
        r.scalar_type = t.type();
        r.sizes.emplace();
        for (auto s : t.sizes()) r.sizes->push_back(s);
        r.strides.emplace(t.strides().begin(), t.strides().end());
        r.requires_grad = t.requires_grad();
        return r;
    }
    [[nodiscard]] std::optional<std::size_t> rank() const {
        return sizes ? std::optional<std::size_t>(sizes->size()) : std::nullopt;
    }
    /// Every part known, no symbolic size.
    [[nodiscard]] bool complete() const {
        if (!scalar_type || !sizes || !strides || !requires_grad) return false;
        for (const auto& s : *sizes)
            if (!s) return false;
        return true;
    }
    /// Does tensor t have this type (unknown parts match anything)?
    [[nodiscard]] bool matches(const Tensor& t) const {
        if (scalar_type && *scalar_type != t.type()) return false;
        if (sizes) {
            if (sizes->size() != t.sizes().size()) return false;
            for (std::size_t i = 0; i < sizes->size(); ++i)
                if ((*sizes)[i] && *(*sizes)[i] != t.sizes()[i]) return false;
        }
        if (strides) {
            if (strides->size() != t.strides().size()) return false;
            for (std::size_t i = 0; i < strides->size(); ++i)
                if ((*strides)[i] != t.strides()[i]) return false;
        }
        if (requires_grad && *requires_grad != t.requires_grad()) return false;
        return true;
    }
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
[[nodiscard]] inline const char* dtype_type_name(dtype t) {
    switch (t) {
        case dtype::float32: return "Float";
        case dtype::float64: return "Double";
        case dtype::int64: return "Long";
        case dtype::bool_: return "Bool";
    }
    return "?";
}

[[nodiscard]] inline std::optional<dtype> dtype_from_type_name(std::string_view s) {
    if (s == "Float") return dtype::float32;
    if (s == "Double") return dtype::float64;
    if (s == "Long") return dtype::int64;
    if (s == "Bool") return dtype::bool_;
    return std::nullopt;
}

}  // namespace detail

/// Text form: `Tensor`, `Float`, `Float(4, *)`, `Tensor(4, 8)`,
/// `Float(4, 8, strides=[8, 1], requires_grad=0)`; `int`, `float`, `bool`.
inline std::ostream& operator<<(std::ostream& os, const Type& t) {
    switch (t.kind) {
        case type_kind::int_: return os << "int";
        case type_kind::float_: return os << "float";
        case type_kind::bool_: return os << "bool";
        case type_kind::tensor: break;
    }
    const TensorType& tt = t.tensor;
    os << (tt.scalar_type ? detail::dtype_type_name(*tt.scalar_type) : "Tensor");
    if (!tt.sizes && !tt.strides && !tt.requires_grad) return os;
    os << '(';
    bool first = true;
    const auto sep = [&] {
        if (!first) os << ", ";
        first = false;
    };
    if (tt.sizes) {
        for (const auto& s : *tt.sizes) {
            sep();
            if (s) os << *s;
            else os << '*';
        }
    } else {
        sep();
        os << "...";
    }
    if (tt.strides) {
        sep();
        os << "strides=[";
        for (std::size_t i = 0; i < tt.strides->size(); ++i) os << (i ? ", " : "") << (*tt.strides)[i];
        os << ']';
    }
    if (tt.requires_grad) {
        sep();
        os << "requires_grad=" << (*tt.requires_grad ? 1 : 0);
    }
    return os << ')';
}

[[nodiscard]] inline std::string to_string(const Type& t) {
    std::ostringstream os;
    os << t;
    return os.str();
}

}  // namespace graft::ir
