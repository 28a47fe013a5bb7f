// --attention-out FILE (generate, profile --model): the softmax probabilities of chosen layers
// and heads, saved as a .npy array [layer, head, query, key] of f32.
//
// An AttentionMapRecorder is an AttentionTap (runtime/attention_tap.h). Row p of a head's map is
// query position p's probabilities over keys 0..p, and 0 over the keys after p: a
// lower-triangular map over every position the model ran. Batch row 0 only.
//
// Where the probabilities come from, and what that costs (each in a profiler scope of its own,
// outside the attention scope, so attention's time never includes the map):
//   eager backends   their own P, as their pv_gemm step read it; copied to the host after the
//                    call ("attention_map.copy": B Hq Tq kv_len elements over PCIe on a GPU).
//   flash            never materialises P: recomputed from the call's q and k as
//                    softmax(scale q k^T) under the causal mask, in float64 on the host
//                    (attention_map.recompute: Hq Tq kv_len D multiply-adds, plus the copy of
//                    q, k, v and out).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/language_model.h"
#include "runtime/attention_tap.h"
#include "tools/attnscope/cli/flags.h"

namespace attnscope::cli {

// Which steps enter the map: the prefill only (profile --model: steps whose cache starts empty)
// or every step, one row per decode step after the prefill's (generate).
enum class AttentionMapSteps { Prefill, All };

class AttentionMapRecorder final : public AttentionTap {
 public:
  // Throws Error for a layer or head outside the model, or one named twice.
  AttentionMapRecorder(const ModelConfig& config, const AttentionMapOptions& options,
                       AttentionMapSteps steps);

  void probabilities(Context& ctx, const Tensor& probs) override;
  void attention(Context& ctx, const Call& call) override;

  // True once a call had no probabilities of its own (flash) and the map was recomputed.
  bool recomputed() const { return recomputed_; }
  // [layers, heads, positions, positions], positions = the rows recorded.
  std::vector<std::int64_t> shape() const;
  // The map in C order, zeros beyond each row's position.
  std::vector<float> values() const;

 private:
  std::vector<std::int64_t> layers_, heads_;
  std::vector<std::int64_t> layer_slot_;  // per model layer: its index in layers_, or -1
  AttentionMapSteps steps_;
  Tensor pending_;  // the probabilities of the call in progress (eager backends)
  bool recomputed_ = false;
  // rows_[layer slot * heads + head slot][position]: that query's probabilities over keys 0..p.
  std::vector<std::vector<std::vector<float>>> rows_;
  std::int64_t positions_ = 0;
};

// Runs `body` with an AttentionMapRecorder attached to ctx when options.path is set (and then
// writes the map there, saying on stderr when flash's map was recomputed); just runs `body`
// otherwise.
void with_attention_map(Context& ctx, const LanguageModel& model,
                        const AttentionMapOptions& options, AttentionMapSteps steps,
                        const std::function<void()>& body);

}  // namespace attnscope::cli
