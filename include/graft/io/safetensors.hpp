#pragma once
// Tensors to and from the safetensors format (the format of safetensors.torch.save_file /
// load_file, read and written by PyTorch and the wider ecosystem): an 8-byte little-endian
// header length N, N bytes of JSON naming each tensor's dtype, shape and byte range, then the
// raw little-endian row-major data. Reading is hardened against hostile files: every
// malformed input is a graft::error, never a read out of bounds or an allocation larger than
// the file. Knows only the core layer. Manual: docs/io.md.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/core/int_list.hpp"
#include "graft/core/tensor.hpp"

namespace graft::io {

/// Tensors by name: what load() and load_file() return (a state_dict's shape).
using tensor_map = std::map<std::string, Tensor>;
/// The header's free-form "__metadata__" section: string keys to string values.
using metadata_map = std::map<std::string, std::string>;

/// The largest header graft reads or writes (bytes): the reference implementation's limit.
inline constexpr std::uint64_t max_header_size = 100'000'000;

/// The tensors to save: a tensor_map, any range of (name, Tensor) pairs (a vector of pairs,
/// an unordered_map) or a braced list `{{"w", w}, {"b", b}}`. Holds handles, not copies of
/// the data; names must be unique. The file's order is the reference writer's whatever the
/// order here (see save()).
class named_tensors {
public:
    named_tensors(std::initializer_list<std::pair<std::string_view, Tensor>> items) : items_(items) {}
    template <std::ranges::input_range R>
        requires requires(std::ranges::range_reference_t<const R> e) {
            { std::string_view(e.first) };
            { Tensor(e.second) };
        }
    named_tensors(const R& items) {  // NOLINT: implicit by design, as the containers it views
        for (const auto& e : items) items_.emplace_back(std::string_view(e.first), Tensor(e.second));
    }
    [[nodiscard]] const std::vector<std::pair<std::string_view, Tensor>>& items() const noexcept { return items_; }

private:
    std::vector<std::pair<std::string_view, Tensor>> items_;
};

/// The file's bytes (safetensors.torch.save). Tensors are written in the reference writer's
/// order (by dtype, int64 first then float64, float32, bool; by name within a dtype), each as
/// its contiguous row-major values, so a non-contiguous view saves what it shows; the JSON
/// header is padded with spaces to a multiple of 8 bytes. Empty metadata writes no
/// "__metadata__" entry. Throws graft::error on an undefined tensor, a duplicate name, the
/// reserved name "__metadata__", a name or metadata text that is not valid UTF-8, or a header
/// larger than max_header_size.
[[nodiscard]] GRAFT_INLINE std::vector<std::byte> save(const named_tensors& tensors, const metadata_map& metadata = {});

/// Writes save()'s bytes to `path`, replacing the file (safetensors.torch.save_file). On an
/// I/O error the partial file is removed and graft::error names the path and the cause.
GRAFT_INLINE void save_file(const named_tensors& tensors, const std::filesystem::path& path,
                            const metadata_map& metadata = {});

/// The tensors of a safetensors file held in memory (safetensors.torch.load): new, contiguous
/// tensors that own their data. Every check of docs/io.md#what-is-checked is applied first;
/// any failure, or a tensor whose dtype graft does not have (U8, I16, F8_E4M3, ...), throws
/// graft::error naming the tensor and the problem.
[[nodiscard]] GRAFT_INLINE tensor_map load(std::span<const std::byte> bytes);
/// load() over a string's bytes, for files read into a std::string.
[[nodiscard]] GRAFT_INLINE tensor_map load(std::string_view bytes);

/// The tensors of a safetensors file (safetensors.torch.load_file). Reads the header, checks
/// it against the file's size, then reads each tensor's bytes straight into its storage:
/// memory use is the tensors plus the header, never more than the file holds.
[[nodiscard]] GRAFT_INLINE tensor_map load_file(const std::filesystem::path& path);

/// What the header says about one tensor. Covers every dtype of the format, including those
/// graft cannot load (they can still be listed).
struct tensor_info {
    std::string dtype;        ///< the format's name: "F32", "F64", "I64", "BOOL", "BF16", ...
    int_list shape;           ///< sizes, row-major
    std::uint64_t begin = 0;  ///< data_offsets[0]: first byte, from the start of the data buffer
    std::uint64_t end = 0;    ///< data_offsets[1]: one past the last byte
};

namespace detail {
struct file_handle;
}  // namespace detail

/// A safetensors file or buffer whose header has been read and checked, with its tensors
/// loaded one at a time on request (safetensors.safe_open): list names, read metadata, load
/// only the tensors needed. The whole header is validated up front, as load() does.
class safe_open {
public:
    /// Opens `path` and reads its header; the file stays open until the last copy is destroyed.
    GRAFT_INLINE explicit safe_open(const std::filesystem::path& path);
    /// Reads the header of a safetensors file held in memory; `bytes` must outlive this object.
    GRAFT_INLINE explicit safe_open(std::span<const std::byte> bytes);

    /// Tensor names, sorted.
    [[nodiscard]] GRAFT_INLINE std::vector<std::string> keys() const;
    /// The "__metadata__" section (empty when the file has none).
    [[nodiscard]] const metadata_map& metadata() const noexcept { return metadata_; }
    /// Dtype, shape and byte range of one tensor; graft::error when there is no such tensor.
    [[nodiscard]] GRAFT_INLINE const tensor_info& info(std::string_view name) const;
    [[nodiscard]] bool contains(std::string_view name) const { return tensors_.find(name) != tensors_.end(); }
    /// Loads one tensor into new storage. Thread-safe (reads from a file are serialized).
    [[nodiscard]] GRAFT_INLINE Tensor get_tensor(std::string_view name) const;
    /// Loads every tensor (what load() and load_file() return).
    [[nodiscard]] GRAFT_INLINE tensor_map load_all() const;

private:
    friend tensor_map load(std::span<const std::byte> bytes);
    friend tensor_map load_file(const std::filesystem::path& path);
    // The constructors, with the name error messages start with ("io::load_file(\"path\")", ...).
    GRAFT_INLINE safe_open(const std::filesystem::path& path, std::string where);
    GRAFT_INLINE safe_open(std::span<const std::byte> bytes, std::string where);

    std::string where_;                                  // "io::safe_open(\"path\")", for messages
    std::shared_ptr<detail::file_handle> file_;          // set for files
    std::span<const std::byte> bytes_;                   // set for buffers
    std::uint64_t data_start_ = 0;                       // 8 + header length
    std::map<std::string, tensor_info, std::less<>> tensors_;
    metadata_map metadata_;
};

}  // namespace graft::io

#if GRAFT_HAS_CODE
#include "graft/io/impl/safetensors.ipp"
#endif
