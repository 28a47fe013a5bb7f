// The decode loop that `attnscope generate` and the Python module (python/) share: prefill a
// prompt, pick the next token from its logits on the device (ops::sample_tokens: greedy, or
// temperature, top-k, top-p from a seeded generator), feed it back, and again, until
// max_new_tokens, eos (unless ignore_eos), the end of the JSON reply under a schema, or the
// caller's callback throws to stop it (Ctrl-C in Python). The last new token is never fed back, so
// the cache needs prompt + max_new_tokens - 1 positions. On a GPU only each chosen id crosses to
// the host, unless the callback reads the logits or the pick needs them: penalties, logit bias and
// a JSON schema (JSON mode) pick on the host, as the engine does (engine/token_picker.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/grammar_token_mask.h"
#include "engine/logit_adjuster.h"
#include "models/language_model.h"
#include "runtime/sampler.h"

namespace attnscope::cli {

struct GenerationOptions {
  std::int64_t max_new_tokens = 32;
  SamplingOptions sampling;
  engine::LogitAdjustments adjustments;  // penalties and logit bias (checked by the caller)
  // A JSON schema's mask of the model's vocabulary (JSON mode's is {"type": "object"}'s), and
  // the text the reply continues (engine::Request's json_prefix).
  std::shared_ptr<engine::GrammarTokenMask> grammar_mask;
  std::string json_prefix;
  bool ignore_eos = false;
};

struct Generation {
  std::vector<std::int32_t> generated;
  std::string stop_reason = "length";  // "length", "eos", or "stop" (the JSON reply closed)
  double prefill_seconds = 0;          // the prompt's step and the first token's pick
  double decode_seconds = 0;           // the steps after it
  std::int64_t decode_steps = 0;
};

// Called with every new token and the f32 logits [1, 1, V] on ctx's device it was chosen from,
// before it is fed back. It may throw: the loop stops and the exception passes on.
using TokenCallback = std::function<void(std::int32_t id, const Tensor& logits)>;

// Runs the loop above on `cache` (which must hold the positions it needs; the caller sizes it
// and checks the prompt's ids) through `runner`.
Generation generate_tokens(Context& ctx, const LanguageModel& model, KVCache& cache,
                           StepRunner& runner, std::span<const std::int32_t> prompt,
                           const GenerationOptions& options, const TokenCallback& on_token);

}  // namespace attnscope::cli
