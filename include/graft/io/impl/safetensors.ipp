#pragma once
// Definitions for graft/io/safetensors.hpp (compiled once in compiled mode; see graft/config.hpp).
//
// The header is read by a small strict JSON reader written for this one schema (no JSON
// library): it never recurses, so nesting cannot exhaust the stack, and every length it
// allocates for is bounded by the header, itself bounded by max_header_size and the file.
#include "graft/io/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <system_error>

#include "graft/core/factories.hpp"
#include "graft/core/shape.hpp"

namespace graft::io {
namespace detail {

using graft::detail::concat;
using graft::detail::fail;

/// A dtype of the format: its name, bits per element, its rank in the reference
/// implementation's dtype enum (the writer orders tensors by it, largest first), and the
/// graft dtype it loads as, if any.
struct format_dtype {
    std::string_view name;
    std::uint32_t bits;
    int rank;
    std::optional<dtype> graft;
};

/// Every dtype of the format, in the reference enum's order.
inline constexpr format_dtype format_dtypes[] = {
    {"BOOL", 8, 0, dtype::bool_},  {"F4", 4, 1, {}},         {"F6_E2M3", 6, 2, {}},       {"F6_E3M2", 6, 3, {}},
    {"U8", 8, 4, {}},              {"I8", 8, 5, {}},         {"F8_E5M2", 8, 6, {}},       {"F8_E4M3", 8, 7, {}},
    {"F8_E8M0", 8, 8, {}},         {"I16", 16, 9, {}},       {"U16", 16, 10, {}},         {"F16", 16, 11, dtype::float16},
    {"BF16", 16, 12, dtype::bfloat16}, {"I32", 32, 13, dtype::int32},      {"U32", 32, 14, {}},         {"F32", 32, 15, dtype::float32},
    {"C64", 64, 16, {}},           {"F64", 64, 17, dtype::float64}, {"I64", 64, 18, dtype::int64}, {"U64", 64, 19, {}},
};

[[nodiscard]] inline const format_dtype* find_format_dtype(std::string_view name) noexcept {
    for (const format_dtype& d : format_dtypes)
        if (d.name == name) return &d;
    return nullptr;
}

[[nodiscard]] inline const format_dtype& format_dtype_of(dtype t) {
    for (const format_dtype& d : format_dtypes)
        if (d.graft == t) return d;
    fail(concat("io: dtype ", name(t), " has no safetensors name"));
}

/// "\"name\"" for messages: the name in quotes, control bytes and bytes >= 0x80 escaped, cut
/// after 200 bytes (names come from the file and may be anything).
[[nodiscard]] inline std::string show(std::string_view s) {
    std::string out = "\"";
    const std::size_t shown = std::min<std::size_t>(s.size(), 200);
    for (std::size_t i = 0; i < shown; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
            static constexpr char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += static_cast<char>(c);
        }
    }
    if (shown < s.size()) out += concat("...\" (", s.size(), " bytes)");
    else out += '"';
    return out;
}

/// Byte offset of the first invalid UTF-8 sequence of `s` (shortest form, no surrogates,
/// at most U+10FFFF), or npos when `s` is valid.
[[nodiscard]] inline std::size_t invalid_utf8_at(std::string_view s) noexcept {
    std::size_t i = 0;
    const std::size_t n = s.size();
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    while (i < n) {
        const unsigned char c = byte(i);
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t len = 0;
        unsigned char lo = 0x80, hi = 0xbf;  // range of the second byte
        if (c >= 0xc2 && c <= 0xdf) len = 2;
        else if (c == 0xe0) len = 3, lo = 0xa0;
        else if (c >= 0xe1 && c <= 0xec) len = 3;
        else if (c == 0xed) len = 3, hi = 0x9f;  // no surrogates
        else if (c >= 0xee && c <= 0xef) len = 3;
        else if (c == 0xf0) len = 4, lo = 0x90;
        else if (c >= 0xf1 && c <= 0xf3) len = 4;
        else if (c == 0xf4) len = 4, hi = 0x8f;  // <= U+10FFFF
        else return i;
        if (n - i < len) return i;
        if (byte(i + 1) < lo || byte(i + 1) > hi) return i;
        for (std::size_t k = 2; k < len; ++k)
            if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return i;
        i += len;
    }
    return std::string_view::npos;
}

/// The parsed header: tensors sorted by their offsets, and the metadata.
struct parsed_header {
    std::vector<std::pair<std::string, tensor_info>> tensors;
    metadata_map metadata;
};

/// Reads the header's JSON text strictly: exactly the schema of the format (an object of
/// tensor entries {"dtype", "shape", "data_offsets"} and an optional "__metadata__" object of
/// strings), standard JSON otherwise (whitespace, escapes), nothing after the object but
/// whitespace (the writer's padding). Duplicate keys and unknown fields are errors.
class header_reader {
public:
    header_reader(std::string_view text, const std::string& where) : s_(text), where_(where) {}

    parsed_header read() {
        parsed_header h;
        skip_space();
        if (!accept('{')) error("the header must be a JSON object, starting with '{'");
        std::set<std::string, std::less<>> seen;
        skip_space();
        if (!accept('}')) {
            for (;;) {
                skip_space();
                if (peek() != '"') error("expected a tensor name (a JSON string)");
                std::string key = string();
                if (!seen.insert(key).second) error("duplicate key ", show(key));
                skip_space();
                if (!accept(':')) error("expected ':' after the key ", show(key));
                skip_space();
                if (key == "__metadata__") {
                    if (!accept_literal("null")) read_metadata(h.metadata);
                } else {
                    tensor_info info = read_tensor(key);
                    h.tensors.emplace_back(key, std::move(info));
                }
                skip_space();
                if (accept(',')) continue;
                if (accept('}')) break;
                error("expected ',' or '}' after the entry ", show(key));
            }
        }
        skip_space();
        if (i_ != s_.size())
            error("unexpected bytes after the header's JSON object (only whitespace may pad the header)");
        return h;
    }

private:
    template <class... Parts>
    [[noreturn]] void error(const Parts&... what) const {
        fail(concat(where_, ": invalid header: at byte ", i_, " of ", s_.size(), ": ", what...));
    }

    [[nodiscard]] char peek() const noexcept { return i_ < s_.size() ? s_[i_] : '\0'; }
    [[nodiscard]] bool at_end() const noexcept { return i_ >= s_.size(); }
    void skip_space() noexcept {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }
    bool accept(char c) noexcept {
        if (at_end() || s_[i_] != c) return false;
        ++i_;
        return true;
    }
    bool accept_literal(std::string_view w) noexcept {
        if (s_.substr(i_, w.size()) != w) return false;
        i_ += w.size();
        return true;
    }

    [[nodiscard]] unsigned hex4() {
        unsigned v = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = peek();
            unsigned d;
            if (c >= '0' && c <= '9') d = static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') d = static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') d = static_cast<unsigned>(c - 'A' + 10);
            else error("expected 4 hexadecimal digits after \\u");
            v = v * 16 + d;
            ++i_;
        }
        return v;
    }

    static void append_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xc0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xe0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        } else {
            out += static_cast<char>(0xf0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        }
    }

    /// A JSON string at i_ (which holds '"'), unescaped. The text is valid UTF-8 already.
    std::string string() {
        ++i_;  // the opening quote
        std::string out;
        for (;;) {
            if (at_end()) error("unterminated string");
            const char c = s_[i_];
            if (c == '"') {
                ++i_;
                return out;
            }
            if (static_cast<unsigned char>(c) < 0x20) error("control character in a string (it must be escaped)");
            if (c != '\\') {
                out += c;
                ++i_;
                continue;
            }
            ++i_;
            if (at_end()) error("unterminated escape sequence");
            const char e = s_[i_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xdc00 && cp <= 0xdfff) error("unpaired low surrogate \\u escape");
                    if (cp >= 0xd800 && cp <= 0xdbff) {
                        if (!accept_literal("\\u")) error("high surrogate \\u escape not followed by a low one");
                        const unsigned low = hex4();
                        if (low < 0xdc00 || low > 0xdfff) error("high surrogate \\u escape not followed by a low one");
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                    }
                    append_utf8(out, cp);
                    break;
                }
                default: --i_; error("invalid escape sequence");
            }
        }
    }

    /// A JSON number that must be a non-negative integer fitting in 64 bits.
    std::uint64_t integer(const char* what) {
        if (peek() == '-') error(what, " must not be negative");
        if (peek() < '0' || peek() > '9') error("expected a non-negative integer for ", what);
        std::uint64_t v = 0;
        const std::size_t start = i_;
        while (!at_end() && s_[i_] >= '0' && s_[i_] <= '9') {
            const auto d = static_cast<std::uint64_t>(s_[i_] - '0');
            if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) error(what, " does not fit in 64 bits");
            v = v * 10 + d;
            ++i_;
        }
        if (i_ - start > 1 && s_[start] == '0') {
            i_ = start;
            error("leading zero in ", what, " (not JSON)");
        }
        if (peek() == '.' || peek() == 'e' || peek() == 'E') error(what, " must be an integer");
        return v;
    }

    void read_metadata(metadata_map& out) {
        if (!accept('{')) error("\"__metadata__\" must be an object of strings");
        skip_space();
        if (accept('}')) return;
        for (;;) {
            skip_space();
            if (peek() != '"') error("expected a metadata key (a JSON string)");
            std::string key = string();
            skip_space();
            if (!accept(':')) error("expected ':' after the metadata key ", show(key));
            skip_space();
            if (peek() != '"') error("the value of metadata key ", show(key), " must be a string");
            std::string value = string();
            if (!out.emplace(key, std::move(value)).second) error("duplicate metadata key ", show(key));
            skip_space();
            if (accept(',')) continue;
            if (accept('}')) return;
            error("expected ',' or '}' in \"__metadata__\"");
        }
    }

    tensor_info read_tensor(const std::string& name) {
        if (!accept('{')) error("the entry of tensor ", show(name), " must be an object");
        tensor_info info;
        bool has_dtype = false, has_shape = false, has_offsets = false;
        skip_space();
        if (!accept('}')) {
            for (;;) {
                skip_space();
                if (peek() != '"') error("expected a field name in the entry of tensor ", show(name));
                const std::string field = string();
                skip_space();
                if (!accept(':')) error("expected ':' after field ", show(field), " of tensor ", show(name));
                skip_space();
                if (field == "dtype") {
                    if (has_dtype) error("duplicate field \"dtype\" in tensor ", show(name));
                    has_dtype = true;
                    if (peek() != '"') error("\"dtype\" of tensor ", show(name), " must be a string");
                    info.dtype = string();
                    if (find_format_dtype(info.dtype) == nullptr)
                        error("tensor ", show(name), " has unknown dtype ", show(info.dtype),
                              " (the format's dtypes: BOOL, U8, I8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64, "
                              "C64, F8_E5M2, F8_E4M3, F8_E8M0, F6_E2M3, F6_E3M2, F4)");
                } else if (field == "shape") {
                    if (has_shape) error("duplicate field \"shape\" in tensor ", show(name));
                    has_shape = true;
                    if (!accept('[')) error("\"shape\" of tensor ", show(name), " must be an array of integers");
                    skip_space();
                    if (!accept(']')) {
                        for (;;) {
                            skip_space();
                            const std::uint64_t s = integer("a shape entry");
                            if (s > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                                error("shape entry ", s, " of tensor ", show(name), " is larger than int64");
                            info.shape.push_back(static_cast<std::int64_t>(s));
                            skip_space();
                            if (accept(',')) continue;
                            if (accept(']')) break;
                            error("expected ',' or ']' in the shape of tensor ", show(name));
                        }
                    }
                } else if (field == "data_offsets") {
                    if (has_offsets) error("duplicate field \"data_offsets\" in tensor ", show(name));
                    has_offsets = true;
                    if (!accept('[')) error("\"data_offsets\" of tensor ", show(name), " must be [begin, end]");
                    skip_space();
                    info.begin = integer("data_offsets[0]");
                    skip_space();
                    if (!accept(',')) error("\"data_offsets\" of tensor ", show(name), " must be [begin, end]");
                    skip_space();
                    info.end = integer("data_offsets[1]");
                    skip_space();
                    if (!accept(']')) error("\"data_offsets\" of tensor ", show(name), " must be [begin, end]");
                } else {
                    error("unknown field ", show(field), " in tensor ", show(name),
                          " (expected \"dtype\", \"shape\" and \"data_offsets\")");
                }
                skip_space();
                if (accept(',')) continue;
                if (accept('}')) break;
                error("expected ',' or '}' in the entry of tensor ", show(name));
            }
        }
        if (!has_dtype) error("tensor ", show(name), " has no \"dtype\"");
        if (!has_shape) error("tensor ", show(name), " has no \"shape\"");
        if (!has_offsets) error("tensor ", show(name), " has no \"data_offsets\"");
        return info;
    }

    std::string_view s_;
    std::size_t i_ = 0;
    const std::string& where_;
};

/// Bytes a tensor of this dtype and shape holds; throws when the sizes overflow, when they
/// do not fit graft's int64 element counts (sizes counted as at least 1, as graft's strides
/// need), or when a sub-byte dtype does not fill whole bytes.
[[nodiscard]] inline std::uint64_t tensor_bytes(const std::string& where, const std::string& name,
                                                const tensor_info& info) {
    const format_dtype& d = *find_format_dtype(info.dtype);
    std::int64_t span = 1, numel = 1;
    bool zero = false;
    for (std::int64_t s : info.shape) {
        if (!graft::detail::mul_fits(span, s > 1 ? s : 1, span))
            fail(concat(where, ": tensor ", show(name), " has shape ", info.shape,
                        ", whose element count overflows int64"));
        zero = zero || s == 0;
    }
    numel = zero ? 0 : span;
    std::uint64_t bits = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(numel), std::uint64_t{d.bits}, &bits))
        fail(concat(where, ": tensor ", show(name), " has shape ", info.shape, ", whose byte size overflows"));
    if (bits % 8 != 0)
        fail(concat(where, ": tensor ", show(name), " of dtype ", info.dtype, " and shape ", info.shape,
                    " does not fill a whole number of bytes"));
    return bits / 8;
}

/// Parses and validates a header against the size of the data buffer that follows it, as
/// the reference implementation does: the tensors, ordered by offsets, must cover the buffer
/// exactly, from 0 to its end, without overlaps or gaps, each holding the bytes its dtype and
/// shape need.
[[nodiscard]] inline parsed_header read_header(std::string_view json, std::uint64_t data_size,
                                               const std::string& where) {
    if (const std::size_t bad = invalid_utf8_at(json); bad != std::string_view::npos)
        fail(concat(where, ": invalid header: not valid UTF-8 at byte ", bad, " of ", json.size()));
    parsed_header h = header_reader(json, where).read();
    // By (begin, end), then name (unique): a total order, so messages do not depend on the sort.
    std::sort(h.tensors.begin(), h.tensors.end(), [](const auto& a, const auto& b) {
        if (a.second.begin != b.second.begin) return a.second.begin < b.second.begin;
        if (a.second.end != b.second.end) return a.second.end < b.second.end;
        return a.first < b.first;
    });
    std::uint64_t expected_begin = 0;
    const std::string* previous = nullptr;
    for (const auto& [name, info] : h.tensors) {
        if (info.end < info.begin)
            fail(concat(where, ": tensor ", show(name), " has data_offsets [", info.begin, ", ", info.end,
                        "]: the end is before the begin"));
        const std::uint64_t need = tensor_bytes(where, name, info);
        if (info.end - info.begin != need)
            fail(concat(where, ": tensor ", show(name), " has data_offsets [", info.begin, ", ", info.end, "] (",
                        info.end - info.begin, " bytes) but dtype ", info.dtype, " and shape ", info.shape, " need ",
                        need, " bytes"));
        if (info.begin < expected_begin)
            fail(concat(where, ": tensor ", show(name), " (bytes [", info.begin, ", ", info.end,
                        ")) overlaps tensor ", show(*previous), ", which ends at byte ", expected_begin));
        if (info.begin > expected_begin)
            fail(concat(where, ": ", info.begin - expected_begin, " bytes of the data buffer before tensor ",
                        show(name), " (bytes [", expected_begin, ", ", info.begin,
                        ")) belong to no tensor: the format requires the tensors to cover the buffer without gaps"));
        if (info.end > data_size)
            fail(concat(where, ": tensor ", show(name), " has data_offsets [", info.begin, ", ", info.end,
                        "], past the end of the data buffer (", data_size, " bytes): the file is truncated or the "
                        "header lies about sizes"));
        expected_begin = info.end;
        previous = &name;
    }
    if (expected_begin != data_size)
        fail(concat(where, ": the data buffer holds ", data_size, " bytes but the tensors cover only ", expected_begin,
                    ": ", data_size - expected_begin, " trailing bytes belong to no tensor"));
    return h;
}

/// Reverses the bytes of each `size`-byte element (little-endian file <-> big-endian host).
inline void swap_bytes(std::byte* p, std::size_t nbytes, std::size_t size) noexcept {
    if (size <= 1) return;
    for (std::size_t i = 0; i + size <= nbytes; i += size) std::reverse(p + i, p + i + size);
}

/// The little-endian length prefix.
[[nodiscard]] inline std::uint64_t read_u64_le(const std::byte* p) noexcept {
    std::uint64_t v = 0;
    for (int k = 7; k >= 0; --k) v = (v << 8) | static_cast<std::uint64_t>(p[k]);
    return v;
}

/// Runs `f`, letting graft::error through and turning every other exception (bad_alloc,
/// filesystem errors, ...) into a graft::error that names `where`.
template <class F>
decltype(auto) guarded(const std::string& where, F&& f) {
    try {
        return f();
    } catch (const graft::error&) {
        throw;
    } catch (const std::bad_alloc&) {
        fail(concat(where, ": out of memory"));
    } catch (const std::exception& e) {
        fail(concat(where, ": ", e.what()));
    }
}

/// An open file with a lock that serializes seek-and-read pairs.
struct file_handle {
    std::FILE* f = nullptr;
    std::uint64_t size = 0;
    std::mutex mutex;
    file_handle() = default;
    file_handle(const file_handle&) = delete;
    file_handle& operator=(const file_handle&) = delete;
    ~file_handle() {
        if (f != nullptr) std::fclose(f);
    }

    /// Reads exactly n bytes at `offset` or throws.
    void read(std::uint64_t offset, void* dst, std::size_t n, const std::string& where) {
        if (n == 0) return;
        std::lock_guard lock(mutex);
        if (offset > static_cast<std::uint64_t>(std::numeric_limits<long>::max()) ||
            std::fseek(f, static_cast<long>(offset), SEEK_SET) != 0)
            fail(concat(where, ": cannot seek to byte ", offset, ": ", std::strerror(errno)));
        if (std::fread(dst, 1, n, f) != n)
            fail(concat(where, ": the file ended or failed while reading ", n, " bytes at byte ", offset,
                        " (was it changed while being read?)"));
    }
};

[[nodiscard]] inline std::string path_text(const std::filesystem::path& path) {
    return show(path.string());
}

/// The tensor's bytes in the file's layout: contiguous, little-endian.
[[nodiscard]] inline Tensor contiguous_for_save(const std::string& where, std::string_view name, const Tensor& t) {
    if (!t.defined()) fail(concat(where, ": tensor ", show(name), " is undefined"));
    return t.is_contiguous() ? t : graft::detail::raw::contiguous(t);
}

/// Appends `s` as a JSON string, escaped as the reference writer escapes: '"', '\\' and
/// control characters (\b \f \n \r \t, others as \u00xx); everything else as is.
inline void append_json_string(std::string& out, std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    out += '"';
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    out += "\\u00";
                    out += hex[c >> 4];
                    out += hex[c & 15];
                } else {
                    out += ch;
                }
        }
    }
    out += '"';
}

inline void append_number(std::string& out, std::uint64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

/// What save() writes: the padded header and the tensors in file order.
struct prepared {
    std::string header;  // padded JSON
    std::vector<std::pair<std::string_view, Tensor>> tensors;  // contiguous, in file order
    std::uint64_t data_size = 0;
};

[[nodiscard]] inline prepared prepare(const std::string& where, const named_tensors& input,
                                      const metadata_map& metadata) {
    prepared p;
    p.tensors.reserve(input.items().size());
    for (const auto& [name, t] : input.items()) {
        if (name == "__metadata__")
            fail(concat(where, ": \"__metadata__\" is reserved for the metadata section and cannot name a tensor"));
        if (const std::size_t bad = invalid_utf8_at(name); bad != std::string_view::npos)
            fail(concat(where, ": tensor name ", show(name), " is not valid UTF-8 (at byte ", bad, ")"));
        p.tensors.emplace_back(name, contiguous_for_save(where, name, t));
    }
    for (const auto& [key, value] : metadata) {
        if (const std::size_t bad = invalid_utf8_at(key); bad != std::string_view::npos)
            fail(concat(where, ": metadata key ", show(key), " is not valid UTF-8 (at byte ", bad, ")"));
        if (const std::size_t bad = invalid_utf8_at(value); bad != std::string_view::npos)
            fail(concat(where, ": the value of metadata key ", show(key), " is not valid UTF-8 (at byte ", bad, ")"));
    }
    // The reference writer's order: dtype rank descending, then name (bytewise) ascending.
    std::sort(p.tensors.begin(), p.tensors.end(), [](const auto& a, const auto& b) {
        const int ra = format_dtype_of(a.second.type()).rank, rb = format_dtype_of(b.second.type()).rank;
        return ra != rb ? ra > rb : a.first < b.first;
    });
    {
        std::set<std::string_view> names;
        for (const auto& e : p.tensors)
            if (!names.insert(e.first).second) fail(concat(where, ": two tensors are named ", show(e.first)));
    }

    std::string& h = p.header;
    h += '{';
    bool first = true;
    if (!metadata.empty()) {
        h += "\"__metadata__\":{";
        for (const auto& [key, value] : metadata) {
            if (!first) h += ',';
            first = false;
            append_json_string(h, key);
            h += ':';
            append_json_string(h, value);
        }
        h += '}';
        first = false;
    }
    for (const auto& [name, t] : p.tensors) {
        const std::uint64_t nbytes = static_cast<std::uint64_t>(t.numel()) * t.element_size();
        if (!first) h += ',';
        first = false;
        append_json_string(h, name);
        h += ":{\"dtype\":\"";
        h += format_dtype_of(t.type()).name;
        h += "\",\"shape\":[";
        for (std::size_t d = 0; d < t.sizes().size(); ++d) {
            if (d != 0) h += ',';
            append_number(h, static_cast<std::uint64_t>(t.sizes()[d]));
        }
        h += "],\"data_offsets\":[";
        append_number(h, p.data_size);
        h += ',';
        p.data_size += nbytes;
        append_number(h, p.data_size);
        h += "]}";
    }
    h += '}';
    h.append((8 - h.size() % 8) % 8, ' ');
    if (h.size() > max_header_size)
        fail(concat(where, ": the header would be ", h.size(), " bytes, more than the format's limit of ",
                    max_header_size));
    return p;
}

/// Calls sink(pointer, nbytes) for the 8-byte prefix, the header and each tensor's bytes.
template <class Sink>
void emit(const prepared& p, Sink&& sink) {
    std::byte prefix[8];
    std::uint64_t n = p.header.size();
    for (auto& b : prefix) {
        b = static_cast<std::byte>(n & 0xff);
        n >>= 8;
    }
    sink(prefix, sizeof prefix);
    sink(reinterpret_cast<const std::byte*>(p.header.data()), p.header.size());
    for (const auto& [name, t] : p.tensors) {
        const std::size_t nbytes = static_cast<std::size_t>(t.numel()) * t.element_size();
        const auto* data = static_cast<const std::byte*>(t.raw_data());
        if constexpr (std::endian::native == std::endian::big) {
            std::vector<std::byte> swapped(data, data + nbytes);
            swap_bytes(swapped.data(), nbytes, t.element_size());
            sink(swapped.data(), nbytes);
        } else {
            sink(data, nbytes);
        }
    }
}

/// A new tensor from `info`, filled by read(dst, nbytes) with the file's bytes.
template <class Read>
[[nodiscard]] Tensor make_tensor(const std::string& where, const std::string& name, const tensor_info& info,
                                 Read&& read) {
    const format_dtype& d = *find_format_dtype(info.dtype);
    if (!d.graft)
        fail(concat(where, ": tensor ", show(name), " has dtype ", info.dtype,
                    ", which graft does not have (graft loads F16, BF16, F32, F64, I32, I64 and BOOL)"));
    Tensor t = empty(info.shape, *d.graft);
    const std::size_t nbytes = static_cast<std::size_t>(info.end - info.begin);
    auto* dst = static_cast<std::byte*>(t.raw_data());
    read(dst, nbytes);
    if (*d.graft == dtype::bool_) {
        // Any byte but 0 and 1 would be an invalid bool value for graft's kernels.
        for (std::size_t i = 0; i < nbytes; ++i)
            if (static_cast<unsigned char>(dst[i]) > 1)
                fail(concat(where, ": BOOL tensor ", show(name), " holds byte ",
                            static_cast<unsigned>(static_cast<unsigned char>(dst[i])), " at element ", i,
                            " (a bool is 0 or 1)"));
    }
    if constexpr (std::endian::native == std::endian::big) swap_bytes(dst, nbytes, element_size(*d.graft));
    return t;
}

}  // namespace detail

GRAFT_INLINE std::vector<std::byte> save(const named_tensors& tensors, const metadata_map& metadata) {
    const std::string where = "io::save";
    return detail::guarded(where, [&] {
        const detail::prepared p = detail::prepare(where, tensors, metadata);
        std::vector<std::byte> out;
        out.reserve(8 + p.header.size() + p.data_size);
        detail::emit(p, [&](const std::byte* data, std::size_t n) { out.insert(out.end(), data, data + n); });
        return out;
    });
}

GRAFT_INLINE void save_file(const named_tensors& tensors, const std::filesystem::path& path,
                            const metadata_map& metadata) {
    const std::string where = graft::detail::concat("io::save_file(", detail::path_text(path), ")");
    detail::guarded(where, [&] {
        const detail::prepared p = detail::prepare(where, tensors, metadata);
        std::FILE* f = std::fopen(path.c_str(), "wb");
        if (f == nullptr) graft::detail::fail(graft::detail::concat(where, ": cannot open for writing: ", std::strerror(errno)));
        bool ok = true;
        int err = 0;
        detail::emit(p, [&](const std::byte* data, std::size_t n) {
            if (ok && n != 0 && std::fwrite(data, 1, n, f) != n) {
                ok = false;
                err = errno;
            }
        });
        if (std::fclose(f) != 0 && ok) {
            ok = false;
            err = errno;
        }
        if (!ok) {
            std::error_code ignored;
            std::filesystem::remove(path, ignored);
            graft::detail::fail(graft::detail::concat(where, ": write failed: ", std::strerror(err)));
        }
    });
}

GRAFT_INLINE safe_open::safe_open(std::span<const std::byte> bytes) : safe_open(bytes, "io::safe_open") {}

GRAFT_INLINE safe_open::safe_open(const std::filesystem::path& path)
    : safe_open(path, graft::detail::concat("io::safe_open(", detail::path_text(path), ")")) {}

GRAFT_INLINE safe_open::safe_open(std::span<const std::byte> bytes, std::string where)
    : where_(std::move(where)), bytes_(bytes) {
    detail::guarded(where_, [&] {
        if (bytes.size() < 8)
            graft::detail::fail(graft::detail::concat(where_, ": ", bytes.size(),
                                                      " bytes is too short for a safetensors file (8-byte header length first)"));
        const std::uint64_t n = detail::read_u64_le(bytes.data());
        if (n > max_header_size)
            graft::detail::fail(graft::detail::concat(where_, ": the header length is ", n,
                                                      " bytes, more than the format's limit of ", max_header_size));
        if (n > bytes.size() - 8)
            graft::detail::fail(graft::detail::concat(where_, ": the header length is ", n, " bytes but only ",
                                                      bytes.size() - 8, " bytes follow the length"));
        data_start_ = 8 + n;
        const std::string_view json(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<std::size_t>(n));
        detail::parsed_header h = detail::read_header(json, bytes.size() - data_start_, where_);
        for (auto& [name, info] : h.tensors) tensors_.emplace(std::move(name), std::move(info));
        metadata_ = std::move(h.metadata);
    });
}

GRAFT_INLINE safe_open::safe_open(const std::filesystem::path& path, std::string where)
    : where_(std::move(where)) {
    detail::guarded(where_, [&] {
        std::error_code ec;
        const auto status = std::filesystem::status(path, ec);
        if (ec) graft::detail::fail(graft::detail::concat(where_, ": ", ec.message()));
        if (!std::filesystem::is_regular_file(status))
            graft::detail::fail(graft::detail::concat(where_, ": not a regular file"));
        auto file = std::make_shared<detail::file_handle>();
        file->f = std::fopen(path.c_str(), "rb");
        if (file->f == nullptr)
            graft::detail::fail(graft::detail::concat(where_, ": cannot open: ", std::strerror(errno)));
        // Unbuffered: each read goes to the file as it is now (a file cut after its header was
        // read gives an error, not stale bytes), and tensor data goes straight to its storage.
        std::setvbuf(file->f, nullptr, _IONBF, 0);
        if (std::fseek(file->f, 0, SEEK_END) != 0)
            graft::detail::fail(graft::detail::concat(where_, ": cannot seek: ", std::strerror(errno)));
        const long end = std::ftell(file->f);
        if (end < 0) graft::detail::fail(graft::detail::concat(where_, ": cannot tell the size: ", std::strerror(errno)));
        file->size = static_cast<std::uint64_t>(end);
        if (file->size < 8)
            graft::detail::fail(graft::detail::concat(where_, ": ", file->size,
                                                      " bytes is too short for a safetensors file (8-byte header length first)"));
        std::byte prefix[8];
        file->read(0, prefix, 8, where_);
        const std::uint64_t n = detail::read_u64_le(prefix);
        if (n > max_header_size)
            graft::detail::fail(graft::detail::concat(where_, ": the header length is ", n,
                                                      " bytes, more than the format's limit of ", max_header_size));
        if (n > file->size - 8)
            graft::detail::fail(graft::detail::concat(where_, ": the header length is ", n, " bytes but only ",
                                                      file->size - 8, " bytes follow the length"));
        std::string json(static_cast<std::size_t>(n), '\0');
        file->read(8, json.data(), json.size(), where_);
        data_start_ = 8 + n;
        detail::parsed_header h = detail::read_header(json, file->size - data_start_, where_);
        for (auto& [name, info] : h.tensors) tensors_.emplace(std::move(name), std::move(info));
        metadata_ = std::move(h.metadata);
        file_ = std::move(file);
    });
}

GRAFT_INLINE std::vector<std::string> safe_open::keys() const {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const auto& [name, info] : tensors_) out.push_back(name);
    return out;
}

GRAFT_INLINE const tensor_info& safe_open::info(std::string_view name) const {
    const auto it = tensors_.find(name);
    if (it == tensors_.end())
        graft::detail::fail(graft::detail::concat(where_, ": no tensor named ", detail::show(name)));
    return it->second;
}

GRAFT_INLINE Tensor safe_open::get_tensor(std::string_view name) const {
    const auto it = tensors_.find(name);
    if (it == tensors_.end())
        graft::detail::fail(graft::detail::concat(where_, ": no tensor named ", detail::show(name)));
    return detail::guarded(where_, [&] {
        const tensor_info& info = it->second;
        return detail::make_tensor(where_, it->first, info, [&](std::byte* dst, std::size_t n) {
            if (file_) file_->read(data_start_ + info.begin, dst, n, where_);
            else if (n != 0) std::memcpy(dst, bytes_.data() + data_start_ + info.begin, n);
        });
    });
}

GRAFT_INLINE tensor_map safe_open::load_all() const {
    return detail::guarded(where_, [&] {
        for (const auto& [name, info] : tensors_)  // every dtype first: fail before reading any data
            if (!detail::find_format_dtype(info.dtype)->graft)
                graft::detail::fail(graft::detail::concat(where_, ": tensor ", detail::show(name), " has dtype ",
                                                          info.dtype,
                                                          ", which graft does not have (graft loads F16, BF16, F32, F64, I32, I64 and BOOL)"));
        tensor_map out;
        for (const auto& [name, info] : tensors_) out.emplace(name, get_tensor(name));
        return out;
    });
}

GRAFT_INLINE tensor_map load(std::span<const std::byte> bytes) { return safe_open(bytes, "io::load").load_all(); }

GRAFT_INLINE tensor_map load(std::string_view bytes) {
    return load(std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
}

GRAFT_INLINE tensor_map load_file(const std::filesystem::path& path) {
    return safe_open(path, graft::detail::concat("io::load_file(", detail::path_text(path), ")")).load_all();
}

}  // namespace graft::io
