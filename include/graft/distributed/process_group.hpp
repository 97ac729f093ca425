#pragma once
// graft::distributed: a process group over an MPI communicator (torch.distributed's
// init_process_group / get_rank / get_world_size / barrier and the collectives all_reduce,
// broadcast, all_gather and reduce_scatter on tensors). Optional: only programs that include
// <graft/distributed.hpp> need MPI (CMake: link graft::distributed). Header-only by design:
// graft's compiled library never depends on MPI. Manual: docs/distributed.md.
//
// Every collective is started non-blocking and waited for with the group's timeout, so a
// rank whose peers never join gets a graft::error instead of hanging forever; bad arguments on
// some ranks only are reported to every rank by the agreement check, at once. MPI's own
// errors, those a collective's completion reports included, become graft::error naming the
// call. Collectives are not differentiable: they write tensors in place (bumping their version)
// and refuse tensors that require grad while grad mode is on. Tensors may be non-contiguous
// (transposed, sliced): MPI works on a contiguous copy, written back into the caller's tensor.
// graft uses MPI's C API only: skip the deprecated C++ bindings (they warn and cost compile time).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "graft/autograd/grad_mode.hpp"
#include "graft/core/error.hpp"
#include "graft/core/tensor.hpp"
#include "graft/tensor.hpp"

namespace graft::distributed {

/// How a collective combines the ranks' tensors (torch.distributed.ReduceOp.SUM / AVG).
enum class reduce_op { sum, avg };

/// Options of init_process_group.
struct init_options {
    /// How long a collective waits for the other ranks before it fails (PyTorch's default
    /// process-group timeout is 30 minutes).
    std::chrono::milliseconds timeout = std::chrono::minutes(30);
};

namespace detail {

/// The default process group (one per process, as torch.distributed's default group).
struct group_state {
    std::mutex mutex;  // serializes MPI calls unless MPI gave MPI_THREAD_MULTIPLE
    std::mutex test_mutex;  // serializes test_request's MPI_COMM_WORLD handler swap (MPI_THREAD_MULTIPLE)
    bool initialized = false;
    bool we_initialized_mpi = false;
    bool thread_multiple = false;
    std::string broken;  // why the group is unusable (a collective timed out or failed); empty: usable
    MPI_Comm comm = MPI_COMM_NULL;
    int rank = 0;
    int size = 1;
    std::chrono::milliseconds timeout{};
    /// Operations that timed out: their requests and the tensors MPI may still write.
    std::vector<std::pair<MPI_Request, std::vector<Tensor>>> abandoned;
};

inline group_state& group() {
    static group_state g;
    return g;
}

/// A lock on the group's mutex when MPI calls must not overlap (released otherwise).
inline std::unique_lock<std::mutex> mpi_lock() {
    group_state& g = group();
    return g.thread_multiple ? std::unique_lock<std::mutex>() : std::unique_lock<std::mutex>(g.mutex);
}

/// MPI's text for an error code.
inline std::string mpi_error_string(int code) {
    char text[MPI_MAX_ERROR_STRING] = {};
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error code " + std::to_string(code);
    return std::string(text, static_cast<std::size_t>(len));
}

/// graft::error for an MPI return code other than MPI_SUCCESS, naming graft's and MPI's call.
inline void check_mpi(int code, const char* op, const char* call) {
    if (code == MPI_SUCCESS) return;
    graft::detail::fail_with(op, ": ", call, " failed: ", mpi_error_string(code));
}

inline group_state& checked_group(const char* op) {
    group_state& g = group();
    graft::detail::check(g.initialized, op,
                         ": the default process group has not been initialized; call "
                         "distributed::init_process_group() first");
    graft::detail::check(g.broken.empty(), op, ": the process group is unusable: ", g.broken);
    return g;
}

inline MPI_Datatype mpi_type(const char* op, dtype t) {
    switch (t) {
        case dtype::float32: return MPI_FLOAT;
        case dtype::float64: return MPI_DOUBLE;
        case dtype::int64: return MPI_INT64_T;
        default: break;
    }
    graft::detail::fail_with(op, ": dtype ", t, " is not supported (float32, float64, int64)");
}

/// The checks every tensor a collective writes or reads passes. Any strides are fine; a tensor
/// the collective writes must not have elements that share memory (an expanded view), which
/// could hold only one of their results.
inline void check_tensor(const char* op, const Tensor& t, const char* what, bool written) {
    graft::detail::check(t.defined(), op, ": ", what, " is an undefined tensor");
    graft::detail::check(t.numel() <= std::numeric_limits<int>::max(), op, ": ", what, " has ", t.numel(),
                         " elements; one MPI call takes at most 2^31 - 1");
    graft::detail::check(!written || t.is_contiguous() ||
                             autograd::detail::is_non_overlapping(autograd::detail::geometry_of(t)),
                         op, ": ", what, " (sizes ", t.sizes(), ", strides ", t.strides(), ") has elements that "
                         "overlap in memory (an expanded view?), so it can't hold a result per element; pass a "
                         "clone()");
    graft::detail::check(!(autograd::is_grad_enabled() && t.requires_grad()), op, ": ", what,
                         " requires grad; collectives are not differentiable: call them under "
                         "graft::autograd::no_grad");
    (void)mpi_type(op, t.type());
}

/// The contiguous memory MPI reads or writes for `t`: t itself when contiguous, else a copy of
/// its elements in logical (row-major) order (written back by write_back).
[[nodiscard]] inline Tensor contiguous_buffer(const Tensor& t) {
    return t.is_contiguous() ? t : graft::detail::raw::contiguous(t);
}

/// Copies a result from the contiguous `buffer` into the caller's `t` (nothing to do when MPI
/// wrote t itself) and bumps t's version.
inline void write_back(const Tensor& t, const Tensor& buffer) {
    if (buffer.impl_ptr() != t.impl_ptr()) graft::detail::copy_elements(t, buffer);
    t.bump_version();
}

/// Elements [offset, offset + t.numel()) of the contiguous 1-d `flat`, shaped like t.
[[nodiscard]] inline Tensor flat_part(const Tensor& flat, std::int64_t offset, const Tensor& t) {
    return graft::detail::raw::view(graft::detail::raw::narrow(flat, 0, offset, t.numel()), t.sizes());
}

/// MPI_Test: has `req` completed? A graft::error when it completed with an error (a peer's
/// mismatched collective: MPI_ERR_TRUNCATE), which also makes the group unusable (the peers'
/// side of the collective is in an unknown state). Open MPI 4.1 reports a non-blocking
/// collective's error in MPI_Test on MPI_COMM_WORLD, not on the request's communicator, and
/// MPI_COMM_WORLD aborts the job by default: it returns errors for the duration of the call (the
/// program's handler is put back, under a lock so that threads cannot lose it).
inline bool test_request(MPI_Request& req, const char* op) {
    group_state& g = group();
    int done = 0, code = MPI_SUCCESS;
    {
        std::lock_guard<std::mutex> lock(g.thread_multiple ? g.test_mutex : g.mutex);
        MPI_Errhandler previous = MPI_ERRHANDLER_NULL;
        const bool swapped = MPI_Comm_get_errhandler(MPI_COMM_WORLD, &previous) == MPI_SUCCESS &&
                             MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) == MPI_SUCCESS;
        code = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (swapped) MPI_Comm_set_errhandler(MPI_COMM_WORLD, previous);
        if (previous != MPI_ERRHANDLER_NULL) MPI_Errhandler_free(&previous);
    }
    if (code != MPI_SUCCESS) {
        req = MPI_REQUEST_NULL;  // completed (with the error) and freed by MPI_Test
        g.broken = std::string("an earlier collective failed (") + op + ": MPI_Test: " + mpi_error_string(code) + ")";
        check_mpi(code, op, "MPI_Test");
    }
    return done != 0;
}

/// Waits for `req` until done or `deadline`; false on timeout (the request stays pending).
inline bool wait_until(MPI_Request& req, std::chrono::steady_clock::time_point deadline, const char* op) {
    for (int spins = 0;; ++spins) {
        if (test_request(req, op)) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
        else std::this_thread::yield();
    }
}

[[noreturn]] inline void timed_out(const char* op, MPI_Request req, std::vector<Tensor> keep) {
    group_state& g = group();
    g.broken = "an earlier collective timed out while other ranks had not joined it";
    g.abandoned.emplace_back(req, std::move(keep));
    graft::detail::fail_with(op, ": timed out after ", g.timeout.count(), " ms waiting for the other ranks (rank ",
                             g.rank, " of ", g.size,
                             "); the process group is unusable from here on (a rank that failed or "
                             "skipped this collective)");
}

/// What the agreement all-reduce compares across ranks: a collective's element count, dtype and
/// one more argument (the reduce op, broadcast's src, DDP's bucket layout).
struct agreement {
    std::int64_t numel = 0;
    dtype type = dtype::float32;
    std::int64_t extra = 0;
};

/// The agreement all-reduce: checks that every rank calls `op` with the same element count,
/// dtype and argument (a mismatch would make MPI read or write out of bounds), and carries each
/// rank's verdict on its own arguments, so that bad input on some ranks fails every rank at once
/// instead of leaving the others to wait for the timeout. One small all-reduce of maxima: every
/// rank sees the same verdict and throws alike, before any data moves, so the group stays usable.
/// `local_error`: this rank's own check failure (nullptr: none), rethrown here on this rank.
inline void check_same_everywhere(const char* op, const agreement& mine, const std::string* local_error) {
    group_state& g = group();
    constexpr std::int64_t none = std::numeric_limits<std::int64_t>::min();  // a failed rank's values: ignored
    const bool failed = local_error != nullptr;
    const std::int64_t type = static_cast<std::int64_t>(mine.type);
    // Each value and its negation (maxima of both give the range); then the failed ranks:
    // max of (size - rank) gives the lowest, max of (rank + 1) the highest.
    std::int64_t v[8] = {none, none, none, none, none, none, failed ? g.size - g.rank : 0, failed ? g.rank + 1 : 0};
    if (!failed) {
        const std::int64_t values[6] = {mine.numel, -mine.numel, type, -type, mine.extra, -mine.extra};
        std::memcpy(v, values, sizeof values);
    }
    MPI_Request req = MPI_REQUEST_NULL;
    try {
        {
            auto lock = mpi_lock();
            check_mpi(MPI_Iallreduce(MPI_IN_PLACE, v, 8, MPI_INT64_T, MPI_MAX, g.comm, &req), op, "MPI_Iallreduce");
        }
        if (!wait_until(req, std::chrono::steady_clock::now() + g.timeout, op)) timed_out(op, req, {});
    } catch (const graft::error& e) {
        // The agreement itself failed (timed out: a peer never joined): on a rank with bad input,
        // its own error still comes first.
        if (failed) graft::detail::fail_with(*local_error, " (then: ", e.what(), ")");
        throw;
    }
    if (failed) throw graft::error(*local_error);
    if (v[6] != 0) {
        const std::int64_t lowest = g.size - v[6], highest = v[7] - 1;
        if (lowest == highest)
            graft::detail::fail_with(op, ": rank ", lowest, " reported bad input to this collective (its own "
                                     "error says what); no data was exchanged and the process group stays usable");
        graft::detail::fail_with(op, ": ranks ", lowest, " and ", highest, " (and maybe ranks between) reported bad "
                                 "input to this collective (their own errors say what); no data was exchanged and "
                                 "the process group stays usable");
    }
    graft::detail::check(v[0] == mine.numel && -v[1] == mine.numel && v[2] == -v[3] && v[4] == -v[5], op,
                         ": the ranks disagree on the tensor's element count, dtype or arguments (this rank: ",
                         mine.numel, " elements of ", mine.type, "); every rank must call it alike");
}

/// The agreement for arguments this rank has already checked (DDP's bucket layout).
inline void check_same_everywhere(const char* op, std::int64_t numel, dtype type, std::int64_t extra = 0) {
    check_same_everywhere(op, agreement{numel, type, extra}, nullptr);
}

/// Runs a collective's local argument checks (`local_checks` throws graft::error on misuse and
/// returns the agreement's values), then the agreement with every rank, which reports a failure
/// on any rank to all of them: a rank with bad input does not leave the others waiting.
template <class F>
inline void check_everywhere(const char* op, F&& local_checks) {
    agreement mine;
    std::string local_error;
    bool failed = false;
    try {
        mine = local_checks();
    } catch (const graft::error& e) {
        local_error = e.what();
        failed = true;
    }
    check_same_everywhere(op, mine, failed ? &local_error : nullptr);
}

}  // namespace detail

/// A collective in flight (torch.distributed.Work). Returned by every collective; already
/// complete unless it was started with async_op = true. Destroying a work that is still in
/// flight waits for it (as long as the group's timeout).
class work {
public:
    work() = default;
    work(const work&) = delete;
    work& operator=(const work&) = delete;
    work(work&& o) noexcept { *this = std::move(o); }
    work& operator=(work&& o) noexcept {
        if (this != &o) {
            finish_quietly();
            op_ = o.op_;
            req_ = std::exchange(o.req_, MPI_REQUEST_NULL);
            keep_ = std::move(o.keep_);
            on_done_ = std::move(o.on_done_);
            o.on_done_ = nullptr;
        }
        return *this;
    }
    ~work() { finish_quietly(); }

    /// Has the operation finished (tests once, without waiting)?
    [[nodiscard]] bool is_completed() {
        if (req_ == MPI_REQUEST_NULL) return true;
        const bool done = detail::test_request(req_, op_);
        if (done) complete();
        return done;
    }

    /// Waits until the operation finished; graft::error after the group's timeout.
    void wait() {
        if (req_ == MPI_REQUEST_NULL) return;
        if (!detail::wait_until(req_, std::chrono::steady_clock::now() + detail::group().timeout, op_)) {
            const MPI_Request r = std::exchange(req_, MPI_REQUEST_NULL);
            on_done_ = nullptr;
            detail::timed_out(op_, r, std::move(keep_));
        }
        complete();
    }

    /// Internal: a started request, the tensors MPI reads or writes until it completes, and what
    /// to do once it has (an average's division, copies out of a staging buffer).
    work(const char* op, MPI_Request req, std::vector<Tensor> keep, std::function<void()> on_done)
        : op_(op), req_(req), keep_(std::move(keep)), on_done_(std::move(on_done)) {}

private:
    void complete() {
        req_ = MPI_REQUEST_NULL;
        if (on_done_) {
            auto f = std::move(on_done_);
            on_done_ = nullptr;
            f();
        }
        keep_.clear();
    }
    void finish_quietly() noexcept {
        if (req_ == MPI_REQUEST_NULL) return;
        try {
            wait();
        } catch (const graft::error&) {
            // Timed out: the request and its tensors were handed to the group (broken).
        }
    }

    const char* op_ = "distributed";
    MPI_Request req_ = MPI_REQUEST_NULL;
    std::vector<Tensor> keep_;
    std::function<void()> on_done_;
};

/// Starts the default process group over MPI_COMM_WORLD (initializing MPI if the program has
/// not: MPI_Init_thread asking for MPI_THREAD_MULTIPLE). A second call is a graft::error, as
/// in PyTorch; so is a call after destroy_process_group() finalized MPI.
inline void init_process_group(init_options options = {}) {
    detail::group_state& g = detail::group();
    constexpr const char* op = "distributed::init_process_group";
    graft::detail::check(!g.initialized, op, ": trying to initialize the default process group twice");
    graft::detail::check(options.timeout.count() > 0, op, ": the timeout must be positive");
    int finalized = 0;
    MPI_Finalized(&finalized);
    graft::detail::check(!finalized, op, ": MPI was already finalized (MPI can be initialized once per process)");
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
        detail::check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), op, "MPI_Init_thread");
        g.we_initialized_mpi = true;
    } else {
        MPI_Query_thread(&provided);
    }
    g.thread_multiple = provided >= MPI_THREAD_MULTIPLE;
    detail::check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &g.comm), op, "MPI_Comm_dup");
    detail::check_mpi(MPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN), op, "MPI_Comm_set_errhandler");
    detail::check_mpi(MPI_Comm_rank(g.comm, &g.rank), op, "MPI_Comm_rank");
    detail::check_mpi(MPI_Comm_size(g.comm, &g.size), op, "MPI_Comm_size");
    g.timeout = options.timeout;
    g.broken.clear();
    g.initialized = true;
}

/// Is the default process group initialized (torch.distributed.is_initialized)?
[[nodiscard]] inline bool is_initialized() noexcept { return detail::group().initialized; }

/// This process's rank in the default group, 0 .. world size - 1.
[[nodiscard]] inline int get_rank() {
    const auto& g = detail::group();
    graft::detail::check(g.initialized, "distributed::get_rank: the default process group has not been initialized");
    return g.rank;
}

/// The number of processes in the default group.
[[nodiscard]] inline int get_world_size() {
    const auto& g = detail::group();
    graft::detail::check(g.initialized,
                         "distributed::get_world_size: the default process group has not been initialized");
    return g.size;
}

/// Ends the default group; finalizes MPI if init_process_group initialized it. Operations that
/// timed out are waited for once more (the group's timeout); if a peer never joined them the
/// job is aborted (MPI_Abort) rather than finalized with buffers still in MPI's hands.
inline void destroy_process_group() {
    detail::group_state& g = detail::group();
    graft::detail::check(g.initialized,
                         "distributed::destroy_process_group: the default process group has not been initialized");
    constexpr const char* op = "distributed::destroy_process_group";
    for (auto& [req, keep] : g.abandoned) {
        bool done = true;
        try {
            done = detail::wait_until(req, std::chrono::steady_clock::now() + g.timeout, op);
        } catch (const graft::error&) {
            // Completed with an error: MPI no longer holds the buffers.
        }
        if (!done) MPI_Abort(g.comm, 1);
    }
    g.abandoned.clear();
    const int freed = MPI_Comm_free(&g.comm);
    g.comm = MPI_COMM_NULL;
    g.initialized = false;
    g.broken.clear();
    int finalized = MPI_SUCCESS;
    if (g.we_initialized_mpi) {
        g.we_initialized_mpi = false;
        finalized = MPI_Finalize();
    }
    detail::check_mpi(freed, op, "MPI_Comm_free");
    detail::check_mpi(finalized, op, "MPI_Finalize");
}

/// Waits until every rank has called it (torch.distributed.barrier).
inline void barrier() {
    constexpr const char* op = "distributed::barrier";
    detail::group_state& g = detail::checked_group(op);
    MPI_Request req = MPI_REQUEST_NULL;
    {
        auto lock = detail::mpi_lock();
        detail::check_mpi(MPI_Ibarrier(g.comm, &req), op, "MPI_Ibarrier");
    }
    work(op, req, {}, nullptr).wait();
}

namespace detail {
inline work start_all_reduce(const char* name, group_state& g, Tensor& tensor, reduce_op op, bool async_op);
}  // namespace detail

/// Reduces `tensor` across all ranks in place: every rank ends with the sum (or the average)
/// of all ranks' values (torch.distributed.all_reduce). float32, float64 (avg: floating point
/// only) and int64; any strides (a non-contiguous tensor is reduced through a contiguous copy
/// and written back); every rank must pass the same element count and dtype (checked: a
/// graft::error on every rank). With async_op the returned work is waited for later.
inline work all_reduce(Tensor& tensor, reduce_op op = reduce_op::sum, bool async_op = false) {
    constexpr const char* name = "distributed::all_reduce";
    detail::group_state& g = detail::checked_group(name);
    detail::check_everywhere(name, [&] {
        detail::check_tensor(name, tensor, "the tensor", true);
        graft::detail::check(op == reduce_op::sum || tensor.type() != dtype::int64, name,
                             ": reduce_op::avg needs a floating-point tensor");
        return detail::agreement{tensor.numel(), tensor.type(), static_cast<std::int64_t>(op)};
    });
    return detail::start_all_reduce(name, g, tensor, op, async_op);
}

namespace detail {
/// What completes a sum that MPI wrote into `buffer` (`result` itself or its contiguous copy):
/// reduce_op::avg divides by the group's size, then the values go to `result`, whose version
/// is bumped (the tensor changed under autograd's eyes).
inline std::function<void()> finish_reduction(const Tensor& result, const Tensor& buffer, reduce_op op, int size) {
    return [t = result, b = buffer, op, size] {
        if (op == reduce_op::avg) {
            autograd::no_grad guard;
            Tensor(b).div_(static_cast<double>(size));
        }
        write_back(t, b);
    };
}

/// all_reduce without the agreement check (which waits for every rank): for callers that
/// checked once for many calls (DistributedDataParallel checks its bucket layout at
/// construction), so that an async_op call returns at once.
inline work start_all_reduce(const char* name, group_state& g, Tensor& tensor, reduce_op op, bool async_op) {
    const Tensor buffer = contiguous_buffer(tensor);
    MPI_Request req = MPI_REQUEST_NULL;
    {
        auto lock = detail::mpi_lock();
        detail::check_mpi(MPI_Iallreduce(MPI_IN_PLACE, buffer.raw_data(), static_cast<int>(buffer.numel()),
                                         detail::mpi_type(name, buffer.type()), MPI_SUM, g.comm, &req),
                          name, "MPI_Iallreduce");
    }
    work w(name, req, {tensor, buffer}, finish_reduction(tensor, buffer, op, g.size));
    if (!async_op) w.wait();
    return w;
}
}  // namespace detail

/// Copies `tensor` of rank `src` into `tensor` of every rank (torch.distributed.broadcast); any
/// strides (see all_reduce).
inline work broadcast(Tensor& tensor, int src, bool async_op = false) {
    constexpr const char* name = "distributed::broadcast";
    detail::group_state& g = detail::checked_group(name);
    detail::check_everywhere(name, [&] {
        detail::check_tensor(name, tensor, "the tensor", true);
        graft::detail::check(src >= 0 && src < g.size, name, ": src ", src, " is not a rank (world size ", g.size,
                             ")");
        return detail::agreement{tensor.numel(), tensor.type(), src};
    });
    const Tensor buffer = detail::contiguous_buffer(tensor);
    MPI_Request req = MPI_REQUEST_NULL;
    {
        auto lock = detail::mpi_lock();
        detail::check_mpi(MPI_Ibcast(buffer.raw_data(), static_cast<int>(buffer.numel()),
                                     detail::mpi_type(name, buffer.type()), src, g.comm, &req),
                          name, "MPI_Ibcast");
    }
    work w(name, req, {tensor, buffer}, [t = tensor, buffer] { detail::write_back(t, buffer); });
    if (!async_op) w.wait();
    return w;
}

/// output[i] = rank i's `tensor`, on every rank (torch.distributed.all_gather): `output` holds
/// world-size tensors of `tensor`'s dtype and element count (resizing is not done: they must
/// match), elements taken in logical (row-major) order; any strides.
inline work all_gather(std::vector<Tensor>& output, const Tensor& tensor, bool async_op = false) {
    constexpr const char* name = "distributed::all_gather";
    detail::group_state& g = detail::checked_group(name);
    detail::check_everywhere(name, [&] {
        detail::check_tensor(name, tensor, "the input tensor", false);
        graft::detail::check(output.size() == static_cast<std::size_t>(g.size), name, ": the output list has ",
                             output.size(), " tensors, the world size is ", g.size);
        for (const Tensor& o : output) {
            detail::check_tensor(name, o, "an output tensor", true);
            graft::detail::check(o.type() == tensor.type() && o.numel() == tensor.numel(), name,
                                 ": every output tensor must have the input's dtype and element count");
        }
        return detail::agreement{tensor.numel(), tensor.type()};
    });
    const std::int64_t n = tensor.numel();
    const Tensor input = detail::contiguous_buffer(tensor);
    Tensor staging = empty({n * g.size}, tensor.type());
    MPI_Request req = MPI_REQUEST_NULL;
    {
        auto lock = detail::mpi_lock();
        const MPI_Datatype type = detail::mpi_type(name, tensor.type());
        detail::check_mpi(MPI_Iallgather(input.raw_data(), static_cast<int>(n), type, staging.raw_data(),
                                         static_cast<int>(n), type, g.comm, &req),
                          name, "MPI_Iallgather");
    }
    std::vector<Tensor> outs = output;
    std::function<void()> done = [outs, staging, n] {
        for (std::size_t i = 0; i < outs.size(); ++i)
            detail::write_back(outs[i], detail::flat_part(staging, static_cast<std::int64_t>(i) * n, outs[i]));
    };
    std::vector<Tensor> keep = output;
    keep.push_back(input);
    keep.push_back(staging);
    work w(name, req, std::move(keep), std::move(done));
    if (!async_op) w.wait();
    return w;
}

/// output = the reduction over ranks of input[this rank] (torch.distributed.reduce_scatter):
/// `input` holds world-size tensors of `output`'s dtype and element count (elements in logical
/// order); any strides.
inline work reduce_scatter(Tensor& output, const std::vector<Tensor>& input, reduce_op op = reduce_op::sum,
                           bool async_op = false) {
    constexpr const char* name = "distributed::reduce_scatter";
    detail::group_state& g = detail::checked_group(name);
    detail::check_everywhere(name, [&] {
        detail::check_tensor(name, output, "the output tensor", true);
        graft::detail::check(op == reduce_op::sum || output.type() != dtype::int64, name,
                             ": reduce_op::avg needs a floating-point tensor");
        graft::detail::check(input.size() == static_cast<std::size_t>(g.size), name, ": the input list has ",
                             input.size(), " tensors, the world size is ", g.size);
        for (const Tensor& in : input) {
            detail::check_tensor(name, in, "an input tensor", false);
            graft::detail::check(in.type() == output.type() && in.numel() == output.numel(), name,
                                 ": every input tensor must have the output's dtype and element count");
        }
        return detail::agreement{output.numel(), output.type(), static_cast<std::int64_t>(op)};
    });
    const std::int64_t n = output.numel();
    Tensor staging = empty({n * g.size}, output.type());
    for (std::size_t i = 0; i < input.size(); ++i)
        graft::detail::copy_elements(detail::flat_part(staging, static_cast<std::int64_t>(i) * n, input[i]), input[i]);
    // MPI writes the result here; a non-contiguous output gets it by write_back.
    const Tensor result = output.is_contiguous() ? output : empty({n}, output.type());
    MPI_Request req = MPI_REQUEST_NULL;
    {
        auto lock = detail::mpi_lock();
        detail::check_mpi(MPI_Ireduce_scatter_block(staging.raw_data(), result.raw_data(), static_cast<int>(n),
                                                    detail::mpi_type(name, output.type()), MPI_SUM, g.comm, &req),
                          name, "MPI_Ireduce_scatter_block");
    }
    work w(name, req, {output, staging, result},
           detail::finish_reduction(
               output, result.impl_ptr() == output.impl_ptr() ? output : graft::detail::raw::view(result, output.sizes()),
               op, g.size));
    if (!async_op) w.wait();
    return w;
}

}  // namespace graft::distributed
