#pragma once
// graft/optim.hpp: the optimizers (graft::optim: SGD, Adam, AdamW with fused SIMD steps,
// param groups, state_dict) and the learning-rate schedulers (graft::optim::lr_scheduler:
// StepLR, CosineAnnealingLR), as torch.optim. Built on tensors and autograd only.
// Manual: docs/optim.md. Gradient clipping (nn::utils::clip_grad_norm_) is in graft/nn.hpp.
#include "graft/config.hpp"
#include "graft/tensor.hpp"
#include "graft/optim/optimizer.hpp"
#include "graft/optim/sgd.hpp"
#include "graft/optim/adam.hpp"
#include "graft/optim/lr_scheduler.hpp"
