#pragma once
// Definitions for graft/autograd/graph.hpp (compiled once in compiled mode; see graft/config.hpp).
#include "graft/autograd/graph.hpp"

#include <atomic>
#include <fstream>
#include <ostream>
#include <random>
#include <sstream>
#include <system_error>
#include <unordered_map>

namespace graft::autograd {

namespace detail {

GRAFT_INLINE disk_blob::~disk_blob() {
    std::error_code ec;
    std::filesystem::remove(path, ec);  // best effort: never throw from a destructor
}

GRAFT_INLINE std::filesystem::path unique_temp_file(const std::filesystem::path& dir) {
    static const std::uint64_t tag = [] {
        std::random_device rd;
        return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    }();
    static std::atomic<std::uint64_t> counter{0};
    return dir / graft::detail::concat("graft-saved-", std::hex, tag, "-", std::dec, counter++, ".bin");
}

GRAFT_INLINE std::any pack_to_disk(const std::filesystem::path& dir, const Tensor& t) {
    auto blob = std::make_shared<disk_blob>();
    const Tensor c = graft::detail::raw::contiguous(t);  // raw: no graph recorded for the copy
    blob->sizes = c.sizes();
    blob->type = c.type();
    blob->nbytes = static_cast<std::size_t>(c.numel()) * c.element_size();
    blob->path = unique_temp_file(dir);
    std::ofstream out(blob->path, std::ios::binary | std::ios::trunc);
    graft::detail::check(out.good(), "save_on_disk: cannot create the temporary file ", blob->path.string());
    if (blob->nbytes) out.write(static_cast<const char*>(c.raw_data()), static_cast<std::streamsize>(blob->nbytes));
    out.close();
    graft::detail::check(!out.fail(), "save_on_disk: writing ", blob->nbytes, " bytes to ", blob->path.string(),
                         " failed (disk full?)");
    return blob;
}

GRAFT_INLINE Tensor unpack_from_disk(const std::any& packed) {
    const auto* blob = std::any_cast<std::shared_ptr<disk_blob>>(&packed);
    graft::detail::check(blob && *blob, "save_on_disk: the packed value is not a save_on_disk file");
    const disk_blob& b = **blob;
    Tensor t = empty(b.sizes, b.type);
    std::ifstream in(b.path, std::ios::binary);
    graft::detail::check(in.good(), "save_on_disk: the temporary file ", b.path.string(),
                         " holding a saved tensor is missing");
    if (b.nbytes) in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(b.nbytes));
    graft::detail::check(static_cast<std::size_t>(in.gcount()) == b.nbytes && (b.nbytes == 0 || !in.fail()),
                         "save_on_disk: the temporary file ", b.path.string(), " is truncated (expected ", b.nbytes,
                         " bytes)");
    return t;
}

GRAFT_INLINE std::filesystem::path checked_directory(std::filesystem::path dir) {
    if (dir.empty()) dir = std::filesystem::temp_directory_path();
    std::error_code ec;
    graft::detail::check(std::filesystem::is_directory(dir, ec), "save_on_disk: ", dir.string(),
                         " is not an existing directory");
    return dir;
}

}  // namespace detail

GRAFT_INLINE save_on_disk::save_on_disk(const std::filesystem::path& directory)
    : dir_(detail::checked_directory(directory)),
      hooks_([dir = dir_](const Tensor& t) { return detail::pack_to_disk(dir, t); },
             [](const std::any& packed) { return detail::unpack_from_disk(packed); }) {}

namespace detail {

GRAFT_INLINE std::shared_ptr<Node> multi_grad_state::node_of(std::size_t i) const {
    if (auto n = grad_fns[i].lock()) return n;
    if (auto impl = leaves[i].lock()) {
        const auto* m = impl->autograd.get();
        if (m) return m->grad_accumulator.lock();
    }
    return nullptr;
}

GRAFT_INLINE bool gradient_expected(const Node* node) {
    if (!node) return false;
    const auto* task = current_task();
    if (!task) return false;
    if (task->is_capture(node)) return true;
    return will_engine_execute_node(*node);
}

GRAFT_INLINE Tensor on_multi_grad(const std::shared_ptr<multi_grad_state>& st, std::size_t i, const Tensor& grad) {
    const std::uint64_t id = current_graph_task_id();
    // The engine may run a leaf's tensor hooks on an accumulator it then skips (backward
    // with inputs=...); PyTorch never calls those, so neither do we.
    if (!gradient_expected(st->node_of(i).get())) return {};
    if (st->kind == mode::any) {
        {
            std::lock_guard lock(st->mutex);
            if (!st->fired.insert(id).second) return {};
            if (st->fired.size() > multi_grad_state::max_tracked) st->fired.erase(st->fired.begin());
        }
        st->any_fn(grad);
        return {};
    }
    tensor_list ready;
    {
        std::lock_guard lock(st->mutex);
        auto [it, fresh] = st->passes.try_emplace(id);
        auto& p = it->second;
        if (fresh) {
            // First gradient of this pass: count how many of the tensors will get one.
            p.grads.resize(st->grad_fns.size());
            for (std::size_t k = 0; k < st->grad_fns.size(); ++k)
                if (gradient_expected(st->node_of(k).get())) ++p.expected;
            if (st->passes.size() > multi_grad_state::max_tracked) st->passes.erase(st->passes.begin());
        }
        if (!p.grads[i].defined()) ++p.received;
        p.grads[i] = grad;
        if (p.received < p.expected) return {};
        ready = std::move(p.grads);
        st->passes.erase(it);
    }
    st->all_fn(ready);
    return {};
}

GRAFT_INLINE hook_handle register_multi_grad_hook_impl(const tensor_list& tensors,
                                                       std::shared_ptr<multi_grad_state> st) {
    graft::detail::check(!tensors.empty(), "register_multi_grad_hook: expected at least one tensor");
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        graft::detail::check(tensors[i].defined(), "register_multi_grad_hook: tensor ", i, " is undefined");
        // mode::any skips such tensors (as PyTorch registers hooks only on those that
        // require grad); mode::all refuses them, as PyTorch's register_hook on them does.
        graft::detail::check(st->kind == mode::any || tensors[i].requires_grad(), "register_multi_grad_hook: tensor ",
                             i, " does not require grad (cannot register a hook on a tensor that doesn't require "
                             "gradient); mode::all waits for every tensor's gradient");
    }
    if (st->kind == mode::any) {
        tensor_list kept;
        for (const auto& t : tensors)
            if (t.requires_grad()) kept.push_back(t);
        if (kept.size() != tensors.size()) {
            if (kept.empty()) return hook_handle{};  // no gradient can ever arrive: fn never runs
            return register_multi_grad_hook_impl(kept, std::move(st));
        }
    }
    st->grad_fns.resize(tensors.size());
    st->leaves.resize(tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (auto fn = tensors[i].grad_fn()) st->grad_fns[i] = fn;
        else st->leaves[i] = tensors[i].impl_ptr();
    }
    auto handles = std::make_shared<std::vector<hook_handle>>();
    for (std::size_t i = 0; i < tensors.size(); ++i)
        handles->push_back(tensors[i].register_hook([st, i](const Tensor& g) { return on_multi_grad(st, i, g); }));
    return hook_handle{[handles] {
        for (auto& h : *handles) h.remove();
    }};
}

}  // namespace detail

GRAFT_INLINE hook_handle register_multi_grad_hook(const tensor_list& tensors,
                                                  std::function<void(const tensor_list&)> fn, mode m) {
    graft::detail::check(m == mode::all || m == mode::any, "register_multi_grad_hook: expects mode to be one of "
                         "(mode::all, mode::any) but got ", static_cast<int>(m));
    graft::detail::check(m == mode::all, "register_multi_grad_hook: mode::any calls fn with one gradient; pass a "
                         "std::function<void(const Tensor&)>");
    graft::detail::check(static_cast<bool>(fn), "register_multi_grad_hook: fn is empty");
    auto st = std::make_shared<detail::multi_grad_state>();
    st->kind = mode::all;
    st->all_fn = std::move(fn);
    return detail::register_multi_grad_hook_impl(tensors, std::move(st));
}

GRAFT_INLINE hook_handle register_multi_grad_hook(const tensor_list& tensors, std::function<void(const Tensor&)> fn,
                                                  mode m) {
    graft::detail::check(m == mode::all || m == mode::any, "register_multi_grad_hook: expects mode to be one of "
                         "(mode::all, mode::any) but got ", static_cast<int>(m));
    graft::detail::check(m == mode::any, "register_multi_grad_hook: mode::all calls fn with all gradients; pass a "
                         "std::function<void(const tensor_list&)>");
    graft::detail::check(static_cast<bool>(fn), "register_multi_grad_hook: fn is empty");
    auto st = std::make_shared<detail::multi_grad_state>();
    st->kind = mode::any;
    st->any_fn = std::move(fn);
    return detail::register_multi_grad_hook_impl(tensors, std::move(st));
}

GRAFT_INLINE allow_mutation_on_saved_tensors::allow_mutation_on_saved_tensors() {
    auto& active = detail::active_mutation_context();
    graft::detail::check(active == nullptr, "allow_mutation_on_saved_tensors contexts cannot be nested");
    ctx_ = std::make_shared<detail::mutation_context>();
    active = ctx_;
}

GRAFT_INLINE allow_mutation_on_saved_tensors::~allow_mutation_on_saved_tensors() {
    detail::active_mutation_context() = nullptr;
    std::lock_guard lock(ctx_->mutex);
    ctx_->alive = false;  // graphs recorded in this scope now refuse to run backward
    for (const auto& weak : ctx_->cloned)
        if (auto e = weak.lock()) {
            e->data = Tensor{};
            e->version_source = Tensor{};
        }
    ctx_->cloned.clear();
    ctx_->by_storage.clear();
}

namespace detail {

GRAFT_INLINE void write_shapes(std::ostream& os, const tensor_list& grads) {
    os << '(';
    for (std::size_t i = 0; i < grads.size(); ++i) {
        if (i) os << ", ";
        if (grads[i].defined()) os << graft::detail::to_string(grads[i].sizes());
        else os << "None";
    }
    os << ')';
}

}  // namespace detail

GRAFT_INLINE log_nodes_to::log_nodes_to(std::ostream& os) {
    {
        std::lock_guard lock(detail::logger_mutex());
        graft::detail::check(detail::logger_slot() == nullptr, "log_nodes_to: a node logger is already "
                             "installed (log_nodes_to scopes cannot be nested)");
    }
    auto mutex = std::make_shared<std::mutex>();
    set_node_logger([&os, mutex](const Node& node, const tensor_list& grad_outputs, const tensor_list& grad_inputs) {
        std::ostringstream line;
        line << node.name() << ": ";
        detail::write_shapes(line, grad_outputs);
        line << " -> ";
        detail::write_shapes(line, grad_inputs);
        line << '\n';
        std::lock_guard lock(*mutex);
        os << line.str();
    });
}

namespace detail {

GRAFT_INLINE std::string dot_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

}  // namespace detail

GRAFT_INLINE std::string to_dot(const Tensor& t) {
    graft::detail::check(t.defined(), "to_dot: got an undefined tensor");
    const std::shared_ptr<Node> root = t.grad_fn();
    graft::detail::check(root != nullptr, "to_dot: the tensor has no grad_fn (it is a leaf or does not require "
                         "grad), so there is no backward graph to draw");
    std::unordered_map<const Node*, std::size_t> ids;
    std::vector<const Node*> order;
    ids.emplace(root.get(), 0);
    order.push_back(root.get());
    for (std::size_t k = 0; k < order.size(); ++k)
        for (const auto& e : order[k]->next_functions())
            if (e.valid() && ids.emplace(e.function.get(), order.size()).second) order.push_back(e.function.get());

    std::ostringstream os;
    os << "digraph backward {\n  node [shape=box, style=filled, fillcolor=white, fontname=monospace];\n";
    for (std::size_t k = 0; k < order.size(); ++k) {
        const Node* n = order[k];
        std::string label = n->name();
        std::string extra;
        if (const auto* acc = dynamic_cast<const AccumulateGrad*>(n)) {
            label += graft::detail::concat("\n", name(acc->variable().type()),
                                           graft::detail::to_string(acc->variable().sizes()));
            extra = ", fillcolor=lightblue";
        } else {
            const auto saved = n->describe_saved();
            if (!saved.empty()) {
                label += "\nsaved:";
                for (const auto& s : saved) label += " " + s;
            }
        }
        if (k == 0) extra = ", fillcolor=darkolivegreen1";
        os << "  n" << k << " [label=\"" << detail::dot_escape(label) << "\"" << extra << "];\n";
    }
    for (std::size_t k = 0; k < order.size(); ++k)
        for (const auto& e : order[k]->next_functions())
            if (e.valid()) os << "  n" << k << " -> n" << ids.at(e.function.get()) << ";\n";
    os << "}\n";
    return os.str();
}

}  // namespace graft::autograd
