// libFuzzer target for the safetensors reader (graft::io::load): whatever the bytes, graft
// throws graft::error or loads; it never crashes, reads out of bounds, leaks, trips a
// sanitizer or lets another exception out. For every input that loads it checks:
//   - safe_open over the same bytes lists the same names, with dtype, shape and byte range
//     consistent with the loaded tensors, and get_tensor gives the same bytes;
//   - the round trip: save(load(x), metadata) loads back to bitwise the same tensors and
//     metadata, and saving that again gives the same bytes (graft's writer is a fixed point).
// Build: cmake -DGRAFT_BUILD_FUZZ=ON with clang (see docs/build.md#fuzzing).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <graft/io.hpp>

namespace {

using namespace graft;

[[noreturn]] void report(const char* what, const std::string& detail) {
    std::fprintf(stderr, "fuzz_safetensors: %s\n%s\n", what, detail.c_str());
    std::abort();
}

std::string raw_bytes(const Tensor& t) {
    // Loaded tensors are contiguous and own their storage.
    if (!t.is_contiguous()) report("a loaded tensor is not contiguous", "");
    return {static_cast<const char*>(t.raw_data()), static_cast<std::size_t>(t.numel()) * t.element_size()};
}

void check_same(const io::tensor_map& a, const io::tensor_map& b, const char* what) {
    if (a.size() != b.size()) report(what, "different numbers of tensors");
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
        if (ia->first != ib->first) report(what, "different names: " + ia->first + " / " + ib->first);
        if (ia->second.type() != ib->second.type() || ia->second.sizes() != ib->second.sizes() ||
            raw_bytes(ia->second) != raw_bytes(ib->second))
            report(what, "tensor " + ia->first + " differs");
    }
}

/// Where the data buffer starts in a file whose header was accepted: after the length and header.
std::size_t data_start(const std::vector<std::byte>& input) {
    std::uint64_t n = 0;
    for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<std::uint8_t>(input[static_cast<std::size_t>(k)]);
    return static_cast<std::size_t>(8 + n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > (std::size_t{1} << 20)) return 0;
    // A copy of exactly `size` bytes, so that ASan sees any read past the input.
    const std::vector<std::byte> input(reinterpret_cast<const std::byte*>(data),
                                       reinterpret_cast<const std::byte*>(data) + size);
    io::tensor_map loaded;
    io::metadata_map metadata;
    try {
        const io::safe_open f{std::span<const std::byte>(input)};
        metadata = f.metadata();
        // The header alone may be valid with dtypes graft cannot load; load() must then refuse.
        bool loadable = true;
        for (const std::string& name : f.keys()) {
            const io::tensor_info& info = f.info(name);
            if (info.end < info.begin || data_start(input) + info.end > size) report("info: offsets out of the input", name);
            if (info.dtype != "F32" && info.dtype != "F64" && info.dtype != "F16" && info.dtype != "BF16" &&
                info.dtype != "I64" && info.dtype != "I32" && info.dtype != "BOOL")
                loadable = false;
        }
        try {
            loaded = io::load(std::span<const std::byte>(input));
        } catch (const graft::error& e) {
            // After the header passed, only a dtype graft does not have or a BOOL byte other
            // than 0 and 1 may make load() fail.
            bool bad_bool = false;
            for (const std::string& name : f.keys()) {
                const io::tensor_info& info = f.info(name);
                if (info.dtype != "BOOL") continue;
                for (std::uint64_t i = info.begin; i < info.end; ++i)
                    bad_bool = bad_bool || static_cast<unsigned char>(input[data_start(input) + i]) > 1;
            }
            if (loadable && !bad_bool) report("load() refused a file whose header safe_open accepted", e.what());
            return 0;
        }
        if (!loadable) report("load() accepted a dtype graft does not have", "");
        if (loaded.size() != f.keys().size()) report("load() and safe_open disagree on the tensors", "");
        for (const auto& [name, t] : loaded) {
            const io::tensor_info& info = f.info(name);
            if (t.sizes() != info.shape) report("shape differs from the header", name);
            if (static_cast<std::uint64_t>(t.numel()) * t.element_size() != info.end - info.begin)
                report("byte size differs from the header's offsets", name);
            const Tensor again = f.get_tensor(name);
            if (raw_bytes(again) != raw_bytes(t)) report("get_tensor differs from load", name);
        }
    } catch (const graft::error&) {
        return 0;
    } catch (const std::exception& e) {
        report("an exception other than graft::error escaped", e.what());
    }

    // Round trip through graft's writer.
    std::vector<std::byte> saved;
    try {
        saved = io::save(loaded, metadata);
    } catch (const graft::error& e) {
        report("save() refused what load() returned", e.what());
    }
    try {
        const io::tensor_map back = io::load(std::span<const std::byte>(saved));
        check_same(loaded, back, "save -> load changed the tensors");
        if (io::safe_open(std::span<const std::byte>(saved)).metadata() != metadata)
            report("save -> load changed the metadata", "");
        if (io::save(back, metadata) != saved) report("save is not a fixed point", "");
    } catch (const graft::error& e) {
        report("load() refused what save() wrote", e.what());
    }
    return 0;
}
