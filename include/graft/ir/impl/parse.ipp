#pragma once
// Definitions for graft/ir/parse.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ir/parse.hpp"

#include <charconv>

namespace graft::ir {
namespace detail {

GRAFT_INLINE std::unique_ptr<Graph> parser::parse_graph() {
    auto g = std::make_unique<Graph>();
    g_ = g.get();
    skip_space();
    expect_word("graph");
    expect('(');
    parse_params(*g->block());
    expect(')');
    expect(':');
    parse_body(*g->block(), "return");
    expect('(');
    for (Value* v : parse_value_refs()) g->register_output(v);
    expect(')');
    skip_space();
    if (i_ != s_.size()) {
        if (s_.substr(i_, 6) == "sizes:")
            error("the text has a sizes: section (symbolic sizes): read it with ir::parse_symbolic");
        error("unexpected text after the graph's return");
    }
    return g;
}

GRAFT_INLINE void parser::skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
}

GRAFT_INLINE bool parser::peek(char c) {
    skip_space();
    return i_ < s_.size() && s_[i_] == c;
}

GRAFT_INLINE bool parser::accept(char c) {
    if (!peek(c)) return false;
    ++i_;
    return true;
}

GRAFT_INLINE void parser::expect(char c) {
    if (!accept(c)) error("expected '", c, "'");
}

GRAFT_INLINE bool parser::peek_word(std::string_view w) {
    skip_space();
    if (s_.substr(i_, w.size()) != w) return false;
    const std::size_t end = i_ + w.size();
    return end == s_.size() || !is_word_char(s_[end]);
}

GRAFT_INLINE void parser::expect_word(std::string_view w) {
    if (!peek_word(w)) error("expected '", std::string(w), "'");
    i_ += w.size();
}

GRAFT_INLINE std::string parser::word() {
    skip_space();
    const std::size_t start = i_;
    while (i_ < s_.size() && is_word_char(s_[i_])) ++i_;
    if (start == i_) error("expected a name");
    return std::string(s_.substr(start, i_ - start));
}

GRAFT_INLINE std::string parser::value_name() {
    expect('%');
    const std::size_t start = i_;
    while (i_ < s_.size() && is_word_char(s_[i_]) && s_[i_] != ':') ++i_;
    if (start == i_) error("expected a value name after '%'");
    return std::string(s_.substr(start, i_ - start));
}

GRAFT_INLINE Value* parser::lookup(const std::string& name) {
    auto it = values_.find(name);
    if (it == values_.end()) error("use of undefined value %", name);
    return it->second;
}

GRAFT_INLINE void parser::define(Value* v, const std::string& name) {
    if (values_.count(name)) error("value %", name, " is defined twice");
    g_->set_name(v, name);
    if (v->name() != name) error("value name %", name, " is not available");
    values_[name] = v;
}

GRAFT_INLINE std::int64_t parser::integer() {
    skip_space();
    std::int64_t v = 0;
    auto r = std::from_chars(s_.data() + i_, s_.data() + s_.size(), v);
    if (r.ec != std::errc{}) error("expected an integer");
    i_ = static_cast<std::size_t>(r.ptr - s_.data());
    return v;
}

GRAFT_INLINE Type parser::parse_type() {
    const std::string w = word();
    if (w == "int") return Type::int_type();
    if (w == "float") return Type::float_type();
    if (w == "bool") return Type::bool_type();
    TensorType t;
    if (w != "Tensor") {
        t.scalar_type = dtype_from_type_name(w);
        if (!t.scalar_type) error("unknown type '", w, "'");
    }
    skip_space();
    if (i_ < s_.size() && s_[i_] == '(') {
        ++i_;
        bool first = true, rank_known = true;
        std::vector<std::optional<std::int64_t>> sizes;
        while (!accept(')')) {
            if (!first) expect(',');
            first = false;
            if (peek_word("strides")) {
                expect_word("strides");
                expect('=');
                expect('[');
                t.strides.emplace();
                while (!accept(']')) {
                    if (!t.strides->empty()) expect(',');
                    t.strides->push_back(integer());
                }
            } else if (peek_word("requires_grad")) {
                expect_word("requires_grad");
                expect('=');
                t.requires_grad = integer() != 0;
            } else if (accept('*')) {
                sizes.emplace_back(std::nullopt);
            } else if (peek('.')) {
                if (s_.substr(i_, 3) != "...") error("expected '...'");
                i_ += 3;
                rank_known = false;
            } else {
                sizes.emplace_back(integer());
            }
        }
        if (rank_known) t.sizes = std::move(sizes);
    }
    return Type::tensor_type(std::move(t));
}

GRAFT_INLINE void parser::parse_params(Block& b) {
    if (peek(')')) return;
    do {
        const std::string name = value_name();
        expect(':');
        define(b.add_input(parse_type()), name);
    } while (accept(','));
}

GRAFT_INLINE std::vector<Value*> parser::parse_value_refs() {
    std::vector<Value*> r;
    if (peek(')')) return r;
    do r.push_back(lookup(value_name()));
    while (accept(','));
    return r;
}

GRAFT_INLINE double parser::parse_float_token(const std::string& tok) {
    double v = 0;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (r.ec != std::errc{} || r.ptr != tok.data() + tok.size()) error("bad number '", tok, "'");
    return v;
}

GRAFT_INLINE std::string parser::number_token() {
    skip_space();
    const std::size_t start = i_;
    while (i_ < s_.size() && (is_word_char(s_[i_]) || s_[i_] == '-' || s_[i_] == '+') && s_[i_] != ':') ++i_;
    if (start == i_) error("expected a number");
    return std::string(s_.substr(start, i_ - start));
}

GRAFT_INLINE attribute parser::parse_attribute() {
    skip_space();
    if (peek('"')) {
        ++i_;
        std::string r;
        while (i_ < s_.size() && s_[i_] != '"') {
            if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
                ++i_;
                r += s_[i_] == 'n' ? '\n' : s_[i_];
            } else {
                r += s_[i_];
            }
            ++i_;
        }
        expect('"');
        return r;
    }
    if (peek_word("true")) {
        expect_word("true");
        return true;
    }
    if (peek_word("false")) {
        expect_word("false");
        return false;
    }
    if (peek_word("tensor")) return parse_tensor();
    if (accept('[')) {
        std::vector<std::string> toks;
        while (!accept(']')) {
            if (!toks.empty()) expect(',');
            toks.push_back(number_token());
        }
        bool any_float = false;
        for (const auto& t : toks) any_float = any_float || is_float_token(t);
        if (any_float) {
            std::vector<double> v;
            for (const auto& t : toks) v.push_back(parse_float_token(t));
            return v;
        }
        std::vector<std::int64_t> v;
        for (const auto& t : toks) v.push_back(static_cast<std::int64_t>(parse_int_token(t)));
        return v;
    }
    const std::string t = number_token();
    if (is_float_token(t)) return parse_float_token(t);
    return parse_int_token(t);
}

GRAFT_INLINE std::int64_t parser::parse_int_token(const std::string& tok) {
    std::int64_t v = 0;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (r.ec != std::errc{} || r.ptr != tok.data() + tok.size()) error("bad integer '", tok, "'");
    return v;
}

GRAFT_INLINE attribute parser::parse_tensor() {
    expect_word("tensor");
    expect('(');
    const Type ty = parse_type();
    if (!ty.is_tensor() || !ty.tensor.scalar_type || !ty.tensor.sizes) error("a tensor constant needs a dtype and sizes");
    int_list sizes;
    for (const auto& s : *ty.tensor.sizes) {
        if (!s) error("a tensor constant cannot have symbolic sizes");
        sizes.push_back(*s);
    }
    expect(',');
    expect('[');
    std::vector<std::string> toks;
    while (!accept(']')) {
        if (!toks.empty()) expect(',');
        skip_space();
        if (peek_word("true") || peek_word("false")) {
            toks.push_back(peek_word("true") ? "1" : "0");
            i_ += toks.back() == "1" ? 4 : 5;
        } else {
            toks.push_back(number_token());
        }
    }
    expect(')');
    // The sizes are checked, and the values counted, before any memory is allocated.
    std::int64_t numel = 0;
    try {
        numel = graft::detail::checked_numel("tensor constant", sizes);
    } catch (const graft::error& e) {
        error(e.what());
    }
    if (static_cast<std::int64_t>(toks.size()) != numel)
        error("tensor constant has ", toks.size(), " values for ", numel, " elements");
    const dtype stored = *ty.tensor.scalar_type;
    Tensor t = empty(sizes, compute_dtype(stored));  // storage dtypes: parsed wide, then converted
    graft::detail::visit_dtype(t.type(), [&](auto z) {
        using T = decltype(z);
        T* p = t.data_ptr<T>();
        for (std::size_t k = 0; k < toks.size(); ++k) {
            if constexpr (std::is_same_v<T, float>) {
                float v = 0;
                auto r = std::from_chars(toks[k].data(), toks[k].data() + toks[k].size(), v);
                if (r.ec != std::errc{} || r.ptr != toks[k].data() + toks[k].size()) error("bad number '", toks[k], "'");
                p[k] = v;
            } else if constexpr (std::is_floating_point_v<T>) {
                p[k] = static_cast<T>(parse_float_token(toks[k]));
            } else {
                p[k] = static_cast<T>(parse_int_token(toks[k]));
                if (stored == dtype::int32 && (p[k] < -2147483648LL || p[k] > 2147483647LL))
                    error("value '", toks[k], "' does not fit an Int (int32) tensor");
            }
        }
    });
    if (stored == dtype::float16 || stored == dtype::bfloat16) {
        // A value the 16-bit type cannot hold exactly is malformed text (printing writes exact values).
        const Tensor narrow = t.to(stored);
        const auto wide = t.to_vector<float>(), back = narrow.to_vector<float>();
        for (std::size_t k = 0; k < wide.size(); ++k)
            if (!(wide[k] == back[k] || (wide[k] != wide[k] && back[k] != back[k])))
                error("value '", toks[k], "' is not exactly a ", graft::name(stored), " value");
    }
    return is_storage_dtype(stored) ? t.to(stored) : t;
}

GRAFT_INLINE void parser::parse_body(Block& b, std::string_view terminator) {
    for (;;) {
        skip_space();
        if (terminator == "return" ? peek_word("return") : s_.substr(i_, 2) == "->") {
            i_ += terminator == "return" ? 6 : 2;
            return;
        }
        if (i_ >= s_.size()) error("unexpected end of text: expected '", std::string(terminator), "'");
        parse_node(b);
    }
}

GRAFT_INLINE void parser::parse_node(Block& b) {
    std::vector<std::pair<std::string, Type>> outs;
    if (peek('%')) {
        do {
            std::string name = value_name();
            expect(':');
            outs.emplace_back(std::move(name), parse_type());
        } while (accept(','));
        expect('=');
    }
    const std::string kind_name = word();
    const kind_info* kind = find_kind(kind_name);
    if (!kind) error("unknown node kind '", kind_name, "'");
    Node* n = b.append(*kind);
    if (accept('[')) {
        bool first = true;
        while (!accept(']')) {
            if (!first) expect(',');
            first = false;
            const std::string name = word();
            expect('=');
            n->set_attr(name, parse_attribute());
        }
    }
    expect('(');
    for (Value* v : parse_value_refs()) n->add_input(v);
    expect(')');
    // Fresh outputs get automatic names first; move them out of the way of the text's names.
    std::vector<Value*> created;
    for (auto& out : outs) {
        created.push_back(n->add_output(out.second));
        g_->set_name(created.back(), "__parser_tmp");
    }
    for (std::size_t k = 0; k < outs.size(); ++k) define(created[k], outs[k].first);
    for (int k = 0;; ++k) {
        std::string block_word = "block";
        block_word += std::to_string(k);
        if (!peek_word(block_word)) break;
        expect_word(block_word);
        Block* inner = n->add_block();
        expect('(');
        parse_params(*inner);
        expect(')');
        expect(':');
        parse_body(*inner, "->");
        expect('(');
        for (Value* v : parse_value_refs()) inner->register_output(v);
        expect(')');
    }
}

}  // namespace detail

GRAFT_INLINE std::unique_ptr<Graph> parse(std::string_view text) { return detail::parser(text).parse_graph(); }

}  // namespace graft::ir
