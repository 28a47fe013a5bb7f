// The pre-tokenizer of a byte-level BPE tokenizer.json: cuts text into the pieces that BPE
// encodes one by one. Supported, as the `tokenizers` library runs them:
//   ByteLevel  add_prefix_space (a space before each piece that lacks one), use_regex (cut with
//              GPT-2's pattern); it must come last, since it rewrites the text into its byte
//              alphabet, which this loader leaves implicit (BPE works on the bytes).
//   Split      a Regex or String pattern, behavior Isolated, invert false.
//   Digits     individual_digits: each digit its own piece, or each run of digits.
//   Sequence   of these, applied in order, each to every piece of the one before.
// Anything else is refused with one line naming it. Cost: O(n) per step for n bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/tokenizer/regex_splitter.h"

namespace attnscope::tokenizer {

class PreTokenizer {
 public:
  // `spec` is tokenizer.json's "pre_tokenizer"; `where` names the file in messages.
  PreTokenizer(const nlohmann::json& spec, const std::string& where);

  // The pieces of `text` (valid UTF-8), in order.
  std::vector<std::string> split(std::string_view text) const;

 private:
  struct Step {
    std::optional<RegexSplitter> splitter;  // none: add the prefix space instead
  };
  void add_steps(const nlohmann::json& spec, const std::string& where, bool last);

  std::vector<Step> steps_;
};

}  // namespace attnscope::tokenizer
