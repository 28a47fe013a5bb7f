// step_inputs and StepRunner (models/step_runner.h): the uploads and the graph policy of a
// forward step.
#include "models/step_runner.h"

#include <string>

#include "runtime/cuda/step_graph.h"
#include "runtime/error.h"
#include "runtime/transfer.h"

namespace attnscope {

StepInputs step_inputs(Context& ctx, std::span<const std::int32_t> tokens, std::int64_t length,
                       std::int64_t start, std::int64_t vocab_size) {
  StepInputs inputs;
  inputs.tokens = tokens;
  inputs.positions.resize(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    inputs.positions[i] = start + static_cast<std::int64_t>(i) % length;
  }
  if (ctx.device() == Device::CPU) return inputs;  // the CPU embedding checks ids itself
  // A kernel cannot throw: ids are checked here, before they are uploaded. Ids and positions
  // travel in one copy: [ids | positions].
  const auto count = static_cast<std::int64_t>(tokens.size());
  Tensor staged = Tensor::empty({2 * count}, DType::I32, ctx.host_allocator());
  std::int32_t* ids = staged.data<std::int32_t>();
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int32_t id = tokens[static_cast<std::size_t>(i)];
    check(id >= 0 && id < vocab_size, "forward",
          "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
              std::to_string(vocab_size) + ")");
    ids[i] = id;
    ids[count + i] = static_cast<std::int32_t>(inputs.positions[static_cast<std::size_t>(i)]);
  }
  const Tensor uploaded = to_device(ctx, staged);
  inputs.device_ids = uploaded.slice_rows(0, count);
  inputs.device_positions = uploaded.slice_rows(count, 2 * count);
  return inputs;
}

StepRunner::GraphCounts StepRunner::graph_counts() const {
  if constexpr (kCudaBuild) {
    if (graph_) return {graph_->instantiations(), graph_->updates()};
  }
  return {};
}

Tensor StepRunner::run(Context& ctx, bool decode, const std::function<Tensor()>& step) {
  // Decode steps on a GPU run as one CUDA graph, except while profiling: CUPTI then sees every
  // kernel launched on its own, inside its op's scope. The first decode step runs eagerly, so
  // every kernel it needs is loaded before a capture starts; a runner kept across a change of
  // backend (bench) then loads the new backend's kernels during a capture, which drivers of
  // CUDA 12.3 and later do (lazy loading is capture-safe there).
  if constexpr (kCudaBuild) {
    if (ctx.device() == Device::CUDA && decode && cuda_graphs_ && ctx.profiler() == nullptr) {
      if (graph_) return graph_->run(ctx, step);
      graph_ = std::make_shared<gpu::StepGraph>();
    }
  }
  return step();
}

}  // namespace attnscope
