#pragma once
// default_collate (torch.utils.data.default_collate): a list of examples into one batch, field
// by field. Tensors are stacked along a new dimension 0; numbers become a 1-D tensor; pairs,
// tuples and vectors are collated element by element and keep their shape. What DataLoader uses
// unless it is given a collate function. Manual: docs/data.md.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/core/error.hpp"
#include "graft/core/factories.hpp"
#include "graft/core/tensor.hpp"

namespace graft::data {

namespace detail {

/// What default_collate makes of a batch of T: `void` when it has no rule for T.
template <class T>
struct collate_traits {
    using type = void;
};
template <>
struct collate_traits<Tensor> {
    using type = Tensor;
};
template <class T>
    requires std::is_arithmetic_v<T>
struct collate_traits<T> {
    using type = Tensor;
};
template <class T, class A>
struct collate_traits<std::vector<T, A>> {
    using type = std::conditional_t<std::is_void_v<typename collate_traits<T>::type>, void,
                                    std::vector<typename collate_traits<T>::type>>;
};
template <class A, class B>
struct collate_traits<std::pair<A, B>> {
    using type = std::conditional_t<std::is_void_v<typename collate_traits<A>::type> ||
                                        std::is_void_v<typename collate_traits<B>::type>,
                                    void,
                                    std::pair<typename collate_traits<A>::type, typename collate_traits<B>::type>>;
};
template <class... Ts>
struct collate_traits<std::tuple<Ts...>> {
    using type = std::conditional_t<(std::is_void_v<typename collate_traits<Ts>::type> || ...), void,
                                    std::tuple<typename collate_traits<Ts>::type...>>;
};

}  // namespace detail

/// The batch type default_collate makes of examples of type Example (void: none).
template <class Example>
using collate_result_t = typename detail::collate_traits<std::remove_cvref_t<Example>>::type;

/// Examples default_collate can batch: Tensor, arithmetic numbers, and std::pair, std::tuple
/// and std::vector of those (nested to any depth).
template <class Example>
concept default_collatable = !std::is_void_v<collate_result_t<Example>>;

namespace detail {
/// stack(tensors, 0): the examples' tensors, all of one size, stacked along a new dimension 0.
[[nodiscard]] GRAFT_INLINE Tensor collate_tensors(std::vector<Tensor> tensors);
/// The examples' vectors (all of one length) collated position by position; each position is
/// stacked (a graft::error names the position and the sizes when they differ).
[[nodiscard]] GRAFT_INLINE std::vector<Tensor> collate_tensor_vectors(std::vector<std::vector<Tensor>> examples);
/// A graft::error for vectors of different lengths in one batch.
[[noreturn]] GRAFT_INLINE void fail_ragged_batch(std::size_t example, std::size_t length, std::size_t expected);

template <class T>
collate_result_t<T> collate(std::vector<T>&& batch);

template <class T>
Tensor collate_numbers(const std::vector<T>& batch) {
    // PyTorch's number rules, with C++'s types: integers give int64, bool gives bool,
    // float float32 and double (Python's float) float64.
    if constexpr (std::is_same_v<T, bool>) {
        return from_vector(std::vector<bool>(batch.begin(), batch.end()));
    } else if constexpr (std::is_integral_v<T>) {
        return from_vector(std::vector<std::int64_t>(batch.begin(), batch.end()));
    } else if constexpr (std::is_same_v<T, float>) {
        return from_vector(batch);
    } else {
        return from_vector(std::vector<double>(batch.begin(), batch.end()));
    }
}

template <class T, std::size_t... I>
auto collate_fields(std::vector<T>&& batch, std::index_sequence<I...>) {
    const auto field = [&batch]<std::size_t K>(std::integral_constant<std::size_t, K>) {
        std::vector<std::remove_cvref_t<std::tuple_element_t<K, T>>> column;
        column.reserve(batch.size());
        for (T& example : batch) column.push_back(std::move(std::get<K>(example)));
        return collate(std::move(column));
    };
    return collate_result_t<T>(field(std::integral_constant<std::size_t, I>{})...);
}

template <class T>
collate_result_t<T> collate(std::vector<T>&& batch) {
    graft::detail::check(!batch.empty(), "data::default_collate: the batch is empty");
    if constexpr (std::is_same_v<T, Tensor>) {
        return collate_tensors(std::move(batch));
    } else if constexpr (std::is_arithmetic_v<T>) {
        return collate_numbers(batch);
    } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
        return collate_tensor_vectors(std::move(batch));
    } else if constexpr (requires { typename T::value_type; typename T::allocator_type; }) {  // std::vector
        using E = typename T::value_type;
        const std::size_t n = batch.front().size();
        for (std::size_t i = 0; i < batch.size(); ++i)
            if (batch[i].size() != n) fail_ragged_batch(i, batch[i].size(), n);
        collate_result_t<T> out;
        out.reserve(n);
        for (std::size_t k = 0; k < n; ++k) {
            std::vector<E> column;
            column.reserve(batch.size());
            for (T& example : batch) column.push_back(std::move(example[k]));
            out.push_back(collate(std::move(column)));
        }
        return out;
    } else {  // std::pair, std::tuple
        return collate_fields(std::move(batch), std::make_index_sequence<std::tuple_size_v<T>>{});
    }
}

}  // namespace detail

/// The examples as one batch (torch.utils.data.default_collate): tensors (all of one size)
/// stacked along a new dimension 0; numbers as a 1-D tensor (integers int64, bool bool, float
/// float32, double float64); pairs, tuples and vectors (all of one length) collated element by
/// element into a pair, tuple or vector of batches. An empty batch, ragged vectors or tensors of
/// different sizes are a graft::error.
template <class Example>
    requires default_collatable<Example>
[[nodiscard]] collate_result_t<Example> default_collate(std::vector<Example> batch) {
    return detail::collate(std::move(batch));
}

}  // namespace graft::data

#if GRAFT_HAS_CODE
#include "graft/data/impl/collate.ipp"
#endif
