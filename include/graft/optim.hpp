#pragma once
// graft/optim.hpp: the optimizers (graft::optim: SGD, Adam, AdamW with fused SIMD steps;
// RMSprop, Adagrad, Adadelta, LBFGS; param groups, state_dict) and the learning-rate schedulers
// (graft::optim::lr_scheduler: StepLR, MultiStepLR, ExponentialLR, LinearLR, LambdaLR,
// CosineAnnealingLR, OneCycleLR, SequentialLR, ReduceLROnPlateau), as torch.optim. Built on
// tensors and autograd only.
// Manual: docs/optim.md. Gradient clipping (nn::utils::clip_grad_norm_) is in graft/nn.hpp.
#include "graft/config.hpp"
#include "graft/tensor.hpp"
#include "graft/optim/optimizer.hpp"
#include "graft/optim/sgd.hpp"
#include "graft/optim/adam.hpp"
#include "graft/optim/rmsprop.hpp"
#include "graft/optim/adagrad.hpp"
#include "graft/optim/adadelta.hpp"
#include "graft/optim/lbfgs.hpp"
#include "graft/optim/lr_scheduler.hpp"
