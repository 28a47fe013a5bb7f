// step_inputs and StepRunner (models/step_runner.h): the uploads and the graph policy of a
// forward step.
#include "models/step_runner.h"

#include <algorithm>
#include <string>

#include "runtime/cuda/step_graph.h"
#include "runtime/error.h"
#include "runtime/transfer.h"

namespace attnscope {

namespace {

// upload_arrays, into `*reuse` when given (kept when it holds as many elements, else replaced).
std::vector<Tensor> upload_into(Context& ctx,
                                std::initializer_list<std::span<const std::int32_t>> arrays,
                                Tensor* reuse) {
  std::int64_t total = 0;
  for (const auto& array : arrays) total += static_cast<std::int64_t>(array.size());
  Tensor staged = Tensor::empty({total}, DType::I32, ctx.host_allocator());
  std::int32_t* at = staged.data<std::int32_t>();
  for (const auto& array : arrays) at = std::copy(array.begin(), array.end(), at);
  Tensor uploaded;
  if (reuse == nullptr) {
    uploaded = to_device(ctx, staged);
  } else {
    if (!reuse->defined() || reuse->numel() != total) {
      *reuse = Tensor::empty({total}, DType::I32, ctx.allocator());
    }
    copy_into(ctx, staged, *reuse);  // ordered after the work queued before it
    uploaded = *reuse;
  }
  std::vector<Tensor> tensors;
  std::int64_t first = 0;
  for (const auto& array : arrays) {
    const auto count = static_cast<std::int64_t>(array.size());
    tensors.push_back(uploaded.slice_rows(first, first + count));
    first += count;
  }
  return tensors;
}

}  // namespace

std::vector<Tensor> upload_arrays(Context& ctx,
                                  std::initializer_list<std::span<const std::int32_t>> arrays) {
  return upload_into(ctx, arrays, nullptr);
}

void check_token_ids(std::span<const std::int32_t> tokens, std::int64_t vocab_size) {
  for (const std::int32_t id : tokens) {
    check(id >= 0 && id < vocab_size, "forward", [&] {
      return "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
             std::to_string(vocab_size) + ")";
    });
  }
}

StepInputs step_inputs(Context& ctx, std::span<const std::int32_t> tokens, std::int64_t length,
                       std::int64_t start, std::int64_t vocab_size) {
  check_token_ids(tokens, vocab_size);
  std::vector<std::int32_t> positions(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    positions[i] = static_cast<std::int32_t>(start + static_cast<std::int64_t>(i) % length);
  }
  const std::vector<Tensor> uploaded = upload_arrays(ctx, {tokens, positions});
  return {uploaded[0], uploaded[1]};
}

StepRunner::GraphCounts StepRunner::graph_counts() const {
  if constexpr (kCudaBuild) {
    if (graph_) {
      return {graph_->instantiations(), graph_->updates(), graph_->replays(), graph_->nodes()};
    }
  }
  return {};
}

bool StepRunner::can_replay(const Context& ctx) const {
  // Never for a profile's runner: its profiled and unprofiled steps must run the same way.
  return kCudaBuild && ctx.device() == Device::CUDA && cuda_graphs_ && !under_profiler_ &&
         ctx.profiler() == nullptr && ctx.attention_tap() == nullptr;
}

std::vector<Tensor> StepRunner::upload_fixed(
    Context& ctx, std::initializer_list<std::span<const std::int32_t>> arrays) {
  return upload_into(ctx, arrays, &fixed_inputs_);  // queued after the previous step's graph
}

Tensor StepRunner::replay(Context& ctx, const std::vector<std::uintptr_t>& key,
                          const std::function<Tensor()>& step) {
  if constexpr (kCudaBuild) {
    if (graph_) return graph_->replay(ctx, key, step);
    graph_ = std::make_shared<gpu::StepGraph>();  // the first decode step runs eagerly
  }
  return step();
}

Tensor StepRunner::run(Context& ctx, bool decode, const std::function<Tensor()>& step) {
  // Decode steps on a GPU run as one CUDA graph, except while profiling (unless under_profiler_):
  // CUPTI then sees every kernel launched on its own, inside its op's scope. The first decode step
  // runs eagerly, so every kernel it needs is loaded before a capture starts; a runner kept across
  // a change of backend (bench) then loads the new backend's kernels during a capture, which
  // drivers of CUDA 12.3 and later do (lazy loading is capture-safe there). An attention tap
  // copies to the host inside the step: never captured.
  if constexpr (kCudaBuild) {
    const bool profiled = ctx.profiler() != nullptr;
    if (ctx.device() == Device::CUDA && decode && cuda_graphs_ && (!profiled || under_profiler_) &&
        ctx.attention_tap() == nullptr) {
      if (graph_) return graph_->run(ctx, step);
      graph_ = std::make_shared<gpu::StepGraph>();
    }
  }
  return step();
}

}  // namespace attnscope
