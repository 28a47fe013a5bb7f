// The references JSON mode is tested against (tests/test_json_mode.cpp, and the differential
// fuzzer tests/fuzz/fuzz_json_mode.cpp): nlohmann's parser for what is JSON, a scan of the gaps
// between tokens for JSON mode's whitespace rule, and a completion of any accepted prefix.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/grammar_recognizer.h"
#include "engine/json_grammar.h"

namespace attnscope::testing {

// JSON mode's grammar: the schema {"type": "object"}.
inline const engine::Grammar& json_mode_grammar() {
  static const engine::Grammar grammar = engine::json_schema_grammar(engine::kJsonObjectSchema);
  return grammar;
}

// A recognizer at the start of JSON mode's grammar.
inline engine::GrammarRecognizer json_mode() {
  return engine::GrammarRecognizer(json_mode_grammar());
}

// Whether JSON mode's recognizer takes all of `text` as one whole object.
inline bool recognizes(std::string_view text) {
  engine::GrammarRecognizer recognizer = json_mode();
  return recognizer.accept(text) && recognizer.finished();
}

// `text` with every number past a double's range (1e999, JSON all the same) read as "0 ", so
// that nlohmann, which refuses to hold one (its error 406) and stops there, parses the rest (the
// space ends it as it ended); nullopt when nlohmann finds `text` is not JSON.
inline std::optional<std::string> json_in_range(std::string text) {
  while (true) {
    try {
      [[maybe_unused]] const nlohmann::json parsed = nlohmann::json::parse(text);
      return text;
    } catch (const nlohmann::json::parse_error&) {
      return std::nullopt;
    } catch (const nlohmann::json::out_of_range& error) {
      if (error.id != 406) return std::nullopt;
      const std::string what = error.what();  // "... number overflow parsing '1e999'"
      const std::size_t open = what.rfind('\'', what.size() - 2);
      const std::string number = what.substr(open + 1, what.size() - open - 2);
      const std::size_t at = text.find(number);
      if (open == std::string::npos || number.empty() || at == std::string::npos) {
        return std::nullopt;
      }
      text.replace(at, number.size(), "0 ");
    }
  }
}

// Whether nlohmann parses `text` as JSON. A raw NUL byte is never JSON (a control character in
// a string, nothing outside one), but nlohmann's lexer ends its input there.
inline bool reference_json(const std::string& text) {
  return text.find('\0') == std::string::npos && json_in_range(text).has_value();
}

// Whether every run of whitespace outside strings in `text` is a gap JSON mode writes: one
// space, or "\n" or "\r\n" and at most 20 spaces or tabs.
inline bool gaps_allowed(const std::string& text) {
  static const std::regex kGap("( |\r?\n[ \t]{0,20})");
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (in_string) {
      if (text[i] == '\\') {
        ++i;  // the escaped byte
      } else if (text[i] == '"') {
        in_string = false;
      }
      continue;
    }
    if (text[i] == '"') in_string = true;
    const std::size_t end = text.find_first_not_of(" \t\n\r", i);
    if (end == i) continue;
    const std::string gap = text.substr(i, end - i);
    if (!std::regex_match(gap, kGap)) return false;
    i = end - 1;
  }
  return true;
}

// What the recognizer must take: one JSON object (nlohmann) with JSON mode's gaps, nothing after
// its '}'.
inline bool reference_object(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\n\r");
  const std::size_t last = text.find_last_not_of(" \t\n\r");
  return first != std::string::npos && text[first] == '{' && last == text.size() - 1 &&
         reference_json(text) && gaps_allowed(text);
}

// The shortest text after which `from` is finished (of the bytes from ' ' up and the line
// break, which every JSON text needs no other), by a breadth-first search over the recognizer's
// states: found; none (every state reachable was searched: a dead end the grammar must never
// lead to); or too far (more than `largest` states searched).
struct Completion {
  enum class Found { text, none, too_far } found = Found::text;
  std::string text;
};

inline Completion shortest_completion(const engine::GrammarRecognizer& from, std::size_t largest) {
  struct StateHash {
    std::size_t operator()(const engine::GrammarRecognizer& state) const { return state.hash(); }
  };
  std::vector<engine::GrammarRecognizer> states = {from};
  std::vector<std::pair<std::size_t, char>> reached_by = {{0, 0}};  // parent, byte
  std::unordered_set<engine::GrammarRecognizer, StateHash> seen = {from};
  for (std::size_t i = 0; i < states.size(); ++i) {
    if (states[i].finished()) {
      std::string text;
      for (std::size_t at = i; at != 0; at = reached_by[at].first) text += reached_by[at].second;
      return {Completion::Found::text, std::string(text.rbegin(), text.rend())};
    }
    if (states.size() > largest) return {Completion::Found::too_far, ""};
    for (int byte = '\n'; byte < 0x100; ++byte) {
      if (byte < ' ' && byte != '\n') continue;
      engine::GrammarRecognizer next = states[i];
      if (!next.accept(static_cast<unsigned char>(byte)) || !seen.insert(next).second) continue;
      states.push_back(next);
      reached_by.emplace_back(i, static_cast<char>(byte));
    }
  }
  return {Completion::Found::none, ""};
}

// A completion of the text `recognizer` has read, chosen byte by byte among a few that end
// things soonest; the caller checks it with nlohmann.
inline std::string completion(engine::GrammarRecognizer recognizer) {
  static constexpr std::string_view kPreferred = "\"}]0:\\uDrealsn{\x80\x90\xa0\n";
  std::string out;
  while (!recognizer.finished() && out.size() < 400) {
    bool moved = false;
    for (const char byte : kPreferred) {
      if (recognizer.accept(static_cast<unsigned char>(byte))) {
        out += byte;
        moved = true;
        break;
      }
    }
    if (!moved) return out + "<stuck>";
  }
  return out;
}

}  // namespace attnscope::testing
