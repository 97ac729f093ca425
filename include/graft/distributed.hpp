#pragma once
// graft/distributed.hpp: data-parallel building blocks over MPI (graft::distributed: the
// process group and its collectives). Optional: needs an MPI implementation (CMake: link
// graft::distributed, which finds MPI); nothing else in graft includes it. Manual:
// docs/distributed.md.
#include "graft/config.hpp"
#include "graft/distributed/process_group.hpp"
