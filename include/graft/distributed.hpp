#pragma once
// graft/distributed.hpp: data-parallel training over MPI (graft::distributed: the process
// group and its collectives; nn::parallel::DistributedDataParallel; DistributedSampler). Optional: needs an MPI implementation (CMake: link
// graft::distributed, which finds MPI); nothing else in graft includes it. Manual:
// docs/distributed.md.
#include "graft/config.hpp"
#include "graft/distributed/process_group.hpp"
#include "graft/distributed/data_parallel.hpp"
#include "graft/distributed/sampler.hpp"
