#pragma once
// Definitions for graft/ir/passes.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ir/passes.hpp"

#include <algorithm>

namespace graft::ir {

namespace detail {

GRAFT_INLINE void collect_blocks(Block* b, std::vector<Block*>& out) {
    out.push_back(b);
    for (Node* n : b->nodes())
        for (Block* inner : n->blocks()) collect_blocks(inner, out);
}

GRAFT_INLINE bool is_pure_tree(const Node* n) {
    if (!n->kind().pure) return false;
    for (const Block* b : n->blocks())
        for (const Node* inner : b->nodes())
            if (!is_pure_tree(inner)) return false;
    return true;
}

GRAFT_INLINE bool attributes_equal(const attribute& a, const attribute& b) {
    if (a.index() != b.index()) return false;
    if (const auto* ta = std::get_if<Tensor>(&a)) {
        const Tensor& tb = std::get<Tensor>(b);
        if (ta->impl_ptr() == tb.impl_ptr()) return true;
        if (ta->type() != tb.type() || ta->sizes() != tb.sizes()) return false;
        // Bitwise equality: -0.0 and 0.0 (or two NaNs) are different constants.
        const Tensor ca = ta->contiguous(), cb = tb.contiguous();
        return std::memcmp(ca.raw_data(), cb.raw_data(),
                           static_cast<std::size_t>(ca.numel()) * element_size(ca.type())) == 0;
    }
    if (const auto* da = std::get_if<double>(&a)) {
        const double db = std::get<double>(b);
        return std::memcmp(da, &db, sizeof db) == 0;
    }
    if (const auto* va = std::get_if<std::vector<double>>(&a)) {
        const auto& vb = std::get<std::vector<double>>(b);
        return va->size() == vb.size() && std::memcmp(va->data(), vb.data(), va->size() * sizeof(double)) == 0;
    }
    if (const auto* ia = std::get_if<std::int64_t>(&a)) return *ia == std::get<std::int64_t>(b);
    if (const auto* ba = std::get_if<bool>(&a)) return *ba == std::get<bool>(b);
    if (const auto* sa = std::get_if<std::string>(&a)) return *sa == std::get<std::string>(b);
    return std::get<std::vector<std::int64_t>>(a) == std::get<std::vector<std::int64_t>>(b);
}

GRAFT_INLINE bool same_computation(const Node* a, const Node* b) {
    if (&a->kind() != &b->kind() || a->inputs() != b->inputs() || a->outputs().size() != b->outputs().size())
        return false;
    if (a->attributes().size() != b->attributes().size()) return false;
    auto ia = a->attributes().begin();
    for (auto ib = b->attributes().begin(); ib != b->attributes().end(); ++ia, ++ib)
        if (ia->first != ib->first || !attributes_equal(ia->second, ib->second)) return false;
    for (std::size_t i = 0; i < a->outputs().size(); ++i)
        if (!(a->outputs()[i]->type() == b->outputs()[i]->type())) return false;
    return true;
}

GRAFT_INLINE const attribute* constant_value(const Value* v) {
    if (!v->node() || !v->node()->is<kinds::constant>()) return nullptr;
    return &v->node()->attr("value");
}

GRAFT_INLINE std::optional<double> number_constant(const Value* v) {
    const attribute* a = constant_value(v);
    if (!a) return std::nullopt;
    if (const auto* d = std::get_if<double>(a)) return *d;
    if (const auto* i = std::get_if<std::int64_t>(a)) return static_cast<double>(*i);
    return std::nullopt;
}

GRAFT_INLINE bool forward_input(Node* n, Value* v) {
    if (n->output()->type().kind != v->type().kind) return false;
    n->output()->replace_all_uses_with(v);
    n->destroy();
    return true;
}

}  // namespace detail

GRAFT_INLINE bool dce::run(Graph& g) {
    bool changed = false;
    std::vector<Block*> blocks;
    detail::collect_blocks(g.block(), blocks);
    // Innermost blocks last in `blocks`: walk them in reverse so inner dead code goes first.
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
        Block* b = *it;
        std::vector<Node*> nodes(b->nodes().begin(), b->nodes().end());
        for (auto n = nodes.rbegin(); n != nodes.rend(); ++n) {
            bool used = false;
            for (const Value* v : (*n)->outputs()) used = used || v->has_uses();
            if (!used && detail::is_pure_tree(*n)) {
                (*n)->destroy();
                changed = true;
            }
        }
    }
    return changed;
}

GRAFT_INLINE bool cse::run_block(Block* b, std::vector<Node*>& seen) {
    bool changed = false;
    const std::size_t scope = seen.size();
    std::vector<Node*> nodes(b->nodes().begin(), b->nodes().end());
    for (Node* n : nodes) {
        for (Block* inner : n->blocks()) changed = run_block(inner, seen) || changed;
        if (!n->blocks().empty() || !n->kind().pure) continue;
        auto match = std::find_if(seen.begin(), seen.end(),
                                  [&](const Node* s) { return detail::same_computation(s, n); });
        if (match == seen.end()) {
            seen.push_back(n);
            continue;
        }
        for (std::size_t i = 0; i < n->outputs().size(); ++i)
            n->outputs()[i]->replace_all_uses_with((*match)->outputs()[i]);
        n->destroy();
        changed = true;
    }
    seen.resize(scope);
    return changed;
}

GRAFT_INLINE ivalue constant_propagation::to_ivalue(const attribute& a) {
    if (const auto* t = std::get_if<Tensor>(&a)) return *t;
    if (const auto* d = std::get_if<double>(&a)) return *d;
    if (const auto* i = std::get_if<std::int64_t>(&a)) return *i;
    if (const auto* b = std::get_if<bool>(&a)) return *b;
    graft::detail::fail("constant_propagation: a prim::Constant's value is a string or a list, not a value");
}

GRAFT_INLINE bool constant_propagation::run_block(Block* b) {
    bool changed = false;
    std::vector<Node*> nodes(b->nodes().begin(), b->nodes().end());
    for (Node* n : nodes) {
        if (n->is<kinds::if_>()) {
            if (const attribute* c = detail::constant_value(n->input(0))) {
                const ivalue cv = to_ivalue(*c);
                if (!std::holds_alternative<Tensor>(cv)) {
                    inline_block(n, n->blocks()[detail::truthy(cv) ? 0 : 1]);
                    changed = true;
                    continue;
                }
            }
        }
        for (Block* inner : n->blocks()) changed = run_block(inner) || changed;
        if (n->is<kinds::constant>() || !n->kind().pure || !n->blocks().empty() || !n->kind().run) continue;
        std::vector<ivalue> in;
        bool all_constant = true;
        for (const Value* v : n->inputs()) {
            const attribute* a = detail::constant_value(v);
            if (!a || std::holds_alternative<std::string>(*a) ||
                std::holds_alternative<std::vector<std::int64_t>>(*a) ||
                std::holds_alternative<std::vector<double>>(*a)) {
                all_constant = false;
                break;
            }
            in.push_back(to_ivalue(*a));
        }
        if (!all_constant || n->outputs().size() != 1) continue;
        std::vector<ivalue> out;
        try {
            autograd::no_grad guard;
            out = n->kind().run(n->attributes(), in);
        } catch (const graft::error&) {
            continue;  // leave the failure to run time, where it is reported in context
        }
        Node* c = b->insert_before(n, kind_v<kinds::constant>);
        std::visit(
            [&](const auto& v) {
                using V = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<V, Tensor>) c->set_attr("value", v.contiguous().clone());
                else c->set_attr("value", v);
            },
            out[0]);
        Value* cv = c->add_output(n->output()->type());
        n->output()->replace_all_uses_with(cv);
        const std::string name = n->output()->name();
        n->destroy();
        b->owning_graph().set_name(cv, name);  // the constant takes the folded value's name
        changed = true;
    }
    return changed;
}

GRAFT_INLINE void constant_propagation::inline_block(Node* n, Block* inner) {
    std::vector<Node*> body(inner->nodes().begin(), inner->nodes().end());
    for (Node* m : body) m->move_before(n);
    for (std::size_t i = 0; i < n->outputs().size(); ++i)
        n->outputs()[i]->replace_all_uses_with(inner->outputs()[i]);
    n->remove_all_inputs();
    for (Block* blk : n->blocks())
        while (!blk->outputs().empty()) blk->remove_output(blk->outputs().size() - 1);
    n->destroy();
}

GRAFT_INLINE bool constant_pooling::run(Graph& g) {
    bool changed = false;
    std::vector<Block*> blocks;
    detail::collect_blocks(g.block(), blocks);
    std::vector<Node*> constants;
    for (Block* b : blocks)
        for (Node* n : b->nodes())
            if (n->is<kinds::constant>()) constants.push_back(n);
    std::vector<Node*> pool;
    Block* top = g.block();
    for (Node* n : constants) {
        auto match = std::find_if(pool.begin(), pool.end(),
                                  [&](const Node* p) { return detail::same_computation(p, n); });
        if (match != pool.end()) {
            n->output()->replace_all_uses_with((*match)->output());
            n->destroy();
            changed = true;
            continue;
        }
        // Right after the previous pooled constant, or first in the graph.
        Node* anchor = top->nodes().front();
        if (!pool.empty())
            anchor = *std::next(std::find(top->nodes().begin(), top->nodes().end(), pool.back()));
        if (anchor != n) {
            n->move_before(anchor);
            changed = true;
        }
        pool.push_back(n);
    }
    return changed;
}

GRAFT_INLINE bool peephole::run(Graph& g) {
    bool changed = false;
    std::vector<Block*> blocks;
    detail::collect_blocks(g.block(), blocks);
    for (Block* b : blocks) {
        std::vector<Node*> nodes(b->nodes().begin(), b->nodes().end());
        for (Node* n : nodes) changed = rewrite(n) || changed;
    }
    return changed;
}

GRAFT_INLINE bool peephole::same_shape_number(const Value* tensor, const Value* number, double expect) {
    const auto c = detail::number_constant(number);
    return c && detail::bitwise_equal(*c, expect) && detail::is_float_tensor(tensor);
}

GRAFT_INLINE bool peephole::rewrite(Node* n) {
    const kind_info& k = n->kind();
    if (&k == &op_kind_v<ops::def::mul_op>) {
        if (same_shape_number(n->input(0), n->input(1), 1.0)) return detail::forward_input(n, n->input(0));
        if (same_shape_number(n->input(1), n->input(0), 1.0)) return detail::forward_input(n, n->input(1));
    } else if (&k == &op_kind_v<ops::def::div_op>) {
        if (same_shape_number(n->input(0), n->input(1), 1.0)) return detail::forward_input(n, n->input(0));
    } else if (&k == &op_kind_v<ops::def::sub_op>) {
        if (same_shape_number(n->input(0), n->input(1), 0.0)) return detail::forward_input(n, n->input(0));
    } else if (&k == &op_kind_v<ops::def::add_op>) {
        if (same_shape_number(n->input(0), n->input(1), -0.0)) return detail::forward_input(n, n->input(0));
        if (same_shape_number(n->input(1), n->input(0), -0.0)) return detail::forward_input(n, n->input(1));
    } else if (&k == &op_kind_v<ops::def::neg_op>) {
        const Node* inner = n->input(0)->node();
        if (inner && &inner->kind() == &op_kind_v<ops::def::neg_op>) return detail::forward_input(n, inner->input(0));
    } else if (n->is<kinds::transpose>()) {
        const Node* inner = n->input(0)->node();
        if (inner && inner->is<kinds::transpose>()) {
            // (std::minmax would return references to temporaries here.)
            const auto sorted = [](std::int64_t a, std::int64_t b) { return std::pair{std::min(a, b), std::max(a, b)}; };
            const auto d = sorted(n->i("dim0"), n->i("dim1"));
            const auto e = sorted(inner->i("dim0"), inner->i("dim1"));
            if (d == e && d.first >= 0) return detail::forward_input(n, inner->input(0));
        }
    }
    return false;
}

namespace detail {
/// v's type with its two dimensions swapped (a rank-2 tensor), strides forgotten.
inline Type transposed_2d(const Type& t) {
    Type r = t;
    if (r.is_tensor() && r.tensor.sizes && r.tensor.sizes->size() == 2) std::swap((*r.tensor.sizes)[0], (*r.tensor.sizes)[1]);
    if (r.is_tensor()) r.tensor.strides.reset();
    return r;
}
/// Is n a transpose of a rank-2 value that swaps its two dimensions?
inline bool swaps_2d(const Node* n) {
    if (!n || !n->is<kinds::transpose>()) return false;
    const Type& t = n->input(0)->type();
    if (!t.is_tensor() || t.tensor.rank() != std::optional<std::size_t>(2)) return false;
    std::int64_t d0 = n->i("dim0"), d1 = n->i("dim1");
    if (d0 < 0) d0 += 2;
    if (d1 < 0) d1 += 2;
    return std::min(d0, d1) == 0 && std::max(d0, d1) == 1;
}
}  // namespace detail

GRAFT_INLINE bool contiguous_results::run(Graph& g) {
    bool changed = false;
    std::vector<Block*> blocks;
    detail::collect_blocks(g.block(), blocks);
    const auto rank_is = [](const Value* v, std::size_t r) {
        return v->type().is_tensor() && v->type().tensor.rank() == std::optional<std::size_t>(r);
    };
    for (Block* b : blocks) {
        std::vector<Node*> nodes(b->nodes().begin(), b->nodes().end());
        for (Node* n : nodes) {
            if (detail::swaps_2d(n)) {
                Node* mm = n->input(0)->node();
                if (!mm || !mm->is<kinds::matmul>() || mm->owning_block() != b || mm->output()->uses().size() != 1 ||
                    !rank_is(mm->input(0), 2) || !rank_is(mm->input(1), 2))
                    continue;
                const auto transposed = [&](Value* v) -> Value* {
                    if (Node* p = v->node(); detail::swaps_2d(p)) return p->input(0);
                    Node* t = b->insert_before(n, kind_v<kinds::transpose>);
                    t->set_attr("dim0", std::int64_t{0});
                    t->set_attr("dim1", std::int64_t{1});
                    t->add_input(v);
                    return t->add_output(detail::transposed_2d(v->type()));
                };
                Value* bt = transposed(mm->input(1));
                Value* at = transposed(mm->input(0));
                Node* product = b->insert_before(n, kind_v<kinds::matmul>);
                product->add_input(bt);
                product->add_input(at);
                Type out = n->output()->type();
                if (out.is_tensor()) out.tensor.strides.reset();
                n->output()->replace_all_uses_with(product->add_output(std::move(out)));
                n->destroy();
                mm->destroy();
                changed = true;
            } else if (n->is<kinds::reshape>()) {
                Node* s = n->input(0)->node();
                if (!s || !s->is<kinds::sum>() || s->owning_block() != b || s->output()->uses().size() != 1 ||
                    !s->has_attr("keepdim") || !std::holds_alternative<bool>(s->attr("keepdim")) ||
                    !std::get<bool>(s->attr("keepdim")))
                    continue;
                const Type& in = s->input(0)->type();
                if (!in.is_tensor() || !in.tensor.sizes) continue;
                const std::size_t rank = in.tensor.sizes->size();
                std::vector<bool> summed(rank, !s->has_attr("dims") || s->is("dims").empty());
                bool ok = true;
                if (s->has_attr("dims"))
                    for (std::int64_t d : s->is("dims")) {
                        if (d < 0) d += static_cast<std::int64_t>(rank);
                        ok = ok && d >= 0 && d < static_cast<std::int64_t>(rank);
                        if (ok) summed[static_cast<std::size_t>(d)] = true;
                    }
                std::vector<std::int64_t> kept;
                for (std::size_t d = 0; ok && d < rank; ++d) {
                    if (summed[d]) continue;
                    const auto& size = (*in.tensor.sizes)[d];
                    ok = size.has_value();
                    if (ok) kept.push_back(*size);
                }
                if (!ok || n->is("sizes") != kept) continue;
                s->set_attr("keepdim", false);
                Type out = n->output()->type();
                if (out.is_tensor()) out.tensor.strides.reset();
                s->output()->set_type(std::move(out));
                n->output()->replace_all_uses_with(s->output());
                n->destroy();
                changed = true;
            }
        }
    }
    return changed;
}

GRAFT_INLINE bool lower_clamp::run(Graph& g) {
    bool changed = false;
    std::vector<Block*> blocks;
    detail::collect_blocks(g.block(), blocks);
    for (Block* b : blocks) {
        std::vector<Node*> nodes(b->nodes().begin(), b->nodes().end());
        for (Node* n : nodes) {
            if (!n->is<kinds::clamp>() || n->inputs().size() != 1) continue;
            const Type& t = n->input(0)->type();
            if (!t.is_tensor() || !t.tensor.scalar_type ||
                (*t.tensor.scalar_type != dtype::float32 && *t.tensor.scalar_type != dtype::float64))
                continue;
            const auto number = [&](const char* name) -> const attribute* {
                if (!n->has_attr(name)) return nullptr;
                const attribute& a = n->attr(name);
                return std::holds_alternative<double>(a) || std::holds_alternative<std::int64_t>(a) ? &a : nullptr;
            };
            const attribute* lo = number("min");
            const attribute* hi = number("max");
            if ((!lo && n->has_attr("min")) || (!hi && n->has_attr("max")) || (!lo && !hi)) continue;
            Value* v = n->input(0);
            const auto apply = [&](const kind_info& op, const attribute& bound) {
                Node* c = b->insert_before(n, kind_v<kinds::constant>);
                c->set_attr("value", bound);
                Value* cv = c->add_output(std::holds_alternative<double>(bound) ? Type::float_type() : Type::int_type());
                Node* m = b->insert_before(n, op);
                m->add_input(v);
                m->add_input(cv);
                Type out = n->output()->type();
                if (out.is_tensor()) out.tensor.strides.reset();
                v = m->add_output(std::move(out));
            };
            if (lo) apply(op_kind_v<ops::def::maximum_op>, *lo);  // graft::clamp: maximum first
            if (hi) apply(op_kind_v<ops::def::minimum_op>, *hi);
            n->output()->replace_all_uses_with(v);
            n->destroy();
            changed = true;
        }
    }
    return changed;
}

GRAFT_INLINE bool fold_like_fills::run(Graph& g) {
    bool changed = false;
    std::vector<Block*> blocks;
    detail::collect_blocks(g.block(), blocks);
    const auto same_sizes = [](const Type& a, const Type& b) {
        return a.is_tensor() && b.is_tensor() && a.tensor.sizes && b.tensor.sizes && *a.tensor.sizes == *b.tensor.sizes &&
               std::all_of(a.tensor.sizes->begin(), a.tensor.sizes->end(), [](const auto& d) { return d.has_value(); });
    };
    for (Block* b : blocks) {
        std::vector<Node*> nodes(b->nodes().begin(), b->nodes().end());
        for (Node* n : nodes) {
            double value = 0.0;
            if (n->is<kinds::zeros_like>()) value = 0.0;
            else if (n->is<kinds::ones_like>()) value = 1.0;
            else if (n->is<kinds::full_like>() && n->has_attr("value") && std::holds_alternative<double>(n->attr("value")))
                value = std::get<double>(n->attr("value"));
            else continue;
            Value* fill = n->output();
            const Type& ft = fill->type();
            if (!ft.is_tensor() || !ft.tensor.scalar_type || !is_floating_point(*ft.tensor.scalar_type)) continue;
            bool ok = fill->has_uses();
            for (const Use& u : fill->uses()) {
                const Node* m = u.user;
                ok = ok && m != nullptr && m->kind().elementwise && m->kind().run != nullptr && !m->is<kinds::clamp>() &&
                     !m->is<kinds::gelu>() && m->outputs().size() == 1 && same_sizes(m->output()->type(), ft) &&
                     m->output()->type().tensor.scalar_type == ft.tensor.scalar_type;
                if (!ok) break;
                const bool is_where = m->kind().name == std::string_view("where");
                if (is_where && u.offset == 0) ok = false;  // the condition
                // Another tensor operand of the same dtype keeps the result's dtype.
                bool typed_peer = false;
                for (std::size_t i = 0; i < m->inputs().size(); ++i) {
                    if (i == u.offset || (is_where && i == 0)) continue;
                    const Type& pt = m->input(i)->type();
                    typed_peer = typed_peer || (pt.is_tensor() && pt.tensor.scalar_type == ft.tensor.scalar_type);
                }
                ok = ok && typed_peer;
            }
            if (!ok) continue;
            Node* c = b->insert_before(n, kind_v<kinds::constant>);
            c->set_attr("value", value);
            fill->replace_all_uses_with(c->add_output(Type::float_type()));
            n->destroy();
            changed = true;
        }
    }
    return changed;
}

GRAFT_INLINE bool narrow_backwards_to_cat::run(Graph& g) {
    bool changed = false;
    std::vector<Block*> blocks;
    detail::collect_blocks(g.block(), blocks);
    const auto is_add = [](const Node* n) {
        return n && &n->kind() == &op_kind_v<ops::def::add_op> && n->inputs().size() == 2 && !n->has_attr("alpha") &&
               n->output()->type().is_tensor();
    };
    for (Block* b : blocks) {
        std::vector<Node*> nodes(b->nodes().begin(), b->nodes().end());
        std::set<const Node*> gone;
        for (Node* root : nodes) {
            if (gone.count(root) || !is_add(root)) continue;
            // Only the top of an add tree: an add whose one user is an add is visited from there.
            if (root->output()->uses().size() == 1 && is_add(root->output()->uses()[0].user)) continue;
            std::vector<Node*> adds, leaves;
            bool ok = true;
            std::vector<Node*> stack{root};
            while (ok && !stack.empty()) {
                Node* a = stack.back();
                stack.pop_back();
                adds.push_back(a);
                for (Value* in : a->inputs()) {
                    Node* m = in->node();
                    ok = ok && m != nullptr && m->owning_block() == b;
                    if (!ok) break;
                    // Inner adds are the tree's own; a piece may have other readers (two trees
                    // sharing a piece's gradient, as the GRU's r and z gates do): it stays for them.
                    if (is_add(m) && in->uses().size() == 1) stack.push_back(m);
                    else if (m->is<kinds::narrow_backward>()) leaves.push_back(m);
                    else ok = false;
                }
            }
            if (!ok || leaves.size() < 2) continue;
            const auto& sizes = leaves[0]->is("sizes");
            const std::int64_t dim = leaves[0]->i("dim");
            const Type& out_type = root->output()->type();
            for (const Node* l : leaves)
                ok = ok && l->is("sizes") == sizes && l->i("dim") == dim &&
                     l->output()->type().tensor.scalar_type == out_type.tensor.scalar_type &&
                     l->input(0)->type().tensor.scalar_type == out_type.tensor.scalar_type;
            if (!ok || dim < 0 || static_cast<std::size_t>(dim) >= sizes.size()) continue;
            std::sort(leaves.begin(), leaves.end(), [](const Node* x, const Node* y) { return x->i("start") < y->i("start"); });
            for (std::size_t k = 1; k < leaves.size() && ok; ++k)
                ok = leaves[k - 1]->i("start") + leaves[k - 1]->i("length") == leaves[k]->i("start");
            if (!ok) continue;
            const std::int64_t first = leaves.front()->i("start");
            const std::int64_t length = leaves.back()->i("start") + leaves.back()->i("length") - first;
            Node* c = b->insert_before(root, kind_v<kinds::cat>);
            c->set_attr("dim", dim);
            for (const Node* l : leaves) c->add_input(l->input(0));
            TensorType piece = out_type.tensor;
            if (piece.sizes) (*piece.sizes)[static_cast<std::size_t>(dim)] = length;
            piece.strides.reset();
            Value* v = c->add_output(Type::tensor_type(piece));
            if (first != 0 || length != sizes[static_cast<std::size_t>(dim)]) {
                Node* e = b->insert_before(root, kind_v<kinds::narrow_backward>);
                e->set_attr("sizes", sizes);
                e->set_attr("dim", dim);
                e->set_attr("start", first);
                e->set_attr("length", length);
                e->add_input(v);
                v = e->add_output(out_type);
            }
            Node* zero = b->insert_before(root, kind_v<kinds::constant>);
            zero->set_attr("value", 0.0);
            Node* plus = b->insert_before(root, op_kind_v<ops::def::add_op>);
            plus->add_input(v);
            plus->add_input(zero->add_output(Type::float_type()));
            root->output()->replace_all_uses_with(plus->add_output(out_type));
            for (Node* a : adds) gone.insert(a);
            for (Node* a : adds) a->destroy();
            for (Node* l : leaves)
                if (!l->output()->has_uses()) l->destroy();
            changed = true;
        }
    }
    return changed;
}

GRAFT_INLINE bool remove_noop_views::run(Graph& g) {
    bool changed = false;
    std::vector<Block*> blocks;
    detail::collect_blocks(g.block(), blocks);
    for (Block* b : blocks) {
        std::vector<Node*> nodes(b->nodes().begin(), b->nodes().end());
        for (Node* n : nodes)
            if (is_noop(n)) changed = detail::forward_input(n, n->input(0)) || changed;
    }
    return changed;
}

GRAFT_INLINE std::optional<std::vector<std::int64_t>> remove_noop_views::known_sizes(const Value* v) {
    if (!v->type().is_tensor() || !v->type().tensor.sizes) return std::nullopt;
    std::vector<std::int64_t> r;
    for (const auto& s : *v->type().tensor.sizes) {
        if (!s) return std::nullopt;
        r.push_back(*s);
    }
    return r;
}

GRAFT_INLINE bool remove_noop_views::is_noop(const Node* n) {
    if (!n->kind().is_view || n->inputs().size() != 1) return false;
    if (n->is<kinds::transpose>()) return n->i("dim0") == n->i("dim1");
    if (n->is<kinds::permute>()) {
        const auto& d = n->is("dims");
        for (std::size_t i = 0; i < d.size(); ++i)
            if (d[i] != static_cast<std::int64_t>(i)) return false;
        return true;
    }
    const auto sizes = known_sizes(n->input(0));
    if (!sizes) return false;
    if (n->is<kinds::expand>() || n->is<kinds::reshape>()) {
        // Sizes as written: -1 keeps (expand) or infers (reshape, at most one) that dimension.
        const auto& want = n->is("sizes");
        if (want.size() != sizes->size()) return false;
        int inferred = 0;
        for (std::size_t i = 0; i < want.size(); ++i) {
            if (want[i] == -1) ++inferred;
            else if (want[i] != (*sizes)[i]) return false;
        }
        return n->is<kinds::expand>() || inferred <= 1;
    }
    if (n->is<kinds::narrow>()) {
        const std::int64_t rank = static_cast<std::int64_t>(sizes->size());
        std::int64_t d = n->i("dim");
        if (d < -rank || d >= rank) return false;
        if (d < 0) d += rank;
        return n->i("start") == 0 && n->i("length") == (*sizes)[static_cast<std::size_t>(d)];
    }
    return false;
}

GRAFT_INLINE bool inline_calls::run(Graph& g) {
    bool changed = false;
    for (bool again = true; again;) {
        again = false;
        std::vector<Block*> blocks;
        detail::collect_blocks(g.block(), blocks);
        for (Block* b : blocks) {
            for (Node* n : std::vector<Node*>(b->nodes().begin(), b->nodes().end())) {
                if (!n->is<kinds::call>()) continue;
                Block* body = n->blocks()[0];
                for (std::size_t i = 0; i < body->inputs().size(); ++i)
                    body->inputs()[i]->replace_all_uses_with(n->input(i));
                constant_propagation::inline_block(n, body);
                changed = again = true;
                break;  // the block list changed
            }
            if (again) break;
        }
    }
    return changed;
}

GRAFT_INLINE bool canonicalize::run(Graph& g) {
    bool changed = false;
    std::map<const Value*, std::size_t> order;
    std::vector<Value*> auto_named;
    number(g.block(), order, auto_named);
    std::vector<Block*> blocks;
    detail::collect_blocks(g.block(), blocks);
    for (Block* b : blocks)
        for (Node* n : b->nodes()) {
            if (!is_commutative(n->kind()) || n->inputs().size() != 2) continue;
            Value *a = n->input(0), *c = n->input(1);
            if (a != c && order.at(c) < order.at(a)) {
                n->replace_input(0, c);
                n->replace_input(1, a);
                changed = true;
            }
        }
    // Two steps so new names never collide with old ones.
    std::size_t next = 0;
    for (Value* v : auto_named) g.set_name(v, "__canonical." + std::to_string(next++));
    next = 0;
    for (Value* v : auto_named) {
        std::string target = std::to_string(next++);
        g.set_name(v, target);
        changed = changed || v->name() != target;
    }
    return changed;
}

GRAFT_INLINE bool canonicalize::is_commutative(const kind_info& k) {
    return &k == &op_kind_v<ops::def::add_op> || &k == &op_kind_v<ops::def::mul_op> ||
           &k == &op_kind_v<ops::def::maximum_op> || &k == &op_kind_v<ops::def::minimum_op> ||
           &k == &op_kind_v<ops::def::eq_op> || &k == &op_kind_v<ops::def::ne_op>;
}

GRAFT_INLINE bool canonicalize::is_auto_name(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

GRAFT_INLINE void canonicalize::number(Block* b, std::map<const Value*, std::size_t>& order, std::vector<Value*>& auto_named) {
    const auto visit = [&](Value* v) {
        order.emplace(v, order.size());
        if (is_auto_name(v->name())) auto_named.push_back(v);
    };
    for (Value* v : b->inputs()) visit(v);
    for (Node* n : b->nodes()) {
        for (Block* inner : n->blocks()) number(inner, order, auto_named);
        for (Value* v : n->outputs()) visit(v);
    }
}

namespace detail {

[[nodiscard]] inline ivalue attribute_ivalue(const attribute& a) {
    if (const auto* t = std::get_if<Tensor>(&a)) return *t;
    if (const auto* d = std::get_if<double>(&a)) return *d;
    if (const auto* i = std::get_if<std::int64_t>(&a)) return *i;
    if (const auto* b = std::get_if<bool>(&a)) return *b;
    graft::detail::fail("unroll_loops: a constant that is not a value");
}

}  // namespace detail

GRAFT_INLINE std::optional<std::size_t> unroll_loops::trip_count(const Node* loop) {
    const Block& body = *loop->blocks()[0];
    for (const Node* m : body.nodes())
        if (!m->blocks().empty()) return std::nullopt;
    // The part of the body the condition depends on, through the carried values.
    std::set<const Value*> needed{body.outputs()[0]};
    std::set<const Node*> slice;
    for (bool grew = true; grew;) {
        grew = false;
        for (auto it = body.nodes().rbegin(); it != body.nodes().rend(); ++it) {
            const Node* m = *it;
            if (slice.count(m)) continue;
            bool produces = false;
            for (const Value* o : m->outputs()) produces = produces || needed.count(o);
            if (!produces) continue;
            slice.insert(m);
            for (const Value* v : m->inputs()) needed.insert(v);
            grew = true;
        }
        for (std::size_t k = 0; k < body.inputs().size(); ++k)
            if (needed.count(body.inputs()[k]) && !needed.count(body.outputs()[k + 1])) {
                needed.insert(body.outputs()[k + 1]);
                grew = true;
            }
    }
    std::map<const Value*, ivalue> env;
    const attribute* c0 = detail::constant_value(loop->input(0));
    if (!c0) return std::nullopt;
    ivalue cond = detail::attribute_ivalue(*c0);
    for (std::size_t k = 0; k < body.inputs().size(); ++k) {
        if (!needed.count(body.inputs()[k])) continue;
        const attribute* a = detail::constant_value(loop->input(k + 1));
        if (!a) return std::nullopt;
        env[body.inputs()[k]] = detail::attribute_ivalue(*a);
    }
    for (const Node* m : slice) {
        if (!m->kind().pure || !m->kind().run) return std::nullopt;
        for (const Value* v : m->inputs()) {
            const bool inside = (v->node() && v->node()->owning_block() == &body) || v->param_of() == &body;
            if (inside || env.count(v)) continue;
            const attribute* a = detail::constant_value(v);
            if (!a) return std::nullopt;  // the condition reads a value computed outside from inputs
            env[v] = detail::attribute_ivalue(*a);
        }
    }
    std::size_t trips = 0;
    try {
        autograd::no_grad guard;
        while (detail::truthy(cond)) {
            if (trips == max_trip_count) return std::nullopt;
            for (const Node* m : body.nodes()) {
                if (!slice.count(m)) continue;
                std::vector<ivalue> in;
                for (const Value* v : m->inputs()) in.push_back(env.at(v));
                auto out = m->kind().run(m->attributes(), in);
                for (std::size_t i = 0; i < out.size(); ++i) env[m->outputs()[i]] = std::move(out[i]);
            }
            cond = env.at(body.outputs()[0]);
            std::vector<std::pair<const Value*, ivalue>> next;
            for (std::size_t k = 0; k < body.inputs().size(); ++k)
                if (needed.count(body.inputs()[k])) next.emplace_back(body.inputs()[k], env.at(body.outputs()[k + 1]));
            for (auto& [p, v] : next) env[p] = std::move(v);
            ++trips;
        }
    } catch (const graft::error&) {
        return std::nullopt;  // the counting part of the body fails on the constants: leave it to run time
    }
    return trips;
}

GRAFT_INLINE void unroll_loops::unroll(Node* loop, std::size_t trips) {
    Block* b = loop->owning_block();
    const Block& body = *loop->blocks()[0];
    std::vector<Value*> carried(loop->inputs().begin() + 1, loop->inputs().end());
    for (std::size_t t = 0; t < trips; ++t) {
        std::map<const Value*, Value*> map;
        for (std::size_t k = 0; k < carried.size(); ++k) map[body.inputs()[k]] = carried[k];
        for (const Node* m : body.nodes()) {
            Node* c = b->append(m->kind());
            c->move_before(loop);
            for (Value* v : m->inputs()) c->add_input(map.count(v) ? map.at(v) : v);
            for (const auto& [name, value] : m->attributes()) c->set_attr(name, value);
            for (const Value* o : m->outputs()) map[o] = c->add_output(o->type());
        }
        for (std::size_t k = 0; k < carried.size(); ++k) {
            Value* next = body.outputs()[k + 1];
            carried[k] = map.count(next) ? map.at(next) : next;
        }
    }
    for (std::size_t k = 0; k < carried.size(); ++k) loop->outputs()[k]->replace_all_uses_with(carried[k]);
    loop->remove_all_inputs();
    loop->destroy();
}

GRAFT_INLINE bool unroll_loops::run(Graph& g) {
    bool changed = false;
    // One loop at a time, collecting the blocks again after each (unrolling frees the body).
    for (bool again = true; again;) {
        again = false;
        std::vector<Block*> blocks;
        detail::collect_blocks(g.block(), blocks);
        for (Block* blk : blocks) {
            for (Node* n : blk->nodes()) {
                if (!n->is<kinds::loop>()) continue;
                if (const auto trips = trip_count(n)) {
                    unroll(n, *trips);
                    changed = again = true;
                    break;
                }
            }
            if (again) break;
        }
    }
    return changed;
}

}  // namespace graft::ir
