// libFuzzer target for the torch.save reader (graft::io::load_torch_object): whatever the bytes,
// graft throws graft::error or loads; it never crashes, reads out of bounds, leaks, trips a
// sanitizer or lets another exception out. Before loading, the harness rewrites the CRC-32 of
// every central directory entry it can find to match the entry's bytes (when they lie in the
// input), so that mutations get past the CRC check into the pickle and the layout checks; the
// first input byte's low bit turns that off (and the CRC check is fuzzed too).
// For every input that loads it checks the round trip: save_torch(tensors()) loads back to the
// same names, dtypes, sizes, strides, offsets and bytes.
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
    std::fprintf(stderr, "fuzz_torch_save: %s\n%s\n", what, detail.c_str());
    std::abort();
}

std::uint64_t get(const std::vector<std::byte>& b, std::size_t at, int n) {
    std::uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<std::uint8_t>(b[at + static_cast<std::size_t>(k)]);
    return v;
}

/// Sets each central directory entry's CRC to its data's (32-bit zip fields only; lenient).
void fix_crcs(std::vector<std::byte>& b) {
    if (b.size() < 22) return;
    std::size_t eocd = b.size() - 22;
    while (get(b, eocd, 4) != 0x06054b50) {
        if (eocd == 0 || b.size() - eocd > 22 + 0xffff) return;
        --eocd;
    }
    std::size_t at = static_cast<std::size_t>(get(b, eocd + 16, 4));
    for (std::uint64_t n = get(b, eocd + 10, 2); n > 0 && at + 46 <= b.size() && get(b, at, 4) == 0x02014b50; --n) {
        const std::uint64_t size = get(b, at + 24, 4), local = get(b, at + 42, 4);
        if (local + 30 <= b.size()) {
            const std::uint64_t data = local + 30 + get(b, local + 26, 2) + get(b, local + 28, 2);
            if (data <= b.size() && size <= b.size() - data) {
                std::uint32_t c = 0xffffffffu;
                for (std::uint64_t i = 0; i < size; ++i) {
                    c ^= static_cast<std::uint8_t>(b[data + i]);
                    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
                }
                c = ~c;
                for (int k = 0; k < 4; ++k) b[at + 16 + static_cast<std::size_t>(k)] = static_cast<std::byte>((c >> (8 * k)) & 0xff);
            }
        }
        at += 46 + get(b, at + 28, 2) + get(b, at + 30, 2) + get(b, at + 32, 2);
    }
}

std::string bytes_of(const Tensor& t) {
    const Tensor c = graft::detail::raw::contiguous(t);  // io.hpp has no autograd methods
    return {static_cast<const char*>(c.raw_data()), static_cast<std::size_t>(c.numel()) * c.element_size()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::byte> input(reinterpret_cast<const std::byte*>(data), reinterpret_cast<const std::byte*>(data) + size);
    if (size > 0 && (data[0] & 1) == 0) fix_crcs(input);
    io::named_tensor_list loaded;
    try {
        const io::torch_value v = io::load_torch_object(input);
        loaded = v.tensors();
    } catch (const graft::error&) {
        return 0;
    }
    // Tensors that share a storage but saw it with another dtype cannot happen; every loaded
    // tensor saves, and loads back the same.
    std::vector<std::byte> saved;
    io::named_tensor_list back;
    try {
        saved = io::save_torch(loaded);
        back = io::load_torch(saved);
    } catch (const graft::error& e) {
        report("save_torch(load_torch(x)) failed", e.what());
    }
    if (back.size() != loaded.size()) report("round trip", "different numbers of tensors");
    for (std::size_t k = 0; k < back.size(); ++k) {
        const Tensor &a = loaded[k].second, &b = back[k].second;
        if (back[k].first != loaded[k].first) report("round trip", "different names");
        if (a.type() != b.type() || a.sizes() != b.sizes() || a.strides() != b.strides() ||
            a.storage_offset() != b.storage_offset() || bytes_of(a) != bytes_of(b))
            report("round trip", "tensor " + loaded[k].first + " differs");
    }
    return 0;
}
