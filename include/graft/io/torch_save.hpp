#pragma once
// Tensors to and from the files of torch.save / torch.load (the zip format of PyTorch >= 1.6:
// a stored, uncompressed zip holding `<archive>/data.pkl`, a pickle of the saved object, and
// one `<archive>/data/<key>` entry per storage). The pickle is read by a small pickle machine
// that executes no code: it knows the opcodes torch.save writes and an allow-list of globals
// (collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter, the
// torch.*Storage classes); any other global is a graft::error naming it. Like the safetensors
// reader, every offset, size, count and memo index is checked: a malformed or hostile file is
// a graft::error, never a read out of bounds or an allocation larger than the file. Knows only
// the core layer. Manual: docs/io.md#torchsave-files.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/core/tensor.hpp"
#include "graft/io/safetensors.hpp"

namespace graft::io {

/// Tensors by name in the file's order: what load_torch() returns. The same type as
/// nn::named_tensor_list (a state_dict), so `model.load_state_dict(io::load_torch(path))`
/// takes it as it is.
using named_tensor_list = std::vector<std::pair<std::string, Tensor>>;

/// The largest nesting of containers (dicts, lists, tuples) load_torch_object() accepts.
inline constexpr int max_torch_nesting = 64;

/// One value of the object a torch.save file holds, read without running code: None, a bool,
/// an int, a float, a str, a tuple, a list, a dict (an OrderedDict too) or a tensor. Values are
/// immutable and cheap to copy (they share their contents). Accessors of the wrong kind throw
/// graft::error naming the kind the value has.
class torch_value {
public:
    enum class kind : std::uint8_t { none, boolean, integer, floating, string, tuple, list, dict, tensor };
    struct data;

    torch_value() = default;  ///< None
    explicit torch_value(std::shared_ptr<const data> d) : d_(std::move(d)) {}

    [[nodiscard]] GRAFT_INLINE kind type() const noexcept;
    /// "None", "bool", "int", "float", "str", "tuple", "list", "dict" or "Tensor".
    [[nodiscard]] GRAFT_INLINE std::string_view type_name() const noexcept;
    [[nodiscard]] bool is_none() const noexcept { return type() == kind::none; }
    [[nodiscard]] bool is_dict() const noexcept { return type() == kind::dict; }
    [[nodiscard]] bool is_tensor() const noexcept { return type() == kind::tensor; }

    [[nodiscard]] GRAFT_INLINE bool to_bool() const;
    /// An int (a bool counts as 0 or 1, as in Python).
    [[nodiscard]] GRAFT_INLINE std::int64_t to_int() const;
    /// A float or an int.
    [[nodiscard]] GRAFT_INLINE double to_double() const;
    [[nodiscard]] GRAFT_INLINE const std::string& to_string() const;
    [[nodiscard]] GRAFT_INLINE const Tensor& to_tensor() const;
    /// The elements of a tuple or a list.
    [[nodiscard]] GRAFT_INLINE const std::vector<torch_value>& elements() const;
    /// The (key, value) pairs of a dict, in insertion order.
    [[nodiscard]] GRAFT_INLINE const std::vector<std::pair<torch_value, torch_value>>& items() const;
    /// The value under a str key of a dict; graft::error when it has none.
    [[nodiscard]] GRAFT_INLINE const torch_value& at(std::string_view key) const;
    [[nodiscard]] GRAFT_INLINE bool contains(std::string_view key) const;

    /// Every tensor in this value, depth first in order, named by the path of keys that leads to
    /// it joined with '.' (dict keys that are str as they are, int and bool keys and list or
    /// tuple positions in decimal): {"model": {"0.weight": w}, "epoch": 3} gives
    /// [("model.0.weight", w)]. A tensor alone is named "". Other values are skipped. Two tensors
    /// that flatten to one name are an error.
    [[nodiscard]] GRAFT_INLINE named_tensor_list tensors() const;

private:
    std::shared_ptr<const data> d_;
};

/// The object of a torch.save file held in memory (torch.load(..., weights_only=True) with
/// map_location="cpu"). Tensors that share a storage in the file share one graft storage (they
/// are views of it, with the file's sizes, strides and offsets); tensors do not require grad.
[[nodiscard]] GRAFT_INLINE torch_value load_torch_object(std::span<const std::byte> bytes);
/// The same from a file; storages are read straight into graft storage.
[[nodiscard]] GRAFT_INLINE torch_value load_torch_object(const std::filesystem::path& path);

/// Every tensor of a torch.save file, flattened (torch_value::tensors()): a state_dict gives
/// its keys as they are, a checkpoint {"model": sd, ...} gives "model.<key>" (take a sub-dict
/// with load_torch_object(path).at("model").tensors()).
[[nodiscard]] GRAFT_INLINE named_tensor_list load_torch(std::span<const std::byte> bytes);
[[nodiscard]] GRAFT_INLINE named_tensor_list load_torch(const std::filesystem::path& path);

/// The bytes torch.save(OrderedDict(tensors), f) writes, which torch.load reads: a zip
/// (stored entries, CRC-32, each storage's data 64-byte aligned as torch's writer does)
/// of a protocol-2 pickle of an OrderedDict of tensors in the given order. Tensors that share
/// graft storage are written as views of one storage (as torch does; the whole storage is
/// written); a tensor that requires grad is saved as its values (requires_grad False). Throws
/// graft::error on an undefined tensor, a duplicate name, or an archive over 4 GiB (Zip64 is
/// read, not written).
[[nodiscard]] GRAFT_INLINE std::vector<std::byte> save_torch(const named_tensors& tensors);
/// Writes save_torch()'s bytes to `path`, replacing it; the partial file is removed on error.
GRAFT_INLINE void save_torch(const named_tensors& tensors, const std::filesystem::path& path);

}  // namespace graft::io

#if GRAFT_HAS_CODE
#include "graft/io/impl/torch_save.ipp"
#endif
