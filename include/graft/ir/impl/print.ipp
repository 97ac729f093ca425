#pragma once
// Definitions for graft/ir/print.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ir/print.hpp"

#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <ostream>
#include <sstream>

namespace graft::ir {
namespace detail {

GRAFT_INLINE void print_float(std::ostream& os, double v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    std::string s(buf, r.ptr);
    if (s.find_first_of(".eni") == std::string::npos) s += '.';
    os << s;
}

GRAFT_INLINE void print_float32(std::ostream& os, float v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    std::string s(buf, r.ptr);
    if (s.find_first_of(".eni") == std::string::npos) s += '.';
    os << s;
}

GRAFT_INLINE void print_string(std::ostream& os, const std::string& s) {
    os << '"';
    for (char c : s) {
        if (c == '"' || c == '\\') os << '\\' << c;
        else if (c == '\n') os << "\\n";
        else os << c;
    }
    os << '"';
}

GRAFT_INLINE void print_attribute(std::ostream& os, const attribute& a) {
    std::visit(
        [&](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::int64_t>) os << v;
            else if constexpr (std::is_same_v<V, double>) print_float(os, v);
            else if constexpr (std::is_same_v<V, bool>) os << (v ? "true" : "false");
            else if constexpr (std::is_same_v<V, std::string>) print_string(os, v);
            else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) {
                os << '[';
                for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
                os << ']';
            } else if constexpr (std::is_same_v<V, std::vector<double>>) {
                os << '[';
                for (std::size_t i = 0; i < v.size(); ++i) {
                    if (i) os << ", ";
                    print_float(os, v[i]);
                }
                os << ']';
            } else {
                // tensor(<type>, [values in row-major order])
                const Tensor t = v.contiguous();
                // print_options::max_tensor_elements (+1 in the slot; 0: all).
                const long limit = os.iword(tensor_elements_slot()) - 1;
                const bool cut = limit >= 0 && t.numel() > limit;
                const std::int64_t head = cut ? (limit + 1) / 2 : t.numel(), tail = cut ? limit / 2 : 0;
                TensorType tt;
                tt.scalar_type = t.type();
                tt.sizes.emplace();
                for (auto s : t.sizes()) tt.sizes->push_back(s);
                os << "tensor(" << Type::tensor_type(tt) << ", [";
                // Storage dtypes print their values in the compute dtype (exact: float16 and
                // bfloat16 values are float32 values, int32 values int64 ones).
                const Tensor values = is_storage_dtype(t.type()) ? t.to(compute_dtype(t.type())) : t;
                graft::detail::visit_dtype(values.type(), [&](auto z) {
                    using T = decltype(z);
                    const T* p = values.data_ptr<T>();
                    for (std::int64_t i = 0; i < t.numel(); ++i) {
                        if (cut && i == head) {
                            os << (i ? ", ..." : "...");
                            i = t.numel() - tail;
                            if (i == t.numel()) break;
                        }
                        if (i) os << ", ";
                        if constexpr (std::is_same_v<T, float>) print_float32(os, p[i]);
                        else if constexpr (std::is_same_v<T, double>) print_float(os, p[i]);
                        else if constexpr (std::is_same_v<T, bool>) os << (p[i] ? "true" : "false");
                        else os << p[i];
                    }
                });
                os << "])";
            }
        },
        a);
}

GRAFT_INLINE void print_value(std::ostream& os, const Value* v) { os << '%' << v->name(); }

GRAFT_INLINE void print_values(std::ostream& os, const std::vector<Value*>& vs, bool typed) {
    for (std::size_t i = 0; i < vs.size(); ++i) {
        if (i) os << ", ";
        print_value(os, vs[i]);
        if (typed) os << " : " << vs[i]->type();
    }
}

GRAFT_INLINE void print_node(std::ostream& os, const Node& n, int indent) {
    os << std::string(static_cast<std::size_t>(indent), ' ');
    if (!n.outputs().empty()) {
        print_values(os, n.outputs(), true);
        os << " = ";
    }
    os << n.kind().name;
    if (!n.attributes().empty()) {
        os << '[';
        bool first = true;
        for (const auto& [name, value] : n.attributes()) {
            if (!first) os << ", ";
            first = false;
            os << name << '=';
            print_attribute(os, value);
        }
        os << ']';
    }
    os << '(';
    print_values(os, n.inputs(), false);
    os << ")\n";
    for (std::size_t i = 0; i < n.blocks().size(); ++i) {
        os << std::string(static_cast<std::size_t>(indent) + 2, ' ') << "block" << i << '(';
        print_values(os, n.blocks()[i]->inputs(), true);
        os << "):\n";
        print_block(os, *n.blocks()[i], indent + 4);
        os << std::string(static_cast<std::size_t>(indent) + 4, ' ') << "-> (";
        print_values(os, n.blocks()[i]->outputs(), false);
        os << ")\n";
    }
}

GRAFT_INLINE void print_block(std::ostream& os, const Block& b, int indent) {
    for (const Node* n : b.nodes()) print_node(os, *n, indent);
}

GRAFT_INLINE int tensor_elements_slot() {
    static const int slot = std::ios_base::xalloc();
    return slot;
}

}  // namespace detail

GRAFT_INLINE std::ostream& operator<<(std::ostream& os, const Graph& g) {
    os << "graph(";
    detail::print_values(os, g.inputs(), true);
    os << "):\n";
    detail::print_block(os, *g.block(), 2);
    os << "  return (";
    detail::print_values(os, g.outputs(), false);
    return os << ")\n";
}

GRAFT_INLINE std::string to_string(const Graph& g) {
    std::ostringstream os;
    os << g;
    return os.str();
}

GRAFT_INLINE std::string to_string(const Graph& g, const print_options& options) {
    std::ostringstream os;
    if (options.max_tensor_elements >= 0) os.iword(detail::tensor_elements_slot()) = static_cast<long>(options.max_tensor_elements) + 1;
    os << g;
    return os.str();
}

GRAFT_INLINE void to_dot(const Graph& g, std::ostream& os) {
    const auto quote = [](const std::string& s) {
        std::string r;
        for (char c : s) {
            if (c == '"' || c == '\\') r += '\\';
            r += c;
        }
        return r;
    };
    std::map<const Node*, std::size_t> ids;
    std::size_t next = 0;
    os << "digraph graft_ir {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n";
    for (const Value* v : g.inputs())
        os << "  \"in_" << quote(v->name()) << "\" [shape=ellipse, label=\"%" << quote(v->name()) << "\\n"
           << quote(to_string(v->type())) << "\"];\n";
    const auto source = [&](const Value* v) {
        std::string r = v->node() ? "n" : (v->param_of() == g.block() ? "in_" : "param_");
        r += v->node() ? std::to_string(ids.at(v->node())) : v->name();
        return r;
    };
    std::function<void(const Block&, const std::string&)> emit_block = [&](const Block& b, const std::string& pad) {
        for (const Value* v : b.inputs())
            if (&b != g.block())
                os << pad << "\"param_" << quote(v->name()) << "\" [shape=ellipse, label=\"%" << quote(v->name())
                   << "\"];\n";
        for (const Node* n : b.nodes()) {
            const std::size_t id = ids[n] = next++;
            std::string label = quote(std::string(n->kind().name));
            for (const auto& [name, value] : n->attributes()) {
                std::ostringstream text;
                text << name << '=';
                detail::print_attribute(text, value);
                label += "\\n";
                label += quote(text.str());
            }
            os << pad << "n" << id << " [label=\"" << label << "\"];\n";
            for (const Value* in : n->inputs())
                os << pad << '"' << quote(source(in)) << "\" -> n" << id << " [label=\"%" << quote(in->name()) << "\"];\n";
            for (std::size_t k = 0; k < n->blocks().size(); ++k) {
                os << pad << "subgraph cluster_n" << id << "_" << k << " {\n" << pad << "  label=\"block" << k
                   << "\";\n";
                emit_block(*n->blocks()[k], pad + "  ");
                os << pad << "}\n";
            }
        }
    };
    emit_block(*g.block(), "  ");
    for (std::size_t i = 0; i < g.outputs().size(); ++i) {
        const Value* v = g.outputs()[i];
        os << "  out" << i << " [shape=ellipse, label=\"return " << i << "\\n" << quote(to_string(v->type()))
           << "\"];\n  \"" << quote(source(v)) << "\" -> out" << i << " [label=\"%" << quote(v->name()) << "\"];\n";
    }
    os << "}\n";
}

}  // namespace graft::ir
