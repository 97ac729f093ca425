#pragma once
// Definitions for graft/nn/serialize.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/nn/serialize.hpp"

namespace graft::nn {

GRAFT_INLINE void save_state_dict(const Module& module, const std::filesystem::path& path) {
    io::save_file(module.state_dict(), path, {{"format", "pt"}});
}

GRAFT_INLINE load_state_dict_result load_state_dict(Module& module, const std::filesystem::path& path, bool strict) {
    return module.load_state_dict(io::load_file(path), strict);
}

}  // namespace graft::nn
