#pragma once
// Definitions for graft/ir/type.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ir/type.hpp"

#include <ostream>
#include <sstream>

namespace graft::ir {

GRAFT_INLINE TensorType TensorType::of(const Tensor& t) {
    TensorType r;
    r.scalar_type = t.type();
    r.sizes.emplace();
    for (auto s : t.sizes()) r.sizes->push_back(s);
    r.strides.emplace(t.strides().begin(), t.strides().end());
    r.requires_grad = t.requires_grad();
    return r;
}

GRAFT_INLINE bool TensorType::complete() const {
    if (!scalar_type || !sizes || !strides || !requires_grad) return false;
    for (const auto& s : *sizes)
        if (!s) return false;
    return true;
}

GRAFT_INLINE bool TensorType::matches(const Tensor& t) const {
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

namespace detail {

GRAFT_INLINE const char* dtype_type_name(dtype t) {
    switch (t) {
        case dtype::float32: return "Float";
        case dtype::float64: return "Double";
        case dtype::int64: return "Long";
        case dtype::bool_: return "Bool";
        case dtype::int32: return "Int";
        case dtype::float16: return "Half";
        case dtype::bfloat16: return "BFloat16";
    }
    return "?";
}

GRAFT_INLINE std::optional<dtype> dtype_from_type_name(std::string_view s) {
    if (s == "Float") return dtype::float32;
    if (s == "Double") return dtype::float64;
    if (s == "Long") return dtype::int64;
    if (s == "Bool") return dtype::bool_;
    if (s == "Int") return dtype::int32;
    if (s == "Half") return dtype::float16;
    if (s == "BFloat16") return dtype::bfloat16;
    return std::nullopt;
}

}  // namespace detail

GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const Type& t) {
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

GRAFT_INLINE std::string to_string(const Type& t) {
    std::ostringstream os;
    os << t;
    return os.str();
}

}  // namespace graft::ir
