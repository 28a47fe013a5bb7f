// The references JSON mode is tested against (tests/test_json_mode.cpp, and the differential
// fuzzer tests/fuzz/fuzz_json_mode.cpp): nlohmann's parser for what is JSON, a scan of the gaps
// between tokens for JSON mode's whitespace rule, and a completion of any accepted prefix.
#pragma once

#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <string_view>

#include "engine/json_recognizer.h"

namespace attnscope::testing {

// Whether the recognizer takes all of `text` as one whole object.
inline bool recognizes(std::string_view text) {
  engine::JsonRecognizer recognizer;
  return recognizer.accept(text) && recognizer.complete();
}

// Whether nlohmann parses `text` as JSON. A raw NUL byte is never JSON (a control character in
// a string, nothing outside one), but nlohmann's lexer ends its input there. A number past a
// double's range (1e999) is JSON, which nlohmann refuses to hold (its error 406) and stops at:
// the number it names is read as "0 " (the space ends it as it ended) and the text parsed
// again, so what follows it still counts.
inline bool reference_json(std::string text) {
  if (text.find('\0') != std::string::npos) return false;
  while (true) {
    try {
      (void)nlohmann::json::parse(text);
      return true;
    } catch (const nlohmann::json::parse_error&) {
      return false;
    } catch (const nlohmann::json::out_of_range& error) {
      if (error.id != 406) return false;
      const std::string what = error.what();  // "... number overflow parsing '1e999'"
      const std::size_t open = what.rfind('\'', what.size() - 2);
      const std::string number = what.substr(open + 1, what.size() - open - 2);
      const std::size_t at = text.find(number);
      if (open == std::string::npos || number.empty() || at == std::string::npos) return false;
      text.replace(at, number.size(), "0 ");
    }
  }
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

// A completion of the text `recognizer` has read, chosen byte by byte among a few that end
// things soonest; the caller checks it with nlohmann.
inline std::string completion(engine::JsonRecognizer recognizer) {
  static constexpr std::string_view kPreferred = "\"}]0:\\uDrealsn{\x80\x90\xa0\n";
  std::string out;
  while (!recognizer.complete() && out.size() < 400) {
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
