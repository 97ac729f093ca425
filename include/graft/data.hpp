#pragma once
// graft/data.hpp: data loading, as torch.utils.data: Dataset, TensorDataset, Subset,
// random_split, default_collate and DataLoader (batches, shuffling per epoch, an optional worker
// thread that prepares batches ahead), and a text progress bar (data::progress) for training
// loops. Built on tensors and autograd only. Manual: docs/data.md.
#include "graft/config.hpp"
#include "graft/tensor.hpp"
#include "graft/data/collate.hpp"
#include "graft/data/dataloader.hpp"
#include "graft/data/dataset.hpp"
#include "graft/data/progress.hpp"
