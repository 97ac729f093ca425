#pragma once
// graft/io.hpp: tensors to and from files in the safetensors format (graft::io: save,
// save_file, load, load_file, safe_open) and in torch.save's zip format (load_torch,
// load_torch_object, save_torch). Needs only the core layer: it includes no ops,
// autograd or graph layer. Manual: docs/io.md.
#include "graft/config.hpp"
#include "graft/io/safetensors.hpp"
#include "graft/io/torch_save.hpp"
