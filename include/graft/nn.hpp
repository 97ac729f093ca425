#pragma once
// graft/nn.hpp: the nn layer (graft::nn::functional: activations, linear, losses; nn::Module,
// layers (linear, convolution, normalization, attention, transformer) and containers;
// nn::init; state_dict files), built on tensors, ops, autograd and io
// only; it parses no graph layer (graft/nn/script.hpp, included by graft/graft.hpp, bridges
// modules to jit::script and capture::aot). Manual: docs/nn.md.
#include "graft/config.hpp"
#include "graft/tensor.hpp"
#include "graft/nn/functional.hpp"
#include "graft/nn/init.hpp"
#include "graft/nn/layers.hpp"
#include "graft/nn/module.hpp"
#include "graft/nn/modules.hpp"
#include "graft/nn/rnn.hpp"
#include "graft/nn/serialize.hpp"
#include "graft/nn/transformer.hpp"
#include "graft/nn/utils.hpp"
