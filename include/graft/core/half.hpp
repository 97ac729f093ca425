#pragma once
// The 16-bit floating-point element types: graft::half (IEEE binary16, torch.float16) and
// graft::bfloat16 (the top half of a float32, torch.bfloat16). They are storage types:
// graft converts them to and from float32 (round to nearest, ties to even, as PyTorch does)
// and computes in float32. Conversions from other types go through float32, as PyTorch's do
// (a float64 is rounded to float32 first).
#include <bit>
#include <cstdint>

namespace graft {
namespace detail {

/// binary16 bits of `f`, rounded to nearest even; overflow gives +-inf, NaN stays a quiet NaN.
[[nodiscard]] constexpr std::uint16_t float_to_half_bits(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t abs = x & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x1FFu));  // NaN
    if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: inf
    if (abs < 0x38800000u) {
        // A half subnormal (or zero): the value in units of 2^-24, rounded to nearest even.
        if (abs < 0x33000000u) return sign;  // below half of the smallest subnormal: +-0
        const std::uint32_t exponent = abs >> 23;
        const std::uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
        const std::uint32_t shift = 126u - exponent;  // 14..24
        std::uint32_t q = mantissa >> shift;
        const std::uint32_t rest = mantissa & ((1u << shift) - 1u), half_way = 1u << (shift - 1u);
        if (rest > half_way || (rest == half_way && (q & 1u))) ++q;
        return static_cast<std::uint16_t>(sign | q);
    }
    // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits.
    std::uint32_t r = abs - 0x38000000u;
    const std::uint32_t rest = r & 0x1FFFu;
    r >>= 13;
    if (rest > 0x1000u || (rest == 0x1000u && (r & 1u))) ++r;  // a carry may reach the exponent: still right
    return static_cast<std::uint16_t>(sign | r);
}

/// The float32 value of binary16 bits (exact).
[[nodiscard]] constexpr float half_bits_to_float(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
    if (exponent == 0x1Fu) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
    if (exponent == 0) {
        if (mantissa == 0) return std::bit_cast<float>(sign);
        // Subnormal: mantissa * 2^-24, exact in float32.
        const float v = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

/// bfloat16 bits of `f`, rounded to nearest even; NaN stays a quiet NaN.
[[nodiscard]] constexpr std::uint16_t float_to_bfloat16_bits(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
    const std::uint32_t rounding = 0x7FFFu + ((x >> 16) & 1u);
    return static_cast<std::uint16_t>((x + rounding) >> 16);
}

/// The float32 value of bfloat16 bits (exact).
[[nodiscard]] constexpr float bfloat16_bits_to_float(std::uint16_t b) noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace detail

/// An IEEE binary16 value (torch.float16, torch.half): a storage type read as float32.
struct half {
    std::uint16_t bits = 0;

    constexpr half() noexcept = default;
    /// Rounds `v` to the nearest binary16 (ties to even), as PyTorch.
    constexpr explicit half(float v) noexcept : bits(detail::float_to_half_bits(v)) {}
    constexpr explicit operator float() const noexcept { return detail::half_bits_to_float(bits); }
    [[nodiscard]] static constexpr half from_bits(std::uint16_t b) noexcept {
        half h;
        h.bits = b;
        return h;
    }
};

/// A bfloat16 value (torch.bfloat16): float32's sign, exponent and top 7 mantissa bits.
struct bfloat16 {
    std::uint16_t bits = 0;

    constexpr bfloat16() noexcept = default;
    /// Rounds `v` to the nearest bfloat16 (ties to even), as PyTorch.
    constexpr explicit bfloat16(float v) noexcept : bits(detail::float_to_bfloat16_bits(v)) {}
    constexpr explicit operator float() const noexcept { return detail::bfloat16_bits_to_float(bits); }
    [[nodiscard]] static constexpr bfloat16 from_bits(std::uint16_t b) noexcept {
        bfloat16 h;
        h.bits = b;
        return h;
    }
};

}  // namespace graft
