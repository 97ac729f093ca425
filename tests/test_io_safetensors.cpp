// graft::io (safetensors): bytes written by hand from the format's description load to the
// right values and saving produces exactly those bytes; round trips of every dtype graft has,
// scalars, empty tensors and views; files, safe_open and metadata; and every malformed input
// (truncated, lying sizes, bad JSON, overlapping or uncovered data, ...) is a graft::error
// with a clear message (CI runs this file under ASan and UBSan too).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <unistd.h>

#include <graft/graft.hpp>

using namespace graft;
using Catch::Contains;

namespace {

/// The 8-byte little-endian length prefix, written out byte by byte.
std::string le64(std::uint64_t n) {
    std::string s;
    for (int k = 0; k < 8; ++k) {
        s += static_cast<char>(n & 0xff);
        n >>= 8;
    }
    return s;
}

/// A safetensors file: length prefix, header text as given, then the data bytes.
std::string file_of(std::string_view header, std::string_view data = {}) {
    return le64(header.size()) + std::string(header) + std::string(data);
}

std::string as_string(const std::vector<std::byte>& b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

/// The row-major bytes of a tensor (bitwise comparison, NaN included).
std::string raw_bytes(const Tensor& t) {
    const Tensor c = t.contiguous();
    return {static_cast<const char*>(c.raw_data()), static_cast<std::size_t>(c.numel()) * c.element_size()};
}

void check_same(const Tensor& a, const Tensor& b) {
    REQUIRE(a.defined());
    REQUIRE(b.defined());
    CHECK(a.type() == b.type());
    CHECK(a.sizes() == b.sizes());
    CHECK(raw_bytes(a) == raw_bytes(b));
}

/// A fresh path in the temporary directory, removed at the end of the scope.
struct temp_path {
    std::filesystem::path path;
    explicit temp_path(const std::string& name)
        : path(std::filesystem::temp_directory_path() /
               ("graft_io_test_" + std::to_string(::getpid()) + "_" + name)) {}
    ~temp_path() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

void write_file(const std::filesystem::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("io: a hand-written file loads, and saving gives the same bytes", "[io]") {
    // One F32 tensor "x" of shape [2] holding 1.0f and 2.0f. Header: 54 bytes of JSON padded
    // with 2 spaces to 56 (a multiple of 8); data: IEEE 754 little-endian 1.0f = 00 00 80 3f,
    // 2.0f = 00 00 00 40.
    const std::string expected = std::string("\x38\x00\x00\x00\x00\x00\x00\x00", 8) +
                                 R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})" + "  " +
                                 std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);
    REQUIRE(expected.size() == 8 + 56 + 8);

    const io::tensor_map m = io::load(expected);
    REQUIRE(m.size() == 1);
    const Tensor& x = m.at("x");
    CHECK(x.type() == dtype::float32);
    CHECK(x.sizes() == int_list{2});
    CHECK(x.to_vector<float>() == std::vector<float>{1.0f, 2.0f});
    CHECK_FALSE(x.requires_grad());

    CHECK(as_string(io::save({{"x", tensor({1.0f, 2.0f})}})) == expected);
}

TEST_CASE("io: the reference writer's bytes for an empty file, metadata and a 3-d tensor", "[io]") {
    // No tensors: "{}" padded to 8 bytes.
    CHECK(as_string(io::save(io::tensor_map{})) == le64(8) + "{}      ");
    CHECK(io::load(le64(8) + "{}      ").empty());
    // Metadata only: 35 bytes of JSON padded to 40.
    CHECK(as_string(io::save(io::tensor_map{}, {{"framework", "pt"}})) ==
          le64(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
    // [1, 2, 3] floats 0..5: 64 bytes of JSON, no padding needed.
    const Tensor t = arange(6).to(dtype::float32).view({1, 2, 3});
    std::string data;
    for (const char* f : {"\x00\x00\x00\x00", "\x00\x00\x80\x3f", "\x00\x00\x00\x40", "\x00\x00\x40\x40",
                          "\x00\x00\x80\x40", "\x00\x00\xa0\x40"})
        data.append(f, 4);
    const std::string expected =
        le64(64) + R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})" + data;
    CHECK(as_string(io::save({{"attn.0", t}})) == expected);
    check_same(io::load(expected).at("attn.0"), t);
}

TEST_CASE("io: round trip of every dtype, scalars, empty tensors and views", "[io]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    io::tensor_map in;
    in["f32"] = tensor({1.5f, -0.0f, nan, 3.0e38f, 1.0e-45f}, {5});
    in["f64"] = tensor({-inf, 0.1, 2.5, 1.0e-310}, {2, 2}, dtype::float64);
    in["i64"] = tensor({std::numeric_limits<std::int64_t>::min(), std::int64_t{-1}, std::int64_t{0},
                        std::numeric_limits<std::int64_t>::max()},
                       {4, 1});
    in["bool"] = tensor({true, false, false, true, true, false}, {3, 2});
    in["scalar_f32"] = scalar_tensor(7.25, dtype::float32);
    in["scalar_i64"] = scalar_tensor(std::int64_t{-42});
    in["scalar_bool"] = scalar_tensor(true);
    in["empty_f64"] = empty({0}, dtype::float64);
    in["empty_3d"] = empty({3, 0, 2}, dtype::int64);
    in["empty_bool"] = empty({0, 4}, dtype::bool_);
    in["rank5"] = arange(32).to(dtype::float64).view({2, 2, 2, 2, 2});
    in[""] = tensor({1.0f});                                  // the empty name is a name
    in["name with \"quotes\", \\ and \n"] = tensor({2.0f});  // escaped in the header
    in["unicode \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"] = tensor({3.0f});

    const std::vector<std::byte> bytes = io::save(in);
    std::uint64_t n = 0;
    for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<std::uint8_t>(bytes[static_cast<std::size_t>(k)]);
    CHECK(n % 8 == 0);

    const io::tensor_map out = io::load(bytes);
    REQUIRE(out.size() == in.size());
    for (const auto& [name, t] : in) {
        INFO(name);
        REQUIRE(out.count(name) == 1);
        check_same(out.at(name), t);
    }
    // Saving what was loaded gives the same file.
    CHECK(io::save(out) == bytes);
}

TEST_CASE("io: views are saved as their contiguous values", "[io]") {
    const Tensor base = arange(12).to(dtype::float32).view({3, 4});
    const Tensor t = base.t();                     // [4, 3], strides [1, 4]
    const Tensor s = base.narrow(1, 1, 2);         // [3, 2], offset 1
    const Tensor e = tensor({1.0, 2.0}, {2, 1}, dtype::float64).expand({2, 3});  // stride 0
    REQUIRE_FALSE(t.is_contiguous());
    const io::tensor_map out = io::load(io::save({{"t", t}, {"s", s}, {"e", e}}));
    check_same(out.at("t"), t.contiguous());
    check_same(out.at("s"), s.contiguous());
    check_same(out.at("e"), e.contiguous());
    CHECK(out.at("t").to_vector<float>() == std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
}

TEST_CASE("io: the reference writer's order (dtype, then name) and header text", "[io]") {
    // Whatever the input order: I64 first, then F64, F32, BOOL (descending in the reference
    // dtype enum), by name within a dtype; data offsets follow that order without gaps.
    const std::vector<std::pair<std::string, Tensor>> in = {
        {"b", tensor({true})},                            // 1 byte
        {"z", tensor({1.0f})},                            // 4 bytes
        {"a", tensor({2.0f, 3.0f})},                      // 8 bytes
        {"m", tensor({std::int64_t{5}})},                 // 8 bytes
        {"d", tensor({1.0}, {1}, dtype::float64)},        // 8 bytes
    };
    const std::string bytes = as_string(io::save(in, {{"k2", "v2"}, {"k1", "v1"}}));
    const std::string json = R"({"__metadata__":{"k1":"v1","k2":"v2"},)"
                             R"("m":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
                             R"("d":{"dtype":"F64","shape":[1],"data_offsets":[8,16]},)"
                             R"("a":{"dtype":"F32","shape":[2],"data_offsets":[16,24]},)"
                             R"("z":{"dtype":"F32","shape":[1],"data_offsets":[24,28]},)"
                             R"("b":{"dtype":"BOOL","shape":[1],"data_offsets":[28,29]}})";
    const std::size_t padded = (json.size() + 7) / 8 * 8;
    REQUIRE(bytes.size() == 8 + padded + 29);
    CHECK(bytes.substr(0, 8) == le64(padded));
    CHECK(bytes.substr(8, padded) == json + std::string(padded - json.size(), ' '));
    CHECK(bytes.substr(8 + padded + 28) == std::string("\x01", 1));
}

TEST_CASE("io: metadata and names are escaped as JSON and read back", "[io]") {
    const io::metadata_map meta = {{"format", "pt"},
                                   {"quote\"back\\slash", "line\nfeed\ttab\x01\x1f\x7f"},
                                   {"\xc3\xa9t\xc3\xa9", "\xf0\x9f\x98\x80"}};
    const std::string bytes = as_string(io::save({{"w", tensor({1.0f})}}, meta));
    CHECK_THAT(bytes, Contains(R"("quote\"back\\slash":"line\nfeed\ttab\u0001\u001f)" "\x7f\""));
    const std::span<const std::byte> view(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
    const io::safe_open f(view);
    CHECK(f.metadata() == meta);
    CHECK(f.keys() == std::vector<std::string>{"w"});

    // Escapes a writer may use and graft does not: \/, \b, \f, \r, \u with surrogate pairs.
    const std::string json =
        R"({"__metadata__":{"a\/b":"\b\f\r\u00e9\ud83d\ude00"},"\u0077":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})";
    const std::string file = file_of(json, std::string("\x00\x00\x80\x3f", 4));
    const std::span<const std::byte> v2(reinterpret_cast<const std::byte*>(file.data()), file.size());
    const io::safe_open g(v2);
    CHECK(g.metadata().at("a/b") == "\b\f\r\xc3\xa9\xf0\x9f\x98\x80");
    CHECK(g.get_tensor("w").item<float>() == 1.0f);
    // "__metadata__": null is no metadata.
    CHECK(io::load(file_of(R"({"__metadata__":null})")).empty());
}

TEST_CASE("io: headers any writer may produce are accepted", "[io]") {
    const std::string four("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);
    // Whitespace anywhere, fields in any order, entries not in offset order, empty tensors
    // sharing an offset, padding by whitespace of every kind.
    const std::string json = "\n{ \"b\" : { \"data_offsets\" : [ 4 , 8 ] , \"shape\" : [ ] , \"dtype\" : \"F32\" } ,\r\n"
                             "\t\"a\": {\"shape\": [1], \"dtype\": \"F32\", \"data_offsets\": [0, 4]},"
                             "\"e1\": {\"dtype\": \"I64\", \"shape\": [0, 5], \"data_offsets\": [4, 4]},"
                             "\"e2\": {\"dtype\": \"BOOL\", \"shape\": [0], \"data_offsets\": [4, 4]} } \t\r\n  ";
    const io::tensor_map m = io::load(file_of(json, four));
    REQUIRE(m.size() == 4);
    CHECK(m.at("a").to_vector<float>() == std::vector<float>{1.0f});
    CHECK(m.at("b").dim() == 0);
    CHECK(m.at("b").item<float>() == 2.0f);
    CHECK(m.at("e1").sizes() == int_list{0, 5});
    CHECK(m.at("e2").type() == dtype::bool_);
}

TEST_CASE("io: files, safe_open and dtypes graft does not have", "[io]") {
    temp_path dir("files");
    std::filesystem::create_directories(dir.path);
    const auto path = dir.path / "model.safetensors";
    const Tensor w = randn({4, 3}), b = zeros({3}, dtype::float64);
    io::save_file({{"w", w}, {"b", b}}, path, {{"format", "pt"}});
    CHECK(std::filesystem::file_size(path) == io::save({{"w", w}, {"b", b}}, {{"format", "pt"}}).size());

    const io::tensor_map m = io::load_file(path);
    check_same(m.at("w"), w);
    check_same(m.at("b"), b);

    const io::safe_open f(path);
    CHECK(f.keys() == std::vector<std::string>{"b", "w"});
    CHECK(f.metadata().at("format") == "pt");
    CHECK(f.info("w").dtype == "F32");
    CHECK(f.info("w").shape == int_list{4, 3});
    CHECK(f.info("b").begin == 0);  // F64 comes first
    CHECK(f.info("w").begin == 24);
    check_same(f.get_tensor("w"), w);
    CHECK(f.contains("b"));
    CHECK_FALSE(f.contains("c"));
    CHECK_THROWS_WITH(f.get_tensor("c"), Contains("io::safe_open(\"") && Contains("no tensor named \"c\""));
    CHECK_THROWS_WITH((void)f.info("c"), Contains("no tensor named \"c\""));

    // A U16 tensor (a dtype graft does not have): listed, its neighbours load, loading it (or everything) names it.
    const std::string u16 = file_of(R"({"h":{"dtype":"U16","shape":[2],"data_offsets":[0,4]},)"
                                     R"("x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                     std::string("\x80\x3f\x00\x40\x00\x00\x80\x3f", 8));
    const auto u16_path = dir.path / "u16.safetensors";
    write_file(u16_path, u16);
    const io::safe_open g(u16_path);
    CHECK(g.info("h").dtype == "U16");
    CHECK(g.get_tensor("x").item<float>() == 1.0f);
    CHECK_THROWS_WITH(g.get_tensor("h"), Contains("tensor \"h\" has dtype U16, which graft does not have"));
    CHECK_THROWS_WITH(io::load_file(u16_path), Contains("io::load_file(\"") && Contains("\"h\" has dtype U16"));
    CHECK_THROWS_WITH(io::load(u16), Contains("\"h\" has dtype U16"));

    // Files that are not there or not files.
    CHECK_THROWS_WITH(io::load_file(dir.path / "missing.safetensors"), Contains("missing.safetensors"));
    CHECK_THROWS_WITH(io::load_file(dir.path), Contains("not a regular file"));
    CHECK_THROWS_WITH(io::save_file({{"w", w}}, dir.path / "no_such_dir" / "x.safetensors"),
                      Contains("cannot open for writing"));
    // A file truncated after its header was read: reading the tensor fails cleanly.
    const auto cut = dir.path / "cut.safetensors";
    io::save_file({{"w", w}}, cut);
    const io::safe_open h(cut);
    std::filesystem::resize_file(cut, std::filesystem::file_size(cut) - 4);
    CHECK_THROWS_WITH(h.get_tensor("w"), Contains("the file ended"));
    // ... and a file truncated before: the header's sizes no longer match.
    CHECK_THROWS_WITH(io::load_file(cut), Contains("past the end of the data buffer"));
}

TEST_CASE("io: saving refuses what it cannot write", "[io]") {
    CHECK_THROWS_WITH(io::save({{"w", Tensor{}}}), Contains("tensor \"w\" is undefined"));
    const std::vector<std::pair<std::string, Tensor>> twice = {{"w", ones({1})}, {"w", ones({2})}};
    CHECK_THROWS_WITH(io::save(twice), Contains("two tensors are named \"w\""));
    CHECK_THROWS_WITH(io::save({{"__metadata__", ones({1})}}), Contains("reserved"));
    CHECK_THROWS_WITH(io::save({{"bad\xff", ones({1})}}), Contains("not valid UTF-8"));
    CHECK_THROWS_WITH(io::save({{"w", ones({1})}}, {{"k", "\xc0\x80"}}), Contains("not valid UTF-8"));
    CHECK_THROWS_WITH(io::save({{"w", ones({1})}}, {{std::string(io::max_header_size, 'k'), "v"}}),
                      Contains("more than the format's limit"));
}

TEST_CASE("io: malformed files are refused with a clear graft::error", "[io]") {
    const std::string f32_1("\x00\x00\x80\x3f", 4);
    const auto one = [](std::string_view entry) { return "{\"x\":" + std::string(entry) + "}"; };
    const std::string ok_entry = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
    REQUIRE(io::load(file_of(one(ok_entry), f32_1)).size() == 1);

    struct bad_case {
        const char* what;
        std::string bytes;
        const char* message;
    };
    const std::vector<bad_case> cases = {
        // The length prefix.
        {"empty input", "", "too short"},
        {"7 bytes", std::string(7, '\0'), "too short"},
        {"header length past the end", le64(100) + "{}", "only 2 bytes follow"},
        {"header length above the limit", le64(100'000'001) + "{}", "more than the format's limit"},
        {"header length 2^64-1", le64(~std::uint64_t{0}) + "{}", "more than the format's limit"},
        {"empty header", le64(0), "must be a JSON object"},
        // Encoding and JSON syntax.
        {"invalid UTF-8", file_of("{\"\xff\":1}"), "not valid UTF-8 at byte 2"},
        {"overlong UTF-8", file_of("{\"\xc0\x80\":1}"), "not valid UTF-8"},
        {"UTF-8 surrogate", file_of("{\"\xed\xa0\x80\":1}"), "not valid UTF-8"},
        {"truncated UTF-8", file_of("{}\xe2\x82"), "not valid UTF-8"},
        {"not an object", file_of("[]"), "must be a JSON object"},
        {"unterminated object", file_of("{"), "expected a tensor name"},
        {"unterminated string", file_of("{\"x"), "unterminated string"},
        {"missing colon", file_of(R"({"x" {}})"), "expected ':'"},
        {"trailing comma", file_of(R"({"__metadata__":{},})"), "expected a tensor name"},
        {"trailing comma in shape", file_of(one(R"({"dtype":"F32","shape":[1,],"data_offsets":[0,4]})"), f32_1),
         "non-negative integer"},
        {"control character in a string", file_of("{\"a\nb\":{}}"), "control character"},
        {"invalid escape", file_of(R"({"a\qb":{}})"), "invalid escape"},
        {"short \\u escape", file_of(R"({"a\u12":{}})"), "hexadecimal"},
        {"lone high surrogate", file_of(R"({"\ud800":{}})"), "surrogate"},
        {"lone low surrogate", file_of(R"({"\udc00":{}})"), "surrogate"},
        {"bytes after the object", file_of("{}x"), "unexpected bytes after"},
        {"NUL padding", file_of(std::string("{}\0\0\0\0\0\0", 8)), "unexpected bytes after"},
        {"two objects", file_of("{}{}"), "unexpected bytes after"},
        // The schema.
        {"duplicate tensor", file_of(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32_1 + f32_1),
         "duplicate key \"x\""},
        {"duplicate metadata", file_of(R"({"__metadata__":{},"__metadata__":{}})"), "duplicate key"},
        {"duplicate metadata key", file_of(R"({"__metadata__":{"k":"a","k":"b"}})"), "duplicate metadata key \"k\""},
        {"metadata value not a string", file_of(R"({"__metadata__":{"k":1}})"), "must be a string"},
        {"metadata an array", file_of(R"({"__metadata__":["k"]})"), "must be an object of strings"},
        {"entry not an object", file_of(R"({"x":[1]})"), "must be an object"},
        {"duplicate field", file_of(one(R"({"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]})"), f32_1),
         "duplicate field \"dtype\""},
        {"missing dtype", file_of(one(R"({"shape":[1],"data_offsets":[0,4]})"), f32_1), "has no \"dtype\""},
        {"missing shape", file_of(one(R"({"dtype":"F32","data_offsets":[0,4]})"), f32_1), "has no \"shape\""},
        {"missing offsets", file_of(one(R"({"dtype":"F32","shape":[1]})"), f32_1), "has no \"data_offsets\""},
        {"extra field", file_of(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4],"offsets":[0,4]})"), f32_1),
         "unknown field \"offsets\""},
        {"wrong dtype", file_of(one(R"({"dtype":"float32","shape":[1],"data_offsets":[0,4]})"), f32_1),
         "unknown dtype \"float32\""},
        {"lower-case dtype", file_of(one(R"({"dtype":"f32","shape":[1],"data_offsets":[0,4]})"), f32_1),
         "unknown dtype"},
        {"dtype not a string", file_of(one(R"({"dtype":4,"shape":[1],"data_offsets":[0,4]})"), f32_1),
         "must be a string"},
        {"shape not an array", file_of(one(R"({"dtype":"F32","shape":1,"data_offsets":[0,4]})"), f32_1),
         "must be an array"},
        {"negative shape", file_of(one(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})"), f32_1),
         "must not be negative"},
        {"fractional shape", file_of(one(R"({"dtype":"F32","shape":[1.0],"data_offsets":[0,4]})"), f32_1),
         "must be an integer"},
        {"exponent shape", file_of(one(R"({"dtype":"F32","shape":[1e0],"data_offsets":[0,4]})"), f32_1),
         "must be an integer"},
        {"leading zero", file_of(one(R"({"dtype":"F32","shape":[01],"data_offsets":[0,4]})"), f32_1),
         "leading zero"},
        {"shape entry above int64", file_of(one(R"({"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,4]})"), f32_1),
         "larger than int64"},
        {"shape entry above 2^64", file_of(one(R"({"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]})"), f32_1),
         "does not fit in 64 bits"},
        {"shape product overflows", file_of(one(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]})"), f32_1),
         "overflows int64"},
        {"byte size overflows", file_of(one(R"({"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,4]})"), f32_1),
         "byte size overflows"},
        {"zero-size tensor with huge sizes", file_of(one(R"({"dtype":"F32","shape":[0,4294967296,4294967296],"data_offsets":[0,0]})")),
         "overflows int64"},
        {"offsets with one entry", file_of(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0]})"), f32_1),
         "must be [begin, end]"},
        {"offsets with three entries", file_of(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4,8]})"), f32_1),
         "must be [begin, end]"},
        {"negative offset", file_of(one(R"({"dtype":"F32","shape":[1],"data_offsets":[-4,0]})"), f32_1),
         "must not be negative"},
        {"sub-byte dtype not filling bytes", file_of(one(R"({"dtype":"F4","shape":[3],"data_offsets":[0,1]})"), "\x11"),
         "whole number of bytes"},
        // Offsets against sizes and the buffer.
        {"offsets do not match the size", file_of(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})"), f32_1),
         "need 8 bytes"},
        {"end before begin", file_of(one(R"({"dtype":"F32","shape":[1],"data_offsets":[4,0]})"), f32_1),
         "the end is before the begin"},
        {"offsets past the buffer", file_of(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})"), "\x00\x00"),
         "past the end of the data buffer"},
        {"huge offsets", file_of(one(R"({"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,18446744073709551615]})"), f32_1),
         "need 4 bytes"},
        {"huge offsets of the right size", file_of(one(R"({"dtype":"F32","shape":[1],"data_offsets":[18446744073709551611,18446744073709551615]})"), f32_1),
         "belong to no tensor"},
        {"overlapping tensors", file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32_1 + f32_1),
         "overlaps tensor \"a\""},
        {"same range twice", file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f32_1),
         "overlaps"},
        {"gap between tensors", file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", f32_1 + f32_1 + f32_1),
         "4 bytes of the data buffer before tensor \"b\""},
        {"gap at the start", file_of(one(R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})"), f32_1 + f32_1),
         "belong to no tensor"},
        {"trailing data", file_of(one(ok_entry), f32_1 + "x"), "1 trailing bytes belong to no tensor"},
        {"data without tensors", file_of("{}", "x"), "trailing bytes"},
        // Data.
        {"bool byte 2", file_of(one(R"({"dtype":"BOOL","shape":[2],"data_offsets":[0,2]})"), std::string("\x01\x02", 2)),
         "holds byte 2 at element 1"},
        // Deep nesting: refused at the first level the schema does not allow, without recursion.
        {"nested arrays", file_of(one(std::string(100000, '[') + std::string(100000, ']'))), "must be an object"},
        {"nested shape", file_of(one("{\"shape\":" + std::string(100000, '['))), "non-negative integer"},
        {"nested objects", file_of(R"({"__metadata__":)" + std::string(100000, '{')), "metadata key"},
    };
    for (const bad_case& c : cases) {
        INFO(c.what);
        CHECK_THROWS_AS(io::load(c.bytes), graft::error);
        CHECK_THROWS_WITH(io::load(c.bytes), Contains("io::load") && Contains(c.message));
    }
    // Every prefix of a valid file is refused, and so is every single-byte change of its
    // length prefix; none reads out of bounds (ASan).
    const std::string good = as_string(io::save({{"a", tensor({1.0f, 2.0f})}, {"b", tensor({std::int64_t{3}})}},
                                                {{"k", "v"}}));
    for (std::size_t n = 0; n < good.size(); ++n) CHECK_THROWS_AS(io::load(good.substr(0, n)), graft::error);
    for (std::size_t k = 0; k < 8; ++k)
        for (unsigned v : {0x00u, 0x01u, 0x7fu, 0x80u, 0xffu}) {
            std::string b = good;
            if (static_cast<unsigned char>(b[k]) == v) continue;
            b[k] = static_cast<char>(v);
            CHECK_THROWS_AS(io::load(b), graft::error);
        }
    // graft still works.
    CHECK(io::load(good).at("b").item<std::int64_t>() == 3);
}
