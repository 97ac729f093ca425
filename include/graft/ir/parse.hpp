#pragma once
// Reads the IR's text form (graft/ir/print.hpp) back into a Graph. Printing
// the parsed graph gives the same text. Errors name the line and what was
// expected.
#include <cstdint>
#include <map>
#include <sstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graft/core/factories.hpp"
#include "graft/ir/graph.hpp"

namespace graft::ir {
namespace detail {

class parser {
public:
    explicit parser(std::string_view text) : s_(text) {}

    std::unique_ptr<Graph> parse_graph();

private:
    template <class... Parts>
    [[noreturn]] void error(const Parts&... what) const {
        std::size_t line = 1, column = 1;
        for (std::size_t k = 0; k < i_ && k < s_.size(); ++k) {
            line += s_[k] == '\n';
            column = s_[k] == '\n' ? 1 : column + 1;
        }
        std::ostringstream os;
        os << "ir::parse: line " << line << ", column " << column << ": ";
        (os << ... << what);
        graft::detail::fail(os.str());
    }

    void skip_space();
    bool peek(char c);
    bool accept(char c);
    void expect(char c);
    bool peek_word(std::string_view w);
    void expect_word(std::string_view w);
    static bool is_word_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
               c == ':';
    }
    std::string word();
    std::string value_name();

    Value* lookup(const std::string& name);
    void define(Value* v, const std::string& name);

    std::int64_t integer();

    Type parse_type();

    void parse_params(Block& b);

    std::vector<Value*> parse_value_refs();

    double parse_float_token(const std::string& tok);
    std::string number_token();
    static bool is_float_token(const std::string& t) { return t.find_first_of(".eEni") != std::string::npos; }

    attribute parse_attribute();
    std::int64_t parse_int_token(const std::string& tok);

    attribute parse_tensor();

    // Nodes up to the block terminator: `return` for the graph, `->` for a block.
    void parse_body(Block& b, std::string_view terminator);

    void parse_node(Block& b);

    std::string_view s_;
    std::size_t i_ = 0;
    Graph* g_ = nullptr;
    std::map<std::string, Value*> values_;
};

}  // namespace detail

/// Parses the text form of a graph; throws graft::error with the line on bad input.
[[nodiscard]] GRAFT_INLINE std::unique_ptr<Graph> parse(std::string_view text);

}  // namespace graft::ir

#if GRAFT_HAS_GRAPH_CODE
#include "graft/ir/impl/parse.ipp"
#endif
