// A DataLoader over examples default_collate has no rule for (strings), without a collate function.
// graft-expect-error: graft::data::DataLoader<Example>: default_collate has no rule for Example
#include <cstdint>
#include <string>

#include <graft/data/dataloader.hpp>

namespace {
struct words : graft::data::Dataset<std::string> {
    std::int64_t size() const override { return 2; }
    std::string get(std::int64_t index) override { return index == 0 ? "a" : "b"; }
};
}  // namespace

int main() {
    graft::data::DataLoader loader(words{}, {.batch_size = 2});
    (void)loader;
}
