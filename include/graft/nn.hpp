#pragma once
// graft/nn.hpp: the nn layer (graft::nn::functional: activations, linear, losses), built on
// tensors, ops and autograd only; it parses no graph layer. Manual: docs/nn.md.
#include "graft/config.hpp"
#include "graft/tensor.hpp"
#include "graft/nn/functional.hpp"
#include "graft/nn/utils.hpp"
