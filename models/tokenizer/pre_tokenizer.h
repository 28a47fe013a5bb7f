// The pre-tokenizer of a tokenizer.json: cuts text into the pieces that BPE encodes one by one.
// Supported, as the `tokenizers` library runs them:
//   ByteLevel  add_prefix_space (a space before each piece that lacks one), use_regex (cut with
//              GPT-2's pattern); it must come last, since it rewrites the text into its byte
//              alphabet, which this loader leaves implicit (BPE works on the bytes).
//   Metaspace  (SentencePiece models) each space written as `replacement` ("▁"), which starts
//              the piece too when it does not already: prepend_scheme "always", "first" (only
//              the piece at the very start of the input) or "never" (older files:
//              add_prefix_space); with split, a new piece before each replacement.
//   Split      a Regex or String pattern, behavior Isolated, invert false.
//   Digits     individual_digits: each digit its own piece, or each run of digits.
//   Sequence   of these, applied in order, each to every piece of the one before.
//   null       the text is one piece.
// Anything else is refused with one line naming it, as is Metaspace beside ByteLevel. Cost: O(n)
// per step for n bytes.
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

  // The pieces of `text` (valid UTF-8), in order. `starts_input`: the text begins the input
  // (Metaspace's prepend_scheme "first").
  std::vector<std::string> split(std::string_view text, bool starts_input) const;
  // Whether the pieces are written in the byte alphabet (ends with ByteLevel).
  bool byte_level() const { return byte_level_; }

 private:
  struct Metaspace {
    enum class Prepend { always, first, never };
    std::string replacement;
    Prepend prepend;
    bool split;
  };
  struct Step {
    std::optional<RegexSplitter> splitter;
    std::optional<Metaspace> metaspace;  // neither: add the prefix space instead
  };
  void add_steps(const nlohmann::json& spec, const std::string& where, bool last);
  static void apply_metaspace(const Metaspace& metaspace, std::string_view piece, bool starts_input,
                              std::vector<std::string>& pieces);

  std::vector<Step> steps_;
  bool byte_level_ = false;
};

}  // namespace attnscope::tokenizer
