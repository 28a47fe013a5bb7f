// The shared decode loop (tools/attnscope/cli/generation.h).
#include "tools/attnscope/cli/generation.h"

#include <chrono>

#include "engine/token_picker.h"
#include "ops/sample.h"
#include "runtime/error.h"
#include "runtime/transfer.h"
#include "tools/attnscope/cli/elapsed.h"

namespace attnscope::cli {

Generation generate_tokens(Context& ctx, const LanguageModel& model, KVCache& cache,
                           StepRunner& runner, std::span<const std::int32_t> prompt,
                           const GenerationOptions& options, const TokenCallback& on_token) {
  const ModelConfig& config = model.config();
  Generation result;
  std::uint64_t draws = 0;
  const bool pick_on_host = options.adjustments.any() || options.grammar_mask != nullptr;
  engine::TokenPicker picker(options.sampling, options.adjustments, options.grammar_mask,
                             options.json_prefix);
  // The next token from logits [1, 1, V], chosen on ctx's device (on a GPU only the chosen id
  // crosses to the host, which also waits for the step to finish), or on the host by `picker`.
  auto pick = [&](const Tensor& logits) {
    if (pick_on_host) {
      const Tensor row = to_host(ctx, logits);
      const std::optional<std::int32_t> id =
          picker.pick(std::span(row.data<float>(), static_cast<std::size_t>(config.vocab_size)));
      check(id.has_value(), "JSON mode",
            "no token of the vocabulary continues the reply (it lacks single-byte tokens)");
      return *id;
    }
    Tensor id = Tensor::empty({1}, DType::I32, ctx.allocator());
    ops::sample_tokens(ctx, logits.reshape({1, config.vocab_size}), options.sampling, draws++, id);
    return to_host(ctx, id).data<std::int32_t>()[0];
  };
  const auto prefill_start = std::chrono::steady_clock::now();
  Tensor logits = model.forward(ctx, prompt, 1, cache, runner);
  std::int32_t next = pick(logits);
  result.prefill_seconds = seconds_since(prefill_start);
  while (static_cast<std::int64_t>(result.generated.size()) < options.max_new_tokens) {
    on_token(next, logits);
    result.generated.push_back(next);
    if (!options.ignore_eos && config.is_eos(next)) {
      result.stop_reason = "eos";
      break;
    }
    if (picker.grammar_finished()) {
      result.stop_reason = "stop";
      break;
    }
    if (static_cast<std::int64_t>(result.generated.size()) == options.max_new_tokens) break;
    const auto step_start = std::chrono::steady_clock::now();
    logits = model.forward(ctx, std::span<const std::int32_t>(&next, 1), 1, cache, runner);
    next = pick(logits);
    result.decode_seconds += seconds_since(step_start);
    ++result.decode_steps;
  }
  return result;
}

}  // namespace attnscope::cli
