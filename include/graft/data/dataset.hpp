#pragma once
// Data sets (torch.utils.data): the abstract map-style Dataset (size() and get(index)),
// TensorDataset (rows of tensors that share their first dimension), Subset (a data set seen
// through a list of indices) and random_split. A DataLoader (graft/data/dataloader.hpp) draws
// batches from any of them. Manual: docs/data.md.
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ranges>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/core/factories.hpp"
#include "graft/core/tensor.hpp"

namespace graft::data {

/// A map-style data set (torch.utils.data.Dataset): `size()` examples, the one at `index` in
/// [0, size()) returned by `get(index)`. A DataLoader with a worker thread calls get() on that
/// thread, so get() must not race with what the rest of the program does to the data set.
template <class Example>
class Dataset {
public:
    using example_type = Example;
    virtual ~Dataset() = default;

    /// The number of examples (PyTorch's __len__).
    [[nodiscard]] virtual std::int64_t size() const = 0;
    /// The example at `index` in [0, size()) (PyTorch's __getitem__).
    [[nodiscard]] virtual Example get(std::int64_t index) = 0;

protected:
    Dataset() = default;
    Dataset(const Dataset&) = default;
    Dataset(Dataset&&) = default;
    Dataset& operator=(const Dataset&) = default;
    Dataset& operator=(Dataset&&) = default;
};

/// A class derived from Dataset<D::example_type>: what DataLoader and random_split accept, by
/// value (copied or moved into a shared_ptr) or as a std::shared_ptr.
template <class D>
concept map_style_dataset = requires { typename D::example_type; } &&
                            std::derived_from<D, Dataset<typename D::example_type>>;

/// Tensors that share their first dimension (torch.utils.data.TensorDataset): example i is
/// {tensors[0][i], tensors[1][i], ...}, views of the tensors' rows (they share memory with the
/// tensors, as PyTorch's indexing does). Writing to the tensors while a DataLoader's worker
/// thread reads them is a data race.
class TensorDataset : public Dataset<std::vector<Tensor>> {
public:
    /// At least one tensor, each defined and at least 1-D, all with the same size(0);
    /// otherwise a graft::error.
    GRAFT_INLINE explicit TensorDataset(std::vector<Tensor> tensors);
    /// TensorDataset(x, y) for TensorDataset({x, y}), as PyTorch's TensorDataset(*tensors).
    template <class... Rest>
        requires(std::convertible_to<const Rest&, Tensor> && ...)
    explicit TensorDataset(const Tensor& first, const Rest&... rest)
        : TensorDataset(std::vector<Tensor>{first, Tensor(rest)...}) {}

    [[nodiscard]] GRAFT_INLINE std::int64_t size() const override;
    /// Row `index` of every tensor (select(0, index)); index in [0, size()), else a graft::error.
    [[nodiscard]] GRAFT_INLINE std::vector<Tensor> get(std::int64_t index) override;
    /// The tensors, as given (PyTorch's .tensors).
    [[nodiscard]] const std::vector<Tensor>& tensors() const noexcept { return tensors_; }

private:
    std::vector<Tensor> tensors_;
};

namespace detail {
/// Checks a Subset's indices against the data set's size (the first bad one named).
GRAFT_INLINE void check_subset_indices(const std::vector<std::int64_t>& indices, std::int64_t size);
/// Checks get()'s index against a data set's size, naming the data set `what`.
GRAFT_INLINE void check_example_index(const char* what, std::int64_t index, std::int64_t size);
}  // namespace detail

/// A data set seen through a list of indices (torch.utils.data.Subset): example i is
/// dataset.get(indices[i]). It shares the underlying data set (a shared_ptr). Indices may
/// repeat; each must be in [0, dataset->size()) when the Subset is made (a graft::error).
template <class Example>
class Subset : public Dataset<Example> {
public:
    Subset(std::shared_ptr<Dataset<Example>> dataset, std::vector<std::int64_t> indices)
        : dataset_(std::move(dataset)), indices_(std::move(indices)) {
        graft::detail::check(dataset_ != nullptr, "data::Subset: the data set is null");
        detail::check_subset_indices(indices_, dataset_->size());
    }

    [[nodiscard]] std::int64_t size() const override { return static_cast<std::int64_t>(indices_.size()); }
    [[nodiscard]] Example get(std::int64_t index) override {
        detail::check_example_index("data::Subset", index, size());
        return dataset_->get(indices_[static_cast<std::size_t>(index)]);
    }
    /// The underlying data set and the indices into it (PyTorch's .dataset and .indices).
    [[nodiscard]] const std::shared_ptr<Dataset<Example>>& dataset() const noexcept { return dataset_; }
    [[nodiscard]] const std::vector<std::int64_t>& indices() const noexcept { return indices_; }

private:
    std::shared_ptr<Dataset<Example>> dataset_;
    std::vector<std::int64_t> indices_;
};

namespace detail {

template <class T>
struct shared_dataset_of {};
template <map_style_dataset D>
struct shared_dataset_of<D> {
    using example = typename D::example_type;
};
template <map_style_dataset D>
struct shared_dataset_of<std::shared_ptr<D>> {
    using example = typename D::example_type;
};

/// A data set argument: a map_style_dataset (by value) or a shared_ptr to one.
template <class A>
concept dataset_argument = requires { typename shared_dataset_of<std::remove_cvref_t<A>>::example; };

template <dataset_argument A>
using dataset_argument_example_t = typename shared_dataset_of<std::remove_cvref_t<A>>::example;

/// The data set argument as the shared_ptr the loader and the subsets keep (a data set passed by
/// value is copied or moved into one); a null shared_ptr is a graft::error naming `op`.
template <dataset_argument A>
std::shared_ptr<Dataset<dataset_argument_example_t<A>>> share_dataset(A&& dataset, const char* op) {
    using T = std::remove_cvref_t<A>;
    if constexpr (map_style_dataset<T>) {
        static_assert(!std::is_abstract_v<T> && std::is_constructible_v<T, A&&>,
                      "graft::data: a data set passed by value is copied or moved into a std::shared_ptr; pass a "
                      "std::shared_ptr to one that cannot be copied (or is only known by its base class)");
        return std::make_shared<T>(std::forward<A>(dataset));
    } else {
        graft::detail::check(dataset != nullptr, op, ": the data set is null");
        return dataset;
    }
}

/// random_split's lengths from fractions (PyTorch >= 1.13): each in [0, 1], summing to 1
/// (within 1e-9); floor(fraction * size) each, then the remainder handed out one by one to the
/// parts in order, from the first.
[[nodiscard]] GRAFT_INLINE std::vector<std::int64_t> lengths_from_fractions(std::int64_t size,
                                                                            const std::vector<double>& fractions);
/// Checks integer lengths (non-negative, summing to size), then draws randperm(size, gen) and
/// cuts it into consecutive pieces of those lengths.
[[nodiscard]] GRAFT_INLINE std::vector<std::vector<std::int64_t>> split_indices(std::int64_t size,
                                                                                const std::vector<std::int64_t>& lengths,
                                                                                generator& gen);

template <class Example, std::ranges::input_range R>
std::vector<Subset<Example>> random_split(std::shared_ptr<Dataset<Example>> dataset, const R& lengths,
                                          generator& gen) {
    using V = std::ranges::range_value_t<R>;
    static_assert(std::is_arithmetic_v<V> && !std::is_same_v<V, bool>,
                  "graft::data::random_split(dataset, lengths, generator): lengths must be integers (sizes) or "
                  "floating-point numbers (fractions)");
    std::vector<std::int64_t> sizes;
    if constexpr (std::is_floating_point_v<V>) {
        std::vector<double> fractions;
        for (const auto& f : lengths) fractions.push_back(static_cast<double>(f));
        sizes = lengths_from_fractions(dataset->size(), fractions);
    } else {
        for (const auto& n : lengths) sizes.push_back(static_cast<std::int64_t>(n));
    }
    std::vector<Subset<Example>> parts;
    for (auto& indices : split_indices(dataset->size(), sizes, gen)) parts.emplace_back(dataset, std::move(indices));
    return parts;
}

}  // namespace detail

/// The data set split into non-overlapping Subsets of the given lengths, at random
/// (torch.utils.data.random_split): `randperm(size, gen)` cut into consecutive pieces.
/// `lengths` are integers that sum to the data set's size, or fractions that sum to 1, turned
/// into sizes as PyTorch >= 1.13 does (floor each, then one more for the first parts, in
/// order, until the sizes sum to the data set's size). `dataset`: a data set (by value, copied
/// into a shared_ptr) or a shared_ptr to one; the Subsets share it.
template <detail::dataset_argument D, std::ranges::input_range R>
[[nodiscard]] std::vector<Subset<detail::dataset_argument_example_t<D>>> random_split(D&& dataset, const R& lengths,
                                                                                      generator& gen = default_generator()) {
    return detail::random_split(detail::share_dataset(std::forward<D>(dataset), "data::random_split"), lengths, gen);
}
/// random_split(dataset, {800, 200}) or random_split(dataset, {0.8, 0.2}).
template <detail::dataset_argument D, class T>
[[nodiscard]] std::vector<Subset<detail::dataset_argument_example_t<D>>> random_split(D&& dataset,
                                                                                      std::initializer_list<T> lengths,
                                                                                      generator& gen = default_generator()) {
    return detail::random_split(detail::share_dataset(std::forward<D>(dataset), "data::random_split"), lengths, gen);
}

}  // namespace graft::data

#if GRAFT_HAS_CODE
#include "graft/data/impl/dataset.ipp"
#endif
