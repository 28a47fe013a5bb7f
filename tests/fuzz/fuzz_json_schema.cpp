// libFuzzer harness for the JSON schema compiler (engine/json_grammar.h) and the recognizer of
// what it compiles (engine/grammar_recognizer.h).
//
// Input: any bytes, read as a schema's text. Checked: compiling either throws attnscope::Error
// (no other exception, no crash, no hang) or gives a grammar whose replies can end: a reply
// written byte by byte, at each step the byte that ends things soonest among a few it takes
// (told apart inside and outside strings), else the least one it takes, or when that runs past
// kLongestGreedy bytes the shortest reply (a breadth-first search, which must not find the
// grammar a dead end), and nlohmann parses it as JSON.
// Anything else, a crash or a sanitizer report is a bug. Cost: the compile, plus 256 recognizer
// steps per byte written. Seeds: tests/fuzz/corpus/json_schema/.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/grammar_recognizer.h"
#include "engine/json_grammar.h"
#include "json_mode_reference.h"
#include "runtime/error.h"

namespace {

constexpr std::size_t kLongestGreedy = 4000;   // bytes written greedily before searching
constexpr std::size_t kLargestSearch = 20000;  // states the search may visit

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  attnscope::engine::Grammar grammar;
  try {
    grammar = attnscope::engine::json_schema_grammar(text);
  } catch (const attnscope::Error&) {
    return 0;
  }
  // The bytes that end things soonest: inside a string, its closing quote; elsewhere closing
  // brackets first (so that an optional recursive property is not written for ever).
  static constexpr std::string_view kEndingInString = "\"";
  static constexpr std::string_view kEndingOutside = "}],:0\"";
  attnscope::engine::GrammarRecognizer recognizer(grammar);
  std::string reply;
  bool in_string = false, escaped = false;  // where the reply written so far stands
  while (!recognizer.finished() && reply.size() < kLongestGreedy) {
    int chosen = -1;
    for (const char ending : in_string ? kEndingInString : kEndingOutside) {
      attnscope::engine::GrammarRecognizer next = recognizer;
      if (next.accept(static_cast<unsigned char>(ending))) {
        chosen = static_cast<unsigned char>(ending);
        break;
      }
    }
    for (int byte = 0; byte < 256 && chosen < 0; ++byte) {
      attnscope::engine::GrammarRecognizer next = recognizer;
      if (next.accept(static_cast<unsigned char>(byte))) chosen = byte;
    }
    if (chosen < 0) __builtin_trap();  // an accepted prefix that cannot go on
    recognizer.accept(static_cast<unsigned char>(chosen));
    reply += static_cast<char>(chosen);
    if (escaped) {
      escaped = false;
    } else if (in_string && chosen == '\\') {
      escaped = true;
    } else if (chosen == '"') {
      in_string = !in_string;
    }
  }
  if (!recognizer.finished()) {
    // The greedy choice went round in circles (a pattern's "d+" takes 'd' for ever): the
    // shortest reply from the start instead, when one is within reach.
    using attnscope::testing::Completion;
    const Completion whole = attnscope::testing::shortest_completion(
        attnscope::engine::GrammarRecognizer(grammar), kLargestSearch);
    if (whole.found == Completion::Found::none) __builtin_trap();
    if (whole.found == Completion::Found::too_far) return 0;
    reply = whole.text;
  }
  if (!attnscope::testing::reference_json(reply)) __builtin_trap();
  return 0;
}
