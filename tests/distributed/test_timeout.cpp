// A rank that fails before a collective does not hang the others: rank 0's all_reduce gives up
// after the group's timeout with a graft::error; destroying the group then aborts the job
// (an operation is still in MPI's hands). CTest passes it on rank 0's message (the job's
// exit status is MPI_Abort's) and fails it if the job outlives the test's own timeout.
#include <cstdio>
#include <stdexcept>

#include <graft/distributed.hpp>
#include <graft/graft.hpp>

namespace dist = graft::distributed;

int main() {
    dist::init_process_group({.timeout = std::chrono::milliseconds(300)});
    graft::Tensor x = graft::ones({16});
    try {
        if (dist::get_rank() != 0) throw std::runtime_error("this rank's step failed");
        dist::all_reduce(x);
        std::printf("rank 0: all_reduce returned although rank 1 never joined\n");
    } catch (const graft::error& e) {
        std::printf("rank %d: caught: %s\n", dist::get_rank(), e.what());
        try {
            dist::barrier();
        } catch (const graft::error& again) {
            std::printf("rank %d: then: %s\n", dist::get_rank(), again.what());
        }
    } catch (const std::exception& e) {
        std::printf("rank %d: %s\n", dist::get_rank(), e.what());
    }
    std::fflush(stdout);
    dist::destroy_process_group();
    return 0;
}
