// Tensor core: views share storage and version, strides follow PyTorch, errors are clear.
#include <catch2/catch.hpp>

#include <graft/graft.hpp>

using namespace graft;
using Catch::Matchers::Contains;

TEST_CASE("views share storage and the version counter", "[core][views]") {
    Tensor a = arange(12).view({3, 4});
    Tensor v = a.transpose(0, 1);
    REQUIRE(v.shares_storage_with(a));
    REQUIRE(v.sizes() == int_list{4, 3});
    REQUIRE(v.strides() == int_list{1, 4});
    REQUIRE_FALSE(v.is_contiguous());
    const auto before = a._version();
    v.select(0, 1).fill_(100);  // column 1 of a
    REQUIRE(a._version() == before + 1);
    REQUIRE(v._version() == a._version());
    REQUIRE(a.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 100, 2, 3, 4, 100, 6, 7, 8, 100, 10, 11});
}

TEST_CASE("view and reshape follow PyTorch's stride rules", "[core][views]") {
    Tensor a = arange(24).view({2, 3, 4});
    REQUIRE(a.view({-1, 4}).sizes() == int_list{6, 4});
    REQUIRE(a.view({4, -1}).sizes() == int_list{4, 6});
    // A permuted tensor whose merged dims are still contiguous can be viewed.
    Tensor p = a.permute({1, 2, 0});  // sizes [3,4,2], strides [4,1,12]
    REQUIRE(p.view({12, 2}).strides() == int_list{1, 12});
    // A transpose cannot be flattened by view; reshape copies instead.
    Tensor t = a.transpose(1, 2);
    REQUIRE_THROWS_WITH(t.view({24}), Contains("view size") && Contains("reshape"));
    Tensor r = t.reshape({24});
    REQUIRE_FALSE(r.shares_storage_with(a));
    REQUIRE(r.to_vector<std::int64_t>() == t.contiguous().to_vector<std::int64_t>());
    REQUIRE(r.to_vector<std::int64_t>()[1] == 4);  // a[0][1][0]
    // reshape of a contiguous tensor is a view.
    REQUIRE(a.reshape({6, 4}).shares_storage_with(a));
    REQUIRE_THROWS_WITH(a.view({5, -1}), Contains("invalid for input of size 24"));
    REQUIRE_THROWS_WITH(a.view({-1, -1}), Contains("only one dimension can be inferred"));
}

TEST_CASE("narrow, slice, select and indexing", "[core][views]") {
    Tensor a = arange(20).view({4, 5});
    REQUIRE(a.narrow(1, 1, 3).to_vector<std::int64_t>() ==
            std::vector<std::int64_t>{1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18});
    REQUIRE(a.slice(0, 1, 4, 2).to_vector<std::int64_t>() == std::vector<std::int64_t>{5, 6, 7, 8, 9, 15, 16, 17, 18, 19});
    REQUIRE(a.slice(1, -2, 100).to_vector<std::int64_t>() == std::vector<std::int64_t>{3, 4, 8, 9, 13, 14, 18, 19});
    REQUIRE(a[2][3].item<std::int64_t>() == 13);
    REQUIRE(a.select(1, -1).to_vector<std::int64_t>() == std::vector<std::int64_t>{4, 9, 14, 19});
    REQUIRE(a.narrow(0, 4, 0).numel() == 0);
    REQUIRE_THROWS_WITH(a.narrow(1, 3, 3), Contains("exceeds dimension size (5)"));
    REQUIRE_THROWS_WITH(a.select(0, 4), Contains("out of range"));
    REQUIRE_THROWS_WITH(a.select(2, 0), Contains("dimension out of range"));
    REQUIRE_THROWS_WITH(scalar_tensor(1.0).select(0, 0), Contains("0-dim"));
}

TEST_CASE("squeeze, unsqueeze, expand and broadcast_to", "[core][views]") {
    Tensor a = ones({1, 3, 1});
    REQUIRE(a.squeeze().sizes() == int_list{3});
    REQUIRE(a.squeeze(0).sizes() == int_list{3, 1});
    REQUIRE(a.squeeze(1).sizes() == int_list{1, 3, 1});
    REQUIRE(a.unsqueeze(-1).sizes() == int_list{1, 3, 1, 1});
    REQUIRE(a.unsqueeze(0).sizes() == int_list{1, 1, 3, 1});
    Tensor col = arange(3).view({3, 1});
    Tensor e = col.expand({2, 3, 4});
    REQUIRE(e.strides() == int_list{0, 1, 0});
    REQUIRE(e.select(0, 1).select(1, 3).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 2});
    REQUIRE(col.expand({-1, 2}).sizes() == int_list{3, 2});
    REQUIRE_THROWS_WITH(col.expand({2, 2}), Contains("must match the existing size (3)"));
    REQUIRE_THROWS_WITH(col.broadcast_to({4, 2}), Contains("not broadcastable"));
    REQUIRE(scalar_tensor(5).expand({2, 2}).to_vector<std::int64_t>() == std::vector<std::int64_t>(4, 5));
}

TEST_CASE("broadcast_shapes follows NumPy rules", "[core][broadcast]") {
    REQUIRE(broadcast_shapes({2, 1, 4}, {3, 1}) == int_list{2, 3, 4});
    REQUIRE(broadcast_shapes({}, {2, 3}) == int_list{2, 3});
    REQUIRE(broadcast_shapes({0, 1}, {1, 5}) == int_list{0, 5});
    REQUIRE(broadcast_shapes({1}, {0}) == int_list{0});
    REQUIRE_THROWS_WITH(broadcast_shapes({2, 3}, {3, 2}), Contains("[2, 3]") && Contains("[3, 2]"));
    REQUIRE_THROWS_AS(broadcast_shapes({0}, {2}), error);
}

TEST_CASE("contiguous, clone and to(dtype) copy correctly", "[core][copy]") {
    Tensor a = arange(6).view({2, 3}).t();
    Tensor c = a.contiguous();
    REQUIRE(c.is_contiguous());
    REQUIRE(c.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 3, 1, 4, 2, 5});
    Tensor same = c.contiguous();
    REQUIRE(same.is_same(c));
    Tensor k = c.clone();
    k.fill_(7);
    REQUIRE(c.to_vector<std::int64_t>()[0] == 0);
    Tensor f = a.to(dtype::float64);
    REQUIRE(f.type() == dtype::float64);
    REQUIRE(f.to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
    REQUIRE(tensor({-1.5, 0.0, 2.7}).to(dtype::int64).to_vector<std::int64_t>() == std::vector<std::int64_t>{-1, 0, 2});
    REQUIRE(tensor({-1.5, 0.0, 2.7}).to(dtype::bool_).to_vector<bool>() == std::vector<bool>{true, false, true});
}

TEST_CASE("copy_ broadcasts, converts and handles overlap", "[core][copy]") {
    Tensor dst = zeros({2, 3});
    dst.copy_(tensor({1, 2, 3}));
    REQUIRE(dst.to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
    // Copying a tensor's own transpose into it must read the original values.
    Tensor a = arange(4).view({2, 2});
    a.copy_(a.t());
    REQUIRE(a.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 2, 1, 3});
    REQUIRE_THROWS_WITH(dst.copy_(ones({2})), Contains("not broadcastable"));
    REQUIRE(dst.to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});  // unchanged after the error
}

TEST_CASE("0-dim and 0-sized tensors work everywhere", "[core][edge]") {
    Tensor s = scalar_tensor(2.5);
    REQUIRE(s.dim() == 0);
    REQUIRE(s.numel() == 1);
    REQUIRE(s.item<double>() == 2.5);
    REQUIRE(s.view({1, 1}).sizes() == int_list{1, 1});
    REQUIRE(s.unsqueeze(0).sizes() == int_list{1});
    REQUIRE(s.reshape({}).dim() == 0);
    Tensor z = zeros({3, 0, 2});
    REQUIRE(z.numel() == 0);
    REQUIRE(z.view({0, 6}).sizes() == int_list{0, 6});
    REQUIRE(z.transpose(0, 2).contiguous().sizes() == int_list{2, 0, 3});
    REQUIRE(z.clone().numel() == 0);
    REQUIRE_THROWS_WITH(z.item<float>(), Contains("a Tensor with 0 elements cannot be converted to Scalar"));
    REQUIRE_THROWS_WITH(ones({2}).item<float>(), Contains("2 elements"));
}

TEST_CASE("undefined tensors and bad arguments throw graft::error", "[core][errors]") {
    Tensor u;
    REQUIRE_FALSE(u.defined());
    REQUIRE_THROWS_WITH(u.sizes(), Contains("undefined tensor"));
    REQUIRE_THROWS_AS(empty({-1, 2}), error);
    REQUIRE_THROWS_WITH(ones({2, 3}).permute({0, 0}), Contains("repeated dim"));
    REQUIRE_THROWS_WITH(ones({2, 3}).permute({0}), Contains("does not match"));
    REQUIRE_THROWS_WITH(ones({2, 3}).data_ptr<double>(), Contains("float32") && Contains("float64"));
    REQUIRE_THROWS_WITH(ones({2, 3}).t().unsqueeze(3), Contains("dimension out of range"));
    REQUIRE_THROWS_WITH(ones({2, 2, 2}).t(), Contains("<= 2 dimensions"));
    REQUIRE_THROWS_WITH(ones({4}).as_strided({3}, {2}, 0), Contains("beyond the storage"));
}

TEST_CASE("storage is 64-byte aligned", "[core][storage]") {
    for (std::int64_t n : {0, 1, 3, 17, 1000}) {
        Tensor t = empty({n}, dtype::float32);
        REQUIRE(reinterpret_cast<std::uintptr_t>(t.raw_data()) % storage_alignment == 0);
    }
}

TEST_CASE("large freed buffers are reused through the buffer cache", "[core][storage]") {
    set_buffer_cache_limit(std::size_t{64} << 20);
    empty_buffer_cache();
    const void* first = nullptr;
    {
        Tensor big = empty({1 << 20});  // 4 MiB
        first = big.raw_data();
    }
    REQUIRE(buffer_cache_size() >= (std::size_t{4} << 20));
    Tensor again = empty({1 << 20});
    REQUIRE(again.raw_data() == first);
    REQUIRE(buffer_cache_size() == 0);
    Tensor small = empty({16});  // small buffers never enter the cache
    (void)small;
    { Tensor below = empty({1 << 14}); }  // 64 KiB: below the 128 KiB threshold (glibc's heap serves it)
    REQUIRE(buffer_cache_size() == 0);
    {
        Tensor mid = empty({1 << 16});  // 256 KiB: glibc would map it fresh every time
        first = mid.raw_data();
    }
    REQUIRE(buffer_cache_size() >= (std::size_t{256} << 10));
    Tensor mid_again = empty({1 << 16});
    REQUIRE(mid_again.raw_data() == first);
    REQUIRE(buffer_cache_size() == 0);
    set_buffer_cache_limit(0);  // disabling empties the cache and stops caching
    { Tensor t = empty({1 << 20}); }
    REQUIRE(buffer_cache_size() == 0);
    set_buffer_cache_limit(std::size_t{1} << 30);
}

TEST_CASE("small buffer size classes cover every size exactly once", "[core][storage]") {
    using C = detail::small_buffer_classes;
    std::size_t prev_block = 0;
    for (std::size_t c = 0; c < C::count; ++c) {
        const std::size_t b = C::block_size(c);
        REQUIRE(b > prev_block);
        REQUIRE(b % storage_alignment == 0);
        REQUIRE(C::class_of(b) == c);              // a block's own size maps to its class
        REQUIRE(C::class_of(prev_block + 1) == c);  // so does the smallest size it serves
        REQUIRE(C::round(prev_block + 1) == b);
        REQUIRE(b - (prev_block + 1) <= b / 4 + storage_alignment);  // at most ~25% rounding
        prev_block = b;
    }
    REQUIRE(prev_block == C::max_block);
}

TEST_CASE("small freed buffers are reused by the same thread", "[core][storage]") {
    empty_buffer_cache();  // also drains this thread's small-buffer lists
    REQUIRE(detail::small_buffer_pool::local_bytes() == 0);
    const void* first = nullptr;
    {
        Tensor t = empty({1000});  // 4000 B: a small buffer (not inline, below 128 KiB)
        first = t.raw_data();
    }
    Tensor again = empty({1000});
    REQUIRE(reinterpret_cast<std::uintptr_t>(again.raw_data()) % storage_alignment == 0);
    if (GRAFT_DETAIL_POOL_ENABLED) {
        REQUIRE(again.raw_data() == first);
        { Tensor other = empty({900}); }  // 3600 B rounds to the same 4 KiB class
        REQUIRE(detail::small_buffer_pool::local_bytes() == 4096);
        empty_buffer_cache();
        REQUIRE(detail::small_buffer_pool::local_bytes() == 0);
    }
    REQUIRE(buffer_cache_size() == 0);  // the shared cache holds only large buffers
}
