// graft::io (torch.save files): files written by torch.save (torch 1.13, tests/fixtures/
// gen_torch_save.py) load bit for bit with their sizes, strides, offsets and shared storages;
// a state_dict loads into an nn::Sequential and gives torch's output; save_torch round trips
// and writes the bytes of a file torch.load was checked to read; and every malformed or hostile
// input (truncated, bad CRC, lying sizes, storages too small, forbidden globals, bad pickles)
// is a graft::error with a clear message.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <graft/graft.hpp>

using namespace graft;
using Catch::Contains;
using namespace std::string_literals;

namespace {

const std::string fixtures = std::string(GRAFT_SOURCE_DIR) + "/tests/fixtures/torch_save/";

std::string read_all(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    REQUIRE(f.good());
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

std::span<const std::byte> bytes_of(const std::string& s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

std::string as_string(const std::vector<std::byte>& b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

/// Each element's bit pattern in hex, row-major, as expected.txt writes them.
std::vector<std::string> bit_patterns(const Tensor& t) {
    const Tensor c = t.contiguous();
    const auto* p = static_cast<const unsigned char*>(c.raw_data());
    const std::size_t es = c.element_size();
    std::vector<std::string> out;
    for (std::int64_t i = 0; i < c.numel(); ++i) {
        if (c.type() == dtype::bool_) {
            out.push_back(std::to_string(p[i]));
            continue;
        }
        std::string h;
        for (std::size_t k = es; k-- > 0;) {  // little-endian host
            static constexpr char hex[] = "0123456789abcdef";
            h += hex[p[i * es + k] >> 4];
            h += hex[p[i * es + k] & 15];
        }
        out.push_back(h);
    }
    return out;
}

const Tensor& find(const io::named_tensor_list& l, const std::string& key) {
    for (const auto& [k, t] : l)
        if (k == key) return t;
    FAIL("no tensor " << key);
    static Tensor none;
    return none;
}

std::uint32_t crc32(std::string_view s) {
    std::uint32_t c = 0xffffffffu;
    for (unsigned char b : s) {
        c ^= b;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    }
    return ~c;
}

std::string le(std::uint64_t v, int n) {
    std::string s;
    for (int k = 0; k < n; ++k, v >>= 8) s += static_cast<char>(v & 0xff);
    return s;
}

/// One entry of a hand-made zip; size and crc override what the central directory says.
struct entry {
    std::string name, data;
    std::optional<std::uint32_t> size{}, crc{};
};

/// A stored zip (what torch.save's layout needs), central directory written from `entries`.
std::string make_zip(const std::vector<entry>& entries) {
    std::string out, cd;
    for (const entry& e : entries) {
        const std::uint32_t crc = e.crc.value_or(crc32(e.data));
        const std::uint32_t size = e.size.value_or(static_cast<std::uint32_t>(e.data.size()));
        const std::size_t local = out.size();
        out += le(0x04034b50, 4) + le(20, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(crc, 4) + le(size, 4) + le(size, 4) +
               le(e.name.size(), 2) + le(0, 2) + e.name + e.data;
        cd += le(0x02014b50, 4) + le(20, 2) + le(20, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(crc, 4) + le(size, 4) +
              le(size, 4) + le(e.name.size(), 2) + le(0, 2) + le(0, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(local, 4) +
              e.name;
    }
    const std::size_t cd_at = out.size();
    out += cd;
    out += le(0x06054b50, 4) + le(0, 4) + le(entries.size(), 2) + le(entries.size(), 2) + le(cd.size(), 4) +
           le(cd_at, 4) + le(0, 2);
    return out;
}

// Pickle pieces (protocol 2), as torch.save writes them.
std::string ustr(std::string_view s) { return "X" + le(s.size(), 4) + std::string(s); }
std::string int1(int v) { return "K" + le(static_cast<std::uint64_t>(v), 1); }
std::string ints(std::initializer_list<int> v) {
    std::string s = "(";
    for (int x : v) s += int1(x);
    return s + "t";
}
/// _rebuild_tensor_v2(('storage', cls, key, 'cpu', numel), offset, size, stride, False, OrderedDict()).
std::string tensor_pickle(std::string_view cls, std::string_view key, int numel, int offset,
                          std::initializer_list<int> size, std::initializer_list<int> stride) {
    return "ctorch._utils\n_rebuild_tensor_v2\n((" + ustr("storage") + "ctorch\n" + std::string(cls) + "\n" + ustr(key) +
           ustr("cpu") + int1(numel) + "tQ" + int1(offset) + ints(size) + ints(stride) +
           "\x89" "ccollections\nOrderedDict\n)RtR";
}
/// An OrderedDict pickle {name: value-pickle}.
std::string dict_pickle(const std::vector<std::pair<std::string, std::string>>& items) {
    std::string s = "\x80\x02" "ccollections\nOrderedDict\n)R(";
    for (const auto& [k, v] : items) s += ustr(k) + v;
    return s + "u.";
}
/// An archive "a/" with the pickle, the storages "a/data/<key>" and the version record.
std::string archive(const std::string& pickle, const std::vector<std::pair<std::string, std::string>>& storages = {}) {
    std::vector<entry> e{{"a/data.pkl", pickle}};
    for (const auto& [k, d] : storages) e.push_back({"a/data/" + k, d});
    e.push_back({"a/version", "3\n"});
    return make_zip(e);
}
std::string floats(std::initializer_list<float> v) {
    std::string s;
    for (float f : v) s.append(reinterpret_cast<const char*>(&f), 4);
    return s;
}

void load_fails(const std::string& bytes, const std::string& message) {
    INFO("expected message: " << message);
    CHECK_THROWS_WITH(io::load_torch(bytes_of(bytes)), Contains(message));
}

}  // namespace

TEST_CASE("io torch: files of torch.save load bit for bit with their layout", "[io][torch_save]") {
    std::ifstream in(fixtures + "expected.txt");
    REQUIRE(in.good());
    std::map<std::string, io::named_tensor_list> files;
    auto file = [&](const std::string& f) -> const io::named_tensor_list& {
        auto it = files.find(f);
        if (it == files.end()) it = files.emplace(f, io::load_torch(std::filesystem::path(fixtures + f))).first;
        return it->second;
    };
    std::string line;
    int tensors = 0, shares = 0;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream s(line);
        std::string what, f, key;
        s >> what;
        if (what == "tensor") {
            std::string type;
            std::int64_t rank = 0, offset = 0, numel = 0;
            s >> f >> key >> type >> rank;
            int_list sizes(static_cast<std::size_t>(rank)), strides(static_cast<std::size_t>(rank));
            for (auto& x : sizes) s >> x;
            for (auto& x : strides) s >> x;
            s >> offset >> numel;
            std::vector<std::string> bits;
            for (std::string b; s >> b;) bits.push_back(b);
            INFO(f << " " << key);
            const Tensor& t = find(file(f), key);
            CHECK(name(t.type()) == type);
            CHECK(t.sizes() == sizes);
            CHECK(t.strides() == strides);
            CHECK(t.storage_offset() == offset);
            CHECK(t.numel() == numel);
            CHECK(bit_patterns(t) == bits);
            CHECK_FALSE(t.requires_grad());
            ++tensors;
        } else if (what == "shares") {
            std::string k2;
            s >> f >> key >> k2;
            INFO(f << " " << key << " " << k2);
            CHECK(find(file(f), key).shares_storage_with(find(file(f), k2)));
            ++shares;
        }
    }
    CHECK(tensors == 24);
    CHECK(shares == 2);
    // Storages not shared in the file are not shared in graft.
    const auto& v = file("views.pt");
    CHECK_FALSE(find(v, "base").shares_storage_with(find(v, "row")));
    // Order is the file's (the OrderedDict's insertion order).
    std::vector<std::string> names;
    for (const auto& [k, t] : file("mlp_f32.pt")) names.push_back(k);
    CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
    // Writing through one view shows in the other, as in torch.
    const Tensor base = find(v, "base"), tr = find(v, "t");
    base.data_ptr<float>()[1] = 42.0f;
    CHECK(tr.contiguous().data_ptr<float>()[3] == 42.0f);
}

TEST_CASE("io torch: a checkpoint's sub-dicts and values", "[io][torch_save]") {
    const io::torch_value ck = io::load_torch_object(std::filesystem::path(fixtures + "checkpoint.pt"));
    REQUIRE(ck.is_dict());
    CHECK(ck.at("epoch").to_int() == 3);
    CHECK(ck.contains("model"));
    CHECK_FALSE(ck.contains("scheduler"));
    const io::named_tensor_list model = ck.at("model").tensors();
    REQUIRE(model.size() == 4);
    CHECK(model[0].first == "0.weight");
    const io::named_tensor_list flat = io::load_torch(fixtures + "checkpoint.pt");
    REQUIRE(flat.size() == 4);  // the optimizer holds no tensors, epoch is not one
    CHECK(flat[3].first == "model.2.bias");
    const io::torch_value& group = ck.at("optimizer").at("param_groups").elements().at(0);
    CHECK(group.at("lr").to_double() == 0.125);
    CHECK(group.at("params").elements().size() == 4);
    CHECK(group.at("params").elements()[3].to_int() == 3);
    CHECK(ck.at("optimizer").at("state").items().empty());
    CHECK_THROWS_WITH(ck.at("scheduler"), Contains("io::torch_value::at: the dict has no key \"scheduler\" (its str keys: \"epoch\", \"model\", \"optimizer\")"));
    CHECK_THROWS_WITH(ck.at("epoch").to_string(), Contains("io::torch_value: a int is not a str"));
    CHECK_THROWS_WITH(ck.at("epoch").at("x"), Contains("a int is not a dict"));
}

TEST_CASE("io torch: a state_dict in float32, float16 and bfloat16 gives torch's output", "[io][torch_save][nn]") {
    std::ifstream in(fixtures + "expected.txt");
    REQUIRE(in.good());
    Tensor x;
    std::map<std::string, std::vector<double>> outputs;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream s(line);
        std::string what;
        s >> what;
        std::int64_t rank = 0, n0 = 0, n1 = 0;
        std::vector<double> v;
        std::string f;
        if (what == "input") {
            s >> rank >> n0 >> n1;
            for (double d; s >> d;) v.push_back(d);
            x = from_vector(v).reshape({n0, n1}).to(dtype::float32);
        } else if (what == "output") {
            s >> f >> rank >> n0 >> n1;
            for (double d; s >> d;) v.push_back(d);
            outputs[f] = v;
        }
    }
    REQUIRE(x.defined());
    REQUIRE(outputs.size() == 3);
    for (const auto& [f, want] : outputs) {
        INFO(f);
        auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>(),
                                                      std::make_shared<nn::Linear>(8, 3));
        model->load_state_dict(io::load_torch(std::filesystem::path(fixtures + f)));
        const auto got = model->forward(x).to(dtype::float64).to_vector<double>();
        REQUIRE(got.size() == want.size());
        for (std::size_t k = 0; k < want.size(); ++k) CHECK(std::fabs(got[k] - want[k]) <= 1e-6 * (1 + std::fabs(want[k])));
    }
}

namespace {
/// The tensors gen_torch_save.py's graft_tensors() describes (same values, views and order).
io::named_tensor_list graft_tensors() {
    const Tensor base = arange(0, 12, 1, dtype::float32) * 0.5 - 2.0;
    const Tensor w = base.view({3, 4});
    return {
        {"w", w},
        {"wt", w.t()},
        {"row", base.slice(0, 4, 8)},
        {"d", from_vector(std::vector<double>{1.5, -0.0, 1e300})},
        {"h", from_vector(std::vector<double>{1.0, -2.5, 65504.0}).to(dtype::float16)},
        {"bf", from_vector(std::vector<double>{1.0, -2.5, 3.0e38}).to(dtype::bfloat16)},
        {"i", from_vector(std::vector<std::int64_t>{-(std::int64_t{1} << 62), 7})},
        {"j", from_vector(std::vector<std::int64_t>{-5, 6}).reshape({1, 2}).to(dtype::int32)},
        {"b", from_vector(std::vector<bool>{true, false, true})},
        {"s", full({}, 4.25, dtype::float32)},
    };
}
}  // namespace

TEST_CASE("io torch: save_torch round trips and writes what torch.load reads", "[io][torch_save]") {
    const io::named_tensor_list in = graft_tensors();
    const std::vector<std::byte> bytes = io::save_torch(in);
    const io::named_tensor_list back = io::load_torch(bytes);
    REQUIRE(back.size() == in.size());
    for (std::size_t k = 0; k < in.size(); ++k) {
        INFO(in[k].first);
        CHECK(back[k].first == in[k].first);
        CHECK(back[k].second.type() == in[k].second.type());
        CHECK(back[k].second.sizes() == in[k].second.sizes());
        CHECK(back[k].second.strides() == in[k].second.strides());
        CHECK(back[k].second.storage_offset() == in[k].second.storage_offset());
        CHECK(bit_patterns(back[k].second) == bit_patterns(in[k].second));
    }
    CHECK(back[0].second.shares_storage_with(back[1].second));
    CHECK(back[0].second.shares_storage_with(back[2].second));
    CHECK_FALSE(back[0].second.shares_storage_with(back[3].second));
    // tests/fixtures/torch_save/graft_written.pt was written by this save_torch call, and
    // `/usr/bin/python3 tests/fixtures/gen_torch_save.py --check-graft tests/fixtures/torch_save/graft_written.pt`
    // (torch 1.13's torch.load) read it back to the same dtypes, sizes, strides, offsets, bits
    // and shared storages, printing OK. Python is not available at test time, so the test
    // checks that the writer still writes those exact bytes.
    CHECK(as_string(bytes) == read_all(fixtures + "graft_written.pt"));
    // Every data entry starts at a multiple of 64 bytes, as torch's writer aligns them.
    const std::string s = as_string(bytes);
    for (std::size_t at = s.find("PK\x03\x04"); at != std::string::npos; at = s.find("PK\x03\x04", at + 4)) {
        const std::size_t n = static_cast<unsigned char>(s[at + 26]) | static_cast<unsigned char>(s[at + 27]) << 8;
        const std::size_t x = static_cast<unsigned char>(s[at + 28]) | static_cast<unsigned char>(s[at + 29]) << 8;
        CHECK((at + 30 + n + x) % 64 == 0);
    }

    // Files; a state_dict of a module saves and loads back into another module.
    const auto path = std::filesystem::temp_directory_path() / ("graft_torch_" + std::to_string(::getpid()) + ".pt");
    auto a = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>(),
                                              std::make_shared<nn::Linear>(8, 3));
    auto b = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>(),
                                              std::make_shared<nn::Linear>(8, 3));
    io::save_torch(a->state_dict(), path);
    b->load_state_dict(io::load_torch(path));
    const Tensor x = arange(0, 8, 1, dtype::float32).reshape({2, 4});
    CHECK(equal(a->forward(x), b->forward(x)));
    std::filesystem::remove(path);

    CHECK_THROWS_WITH(io::save_torch({{"a", Tensor{}}}), Contains("io::save_torch: tensor \"a\" is undefined"));
    const Tensor one = ones({2});
    CHECK_THROWS_WITH(io::save_torch({{"a", one}, {"a", one}}), Contains("io::save_torch: two tensors are named \"a\""));
    CHECK_THROWS_WITH(io::save_torch({{"a", one}}, std::filesystem::path("/nonexistent-dir/x.pt")),
                      Contains("io::save_torch(\"/nonexistent-dir/x.pt\"): cannot open for writing"));
    // Empty dict, empty and zero-dim tensors.
    CHECK(io::load_torch(io::save_torch(io::named_tensor_list{})).empty());
    const auto e = io::load_torch(io::save_torch({{"e", empty({0, 3})}, {"z", zeros({})}}));
    REQUIRE(e.size() == 2);
    CHECK(e[0].second.sizes() == int_list{0, 3});
    CHECK(e[1].second.dim() == 0);
}

TEST_CASE("io torch: a forbidden global is an error naming it, and nothing runs", "[io][torch_save]") {
    CHECK_THROWS_WITH(io::load_torch(std::filesystem::path(fixtures + "evil_os_system.pt")),
                      Contains("evil_os_system/data.pkl: at byte 2: forbidden global \"os.system\" (graft runs no code "
                               "from a file: it allows only collections.OrderedDict"));
    load_fails(archive("\x80\x02" "cbuiltins\neval\n" + ustr("1") + "\x85R."), "forbidden global \"builtins.eval\"");
    load_fails(archive("\x80\x02" + ustr("posix") + ustr("system") + "\x93."), "forbidden global \"posix.system\"");
    // An allowed class that is not callable.
    load_fails(archive("\x80\x02" "ctorch\nFloatStorage\n)R."),
               "the global \"torch.FloatStorage\" cannot be called");
    load_fails(archive("\x80\x02" "ccollections\nOrderedDict\n" + ustr("x") + "\x85R."),
               "collections.OrderedDict called with arguments");
    load_fails(archive("\x80\x02" "ctorch\nByteStorage\n."),
               "storage class \"torch.ByteStorage\" holds a dtype graft does not have (graft loads torch.FloatStorage");
}

TEST_CASE("io torch: truncated, corrupt and lying archives are errors", "[io][torch_save]") {
    const std::string good = read_all(fixtures + "mlp_f32.pt");
    REQUIRE(io::load_torch(bytes_of(good)).size() == 4);
    // Every truncation is an error, never a crash.
    for (std::size_t n = 0; n < good.size(); ++n) {
        INFO("cut at " << n);
        CHECK_THROWS_AS(io::load_torch(bytes_of(good.substr(0, n))), graft::error);
    }
    load_fails(good.substr(0, 10), "10 bytes is too short for a torch.save file");
    load_fails(good.substr(0, good.size() - 1), "not a zip archive (no end of central directory record)");
    load_fails(std::string(100, 'x'), "not a zip archive");
    load_fails("\x80\x02\x8a\x0a" + std::string(100, 'x'), "legacy torch.save format");
    // Every single-byte change either loads or is an error, never a crash.
    for (std::size_t n = 0; n < good.size(); ++n) {
        std::string bad = good;
        bad[n] = static_cast<char>(bad[n] ^ 0x5a);
        try {
            (void)io::load_torch(bytes_of(bad));
        } catch (const graft::error&) {
        }
    }
    // CRC-32.
    const std::string f1 = floats({1, 2, 3, 4});
    const std::string pk = dict_pickle({{"w", tensor_pickle("FloatStorage", "0", 4, 0, {2, 2}, {2, 1})}});
    REQUIRE(io::load_torch(bytes_of(archive(pk, {{"0", f1}}))).size() == 1);
    load_fails(make_zip({{"a/data.pkl", pk}, {"a/data/0", f1, {}, crc32(f1) ^ 1}, {"a/version", "3\n"}}),
               "entry \"a/data/0\" fails its CRC-32 check");
    load_fails(make_zip({{"a/data.pkl", pk, {}, 7}, {"a/data/0", f1}, {"a/version", "3\n"}}),
               "entry \"a/data.pkl\" fails its CRC-32 check");
    // Lying sizes: the central directory says more bytes than the archive holds.
    load_fails(make_zip({{"a/data.pkl", pk}, {"a/data/0", f1, 1000}, {"a/version", "3\n"}}),
               "entry \"a/data/0\" (1000 bytes at byte");
    load_fails(make_zip({{"a/data.pkl", pk}, {"a/data/0", f1, 0xffffff00u}, {"a/version", "3\n"}}),
               "runs past the entries' area");
    // ... or a storage's element count that its entry does not hold (no allocation from it).
    load_fails(archive(dict_pickle({{"w", tensor_pickle("FloatStorage", "0", 200, 0, {2, 2}, {2, 1})}}), {{"0", f1}}),
               "storage \"0\" (torch.FloatStorage) declares 200 elements but its entry \"a/data/0\" holds 16 bytes");
    {
        std::string huge = archive(dict_pickle({{"w", "ctorch._utils\n_rebuild_tensor_v2\n((" + ustr("storage") +
                                                          "ctorch\nFloatStorage\n" + ustr("0") + ustr("cpu") +
                                                          "\x8a\x08" + le(std::uint64_t{1} << 61, 8) + "tQ" + int1(0) +
                                                          ints({1}) + ints({1}) + "\x89)tR"}}),
                                   {{"0", f1}});
        load_fails(huge, "declares 2305843009213693952 elements but its entry");
    }
    // Storage too small for the size, stride and offset.
    load_fails(archive(dict_pickle({{"w", tensor_pickle("FloatStorage", "0", 4, 0, {3, 2}, {2, 1})}}), {{"0", f1}}),
               "a tensor of size [3, 2], stride [2, 1] and storage offset 0 reaches element 5 of storage \"0\", which "
               "holds 4 elements: the storage is too small");
    load_fails(archive(dict_pickle({{"w", tensor_pickle("FloatStorage", "0", 4, 1, {2, 2}, {1, 2})}}), {{"0", f1}}),
               "reaches element 4 of storage \"0\"");
    load_fails(archive(dict_pickle({{"w", tensor_pickle("FloatStorage", "0", 4, 5, {0}, {1})}}), {{"0", f1}}),
               "storage offset 5 reaches element 5");
    // Storages missing or named with two dtypes.
    load_fails(archive(pk), "storage \"0\" has no entry \"a/data/0\" in the archive");
    load_fails(archive(dict_pickle({{"w", tensor_pickle("FloatStorage", "0", 4, 0, {4}, {1})},
                                    {"v", tensor_pickle("IntStorage", "0", 4, 0, {4}, {1})}}),
                       {{"0", f1}}),
               "storage \"0\" is named as torch.IntStorage of 4 elements and before as torch.FloatStorage of 4 elements");
    load_fails(archive(dict_pickle({{"b", tensor_pickle("BoolStorage", "0", 4, 0, {4}, {1})}}), {{"0", "\x01\x00\x02\x01"s}}),
               "bool storage \"0\" holds byte 2 at element 2");
    // Archive structure.
    load_fails(make_zip({{"a/data.pkl", pk}, {"a/data/0", f1}}), "no entry \"a/version\"");
    load_fails(make_zip({{"a/x", "1"}, {"a/version", "3\n"}}), "not a torch.save archive: no entry \"a/data.pkl\"");
    load_fails(make_zip({{"a/constants.pkl", "1"}, {"a/version", "3\n"}}), "TorchScript archive");
    load_fails(make_zip({{"data.pkl", pk}}), "is not inside an archive folder");
    load_fails(make_zip({{"a/data.pkl", pk}, {"a/data.pkl", pk}, {"a/version", "3\n"}}),
               "two zip entries are named \"a/data.pkl\"");
    load_fails(make_zip({{"a/data.pkl", pk}, {"a/version", "x\n"}}), "the version record holds \"x\", not a number");
    {
        std::string z = archive(pk, {{"0", f1}});
        const std::size_t cd = z.find("PK\x01\x02");
        z[cd + 10] = 8;  // method: deflate
        load_fails(z, "entry \"a/data.pkl\" is compressed (method 8)");
        z = archive(pk, {{"0", f1}});
        z[z.size() - 22 + 8] = z[z.size() - 22 + 10] = 100;  // the end record counts 100 entries
        load_fails(z, "the end record counts 100 entries but the central directory has only");
        z = archive(pk, {{"0", f1}});
        z[z.size() - 22 + 16] = static_cast<char>(0xf0);  // central directory offset past the end
        load_fails(z, "the central directory (");
        z = archive(pk, {{"0", f1}});
        z[cd + 42] = 3;  // a local header offset that points at no local header
        load_fails(z, "entry \"a/data.pkl\": no local header at byte 3");
    }
    // Files.
    CHECK_THROWS_WITH(io::load_torch(std::filesystem::path(fixtures + "nope.pt")),
                      Contains("io::load_torch(\"" + fixtures + "nope.pt\"): "));
    CHECK_THROWS_WITH(io::load_torch(std::filesystem::path(fixtures)), Contains("not a regular file"));
}

TEST_CASE("io torch: malformed pickles are errors", "[io][torch_save]") {
    auto fails = [](const std::string& pickle, const std::string& message) { load_fails(archive(pickle), message); };
    fails("\x80\x02" "h\x05.", "at byte 2: memo entry 5 was never stored");
    fails("\x80\x02" "j\xff\xff\xff\xff.", "memo entry 4294967295 was never stored");
    fails("\x80\x02" "q\x00."s, "stack underflow");
    fails("\x80\x02" "u.", "no MARK to pop");
    fails("\x80\x02" "}(" + ustr("k") + "u.", "SETITEMS with an odd number of values");
    fails("\x80\x02" "N(N" "u.", "SETITEM(S) on a None, not a dict");
    fails("\x80\x02" "Na.", "stack underflow");
    fails("\x80\x02" "NN.", "STOP with 2 values on the stack");
    fails("\x80\x02" "N.x", "1 bytes after STOP");
    fails("\x80\x02" "X\xff\xff\xff\x7f", "a string of 2147483647 bytes but only 0 left in the pickle");
    fails("\x80\x02" "X\x02\x00\x00\x00\xc3\x28."s, "a str that is not valid UTF-8");
    fails("\x80\x02" "\x8a\x09" + std::string(9, '\x01') + ".", "integer of 9 bytes does not fit in 64 bits");
    fails("\x80\x02" "S'x'\n.", "unsupported pickle opcode 0x53 ('S')");
    fails("\x80\x07.", "unsupported pickle protocol 7");
    fails("\x80\x02" "c" + std::string(300, 'a'), "GLOBAL argument longer than 256 bytes");
    fails("\x80\x02" "ccollections\nOrder", "the pickle ends inside GLOBAL");
    fails("\x80\x02" "K", "the pickle ends inside BININT1");
    fails("\x80\x02" "}]]s.", "a dict key of type list");
    fails("\x80\x02" "NN\x86Q.", "a persistent id that is not ('storage', class, key, location, numel)");
    fails("\x80\x02" "(" + ustr("storage") + "ccollections\nOrderedDict\n" + ustr("0") + ustr("cpu") + int1(1) + "tQ.",
          "whose storage class is a global, not a torch.*Storage");
    fails("\x80\x02" "ctorch._utils\n_rebuild_tensor_v2\n(NNNNNNt" "R.",
          "the first argument must be a storage, not a None");
    fails("\x80\x02" "ctorch._utils\n_rebuild_parameter\n(NNNt" "R.", "torch._utils._rebuild_parameter of a None");
    fails("\x80\x02" "NNb.", "BUILD on a None");
    fails("\x80\x02" "NN" "R.", "REDUCE calls a None, not a global");
    // Containers nested deeper than max_torch_nesting (and cycles) are refused.
    fails("\x80\x02" + std::string(100, ']') + std::string(99, 'a') + ".", "nests containers more than 64 deep");
    fails("\x80\x02" "]q\x00h\x00" "a."s, "nests containers more than 64 deep (or holds a cycle)");
    // A list shared many times over unfolds too far.
    {
        std::string p = "\x80\x02" "N";
        for (int k = 0; k < 40; ++k) p += "2\x86";  // t = (t, t)
        fails(p + ".", "the object unfolds to more than 16777216 values");
    }
    // Deep stacks of MARKs are fine (no recursion while reading).
    {
        std::string p = "\x80\x02" "]";
        for (int k = 0; k < 100000; ++k) p += "(";
        for (int k = 0; k < 100000; ++k) p += "1";
        REQUIRE(io::load_torch_object(bytes_of(archive(p + "."))).elements().empty());
    }
    // Parameters load as their tensor; duplicate keys keep the last value, as in Python.
    const std::string f1 = floats({1, 2, 3, 4});
    const std::string t = tensor_pickle("FloatStorage", "0", 4, 0, {4}, {1});
    const auto got = io::load_torch(bytes_of(archive(
        dict_pickle({{"p", "ctorch._utils\n_rebuild_parameter\n(" + t + "\x88" "ccollections\nOrderedDict\n)RtR"},
                     {"p", tensor_pickle("FloatStorage", "0", 4, 1, {3}, {1})}}),
        {{"0", f1}})));
    REQUIRE(got.size() == 1);
    CHECK(got[0].second.sizes() == int_list{3});
    CHECK(got[0].second.storage_offset() == 1);
    // Names that collide when flattened.
    CHECK_THROWS_WITH(io::load_torch(bytes_of(archive(
                          "\x80\x02}(" + ustr("a.b") + t + ustr("a") + "}" + ustr("b") + t + "su.", {{"0", f1}}))),
                      Contains("two tensors flatten to the name \"a.b\""));
}
