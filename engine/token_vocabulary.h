// TokenVocabulary: the tokenizer as the engine needs it (stop strings, JSON mode), without the
// engine depending on any tokenizer: each token's bytes, and which tokens are control tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace attnscope::engine {

struct TokenVocabulary {
  // The bytes token `id` adds to a text ("" for an id naming no token).
  std::function<std::string(std::int32_t id)> text;
  // Whether token `id` is a control token (<|endoftext|>, <|im_end|>): its text never stands
  // for itself, so JSON mode never draws it. None given: no token is.
  std::function<bool(std::int32_t id)> is_control;
};

}  // namespace attnscope::engine
