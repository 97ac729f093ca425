#pragma once
// Definitions for graft/data/collate.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/data/collate.hpp"

#include <cstddef>
#include <utility>
#include <vector>

#include "graft/autograd/join_split.hpp"
#include "graft/core/error.hpp"

namespace graft::data::detail {

GRAFT_INLINE Tensor collate_tensors(std::vector<Tensor> tensors) {
    graft::detail::check(!tensors.empty(), "data::default_collate: the batch is empty");
    for (std::size_t i = 1; i < tensors.size(); ++i)
        graft::detail::check(tensors[i].defined() && tensors[i].sizes() == tensors[0].sizes(),
                             "data::default_collate: stack expects each tensor to be equal size, but got ",
                             tensors[0].sizes(), " at example 0 and ",
                             tensors[i].defined() ? tensors[i].sizes() : int_list{}, " at example ", i);
    return stack(tensors, 0);
}

GRAFT_INLINE std::vector<Tensor> collate_tensor_vectors(std::vector<std::vector<Tensor>> examples) {
    graft::detail::check(!examples.empty(), "data::default_collate: the batch is empty");
    const std::size_t n = examples.front().size();
    for (std::size_t i = 0; i < examples.size(); ++i)
        if (examples[i].size() != n) fail_ragged_batch(i, examples[i].size(), n);
    std::vector<Tensor> out;
    out.reserve(n);
    std::vector<Tensor> column(examples.size());
    for (std::size_t k = 0; k < n; ++k) {
        for (std::size_t i = 0; i < examples.size(); ++i) column[i] = std::move(examples[i][k]);
        graft::detail::check(column[0].defined(), "data::default_collate: field ", k, " of example 0 is undefined");
        for (std::size_t i = 1; i < column.size(); ++i)
            graft::detail::check(column[i].defined() && column[i].sizes() == column[0].sizes(),
                                 "data::default_collate: stack expects each tensor to be equal size, but field ", k,
                                 " is ", column[0].sizes(), " in example 0 and ",
                                 column[i].defined() ? column[i].sizes() : int_list{}, " in example ", i);
        out.push_back(stack(column, 0));
    }
    return out;
}

GRAFT_INLINE void fail_ragged_batch(std::size_t example, std::size_t length, std::size_t expected) {
    graft::detail::fail(graft::detail::concat("data::default_collate: each example's vector should be of equal size, ",
                                              "but example 0 has ", expected, " elements and example ", example,
                                              " has ", length));
}

}  // namespace graft::data::detail
