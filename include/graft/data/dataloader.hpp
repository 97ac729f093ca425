#pragma once
// data::DataLoader (torch.utils.data.DataLoader): batches of a map-style data set, in order or
// shuffled anew each epoch, collated by default_collate or a given function, prepared ahead
// of the training loop by an optional worker thread. Iterating the loader (range-for) runs one
// epoch; size() is the number of batches (PyTorch's len(loader)). Manual: docs/data.md.
//
//   data::DataLoader loader(data::TensorDataset(x, y), {.batch_size = 64, .shuffle = true, .num_workers = 1});
//   for (auto& batch : loader) { /* batch[0]: [64, ...] rows of x, batch[1]: rows of y */ }
#include <algorithm>
#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/autograd/grad_mode.hpp"
#include "graft/core/error.hpp"
#include "graft/core/factories.hpp"
#include "graft/core/tensor.hpp"
#include "graft/data/collate.hpp"
#include "graft/data/dataset.hpp"

namespace graft::data {

/// DataLoader's settings, PyTorch's keyword arguments in PyTorch's order, for designated
/// initializers: `{.batch_size = 32, .shuffle = true}`.
struct DataLoaderOptions {
    /// Examples per batch (>= 1); the last batch of an epoch is smaller unless drop_last.
    std::int64_t batch_size = 1;
    /// A new random order every epoch (randperm of the data set's size, drawn from `generator`
    /// when each epoch begins); otherwise 0, 1, 2, ...
    bool shuffle = false;
    /// 0: batches are made on the iterating thread, when asked for. 1: one worker thread makes
    /// them ahead, up to prefetch_factor batches. (graft has no worker processes; more than one
    /// worker is a graft::error.)
    int num_workers = 0;
    /// Drops the last batch of an epoch when it is smaller than batch_size.
    bool drop_last = false;
    /// The generator shuffle draws from; null: graft::default_generator() (so manual_seed
    /// makes the order reproducible). Not owned: it must outlive the loader's epochs.
    graft::generator* generator = nullptr;
    /// Batches the worker prepares ahead of the one being used (>= 1); ignored without a worker.
    int prefetch_factor = 2;
};

namespace detail {

/// Checks a DataLoader's options (PyTorch's messages where it has them).
GRAFT_INLINE void check_options(const DataLoaderOptions& options);

/// Batches in an epoch of `size` examples.
[[nodiscard]] GRAFT_INLINE std::int64_t batch_count(std::int64_t size, const DataLoaderOptions& options);

/// An epoch's order of examples: randperm(size, options.generator or the default one) when
/// shuffling, else 0 .. size-1.
[[nodiscard]] GRAFT_INLINE std::vector<std::int64_t> epoch_order(std::int64_t size, const DataLoaderOptions& options);

/// One thread that calls produce(b) for b = 0, 1, ..., count-1 in order, at most `depth` batches
/// ahead of the consumer: produce(b) starts only after release(b - depth). The consumer calls
/// wait_for(b) (returns once produce(b) has returned), takes batch b, then release(b).
/// The mutex orders produce(b)'s writes before wait_for(b)'s return and the consumer's reads
/// before release(b), so the two threads can share slots without locks of their own.
/// produce must not throw (the DataLoader catches a batch's exception into its slot); if it
/// does, wait_for rethrows that exception for that batch and every later one.
/// The destructor stops the thread after the batch it is making and joins it.
class prefetch_thread {
public:
    GRAFT_INLINE prefetch_thread(std::int64_t count, std::int64_t depth, std::function<void(std::int64_t)> produce);
    GRAFT_INLINE ~prefetch_thread();
    prefetch_thread(const prefetch_thread&) = delete;
    prefetch_thread& operator=(const prefetch_thread&) = delete;

    GRAFT_INLINE void wait_for(std::int64_t b);
    GRAFT_INLINE void release(std::int64_t b);
    /// Stops the thread (after the batch it is making, if any) and joins it.
    GRAFT_INLINE void stop() noexcept;

private:
    GRAFT_INLINE void run() noexcept;

    std::int64_t count_;
    std::int64_t depth_;
    std::function<void(std::int64_t)> produce_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::int64_t produced_ = 0;  // batches 0 .. produced_-1 are made
    std::int64_t released_ = 0;  // batches 0 .. released_-1 are taken by the consumer
    bool stopping_ = false;
    std::exception_ptr failure_;  // produce threw (it should not)
    std::thread thread_;
};

}  // namespace detail

/// Batches of a data set (torch.utils.data.DataLoader). `Example` is the data set's example
/// type; `Batch` what the collate function makes of a std::vector<Example> (default_collate's
/// result by default). Construct it from a data set (by value, or a std::shared_ptr to one;
/// class template argument deduction finds Example and Batch), options, and optionally a
/// collate function. Iterating it runs an epoch: `begin()` draws the epoch's order, starts the
/// worker thread if any, and makes the first batch; `++it` moves to the next batch. An exception
/// thrown by the data set's get() or the collate function is rethrown, as is, by the `begin()`
/// or `++` that makes that batch (the iterator then stands after it: `++` goes on with the next
/// batch). Leaving the loop early (break, an exception) destroys the iterator, which stops the
/// worker after the batch it is making and joins it. A loader can run several epochs at once
/// (each begin() is its own epoch, as each iter(loader)); one iterator is used from one thread.
template <class Example, class Batch = collate_result_t<Example>>
class DataLoader {
    static_assert(!std::is_void_v<Batch>,
                  "graft::data::DataLoader<Example>: default_collate has no rule for Example (it batches "
                  "Tensor, numbers, and pairs, tuples and vectors of them); pass a collate function: "
                  "DataLoader(dataset, options, [](std::vector<Example> examples) { return batch; })");

public:
    using example_type = Example;
    using batch_type = Batch;
    using collate_function = std::function<Batch(std::vector<Example>)>;

    class iterator;

    /// The default collate (default_collate).
    explicit DataLoader(std::shared_ptr<Dataset<Example>> dataset, DataLoaderOptions options = {})
        : DataLoader(std::move(dataset), options, collate_function(default_collate_function())) {}
    DataLoader(std::shared_ptr<Dataset<Example>> dataset, DataLoaderOptions options, collate_function collate)
        : dataset_(std::move(dataset)), options_(options), collate_(std::move(collate)) {
        graft::detail::check(dataset_ != nullptr, "data::DataLoader: the data set is null");
        graft::detail::check(static_cast<bool>(collate_), "data::DataLoader: the collate function is empty");
        detail::check_options(options_);
    }
    /// A data set by value: copied or moved into a shared_ptr the loader keeps.
    template <std::derived_from<Dataset<Example>> D>
    explicit DataLoader(D dataset, DataLoaderOptions options = {})
        : DataLoader(detail::share_dataset(std::move(dataset), "data::DataLoader"), options) {}
    template <std::derived_from<Dataset<Example>> D>
    DataLoader(D dataset, DataLoaderOptions options, collate_function collate)
        : DataLoader(detail::share_dataset(std::move(dataset), "data::DataLoader"), options, std::move(collate)) {}

    /// Batches per epoch (PyTorch's len(loader)): ceil(size / batch_size), or floor with drop_last.
    [[nodiscard]] std::int64_t size() const { return detail::batch_count(dataset_->size(), options_); }
    [[nodiscard]] const std::shared_ptr<Dataset<Example>>& dataset() const noexcept { return dataset_; }
    [[nodiscard]] const DataLoaderOptions& options() const noexcept { return options_; }

    /// Starts an epoch; the iterator holds it (order, worker thread, current batch).
    [[nodiscard]] iterator begin() { return iterator(std::make_unique<epoch>(*this)); }
    [[nodiscard]] std::default_sentinel_t end() const noexcept { return std::default_sentinel; }

private:
    static auto default_collate_function() {
        static_assert(std::is_same_v<Batch, collate_result_t<Example>>,
                      "graft::data::DataLoader<Example, Batch>(dataset, options): a Batch other than "
                      "default_collate's needs a collate function: DataLoader(dataset, options, collate)");
        return [](std::vector<Example> examples) { return default_collate(std::move(examples)); };
    }

    /// One epoch: its order of examples, the batch the iterator is at, and the worker (if any)
    /// with a ring of `depth` slots it fills ahead.
    class epoch {
    public:
        explicit epoch(const DataLoader& loader)
            : dataset_(loader.dataset_), collate_(loader.collate_), batch_size_(loader.options_.batch_size) {
            const std::int64_t n = dataset_->size();
            num_batches_ = detail::batch_count(n, loader.options_);
            order_ = detail::epoch_order(n, loader.options_);
            if (loader.options_.num_workers > 0 && num_batches_ > 0) {
                slots_.resize(static_cast<std::size_t>(loader.options_.prefetch_factor));
                // The worker's batches carry no autograd history (as those of PyTorch's worker
                // processes): it makes them under no_grad.
                worker_.emplace(num_batches_, loader.options_.prefetch_factor, [this](std::int64_t b) {
                    slot& s = slots_[static_cast<std::size_t>(b) % slots_.size()];
                    try {
                        const autograd::no_grad guard;
                        s.batch.emplace(make_batch(b));
                    } catch (...) {
                        s.error = std::current_exception();
                    }
                });
            }
        }
        epoch(const epoch&) = delete;
        epoch& operator=(const epoch&) = delete;
        ~epoch() {
            if (worker_) worker_->stop();  // before the slots and the data set go
        }

        /// Moves to the next batch; false at the end of the epoch. Rethrows a batch's exception.
        bool advance() {
            current_.reset();
            if (next_ >= num_batches_) {
                if (worker_) worker_->stop();
                return false;
            }
            const std::int64_t b = next_++;
            if (!worker_) {
                current_.emplace(make_batch(b));
                return true;
            }
            worker_->wait_for(b);
            slot& s = slots_[static_cast<std::size_t>(b) % slots_.size()];
            std::optional<Batch> batch = std::move(s.batch);
            s.batch.reset();
            const std::exception_ptr error = std::exchange(s.error, nullptr);
            worker_->release(b);
            if (error) std::rethrow_exception(error);
            current_ = std::move(batch);
            return true;
        }

        [[nodiscard]] Batch& current() {
            graft::detail::check(current_.has_value(),
                                 "data::DataLoader::iterator: no batch here (its making threw, or the epoch is over)");
            return *current_;
        }
        [[nodiscard]] bool done() const noexcept { return next_ >= num_batches_ && !current_; }

    private:
        struct slot {
            std::optional<Batch> batch;
            std::exception_ptr error;
        };

        Batch make_batch(std::int64_t b) {
            const std::int64_t n = static_cast<std::int64_t>(order_.size());
            const std::int64_t first = b * batch_size_, last = std::min(n, first + batch_size_);
            std::vector<Example> examples;
            examples.reserve(static_cast<std::size_t>(last - first));
            for (std::int64_t k = first; k < last; ++k) examples.push_back(dataset_->get(order_[static_cast<std::size_t>(k)]));
            return collate_(std::move(examples));
        }

        std::shared_ptr<Dataset<Example>> dataset_;
        collate_function collate_;
        std::int64_t batch_size_;
        std::int64_t num_batches_ = 0;
        std::vector<std::int64_t> order_;
        std::int64_t next_ = 0;  // the batch advance() makes or takes next
        std::optional<Batch> current_;
        std::vector<slot> slots_;
        std::optional<detail::prefetch_thread> worker_;  // last: destroyed (joined) first
    };

public:
    /// An input iterator over one epoch's batches; it owns the epoch (move-only). Equal to
    /// end() (std::default_sentinel) once the epoch is over.
    class iterator {
    public:
        using iterator_concept = std::input_iterator_tag;
        using value_type = Batch;
        using difference_type = std::ptrdiff_t;
        using reference = Batch&;

        iterator() = default;
        iterator(iterator&&) noexcept = default;
        iterator& operator=(iterator&&) noexcept = default;

        /// The current batch (valid until the next ++ or the iterator's end).
        [[nodiscard]] Batch& operator*() const { return epoch_->current(); }
        [[nodiscard]] Batch* operator->() const { return &epoch_->current(); }
        /// The next batch; rethrows the exception its making threw.
        iterator& operator++() {
            graft::detail::check(epoch_ != nullptr, "data::DataLoader::iterator: ++ on an iterator without an epoch");
            epoch_->advance();
            return *this;
        }
        void operator++(int) { ++*this; }
        friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept {
            return it.epoch_ == nullptr || it.epoch_->done();
        }

    private:
        friend class DataLoader;
        explicit iterator(std::unique_ptr<epoch> e) : epoch_(std::move(e)) { epoch_->advance(); }
        std::unique_ptr<epoch> epoch_;
    };

private:
    std::shared_ptr<Dataset<Example>> dataset_;
    DataLoaderOptions options_;
    collate_function collate_;
};

template <map_style_dataset D>
DataLoader(std::shared_ptr<D>) -> DataLoader<typename D::example_type>;
template <map_style_dataset D>
DataLoader(std::shared_ptr<D>, DataLoaderOptions) -> DataLoader<typename D::example_type>;
template <map_style_dataset D, class F>
DataLoader(std::shared_ptr<D>, DataLoaderOptions, F)
    -> DataLoader<typename D::example_type,
                  std::remove_cvref_t<std::invoke_result_t<F&, std::vector<typename D::example_type>>>>;
template <map_style_dataset D>
DataLoader(D) -> DataLoader<typename D::example_type>;
template <map_style_dataset D>
DataLoader(D, DataLoaderOptions) -> DataLoader<typename D::example_type>;
template <map_style_dataset D, class F>
DataLoader(D, DataLoaderOptions, F)
    -> DataLoader<typename D::example_type,
                  std::remove_cvref_t<std::invoke_result_t<F&, std::vector<typename D::example_type>>>>;

}  // namespace graft::data

#if GRAFT_HAS_CODE
#include "graft/data/impl/dataloader.ipp"
#endif
