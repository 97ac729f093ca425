#pragma once
// Definitions for graft/data/dataset.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/data/dataset.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "graft/autograd/tensor_methods.hpp"
#include "graft/core/error.hpp"

namespace graft::data {

GRAFT_INLINE TensorDataset::TensorDataset(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
    graft::detail::check(!tensors_.empty(), "data::TensorDataset: expected at least one tensor");
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
        const Tensor& t = tensors_[i];
        graft::detail::check(t.defined(), "data::TensorDataset: tensor ", i, " is undefined");
        graft::detail::check(t.dim() >= 1, "data::TensorDataset: tensor ", i,
                             " is 0-dim; every tensor needs a first dimension that indexes the examples");
        graft::detail::check(t.size(0) == tensors_[0].size(0),
                             "data::TensorDataset: size mismatch between tensors: tensor 0 has ", tensors_[0].size(0),
                             " rows (size(0)) but tensor ", i, " has ", t.size(0), " (sizes ", t.sizes(), ")");
    }
}

GRAFT_INLINE std::int64_t TensorDataset::size() const { return tensors_.front().size(0); }

GRAFT_INLINE std::vector<Tensor> TensorDataset::get(std::int64_t index) {
    detail::check_example_index("data::TensorDataset", index, size());
    std::vector<Tensor> rows;
    rows.reserve(tensors_.size());
    for (const Tensor& t : tensors_) rows.push_back(t.select(0, index));
    return rows;
}

namespace detail {

GRAFT_INLINE void check_example_index(const char* what, std::int64_t index, std::int64_t size) {
    graft::detail::check(index >= 0 && index < size, what, "::get: index ", index,
                         " is out of range for a data set of size ", size);
}

GRAFT_INLINE void check_subset_indices(const std::vector<std::int64_t>& indices, std::int64_t size) {
    for (std::size_t i = 0; i < indices.size(); ++i)
        graft::detail::check(indices[i] >= 0 && indices[i] < size, "data::Subset: indices[", i, "] = ", indices[i],
                             " is out of range for a data set of size ", size);
}

GRAFT_INLINE std::vector<std::int64_t> lengths_from_fractions(std::int64_t size, const std::vector<double>& fractions) {
    graft::detail::check(!fractions.empty(), "data::random_split: expected at least one length");
    double sum = 0;
    for (std::size_t i = 0; i < fractions.size(); ++i) {
        graft::detail::check(fractions[i] >= 0.0 && fractions[i] <= 1.0, "data::random_split: fraction at index ", i,
                             " is not between 0 and 1 (got ", fractions[i], ")");
        sum += fractions[i];
    }
    graft::detail::check(std::abs(sum - 1.0) <= 1e-9, "data::random_split: fractions must sum to 1, got ", sum,
                         " (integer lengths must sum to the data set's size)");
    std::vector<std::int64_t> lengths;
    std::int64_t taken = 0;
    for (double f : fractions) {
        lengths.push_back(static_cast<std::int64_t>(std::floor(static_cast<double>(size) * f)));
        taken += lengths.back();
    }
    // The sum of the floors is at most size (the fractions sum to at most 1 + 1e-9) and at least
    // size - parts + 1; the rest goes one by one to the parts in order.
    for (std::size_t i = 0; taken < size; ++taken, i = (i + 1) % lengths.size()) ++lengths[i];
    graft::detail::check(taken == size, "data::random_split: the fractions give ", taken,
                         " examples for a data set of size ", size);
    return lengths;
}

GRAFT_INLINE std::vector<std::vector<std::int64_t>> split_indices(std::int64_t size,
                                                                  const std::vector<std::int64_t>& lengths,
                                                                  generator& gen) {
    graft::detail::check(!lengths.empty(), "data::random_split: expected at least one length");
    std::int64_t total = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        graft::detail::check(lengths[i] >= 0, "data::random_split: length at index ", i, " is negative (", lengths[i],
                             ")");
        graft::detail::check(!__builtin_add_overflow(total, lengths[i], &total),
                             "data::random_split: the lengths add up to more than an int64 holds");
    }
    graft::detail::check(total == size, "data::random_split: sum of input lengths (", total,
                         ") does not equal the length of the input data set (", size, ")");
    const Tensor perm = randperm(size, dtype::int64, gen);
    const std::int64_t* p = perm.data_ptr<std::int64_t>();
    std::vector<std::vector<std::int64_t>> parts;
    std::int64_t offset = 0;
    for (std::int64_t n : lengths) {
        parts.emplace_back(p + offset, p + offset + n);
        offset += n;
    }
    return parts;
}

}  // namespace detail
}  // namespace graft::data
