// What a caller asks the engine for, and what it gets back: a request (a prompt and how to
// generate from it), the reasons a request ends, and the events a step reports.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/logit_adjuster.h"
#include "runtime/sampler.h"

namespace attnscope::engine {

using RequestId = std::int64_t;

struct Request {
  std::vector<std::int32_t> prompt;  // token ids, at least one
  std::int64_t max_tokens = 16;      // tokens to generate, at least one
  SamplingOptions sampling;          // temperature, top-k, top-p and the request's own seed
  LogitAdjustments adjustments;      // penalties and logit bias, applied before sampling
  std::vector<std::string> stop;     // stop strings (need the engine's token text)
  bool ignore_eos = false;           // keep going past the end-of-sequence token
  // A JSON schema (JSON text; "" none): the reply is one JSON object (or array) valid under it
  // (engine/json_grammar.h, a grammar masking the sampler), and the request ends,
  // FinishReason::stop, with its closing bracket. JSON mode is kJsonObjectSchema.
  std::string json_schema;
  // With json_schema: text the reply continues (a continued final message, "{\"city\": \""),
  // read by the grammar before the first token: the start of a reply, not a whole one.
  std::string json_prefix;
  // Log-probabilities to report with each token: -1 none; K >= 0 the chosen token's and the K
  // most probable ones' (of the raw logits, before temperature, top-k or top-p).
  std::int64_t logprobs = -1;
};

enum class FinishReason {
  length,     // max_tokens generated, or the model's context is full
  eos,        // the model produced its end-of-sequence token
  stop,       // the generated text contains one of the stop strings, or the JSON reply is closed
  cancelled,  // Engine::cancel
  refused,    // the request can never run (Event::error says why)
  failed,     // the step that ran it failed, e.g. out of memory (Event::error says why)
};

// "length", "eos", "stop", "cancelled", "refused", "failed".
std::string_view finish_reason_name(FinishReason reason);

// One thing that happened to a request during a step (or at once, for a refusal): a token it
// generated, and when it is finished, why. A finishing event may carry a token too (the one that
// reached max_tokens, the eos token, the token that completed a stop string).
struct Event {
  RequestId id = 0;
  bool has_token = false;
  std::int32_t token = 0;
  bool finished = false;
  FinishReason reason = FinishReason::length;
  std::string error;  // for FinishReason::refused and FinishReason::failed
  // With Request::logprobs >= 0: log p of the token, and the K most probable (id, log p).
  double logprob = 0;
  std::vector<std::pair<std::int32_t, double>> top_logprobs;
};

}  // namespace attnscope::engine
