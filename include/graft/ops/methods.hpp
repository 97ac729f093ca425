#pragma once
// Definitions of the Tensor math methods declared in core/tensor.hpp.
#include "graft/ops/elementwise.hpp"
#include "graft/ops/linalg.hpp"
#include "graft/ops/reduce.hpp"
#include "graft/ops/softmax.hpp"

namespace graft {

inline Tensor Tensor::sum() const { return graft::sum(*this); }
inline Tensor Tensor::sum(const int_list& dims, bool keepdim) const { return graft::sum(*this, dims, keepdim); }
inline Tensor Tensor::mean() const { return graft::mean(*this); }
inline Tensor Tensor::mean(const int_list& dims, bool keepdim) const { return graft::mean(*this, dims, keepdim); }
inline Tensor Tensor::amax(const int_list& dims, bool keepdim) const { return graft::amax(*this, dims, keepdim); }
inline Tensor Tensor::amin(const int_list& dims, bool keepdim) const { return graft::amin(*this, dims, keepdim); }
inline Tensor Tensor::exp() const { return graft::exp(*this); }
inline Tensor Tensor::log() const { return graft::log(*this); }
inline Tensor Tensor::sqrt() const { return graft::sqrt(*this); }
inline Tensor Tensor::tanh() const { return graft::tanh(*this); }
inline Tensor Tensor::sigmoid() const { return graft::sigmoid(*this); }
inline Tensor Tensor::relu() const { return graft::relu(*this); }
inline Tensor Tensor::abs() const { return graft::abs(*this); }
inline Tensor Tensor::neg() const { return graft::neg(*this); }
inline Tensor Tensor::pow(const Tensor& exponent) const { return graft::pow(*this, exponent); }
inline Tensor Tensor::pow(const scalar& exponent) const { return graft::pow(*this, exponent); }
inline Tensor Tensor::matmul(const Tensor& other) const { return graft::matmul(*this, other); }
inline Tensor Tensor::softmax(std::int64_t dim) const { return graft::softmax(*this, dim); }
inline Tensor Tensor::log_softmax(std::int64_t dim) const { return graft::log_softmax(*this, dim); }

}  // namespace graft
