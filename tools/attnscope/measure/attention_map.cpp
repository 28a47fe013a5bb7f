// The attention map of --attention-out (attention_map.h).
#include "tools/attnscope/measure/attention_map.h"

#include <algorithm>
#include <iostream>
#include <numeric>

#include "profiler/scope.h"
#include "runtime/error.h"
#include "runtime/npy.h"
#include "runtime/transfer.h"
#include "tools/attnscope/cli/output_files.h"
#include "tools/attnscope/measure/attention_reference.h"

namespace attnscope::cli {

namespace {

// `chosen` checked against [0, count) and for repeats; every index when empty.
std::vector<std::int64_t> indices_or_all(const std::vector<std::int64_t>& chosen,
                                         std::int64_t count, const char* flag, const char* what) {
  if (chosen.empty()) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(count));
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    check(chosen[i] < count, flag, [&] {
      return std::string(what) + " " + std::to_string(chosen[i]) + " is outside the model's " +
             std::to_string(count) + " (0.." + std::to_string(count - 1) + ")";
    });
    check(std::find(chosen.begin(), chosen.begin() + static_cast<std::ptrdiff_t>(i), chosen[i]) ==
              chosen.begin() + static_cast<std::ptrdiff_t>(i),
          flag,
          [&] { return std::string(what) + " " + std::to_string(chosen[i]) + " named twice"; });
  }
  return chosen;
}

}  // namespace

AttentionMapRecorder::AttentionMapRecorder(const ModelConfig& config,
                                           const AttentionMapOptions& options,
                                           AttentionMapSteps steps)
    : layers_(indices_or_all(options.layers, config.n_layers, "--attention-layers", "layer")),
      heads_(indices_or_all(options.heads, config.n_heads, "--attention-heads", "head")),
      layer_slot_(static_cast<std::size_t>(config.n_layers), -1),
      steps_(steps),
      rows_(layers_.size() * heads_.size()) {
  for (std::size_t slot = 0; slot < layers_.size(); ++slot) {
    layer_slot_[static_cast<std::size_t>(layers_[slot])] = static_cast<std::int64_t>(slot);
  }
}

void AttentionMapRecorder::probabilities(Context& /*ctx*/, const Tensor& probs) {
  pending_ = probs;  // read after the backend's scope has closed (attention below)
}

void AttentionMapRecorder::attention(Context& ctx, const Call& call) {
  const Tensor probs = std::exchange(pending_, Tensor());
  const std::int64_t q_len = call.q.dim(2), kv_len = call.kv_len;
  const std::int64_t layer_slot = layer_slot_[static_cast<std::size_t>(call.layer)];
  if (layer_slot < 0 || (steps_ == AttentionMapSteps::Prefill && kv_len != q_len)) return;
  positions_ = std::max(positions_, kv_len);
  // Stores query row i of query head `head`'s probabilities over keys 0..its position.
  const auto store = [&](std::size_t head_slot, std::int64_t row, auto first, std::int64_t count) {
    std::vector<std::vector<float>>& rows = rows_[layer_slot * heads_.size() + head_slot];
    const std::int64_t position = kv_len - q_len + row;
    if (static_cast<std::int64_t>(rows.size()) <= position) rows.resize(position + 1);
    rows[static_cast<std::size_t>(position)].assign(first, first + count);
  };
  if (probs.defined()) {
    profiler::Scope scope(ctx, "attention_map.copy");
    const Tensor host =
        to_host(ctx, probs.slice_rows(0, 1)).to_dtype(DType::F32, ctx.host_allocator());
    for (std::size_t slot = 0; slot < heads_.size(); ++slot) {
      for (std::int64_t i = 0; i < q_len; ++i) {
        const float* row = host.data<float>() + (heads_[slot] * q_len + i) * kv_len;
        store(slot, i, row, kv_len - q_len + i + 1);
      }
    }
    return;
  }
  profiler::Scope scope(ctx, "attention_map.recompute");
  recomputed_ = true;
  const HostAttention host = copy_to_host(ctx, call);
  for (std::size_t slot = 0; slot < heads_.size(); ++slot) {
    for (std::int64_t i = 0; i < q_len; ++i) {
      const SoftmaxRow softmax = softmax_row(host, heads_[slot], i);
      store(slot, i, softmax.probabilities.begin(),
            static_cast<std::int64_t>(softmax.probabilities.size()));
    }
  }
}

std::vector<std::int64_t> AttentionMapRecorder::shape() const {
  return {static_cast<std::int64_t>(layers_.size()), static_cast<std::int64_t>(heads_.size()),
          positions_, positions_};
}

std::vector<float> AttentionMapRecorder::values() const {
  const auto positions = static_cast<std::size_t>(positions_);
  std::vector<float> map(rows_.size() * positions * positions, 0.0f);
  for (std::size_t slot = 0; slot < rows_.size(); ++slot) {
    for (std::size_t p = 0; p < rows_[slot].size(); ++p) {
      const std::vector<float>& row = rows_[slot][p];
      std::copy(row.begin(), row.end(), map.begin() + (slot * positions + p) * positions);
    }
  }
  return map;
}

void with_attention_map(Context& ctx, const LanguageModel& model,
                        const AttentionMapOptions& options, AttentionMapSteps steps,
                        const std::function<void()>& body) {
  if (options.path.empty()) {
    body();
    return;
  }
  // Created empty first, so that a path that cannot be written fails before the run, not after.
  write_output_file(options.path, [](std::ostream&) {});
  AttentionMapRecorder recorder(model.config(), options, steps);
  struct Attached {
    Context& ctx;
    ~Attached() { ctx.set_attention_tap(nullptr); }
  } attached{ctx};
  ctx.set_attention_tap(&recorder);
  body();
  if (recorder.recomputed()) {
    std::cerr << "attnscope: flash never materialises the attention probabilities: "
                 "--attention-out recomputed them from its q and k (scope "
                 "attention_map.recompute, outside attention's time)\n";
  }
  const std::vector<std::int64_t> shape = recorder.shape();
  const std::vector<float> values = recorder.values();
  write_output_file(options.path, [&](std::ostream& out) { write_npy(out, shape, values); });
}

}  // namespace attnscope::cli
