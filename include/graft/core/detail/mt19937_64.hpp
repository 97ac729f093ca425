#pragma once
// graft's 64-bit Mersenne Twister: the engine of graft::generator.
//
// Why its own: speed. libstdc++'s std::mt19937_64 as g++ 12 compiles it costs about 6 ns a
// draw (its state refill is branchy); this one twists without branches in loops the compiler
// vectorizes and tempers a whole block at once, so a draw is mostly a load. It produces
// exactly the sequence std::mt19937_64 produces for the same seed (the C++ standard's
// [rand.eng.mers] with the mt19937_64 parameters), so every seed gives the numbers it gave
// when graft drew from std::mt19937_64.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace graft::detail {

class mt19937_64 {
public:
    using result_type = std::uint64_t;
    // The standard's mt19937_64 parameters.
    static constexpr std::size_t word_size = 64, state_size = 312, shift_size = 156, mask_bits = 31;
    static constexpr result_type xor_mask = 0xB5026F5AA96619E9ULL;
    static constexpr std::size_t tempering_u = 29;
    static constexpr result_type tempering_d = 0x5555555555555555ULL;
    static constexpr std::size_t tempering_s = 17;
    static constexpr result_type tempering_b = 0x71D67FFFEDA60000ULL;
    static constexpr std::size_t tempering_t = 37;
    static constexpr result_type tempering_c = 0xFFF7EEE000000000ULL;
    static constexpr std::size_t tempering_l = 43;
    static constexpr result_type initialization_multiplier = 6364136223846793005ULL;
    static constexpr result_type default_seed = 5489u;

    static constexpr result_type min() { return 0; }
    static constexpr result_type max() { return ~result_type{0}; }

    mt19937_64() : mt19937_64(default_seed) {}
    explicit mt19937_64(result_type value) { seed(value); }

    /// As the standard's seed(value): x[0] = value, x[i] = f * (x[i-1] ^ (x[i-1] >> 62)) + i.
    void seed(result_type value) {
        x_[0] = value;
        for (std::size_t i = 1; i < n; ++i)
            x_[i] = initialization_multiplier * (x_[i - 1] ^ (x_[i - 1] >> (word_size - 2))) + i;
        std::memset(out_, 0, sizeof out_);  // not read before the first refill
        pos_ = n;                          // the first draw twists, as std::mt19937_64's does
    }

    result_type operator()() {
        if (pos_ == n) refill();
        return out_[pos_++];
    }

    /// out[0 .. count-1] = the next count draws: what count calls of operator() return, leaving
    /// the same state.
    void fill(result_type* out, std::size_t count) {
        while (count > 0) {
            if (pos_ == n) {
                if (count >= n) {  // a whole block: tempered straight into out, pos_ stays n
                    twist_all();
                    temper_all(out);
                    out += n;
                    count -= n;
                    continue;
                }
                refill();
            }
            const std::size_t k = std::min(count, n - pos_);
            std::memcpy(out, out_ + pos_, k * sizeof(result_type));
            pos_ += k;
            out += k;
            count -= k;
        }
    }

    void discard(unsigned long long z) {
        while (z > 0) {
            if (pos_ == n) refill();
            const std::size_t k = static_cast<std::size_t>(std::min<unsigned long long>(z, n - pos_));
            pos_ += k;
            z -= k;
        }
    }

    /// Equal when they draw the same sequence: the same words and position (out_ follows from them).
    friend bool operator==(const mt19937_64& a, const mt19937_64& b) {
        return a.pos_ == b.pos_ && std::equal(a.x_, a.x_ + n, b.x_);
    }

private:
    static constexpr std::size_t n = state_size, m = shift_size;
    static constexpr result_type lower_mask = (result_type{1} << mask_bits) - 1, upper_mask = ~lower_mask;

    // The standard's recurrence for one word: y = the top w-r bits of `hi` joined to the low r
    // bits of `lo`; x ^ (y >> 1), xored with a when y is odd (a mask, not a branch, so it vectorizes).
    static result_type twist(result_type x, result_type hi, result_type lo) {
        const result_type y = (hi & upper_mask) | (lo & lower_mask);
        return x ^ (y >> 1) ^ ((result_type{0} - (y & 1)) & xor_mask);
    }
    static result_type temper(result_type z) {
        z ^= (z >> tempering_u) & tempering_d;
        z ^= (z << tempering_s) & tempering_b;
        z ^= (z << tempering_t) & tempering_c;
        return z ^ (z >> tempering_l);
    }

    // The next n words, in place, then all of them tempered into out_. The twist is split
    // where its third operand x[i+m] wraps around to words already replaced, so no loop has
    // an index wrap or a dependence shorter than m; every trip count is a multiple of 4, which
    // lets g++ -O2 (whose cheap vectorizer wants no remainder loop) vectorize each.
    void twist_all() {
        std::size_t i = 0;
        for (; i < n - m; ++i) x_[i] = twist(x_[i + m], x_[i], x_[i + 1]);
        constexpr std::size_t mid_end = n - m + (m - 1) / 4 * 4;  // n-1 rounded down past n-m
        for (; i < mid_end; ++i) x_[i] = twist(x_[i + m - n], x_[i], x_[i + 1]);
        for (; i < n - 1; ++i) x_[i] = twist(x_[i + m - n], x_[i], x_[i + 1]);
        x_[n - 1] = twist(x_[m - 1], x_[n - 1], x_[0]);
    }
    void temper_all(result_type* __restrict out) const {
        for (std::size_t j = 0; j < n; ++j) out[j] = temper(x_[j]);
    }
    void refill() {
        twist_all();
        temper_all(out_);
        pos_ = 0;
    }

    result_type x_[n];    // the state words
    result_type out_[n];  // x_ tempered: the draws at positions pos_ .. n-1
    std::size_t pos_ = n;
};

}  // namespace graft::detail
