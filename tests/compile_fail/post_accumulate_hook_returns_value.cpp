// A post-accumulate-grad hook that returns a value: the value would be ignored, so it does not compile.
// graft-expect-error: the hook must return void
#include <graft/tensor.hpp>

int main() {
    graft::Tensor p = graft::ones({2});
    p.requires_grad_();
    (void)p.register_post_accumulate_grad_hook([](graft::Tensor& t) { return t * 2.0; });
}
