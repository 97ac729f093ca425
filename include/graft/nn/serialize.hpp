#pragma once
// A module's state_dict to and from a safetensors file (graft/io.hpp): the format PyTorch's
// safetensors.torch.save_model / load_model read and write, so weights move between graft
// and PyTorch by name ("0.weight", "fc1.bias"). Manual: docs/nn.md.
#include <filesystem>

#include "graft/io/safetensors.hpp"
#include "graft/nn/module.hpp"

namespace graft::nn {

/// Writes module.state_dict() to `path` (metadata {"format": "pt"}, as save_model writes).
GRAFT_INLINE void save_state_dict(const Module& module, const std::filesystem::path& path);

/// Reads a safetensors file and loads it with module.load_state_dict(dict, strict): a file
/// that cannot be read, or whose names, shapes or dtypes do not fit the module, is a
/// graft::error and leaves the module unchanged.
GRAFT_INLINE load_state_dict_result load_state_dict(Module& module, const std::filesystem::path& path,
                                                    bool strict = true);

}  // namespace graft::nn

#if GRAFT_HAS_CODE
#include "graft/nn/impl/serialize.ipp"
#endif
