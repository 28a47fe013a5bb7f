// libFuzzer harness for JSON mode's grammar (engine/json_grammar.h's {"type": "object"}, read by
// engine/grammar_recognizer.h), differential against
// nlohmann's parser (tests/json_mode_reference.h).
//
// Input: any bytes, read one at a time until the recognizer refuses one. Checked: the whole
// input is taken as one object exactly when nlohmann parses it as one with JSON mode's gaps; the
// longest prefix taken can still be completed to such an object; reading the bytes at once
// agrees with reading them one by one; a refused byte leaves the state as it was. Anything else,
// a crash or a sanitizer report is a bug. Cost: linear in the input, plus nlohmann's parse.
// Seeds: tests/fuzz/corpus/json_mode/.

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/grammar_recognizer.h"
#include "json_mode_reference.h"

using attnscope::engine::GrammarRecognizer;
using attnscope::testing::json_mode;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  GrammarRecognizer recognizer = json_mode();
  std::size_t taken = 0;
  while (taken < text.size()) {
    const GrammarRecognizer before = recognizer;
    if (!recognizer.accept(static_cast<unsigned char>(text[taken]))) {
      if (!(recognizer == before)) __builtin_trap();
      break;
    }
    ++taken;
  }
  const bool whole = taken == text.size() && recognizer.finished();
  if (whole != attnscope::testing::reference_object(text)) __builtin_trap();
  if (!attnscope::testing::reference_object(text.substr(0, taken) +
                                            attnscope::testing::completion(recognizer))) {
    __builtin_trap();
  }
  GrammarRecognizer at_once = json_mode();
  if (at_once.accept(text.substr(0, taken)) != true || !(at_once == recognizer)) __builtin_trap();
  return 0;
}
