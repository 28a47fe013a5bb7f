#include "models/tokenizer/pre_tokenizer.h"

#include <cctype>

#include "models/tokenizer/json_file.h"
#include "runtime/error.h"

namespace attnscope::tokenizer {
namespace {

// A literal string as a regex: each ASCII punctuation character escaped.
std::string regex_of_literal(std::string_view literal) {
  std::string pattern;
  for (const char character : literal) {
    const auto byte = static_cast<unsigned char>(character);
    if (byte < 0x80 && !std::isalnum(byte) && byte != ' ') pattern += '\\';
    pattern += character;
  }
  return pattern;
}

// spec[key] as a bool, `absent` when missing; throws unless it is a bool.
bool flag(const nlohmann::json& spec, const char* key, bool absent, const std::string& where) {
  if (!spec.contains(key) || spec[key].is_null()) return absent;
  check(spec[key].is_boolean(), where,
        "pre_tokenizer " + spec.value("type", std::string("?")) + ": \"" + key +
            "\" is not true or false");
  return spec[key].get<bool>();
}

}  // namespace

PreTokenizer::PreTokenizer(const nlohmann::json& spec, const std::string& where) {
  check(!spec.is_null(), where,
        "pre_tokenizer is null: not a byte-level BPE tokenizer (expected ByteLevel)");
  add_steps(spec, where, true);
}

void PreTokenizer::add_steps(const nlohmann::json& spec, const std::string& where, bool last) {
  check(spec.is_object() && spec.contains("type") && spec["type"].is_string(), where,
        "pre_tokenizer: expected an object with a \"type\"");
  const std::string type = spec["type"].get<std::string>();
  const std::string name = "pre_tokenizer " + type;
  if (type == "Sequence") {
    const nlohmann::json& parts = spec.value("pretokenizers", nlohmann::json());
    check(parts.is_array() && !parts.empty(), where,
          name + ": expected a non-empty \"pretokenizers\" list");
    for (std::size_t i = 0; i < parts.size(); ++i) {
      add_steps(parts[i], where, last && i + 1 == parts.size());
    }
    return;
  }
  if (type == "ByteLevel") {
    check(last, where,
          name +
              " must be the last pre-tokenizer (what follows it would see its "
              "byte alphabet); attnscope does not support this order");
    if (flag(spec, "add_prefix_space", false, where)) steps_.push_back({std::nullopt});
    if (flag(spec, "use_regex", true, where)) {
      steps_.push_back({RegexSplitter(kGpt2SplitPattern, where)});
    }
    return;
  }
  check(!last, where,
        "the last pre-tokenizer is " + type + ", not ByteLevel: not a byte-level BPE tokenizer");
  if (type == "Digits") {
    const bool individual = flag(spec, "individual_digits", false, where);
    steps_.push_back({RegexSplitter(individual ? R"(\p{N})" : R"(\p{N}+)", where)});
    return;
  }
  if (type == "Split") {
    const std::string behavior = spec.value("behavior", std::string());
    check(behavior == "Isolated", where,
          name + ": behavior " + json_literal(behavior) + " is not supported (only Isolated)");
    check(!flag(spec, "invert", false, where), where, name + ": invert true is not supported");
    const nlohmann::json& pattern = spec.value("pattern", nlohmann::json());
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
      steps_.push_back({RegexSplitter(pattern["Regex"].get<std::string>(), where)});
    } else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
      steps_.push_back(
          {RegexSplitter(regex_of_literal(pattern["String"].get<std::string>()), where)});
    } else {
      throw Error(where, name + ": expected \"pattern\": {\"Regex\": ...} or {\"String\": ...}");
    }
    return;
  }
  throw Error(where, name + " is not supported (only ByteLevel, Split, Digits and Sequence)");
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string> pieces{std::string(text)};
  std::vector<std::string> next;
  std::vector<std::string_view> parts;
  for (const Step& step : steps_) {
    next.clear();
    for (std::string& piece : pieces) {
      if (!step.splitter) {
        next.push_back(piece.starts_with(' ') ? std::move(piece) : " " + piece);
        continue;
      }
      parts.clear();
      step.splitter->split(piece, parts);
      for (const std::string_view part : parts) next.emplace_back(part);
    }
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace attnscope::tokenizer
