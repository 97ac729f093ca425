#pragma once
// graft: PyTorch-style tensors, autograd, compile-time graphs, graph capture and a
// profiling executor for C++20. This header includes every layer; the per-layer headers
// graft/tensor.hpp, graft/expr.hpp, graft/ir.hpp, graft/capture.hpp, graft/jit.hpp,
// graft/io.hpp, graft/nn.hpp, graft/optim.hpp and graft/data.hpp include only what they need and
// compile faster.
#include "graft/tensor.hpp"
#include "graft/expr.hpp"
#include "graft/ir.hpp"
#include "graft/capture.hpp"
#include "graft/jit.hpp"
#include "graft/io.hpp"
#include "graft/nn.hpp"
#include "graft/optim.hpp"
#include "graft/data.hpp"
#include "graft/nn/script.hpp"
