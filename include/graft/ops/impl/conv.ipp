#pragma once
// Definitions for graft/ops/conv.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/ops/conv.hpp"

#include <algorithm>
#include <cstdint>

#include "graft/core/detail/op_observer.hpp"
#include "graft/core/error.hpp"

namespace graft {

namespace detail {

/// The checked window geometry of im2col / col2im.
struct window_geometry {
    std::int64_t kh, kw, dh, dw, ph, pw, sh, sw;
    std::int64_t oh, ow;  // windows along height and width
};

[[nodiscard]] GRAFT_INLINE window_geometry check_windows(const char* op, std::int64_t h, std::int64_t w,
                                                         const int_list& kernel_size, const int_list& dilation,
                                                         const int_list& padding, const int_list& stride) {
    check(kernel_size.size() == 2, op, ": It is expected kernel_size equals to 2, but got size ", kernel_size.size());
    check(dilation.size() == 2, op, ": It is expected dilation equals to 2, but got size ", dilation.size());
    check(padding.size() == 2, op, ": It is expected padding equals to 2, but got size ", padding.size());
    check(stride.size() == 2, op, ": It is expected stride equals to 2, but got size ", stride.size());
    window_geometry g{kernel_size[0], kernel_size[1], dilation[0], dilation[1], padding[0],
                      padding[1],     stride[0],      stride[1],   0,           0};
    check(g.kh > 0 && g.kw > 0, op, ": kernel size should be greater than zero, but got kernel_height: ", g.kh,
          " kernel_width: ", g.kw);
    check(g.dh > 0 && g.dw > 0, op, ": dilation should be greater than zero, but got dilation_height: ", g.dh,
          " dilation_width: ", g.dw);
    check(g.ph >= 0 && g.pw >= 0, op, ": padding should be non-negative, but got pad_height: ", g.ph,
          " pad_width: ", g.pw);
    check(g.sh > 0 && g.sw > 0, op, ": stride should be greater than zero, but got stride_height: ", g.sh,
          " stride_width: ", g.sw);
    // Below 2^31 each, products of two and sums of a few stay far from int64 overflow; larger
    // kernels, dilations, paddings or images could not be allocated anyway.
    constexpr std::int64_t limit = std::int64_t{1} << 31;
    check(g.kh < limit && g.kw < limit && g.dh < limit && g.dw < limit && g.ph < limit && g.pw < limit && h < limit &&
              w < limit,
          op, ": sizes too large (kernel ", kernel_size, ", dilation ", dilation, ", padding ", padding, ")");
    const std::int64_t span_h = g.dh * (g.kh - 1) + 1, span_w = g.dw * (g.kw - 1) + 1;
    const std::int64_t inner_h = h + 2 * g.ph - span_h, inner_w = w + 2 * g.pw - span_w;
    g.oh = inner_h >= 0 ? inner_h / g.sh + 1 : 0;
    g.ow = inner_w >= 0 ? inner_w / g.sw + 1 : 0;
    check(g.oh >= 1 && g.ow >= 1, op, ": Given input with spatial size (", h, ", ", w, "), kernel_size ", kernel_size,
          ", dilation ", dilation, ", padding ", padding, ", calculated shape of the array of sliding blocks as (",
          g.oh, ", ", g.ow, "), but its components must be at least one.");
    return g;
}

/// The output positions ox in [0, n) whose tap ox * s + off lies in [0, size): [lo, hi).
GRAFT_INLINE void valid_range(std::int64_t n, std::int64_t s, std::int64_t off, std::int64_t size, std::int64_t& lo,
                              std::int64_t& hi) {
    lo = off >= 0 ? 0 : (-off + s - 1) / s;
    hi = size - 1 - off >= 0 ? (size - 1 - off) / s + 1 : 0;
    lo = std::min(lo, n);
    hi = std::clamp(hi, lo, n);
}

template <class T>
void im2col_kernel(const T* x, T* out, std::int64_t planes, std::int64_t h, std::int64_t w, const window_geometry& g) {
    const std::int64_t l = g.oh * g.ow;
    for (std::int64_t p = 0; p < planes; ++p) {
        const T* xp = x + p * h * w;
        for (std::int64_t ki = 0; ki < g.kh; ++ki)
            for (std::int64_t kj = 0; kj < g.kw; ++kj) {
                T* op = out + ((p * g.kh + ki) * g.kw + kj) * l;
                const std::int64_t offx = kj * g.dw - g.pw;
                std::int64_t lo = 0, hi = 0;
                valid_range(g.ow, g.sw, offx, w, lo, hi);
                for (std::int64_t oy = 0; oy < g.oh; ++oy) {
                    T* row = op + oy * g.ow;
                    const std::int64_t iy = oy * g.sh - g.ph + ki * g.dh;
                    if (iy < 0 || iy >= h) {
                        std::fill(row, row + g.ow, T(0));
                        continue;
                    }
                    const T* xr = xp + iy * w + offx;
                    std::fill(row, row + lo, T(0));
                    if (g.sw == 1) {
                        for (std::int64_t ox = lo; ox < hi; ++ox) row[ox] = xr[ox];
                    } else {
                        for (std::int64_t ox = lo; ox < hi; ++ox) row[ox] = xr[ox * g.sw];
                    }
                    std::fill(row + hi, row + g.ow, T(0));
                }
            }
    }
}

template <class T>
void col2im_kernel(const T* cols, T* x, std::int64_t planes, std::int64_t h, std::int64_t w, const window_geometry& g) {
    const std::int64_t l = g.oh * g.ow;
    for (std::int64_t p = 0; p < planes; ++p) {
        T* xp = x + p * h * w;
        for (std::int64_t ki = 0; ki < g.kh; ++ki)
            for (std::int64_t kj = 0; kj < g.kw; ++kj) {
                const T* cp = cols + ((p * g.kh + ki) * g.kw + kj) * l;
                const std::int64_t offx = kj * g.dw - g.pw;
                std::int64_t lo = 0, hi = 0;
                valid_range(g.ow, g.sw, offx, w, lo, hi);
                for (std::int64_t oy = 0; oy < g.oh; ++oy) {
                    const std::int64_t iy = oy * g.sh - g.ph + ki * g.dh;
                    if (iy < 0 || iy >= h) continue;
                    const T* row = cp + oy * g.ow;
                    T* xr = xp + iy * w + offx;
                    if (g.sw == 1) {
                        for (std::int64_t ox = lo; ox < hi; ++ox) xr[ox] += row[ox];
                    } else {
                        for (std::int64_t ox = lo; ox < hi; ++ox) xr[ox * g.sw] += row[ox];
                    }
                }
            }
    }
}

GRAFT_INLINE void check_window_input(const char* op, const Tensor& t, const char* what) {
    check(t.defined(), op, ": got an undefined ", what);
    check(t.type() == dtype::float32 || t.type() == dtype::float64, op, ": expected a float32 or float64 ", what,
          ", got dtype ", t.type());
}

}  // namespace detail

namespace ops {

GRAFT_INLINE Tensor im2col(const Tensor& input, const int_list& kernel_size, const int_list& dilation,
                           const int_list& padding, const int_list& stride) {
    const graft::detail::observed_op obs;
    graft::detail::check_window_input("im2col", input, "input");
    graft::detail::check(input.dim() == 4, "im2col: Expected 4D input tensor [N, C, H, W], but got sizes ",
                         input.sizes());
    const std::int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3);
    graft::detail::check(c > 0 && h > 0 && w > 0,
                         "im2col: Expected non-empty channel and spatial dimensions, got sizes ", input.sizes());
    const auto g = graft::detail::check_windows("im2col", h, w, kernel_size, dilation, padding, stride);
    std::int64_t rows = 0, l = 0;
    graft::detail::check(!__builtin_mul_overflow(c, g.kh * g.kw, &rows) && !__builtin_mul_overflow(g.oh, g.ow, &l),
                         "im2col: the patch matrix's sizes overflow");
    Tensor out = empty({n, rows, l}, input.type());
    const Tensor src = graft::detail::raw::contiguous(input);
    if (input.type() == dtype::float32)
        graft::detail::im2col_kernel(src.data_ptr<float>(), out.data_ptr<float>(), n * c, h, w, g);
    else
        graft::detail::im2col_kernel(src.data_ptr<double>(), out.data_ptr<double>(), n * c, h, w, g);
    return obs.done(out, "im2col", {input},
                    {{"kernel_size", graft::detail::to_vector(kernel_size)},
                     {"dilation", graft::detail::to_vector(dilation)},
                     {"padding", graft::detail::to_vector(padding)},
                     {"stride", graft::detail::to_vector(stride)}});
}

GRAFT_INLINE Tensor col2im(const Tensor& cols, const int_list& output_size, const int_list& kernel_size,
                           const int_list& dilation, const int_list& padding, const int_list& stride) {
    const graft::detail::observed_op obs;
    graft::detail::check_window_input("col2im", cols, "input");
    graft::detail::check(cols.dim() == 3, "col2im: Expected 3D input tensor [N, C * kh * kw, L], but got sizes ",
                         cols.sizes());
    graft::detail::check(output_size.size() == 2, "col2im: It is expected output_size equals to 2, but got size ",
                         output_size.size());
    const std::int64_t h = output_size[0], w = output_size[1];
    graft::detail::check(h > 0 && w > 0, "col2im: output_size must be positive, got ", output_size);
    const auto g = graft::detail::check_windows("col2im", h, w, kernel_size, dilation, padding, stride);
    const std::int64_t n = cols.size(0), rows = cols.size(1), kk = g.kh * g.kw;
    graft::detail::check(rows > 0 && rows % kk == 0,
                         "col2im: Expected size of input's dimension 1 to be divisible by the "
                         "product of kernel_size, but got input.size(1)=",
                         rows, " and kernel_size=", kernel_size);
    graft::detail::check(cols.size(2) == g.oh * g.ow, "col2im: Given output_size=", output_size,
                         ", kernel_size=", kernel_size, ", dilation=", dilation, ", padding=", padding,
                         ", stride=", stride,
                         ", expected size of input's dimension 2 to match the calculated number of sliding blocks ",
                         g.oh, " * ", g.ow, " = ", g.oh * g.ow, ", but got input.size(2)=", cols.size(2));
    const std::int64_t c = rows / kk;
    Tensor out = zeros({n, c, h, w}, cols.type());
    const Tensor src = graft::detail::raw::contiguous(cols);
    if (cols.type() == dtype::float32)
        graft::detail::col2im_kernel(src.data_ptr<float>(), out.data_ptr<float>(), n * c, h, w, g);
    else
        graft::detail::col2im_kernel(src.data_ptr<double>(), out.data_ptr<double>(), n * c, h, w, g);
    return obs.done(out, "col2im", {cols},
                    {{"output_size", graft::detail::to_vector(output_size)},
                     {"kernel_size", graft::detail::to_vector(kernel_size)},
                     {"dilation", graft::detail::to_vector(dilation)},
                     {"padding", graft::detail::to_vector(padding)},
                     {"stride", graft::detail::to_vector(stride)}});
}

}  // namespace ops

}  // namespace graft
