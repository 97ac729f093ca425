#pragma once
// Helpers shared by the tests that compare graft with PyTorch fixtures (tests/fixtures/*.txt,
// written by the gen_*.py scripts there) (not a test TU itself).
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <graft/graft.hpp>

namespace fx {

/// A tensor written as `<rank> <size>... <value>...` (row-major), read from `in` as float64.
inline graft::Tensor read_tensor(std::istringstream& in) {
    std::int64_t rank = 0;
    in >> rank;
    graft::int_list sizes(static_cast<std::size_t>(rank));
    for (auto& s : sizes) in >> s;
    std::vector<double> values;
    std::string v;
    while (in >> v) values.push_back(std::strtod(v.c_str(), nullptr));
    return values.empty() ? graft::zeros(sizes, graft::dtype::float64) : graft::from_vector(values).reshape(sizes);
}

/// f(i) over the flat index i of a tensor of `sizes`, computed in float64 and rounded to
/// `type`: the inputs and weights a fixture script computes by the same formula.
inline graft::Tensor formula(const graft::int_list& sizes, const std::function<double(std::int64_t)>& f,
                             graft::dtype type = graft::dtype::float64) {
    std::int64_t n = 1;
    for (auto s : sizes) n *= s;
    std::vector<double> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = f(i);
    return graft::from_vector(v).reshape(sizes).to(type);
}

/// |a - b| <= tol * (1 + |b|) everywhere (NaN fails), with equal sizes; int64 tensors equal.
inline bool close_to(const graft::Tensor& a, const graft::Tensor& b, double tol) {
    if (!a.defined() || !b.defined() || a.sizes() != b.sizes()) return false;
    if (a.type() == graft::dtype::int64 || b.type() == graft::dtype::int64)
        return graft::equal(a.to(graft::dtype::int64), b.to(graft::dtype::int64));
    const graft::Tensor ad = a.to(graft::dtype::float64), bd = b.to(graft::dtype::float64);
    return ((ad - bd).abs() <= (bd.abs() + 1.0) * tol).to(graft::dtype::float64).sum().item<double>() ==
           static_cast<double>(a.numel());
}

}  // namespace fx
