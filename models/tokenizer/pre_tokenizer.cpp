#include "models/tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <cctype>

#include "models/tokenizer/json_file.h"
#include "models/tokenizer/normalizer.h"
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
  if (spec.is_null()) return;
  add_steps(spec, where, true);
  const bool metaspace =
      std::ranges::any_of(steps_, [](const Step& step) { return step.metaspace.has_value(); });
  check(!(metaspace && byte_level_), where,
        "pre_tokenizer: Metaspace and ByteLevel together are not supported");
}

void PreTokenizer::add_steps(const nlohmann::json& spec, const std::string& where, bool last) {
  const std::string type = component_type(spec, "pre_tokenizer", where);
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
    byte_level_ = true;
    if (flag(spec, "add_prefix_space", false, where)) steps_.push_back({});
    if (flag(spec, "use_regex", true, where)) {
      steps_.push_back({RegexSplitter(kGpt2SplitPattern, where), std::nullopt});
    }
    return;
  }
  if (type == "Metaspace") {
    const nlohmann::json& replacement = spec.value("replacement", nlohmann::json());
    check(replacement.is_string() && !replacement.get<std::string>().empty(), where,
          name + ": expected a non-empty string \"replacement\"");
    Metaspace metaspace{replacement.get<std::string>(), Metaspace::Prepend::always,
                        flag(spec, "split", true, where)};
    if (spec.contains("prepend_scheme")) {
      const nlohmann::json& scheme = spec["prepend_scheme"];
      const std::string value = scheme.is_string() ? scheme.get<std::string>() : scheme.dump();
      check(value == "always" || value == "first" || value == "never", where,
            name + ": prepend_scheme " + json_literal(value) +
                " is not \"always\", \"first\" or \"never\"");
      metaspace.prepend = value == "always"  ? Metaspace::Prepend::always
                          : value == "first" ? Metaspace::Prepend::first
                                             : Metaspace::Prepend::never;
    } else if (!flag(spec, "add_prefix_space", true, where)) {
      metaspace.prepend = Metaspace::Prepend::never;
    }
    steps_.push_back({std::nullopt, std::move(metaspace)});
    return;
  }
  if (type == "Digits") {
    const bool individual = flag(spec, "individual_digits", false, where);
    steps_.push_back({RegexSplitter(individual ? R"(\p{N})" : R"(\p{N}+)", where), std::nullopt});
    return;
  }
  if (type == "Split") {
    const std::string behavior = spec.value("behavior", std::string());
    check(behavior == "Isolated", where,
          name + ": behavior " + json_literal(behavior) + " is not supported (only Isolated)");
    check(!flag(spec, "invert", false, where), where, name + ": invert true is not supported");
    const nlohmann::json& pattern = spec.value("pattern", nlohmann::json());
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
      steps_.push_back({RegexSplitter(pattern["Regex"].get<std::string>(), where), std::nullopt});
    } else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
      steps_.push_back(
          {RegexSplitter(regex_of_literal(pattern["String"].get<std::string>()), where),
           std::nullopt});
    } else {
      throw Error(where, name + ": expected \"pattern\": {\"Regex\": ...} or {\"String\": ...}");
    }
    return;
  }
  throw Error(where,
              name + " is not supported (only ByteLevel, Metaspace, Split, Digits and Sequence)");
}

void PreTokenizer::apply_metaspace(const Metaspace& metaspace, std::string_view piece,
                                   bool starts_input, std::vector<std::string>& pieces) {
  std::string written = replace_all(piece, " ", metaspace.replacement);
  const bool prepend = metaspace.prepend == Metaspace::Prepend::always ||
                       (metaspace.prepend == Metaspace::Prepend::first && starts_input);
  if (prepend && !written.starts_with(metaspace.replacement)) {
    written.insert(0, metaspace.replacement);
  }
  if (!metaspace.split) {
    pieces.push_back(std::move(written));
    return;
  }
  // A new piece before each replacement but the first character's.
  std::size_t start = 0;
  for (std::size_t found = written.find(metaspace.replacement, 1); found != std::string::npos;
       found = written.find(metaspace.replacement, found + metaspace.replacement.size())) {
    pieces.push_back(written.substr(start, found - start));
    start = found;
  }
  pieces.push_back(written.substr(start));
}

std::vector<std::string> PreTokenizer::split(std::string_view text, bool starts_input) const {
  std::vector<std::string> pieces;
  if (!text.empty()) pieces.emplace_back(text);
  std::vector<std::string> next;
  std::vector<std::string_view> parts;
  for (const Step& step : steps_) {
    next.clear();
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      std::string& piece = pieces[i];
      if (step.metaspace) {
        apply_metaspace(*step.metaspace, piece, starts_input && i == 0, next);
        continue;
      }
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
