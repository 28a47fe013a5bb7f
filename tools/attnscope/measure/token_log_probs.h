// The log-probabilities `generate --json --top-logprobs K` reports for each generated token, in
// the shape of the usual completion APIs (OpenAI's `logprobs.content[i]`):
//
//   {"id": 464, "token": " The", "bytes": [32, 84, 104, 101], "logprob": -1.23,
//    "top_logprobs": [{"id": 464, "token": " The", "bytes": [...], "logprob": -1.23}, ...]}
//
// logprob is log softmax(logits)[id] of the model's raw logits (before temperature, top-k or
// top-p, as those APIs report it), in nats; top_logprobs holds the K most probable tokens, most
// probable first. "token" (the token's bytes as text; a token cut mid-character shows U+FFFD)
// and "bytes" are present only when a tokenizer is known (and holds the id).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>

#include "tools/attnscope/cli/text_tokenizer.h"

namespace attnscope::cli {

// The entry for token `chosen`, picked from `logits` [V], with the `top` most probable tokens.
nlohmann::json token_log_probs(std::span<const float> logits, std::int32_t chosen, std::int64_t top,
                               const TextTokenizer* tokenizer);

}  // namespace attnscope::cli
