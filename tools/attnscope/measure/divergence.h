// `attnscope diverge`: where two configurations of one model (backend, dtype, device) part ways
// on the same tokens, layer by layer and head by head.
//
// Each run is one prefill of T tokens (batch 1) with a DivergenceRecorder attached (an
// AttentionTap, runtime/attention_tap.h), which keeps, per layer, the attention call's q, k, v and
// output (host f32 copies) and the logit lens' top-1 token at every position: the model's final
// norm and LM head applied to the residual stream after that layer
// (LanguageModel::logits_of_hidden). compare_runs then reports, per layer and head:
//
//   output     max and rms of |out_run - out_against| over the head's T x D outputs.
//   softmax    row max m and log-sum-exp lse of the scaled, causally masked scores, computed in
//   statistics float64 from each run's *own* q and k (measure/attention_reference.h), and the
//              max / rms of their differences. Where these differ, the inputs of the layer's
//              attention already differ (something upstream diverged); where they are equal and
//              only the output differs, the backend's arithmetic does.
//   local      each run's own largest |out - reference|, the reference computed in float64 from
//   error      that run's own q, k and v: the backend's error at that layer alone, apart from
//              what came from upstream.
//   top-1      positions whose logit-lens argmax differs between the runs; the first layer with
//   flips      a flip.
// and for the final logits the KL divergence KL(P_against || P_run) of the next-token
// distributions, mean and max over the T positions (runtime/log_probs.h).
//
// Cost per run: one prefill, one LM head per layer ([T, C] x [C, V]: the lens), and host copies
// of q, k, v, out; the float64 statistics take 2 L Hq T^2 D / 2 multiply-adds.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/language_model.h"
#include "runtime/attention_tap.h"
#include "tools/attnscope/measure/attention_reference.h"

namespace attnscope::cli {

// What one run left behind: per layer its attention call and the lens' top-1 per position, and
// the final logits [T, V].
struct RunRecord {
  struct Layer {
    HostAttention attention;
    std::vector<std::int32_t> lens_top1;
  };
  std::vector<Layer> layers;
  std::int64_t positions = 0, vocab = 0;
  std::vector<float> logits;
};

// Throws Error unless -1 <= layer < the model's layers (--perturb-layer; -1: none).
void check_perturb_layer(const ModelConfig& config, std::int64_t layer);

class DivergenceRecorder final : public AttentionTap {
 public:
  // perturb_layer >= 0: round that layer's attention output to bf16 in place before recording
  // it (a deliberate perturbation; a no-op where the activations are bf16 already). Throws
  // Error as check_perturb_layer.
  DivergenceRecorder(const LanguageModel& model, std::int64_t perturb_layer);
  void attention(Context& ctx, const Call& call) override;
  void layer_output(Context& ctx, std::int64_t layer, const Tensor& hidden) override;
  std::vector<RunRecord::Layer> take_layers() { return std::move(layers_); }

 private:
  const LanguageModel& model_;
  std::int64_t perturb_layer_;
  std::vector<RunRecord::Layer> layers_;
};

// One prefill of `tokens` (batch 1, every position's logits) on ctx's device with the model's
// current backend, recorded. Throws Error past the context length or the device's memory.
RunRecord record_run(Context& ctx, const LanguageModel& model, std::span<const std::int32_t> tokens,
                     std::int64_t perturb_layer = -1);

struct HeadDivergence {
  double out_max = 0, out_rms = 0;          // |out_run - out_against|
  double row_max_max = 0;                   // largest |m_run - m_against| over the rows
  double lse_max = 0, lse_rms = 0;          // |lse_run - lse_against|
  double error_run = 0, error_against = 0;  // each run's largest |out - float64 reference|
};
struct LayerDivergence {
  std::vector<HeadDivergence> heads;
  HeadDivergence all;  // over every head (rms over all of them)
  std::int64_t top1_flips = 0;
};
struct Divergence {
  std::vector<LayerDivergence> layers;
  std::int64_t positions = 0;
  std::int64_t first_output_difference = -1;  // first layer with out_max > 0, -1: none
  std::int64_t first_input_difference = -1;   // first layer whose softmax statistics differ
  std::int64_t first_flip = -1;               // first layer with a top-1 flip
  double kl_mean = 0, kl_max = 0;             // KL(P_against || P_run) of the final logits
};

// Throws Error when the two runs do not have the same shape (layers, heads, positions, head
// dimension, vocabulary): they are not runs of one model on the same tokens.
Divergence compare_runs(const RunRecord& run, const RunRecord& against);

}  // namespace attnscope::cli
