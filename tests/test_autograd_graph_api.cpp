// The torch.autograd.graph toolbox: saved-tensor hooks, save_on_disk, multi-grad
// hooks, allow_mutation_on_saved_tensors, node logging and to_dot. Each test pins
// a behaviour PyTorch users observe (see notes sections F, H, I).
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <graft/graft.hpp>

using namespace graft;
using autograd::tensor_list;
using Catch::Matchers::Contains;

namespace {
Tensor leaf(std::initializer_list<double> v, int_list sizes = {-1}) {
    return tensor(v, std::move(sizes)).requires_grad_();
}
std::vector<float> vals(const Tensor& t) { return t.to_vector<float>(); }

/// Counting hooks that pass tensors through unchanged.
struct counting_hooks {
    int packs = 0, unpacks = 0;
    autograd::pack_hook pack() {
        return [this](const Tensor& t) -> std::any {
            ++packs;
            return t;
        };
    }
    autograd::unpack_hook unpack() {
        return [this](const std::any& a) {
            ++unpacks;
            return std::any_cast<Tensor>(a);
        };
    }
};

/// A fresh directory under the system temp directory, removed at scope exit.
struct temp_dir {
    std::filesystem::path path;
    temp_dir() {
        static std::atomic<int> n{0};
        path = std::filesystem::temp_directory_path() /
               ("graft-test-" + std::to_string(std::random_device{}()) + "-" + std::to_string(n++));
        std::filesystem::create_directories(path);
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    [[nodiscard]] std::size_t files() const {
        std::size_t k = 0;
        for (const auto& e : std::filesystem::directory_iterator(path)) k += e.is_regular_file() ? 1 : 0;
        return k;
    }
};

std::vector<std::string> lines_of(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream is(s);
    for (std::string line; std::getline(is, line);) out.push_back(line);
    return out;
}

std::size_t count(const std::string& s, const std::string& what) {
    std::size_t k = 0;
    for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++k;
    return k;
}
}  // namespace

// ================================================================ F: saved_tensors_hooks

TEST_CASE("saved_tensors_hooks: pack once per saved tensor at save time, unpack once per use", "[autograd][saved_hooks]") {
    Tensor a = ones({5}).requires_grad_(), b = (ones({5}) * 2.0).requires_grad_();
    counting_hooks h;
    Tensor y;
    {
        autograd::saved_tensors_hooks guard(h.pack(), h.unpack());
        y = a * b;  // MulBackward0 saves a and b
    }
    REQUIRE(h.packs == 2);
    REQUIRE(h.unpacks == 0);
    y.sum().backward({}, true);
    REQUIRE(h.packs == 2);  // never packed again
    REQUIRE(h.unpacks == 2);
    y.sum().backward();
    REQUIRE(h.unpacks == 4);  // each backward unpacks each use again
    REQUIRE(vals(a.grad()) == std::vector<float>(5, 4.0f));
    REQUIRE(vals(b.grad()) == std::vector<float>(5, 2.0f));
}

TEST_CASE("saved_tensors_hooks: backward uses the unpacked values (F5, F6, F7)", "[autograd][saved_hooks]") {
    SECTION("pack 2x, unpack x/2 round-trips: a.grad == 2a") {
        Tensor a = leaf({1.0, 2.0, 3.0});
        Tensor y;
        {
            autograd::saved_tensors_hooks guard([](const Tensor& t) -> std::any { return t * 2.0; },
                                                [](const std::any& p) { return std::any_cast<Tensor>(p) / 2.0; });
            y = a * a;
        }
        y.sum().backward();
        REQUIRE(vals(a.grad()) == std::vector<float>{2, 4, 6});
    }
    SECTION("pack 2x, unpack identity: the doubled values are used, a.grad == 4a") {
        Tensor a = leaf({1.0, 2.0, 3.0});
        Tensor y;
        {
            autograd::saved_tensors_hooks guard([](const Tensor& t) -> std::any { return t * 2.0; },
                                                [](const std::any& p) { return std::any_cast<Tensor>(p); });
            y = a * a;
        }
        y.sum().backward();
        REQUIRE(vals(a.grad()) == std::vector<float>{4, 8, 12});
    }
    SECTION("after the scope exits, saving is normal again") {
        Tensor a = leaf({1.0, 2.0});
        {
            autograd::saved_tensors_hooks guard([](const Tensor& t) -> std::any { return t * 2.0; },
                                                [](const std::any& p) { return std::any_cast<Tensor>(p); });
        }
        (a * a).sum().backward();
        REQUIRE(vals(a.grad()) == std::vector<float>{2, 4});
    }
}

TEST_CASE("saved_tensors_hooks: ops inside a pack hook save their tensors without the hooks", "[autograd][saved_hooks]") {
    Tensor a = leaf({1.0, 2.0}), k = tensor({3.0, 3.0});
    int packs = 0;
    Tensor y;
    {
        // pack computes a * k, which saves a and k: without a guard this would recurse forever.
        autograd::saved_tensors_hooks g([&](const Tensor& t) -> std::any { ++packs; return t * k / k; },
                                        [](const std::any& p) { return std::any_cast<Tensor>(p); });
        y = a * a;
    }
    REQUIRE(packs == 2);
    y.sum().backward();
    REQUIRE(vals(a.grad()) == std::vector<float>{2, 4});
}

TEST_CASE("saved_tensors_hooks nest: the innermost pair wins, the outer one is back after it exits", "[autograd][saved_hooks]") {
    Tensor a = leaf({1.0, 2.0});
    counting_hooks outer, inner;
    Tensor y1, y2, y3;
    {
        autograd::saved_tensors_hooks g1(outer.pack(), outer.unpack());
        y1 = exp(a);  // ExpBackward0 saves its output: outer
        {
            autograd::saved_tensors_hooks g2(inner.pack(), inner.unpack());
            y2 = exp(a);  // inner only
        }
        y3 = exp(a);  // outer again
    }
    REQUIRE(outer.packs == 2);
    REQUIRE(inner.packs == 1);
    (y1 + y2 + y3).sum().backward();
    REQUIRE(outer.unpacks == 2);
    REQUIRE(inner.unpacks == 1);
    REQUIRE(a.grad().to_vector<float>()[0] == Approx(3 * std::exp(1.0)));
    REQUIRE(a.grad().to_vector<float>()[1] == Approx(3 * std::exp(2.0)));
}

TEST_CASE("saved_tensors_hooks are thread-local", "[autograd][saved_hooks][threads]") {
    counting_hooks h;
    autograd::saved_tensors_hooks guard(h.pack(), h.unpack());
    std::vector<float> other_grad;
    std::thread t([&] {
        Tensor a = leaf({1.0, 2.0});
        (a * a).sum().backward();
        other_grad = vals(a.grad());
    });
    t.join();
    REQUIRE(h.packs == 0);  // the other thread's saves did not see this thread's hooks
    REQUIRE(h.unpacks == 0);
    REQUIRE(other_grad == std::vector<float>{2, 4});
    Tensor b = leaf({3.0});
    (b * b).sum().backward();
    REQUIRE(h.packs == 2);
}

TEST_CASE("disable_saved_tensors_hooks (F9, F10, F11)", "[autograd][saved_hooks][errors]") {
    auto id_pack = [](const Tensor& t) -> std::any { return t; };
    auto id_unpack = [](const std::any& p) { return std::any_cast<Tensor>(p); };
    REQUIRE(autograd::saved_tensors_hooks_enabled());
    {
        autograd::disable_saved_tensors_hooks off("error message");
        REQUIRE_FALSE(autograd::saved_tensors_hooks_enabled());
        REQUIRE_THROWS_AS(autograd::saved_tensors_hooks(id_pack, id_unpack), graft::error);
        REQUIRE_THROWS_WITH(autograd::saved_tensors_hooks(id_pack, id_unpack), "error message");
    }
    REQUIRE(autograd::saved_tensors_hooks_enabled());
    REQUIRE_NOTHROW(autograd::saved_tensors_hooks(id_pack, id_unpack));
    {
        // F10: disabling while hooks are active is refused, and the state stays enabled.
        autograd::saved_tensors_hooks on(id_pack, id_unpack);
        REQUIRE_THROWS_WITH(autograd::disable_saved_tensors_hooks("error message"), "error message");
        REQUIRE(autograd::saved_tensors_hooks_enabled());
    }
    {
        // F11: the innermost message is reported; still disabled after the inner exit.
        autograd::disable_saved_tensors_hooks outer("outer");
        {
            autograd::disable_saved_tensors_hooks inner("inner");
            REQUIRE_THROWS_WITH(autograd::saved_tensors_hooks(id_pack, id_unpack), "inner");
        }
        REQUIRE_FALSE(autograd::saved_tensors_hooks_enabled());
        REQUIRE_THROWS_WITH(autograd::saved_tensors_hooks(id_pack, id_unpack), "outer");
    }
    REQUIRE(autograd::saved_tensors_hooks_enabled());
}

TEST_CASE("saved_tensors_hooks misuse: bad unpack results and user exceptions", "[autograd][saved_hooks][errors]") {
    Tensor a = leaf({1.0, 2.0, 3.0});
    SECTION("an unpack returning a wrong shape throws at backward") {
        Tensor y;
        {
            autograd::saved_tensors_hooks g([](const Tensor& t) -> std::any { return t; },
                                            [](const std::any&) { return ones({2}); });
            y = a * a;
        }
        REQUIRE_THROWS_WITH(y.sum().backward(), Contains("unpack hook returned a tensor of shape [2]") &&
                                                    Contains("saved tensor had shape [3]"));
    }
    SECTION("an unpack returning another dtype throws") {
        Tensor y;
        {
            autograd::saved_tensors_hooks g([](const Tensor& t) -> std::any { return t; },
                                            [](const std::any&) { return ones({3}, dtype::float64); });
            y = a * a;
        }
        REQUIRE_THROWS_WITH(y.sum().backward(), Contains("dtype float64"));
    }
    SECTION("an unpack returning an undefined tensor throws (F13)") {
        Tensor y;
        {
            autograd::saved_tensors_hooks g([](const Tensor& t) -> std::any { return t; },
                                            [](const std::any&) { return Tensor{}; });
            y = a * a;
        }
        REQUIRE_THROWS_WITH(y.sum().backward(), Contains("Output of saved tensor unpack_hook expected to be a Tensor"));
    }
    SECTION("user exceptions propagate unchanged: pack at forward, unpack at backward (F14)") {
        struct custom_error : std::exception {};
        {
            autograd::saved_tensors_hooks g([](const Tensor&) -> std::any { throw custom_error{}; },
                                            [](const std::any& p) { return std::any_cast<Tensor>(p); });
            REQUIRE_THROWS_AS(a * a, custom_error);
        }
        Tensor y;
        {
            autograd::saved_tensors_hooks g([](const Tensor& t) -> std::any { return t; },
                                            [](const std::any&) -> Tensor { throw custom_error{}; });
            y = a * a;
        }
        REQUIRE_THROWS_AS(y.sum().backward(), custom_error);
    }
}

TEST_CASE("saved_tensors_hooks: no version check when hooks are present (F15)", "[autograd][saved_hooks]") {
    Tensor a = leaf({1.0, 2.0});
    Tensor b = a.clone();
    Tensor y;
    {
        // The pack copies, so the later in-place write does not reach the saved value.
        autograd::saved_tensors_hooks g([](const Tensor& t) -> std::any { return graft::detail::raw::clone(t); },
                                        [](const std::any& p) { return std::any_cast<Tensor>(p); });
        y = b * b;
    }
    b.add_(1.0);
    REQUIRE_NOTHROW(y.sum().backward());
    REQUIRE(vals(a.grad()) == std::vector<float>{2, 4});
}

TEST_CASE("saved_tensors_hooks: double backward through values saved with hooks (F17)", "[autograd][saved_hooks]") {
    auto run = [](bool hooks) {
        Tensor a = leaf({1.0, 2.0, 3.0});
        Tensor s;
        {
            std::optional<autograd::saved_tensors_hooks> g;
            if (hooks)
                g.emplace([](const Tensor& t) -> std::any { return t; },
                          [](const std::any& p) { return std::any_cast<Tensor>(p); });
            s = pow(a, 3.0).sum();
        }
        tensor_list g = autograd::grad({s}, {a}, {}, true, true);  // 3a^2
        g[0].sum().backward();                                     // d/da 3a^2 = 6a
        return vals(a.grad());
    };
    REQUIRE(run(false) == std::vector<float>{6, 12, 18});
    REQUIRE(run(true) == std::vector<float>{6, 12, 18});
}

// ================================================================ save_on_disk

TEST_CASE("save_on_disk: values round-trip bitwise (float32, float64, non-contiguous)", "[autograd][save_on_disk]") {
    temp_dir dir;
    for (dtype type : {dtype::float32, dtype::float64}) {
        Tensor base = randn({4, 3}, type);
        // Awkward bit patterns must survive too.
        if (type == dtype::float32) {
            float* p = base.data_ptr<float>();
            p[0] = -0.0f;
            p[1] = std::numeric_limits<float>::denorm_min();
            p[2] = std::numeric_limits<float>::quiet_NaN();
            p[3] = -std::numeric_limits<float>::infinity();
        } else {
            double* p = base.data_ptr<double>();
            p[0] = -0.0;
            p[1] = std::numeric_limits<double>::denorm_min();
            p[2] = std::numeric_limits<double>::quiet_NaN();
            p[3] = std::numeric_limits<double>::max();
        }
        const Tensor t = base.t();  // non-contiguous
        REQUIRE_FALSE(t.is_contiguous());
        const std::any packed = autograd::detail::pack_to_disk(dir.path, t);
        REQUIRE(dir.files() == 1);
        const Tensor back = autograd::detail::unpack_from_disk(packed);
        REQUIRE(back.sizes() == t.sizes());
        REQUIRE(back.type() == type);
        const Tensor expected = graft::detail::raw::contiguous(t);
        REQUIRE(std::memcmp(back.raw_data(), expected.raw_data(),
                            static_cast<std::size_t>(t.numel()) * t.element_size()) == 0);
        // Unpacking again reads the file again.
        const Tensor again = autograd::detail::unpack_from_disk(packed);
        REQUIRE(std::memcmp(again.raw_data(), expected.raw_data(),
                            static_cast<std::size_t>(t.numel()) * t.element_size()) == 0);
    }
    REQUIRE(dir.files() == 0);  // each file is removed with its last reference
}

TEST_CASE("save_on_disk: gradients equal those without the hooks, files live as long as the graph", "[autograd][save_on_disk]") {
    temp_dir dir;
    for (dtype type : {dtype::float32, dtype::float64}) {
        auto forward = [&](const Tensor& x, const Tensor& w) { return (tanh(x.t().matmul(w)) * x.t().sum({1}, true)).sum(); };
        Tensor x0 = randn({3, 4}, type), w0 = randn({3, 2}, type);
        Tensor x1 = x0.detach().clone().requires_grad_(), w1 = w0.detach().clone().requires_grad_();
        Tensor x2 = x0.detach().clone().requires_grad_(), w2 = w0.detach().clone().requires_grad_();
        forward(x1, w1).backward();
        Tensor loss;
        {
            autograd::save_on_disk offload(dir.path);
            REQUIRE(offload.directory() == dir.path);
            loss = forward(x2, w2);
        }
        const std::size_t saved = dir.files();
        REQUIRE(saved > 0);
        loss.backward({}, true);
        REQUIRE(dir.files() == saved);  // retained graph: still on disk
        x2.set_grad(Tensor{});
        w2.set_grad(Tensor{});
        loss.backward();
        REQUIRE(dir.files() == 0);  // released with the graph's saved tensors
        if (type == dtype::float32) {
            REQUIRE(x2.grad().to_vector<float>() == x1.grad().to_vector<float>());
            REQUIRE(w2.grad().to_vector<float>() == w1.grad().to_vector<float>());
        } else {
            REQUIRE(x2.grad().to_vector<double>() == x1.grad().to_vector<double>());
            REQUIRE(w2.grad().to_vector<double>() == w1.grad().to_vector<double>());
        }
    }
    SECTION("dropping a graph without backward removes its files") {
        {
            Tensor a = leaf({1.0, 2.0});
            Tensor y;
            {
                autograd::save_on_disk offload(dir.path);
                y = a * a;
            }
            REQUIRE(dir.files() == 2);
        }
        REQUIRE(dir.files() == 0);
    }
}

TEST_CASE("save_on_disk misuse: bad directory, missing file, foreign packed value", "[autograd][save_on_disk][errors]") {
    temp_dir dir;
    REQUIRE_THROWS_WITH(autograd::save_on_disk(dir.path / "does-not-exist"), Contains("is not an existing directory"));
    REQUIRE_NOTHROW(autograd::save_on_disk());  // the system temp directory
    Tensor a = leaf({1.0, 2.0});
    Tensor y;
    {
        autograd::save_on_disk offload(dir.path);
        y = a * a;
    }
    for (const auto& e : std::filesystem::directory_iterator(dir.path)) std::filesystem::remove(e.path());
    REQUIRE_THROWS_WITH(y.sum().backward(), Contains("save_on_disk") && Contains("is missing"));
    REQUIRE_THROWS_WITH(autograd::detail::unpack_from_disk(std::any(42)), Contains("not a save_on_disk file"));
}

// ================================================================ H: multi-grad hooks

TEST_CASE("register_multi_grad_hook all: H1 and H2 from the docstring", "[autograd][multi_grad]") {
    Tensor a = leaf({1.0, 2.0}), b = leaf({3.0, 4.0});
    Tensor c = a * b, d = a * b;
    std::vector<std::vector<bool>> calls;
    auto handle = autograd::register_multi_grad_hook({a, b, c, d}, [&](const tensor_list& grads) {
        std::vector<bool> seen;
        for (const auto& g : grads) seen.push_back(g.defined());
        calls.push_back(seen);
    });
    c.sum().backward({}, true);
    REQUIRE(calls.size() == 1);
    REQUIRE(calls[0] == std::vector<bool>{true, true, true, false});  // d is not part of this pass
    c.sum().backward({}, true, false, {a});
    REQUIRE(calls.size() == 2);
    REQUIRE(calls[1] == std::vector<bool>{true, false, true, false});
    // autograd::grad with a leaf target: the hook sees the gradient flowing to it.
    (void)autograd::grad({c.sum()}, {a}, {}, true);
    REQUIRE(calls.size() == 3);
    REQUIRE(calls[2] == std::vector<bool>{true, false, true, false});
    // The gradients handed over are the ones the pass computed.
    tensor_list got;
    auto h2 = autograd::register_multi_grad_hook({a, b}, [&](const tensor_list& g) { got = g; });
    (c + d).sum().backward({}, true);
    REQUIRE(vals(got[0]) == std::vector<float>{6, 8});  // 2b
    REQUIRE(vals(got[1]) == std::vector<float>{2, 4});  // 2a
    h2.remove();
    handle.remove();
}

TEST_CASE("register_multi_grad_hook any: called once per pass with the first gradient", "[autograd][multi_grad]") {
    Tensor a = leaf({1.0, 2.0}), b = leaf({3.0, 4.0});
    Tensor c = a * b;
    int calls = 0;
    Tensor first;
    auto handle = autograd::register_multi_grad_hook(
        {a, b, c},
        std::function<void(const Tensor&)>([&](const Tensor& g) {
            ++calls;
            first = g;
        }),
        autograd::mode::any);
    c.sum().backward({}, true);
    REQUIRE(calls == 1);
    REQUIRE(vals(first) == std::vector<float>{1, 1});  // c's gradient arrives first
    c.sum().backward({}, true);
    REQUIRE(calls == 2);
    handle.remove();
    c.sum().backward({}, true);
    REQUIRE(calls == 2);
}

TEST_CASE("register_multi_grad_hook: remove() removes every hook and is idempotent", "[autograd][multi_grad]") {
    Tensor a = leaf({1.0}), b = leaf({2.0});
    Tensor c = a * b;
    int calls = 0;
    auto handle = autograd::register_multi_grad_hook({a, b}, [&](const tensor_list&) { ++calls; });
    c.backward({}, true);
    REQUIRE(calls == 1);
    handle.remove();
    handle.remove();
    c.backward({}, true);
    REQUIRE(calls == 1);
    REQUIRE(vals(a.grad()) == std::vector<float>{4});  // gradients unaffected
}

TEST_CASE("register_multi_grad_hook: concurrent backward passes each fire exactly once (H6)", "[autograd][multi_grad][threads]") {
    Tensor t1 = leaf({1.0}), t2 = leaf({2.0}), t3 = leaf({3.0}), t4 = leaf({4.0});
    Tensor out = (t2 * t3).sum();
    std::atomic<int> all_calls{0}, any_calls{0}, wrong{0};
    auto h_all = autograd::register_multi_grad_hook({t1, t2, t3, t4}, [&](const tensor_list& g) {
        ++all_calls;
        if (g[0].defined() || !g[1].defined() || !g[2].defined() || g[3].defined()) ++wrong;
    });
    auto h_any = autograd::register_multi_grad_hook(
        {t1, t2, t3, t4}, std::function<void(const Tensor&)>([&](const Tensor&) { ++any_calls; }), autograd::mode::any);
    constexpr int threads = 4, passes = 25;
    std::vector<std::thread> pool;
    for (int k = 0; k < threads; ++k)
        pool.emplace_back([&] {
            for (int i = 0; i < passes; ++i) out.backward({}, true, false, {t2, t3});
        });
    for (auto& th : pool) th.join();
    REQUIRE(all_calls == threads * passes);
    REQUIRE(any_calls == threads * passes);
    REQUIRE(wrong == 0);
    REQUIRE(t2.grad().item<double>() == Approx(3.0 * threads * passes));
    h_all.remove();
    h_any.remove();
}

TEST_CASE("register_multi_grad_hook misuse", "[autograd][multi_grad][errors]") {
    Tensor a = leaf({1.0});
    auto all_fn = [](const tensor_list&) {};
    std::function<void(const Tensor&)> any_fn = [](const Tensor&) {};
    REQUIRE_THROWS_WITH(autograd::register_multi_grad_hook({}, all_fn), Contains("at least one tensor"));
    REQUIRE_THROWS_WITH(autograd::register_multi_grad_hook({a, ones({1})}, all_fn),
                        Contains("tensor 1 does not require grad"));
    REQUIRE_THROWS_WITH(autograd::register_multi_grad_hook({a, Tensor{}}, all_fn), Contains("tensor 1 is undefined"));
    REQUIRE_THROWS_WITH(autograd::register_multi_grad_hook({a}, std::function<void(const tensor_list&)>{}),
                        Contains("fn is empty"));
    REQUIRE_THROWS_WITH(autograd::register_multi_grad_hook({a}, all_fn, autograd::mode::any),
                        Contains("mode::any calls fn with one gradient"));
    REQUIRE_THROWS_WITH(autograd::register_multi_grad_hook({a}, any_fn, autograd::mode::all),
                        Contains("mode::all calls fn with all gradients"));
    REQUIRE_THROWS_WITH(autograd::register_multi_grad_hook({a}, any_fn, static_cast<autograd::mode>(7)),
                        Contains("expects mode to be one of"));
}

// ================================================================ I: allow_mutation_on_saved_tensors

TEST_CASE("allow_mutation_on_saved_tensors: backward sees the value from before the mutation (I1)", "[autograd][mutation]") {
    autograd::allow_mutation_on_saved_tensors ctx;
    Tensor a = ones({2, 3}).requires_grad_();
    Tensor b = a.clone();
    Tensor out = (b * b).sum();  // saves b twice
    b.mul_(3.0);
    b.add_(1.0);
    REQUIRE(vals(b) == std::vector<float>(6, 4.0f));  // the mutation happened
    out.backward();
    REQUIRE(vals(a.grad()) == std::vector<float>(6, 2.0f));  // 2 * original b
}

TEST_CASE("allow_mutation_on_saved_tensors: saved outputs, leaves under no_grad, views", "[autograd][mutation]") {
    autograd::allow_mutation_on_saved_tensors ctx;
    SECTION("a saved output (exp) mutated afterwards") {
        Tensor a = leaf({0.0, 1.0});
        Tensor y = a.clone().exp();  // ExpBackward0 saves its output
        Tensor s = y.sum();
        y.mul_(2.0);
        s.backward();
        REQUIRE(a.grad().to_vector<float>()[0] == Approx(1.0));
        REQUIRE(a.grad().to_vector<float>()[1] == Approx(std::exp(1.0)));
    }
    SECTION("a saved leaf mutated under no_grad") {
        Tensor x = leaf({1.0, 2.0});
        Tensor s = (x * x).sum();
        {
            autograd::no_grad ng;
            x.mul_(10.0);
        }
        s.backward();
        REQUIRE(vals(x.grad()) == std::vector<float>{2, 4});
    }
    SECTION("mutating a view of the saved tensor's storage") {
        Tensor a = leaf({1.0, 2.0, 3.0, 4.0});
        Tensor b = a.clone();
        Tensor s = (b * b).sum();
        {
            autograd::no_grad ng;
            b.narrow(0, 1, 2).fill_(0.0);
        }
        s.backward();
        REQUIRE(vals(a.grad()) == std::vector<float>{2, 4, 6, 8});
    }
    SECTION("double backward still reaches the original history after a clone") {
        Tensor x = leaf({1.0, 2.0});
        Tensor h = x * 1.0;
        Tensor s = pow(h, 3.0).sum();
        h.add_(5.0);
        tensor_list g = autograd::grad({s}, {x}, {}, true, true);  // 3x^2
        REQUIRE(vals(g[0]) == std::vector<float>{3, 12});
        g[0].sum().backward();  // 6x
        REQUIRE(vals(x.grad()) == std::vector<float>{6, 12});
    }
}

TEST_CASE("allow_mutation_on_saved_tensors misuse and scope rules (I2, I3, I5, I6)", "[autograd][mutation][errors]") {
    SECTION("nesting throws, the outer scope stays usable") {
        autograd::allow_mutation_on_saved_tensors ctx;
        REQUIRE_THROWS_WITH(autograd::allow_mutation_on_saved_tensors(),
                            "allow_mutation_on_saved_tensors contexts cannot be nested");
        Tensor a = leaf({1.0});
        Tensor b = a.clone();
        Tensor s = (b * b).sum();
        b.mul_(2.0);
        s.backward();
        REQUIRE(vals(a.grad()) == std::vector<float>{2});
    }
    SECTION("backward outside the scope that recorded the graph throws") {
        Tensor a = leaf({1.0});
        Tensor s;
        {
            autograd::allow_mutation_on_saved_tensors ctx;
            Tensor b = a.clone();
            s = (b * b).sum();
            b.mul_(2.0);
        }
        REQUIRE_THROWS_WITH(s.backward(), Contains("Trying to backward outside of the "
                                                   "'allow_mutation_on_saved_tensors' context"));
        // Also when a new scope is open: it is not the one the graph was recorded in.
        autograd::allow_mutation_on_saved_tensors again;
        REQUIRE_THROWS_WITH(s.backward(), Contains("allow_mutation_on_saved_tensors"));
    }
    SECTION("outside the scope the version check stands") {
        { autograd::allow_mutation_on_saved_tensors ctx; }
        Tensor a = leaf({1.0});
        Tensor b = a.clone();
        Tensor s = (b * b).sum();
        b.mul_(2.0);
        REQUIRE_THROWS_WITH(s.backward(), Contains("modified by an inplace operation"));
    }
    SECTION("mutation after backward released the graph: no clone, no error (I5)") {
        autograd::allow_mutation_on_saved_tensors ctx;
        Tensor a = leaf({1.0});
        Tensor b = a.clone();
        Tensor s = (b * b).sum();
        s.backward();
        REQUIRE_NOTHROW(b.mul_(2.0));
        REQUIRE(vals(b) == std::vector<float>{2});
    }
    SECTION("the scope's bookkeeping is gone after exit (I6)") {
        std::weak_ptr<autograd::detail::mutation_context> weak;
        {
            autograd::allow_mutation_on_saved_tensors ctx;
            weak = autograd::detail::active_mutation_context();
            Tensor a = leaf({1.0});
            Tensor b = a.clone();
            Tensor s = (b * b).sum();
            b.mul_(2.0);
            REQUIRE(weak.lock()->cloned.size() == 2);  // b, saved twice by MulBackward0
            REQUIRE(weak.lock()->by_storage.count(b.impl().data.get()) == 0);
            Tensor t = a.clone();
            Tensor s2 = (t * t).sum();
            REQUIRE(weak.lock()->by_storage.at(t.impl().data.get()).size() == 2);
            s.backward();
            s2.backward();
        }
        REQUIRE(autograd::detail::active_mutation_context() == nullptr);
        REQUIRE(weak.expired());  // nothing holds the context any more
        // And a new scope can be opened.
        REQUIRE_NOTHROW(autograd::allow_mutation_on_saved_tensors());
    }
}

TEST_CASE("allow_mutation_on_saved_tensors is per thread", "[autograd][mutation][threads]") {
    autograd::allow_mutation_on_saved_tensors ctx;
    std::string error;
    std::thread t([&] {
        Tensor a = leaf({1.0});
        Tensor b = a.clone();
        Tensor s = (b * b).sum();
        b.mul_(2.0);
        try {
            s.backward();
        } catch (const graft::error& e) {
            error = e.what();
        }
    });
    t.join();
    REQUIRE_THAT(error, Contains("modified by an inplace operation"));
}

// ================================================================ log_nodes_to

TEST_CASE("log_nodes_to writes one line per node in execution order", "[autograd][logging]") {
    Tensor x = leaf({1.0, 2.0, 3.0}), w = leaf({4.0, 5.0, 6.0}), b = leaf({0.5, 0.5, 0.5});
    Tensor loss = (x * w + b).sum();
    std::ostringstream os;
    {
        autograd::log_nodes_to log(os);
        REQUIRE_THROWS_WITH(autograd::log_nodes_to(os), Contains("cannot be nested"));
        loss.backward({}, true);
    }
    const auto lines = lines_of(os.str());
    REQUIRE(lines.size() == 6);
    CHECK(lines[0] == "SumBackward0: ([]) -> ([3])");
    CHECK(lines[1] == "AddBackward0: ([3]) -> ([3], [3])");
    CHECK(lines[2] == "AccumulateGrad: ([3]) -> ()");  // b's: created after the multiplication
    CHECK(lines[3] == "MulBackward0: ([3]) -> ([3], [3])");
    CHECK(lines[4] == "AccumulateGrad: ([3]) -> ()");
    CHECK(lines[5] == "AccumulateGrad: ([3]) -> ()");
    // Undefined gradients print as None.
    std::ostringstream os2;
    {
        autograd::log_nodes_to log(os2);
        (x * ones({3})).sum().backward();
    }
    REQUIRE_THAT(os2.str(), Contains("MulBackward0: ([3]) -> ([3], None)"));
    // After the scope nothing is written.
    loss.backward();
    REQUIRE(lines_of(os.str()).size() == 6);
}

// ================================================================ to_dot

TEST_CASE("to_dot draws the backward graph", "[autograd][dot]") {
    Tensor x = leaf({1.0, 2.0, 3.0}), w = leaf({4.0, 5.0, 6.0}), b = leaf({0.5, 0.5, 0.5});
    Tensor loss = (x * w + b).sum();
    const std::string dot = autograd::to_dot(loss);
    REQUIRE(dot.rfind("digraph", 0) == 0);
    REQUIRE(count(dot, "SumBackward0") == 1);
    REQUIRE(count(dot, "AddBackward0") == 1);
    REQUIRE(count(dot, "MulBackward0") == 1);
    REQUIRE(count(dot, "AccumulateGrad") == 3);
    REQUIRE(count(dot, " -> ") == 5);
    REQUIRE_THAT(dot, Contains("MulBackward0\\nsaved: float32[3] float32[3]"));
    REQUIRE_THAT(dot, Contains("AccumulateGrad\\nfloat32[3]"));
    REQUIRE_THAT(dot, Contains("n0 -> n1;"));
    REQUIRE(autograd::to_dot(loss) == dot);  // deterministic
    // A shared subgraph appears once; each use is an edge.
    Tensor sq = (x * x).sum();
    const std::string dot2 = autograd::to_dot(sq);
    REQUIRE(count(dot2, "AccumulateGrad") == 1);
    REQUIRE(count(dot2, " -> ") == 3);
}

TEST_CASE("to_dot misuse: no graph to draw", "[autograd][dot][errors]") {
    REQUIRE_THROWS_WITH(autograd::to_dot(leaf({1.0})), Contains("has no grad_fn"));
    REQUIRE_THROWS_WITH(autograd::to_dot(ones({2})), Contains("has no grad_fn"));
    REQUIRE_THROWS_WITH(autograd::to_dot(Tensor{}), Contains("undefined"));
}
