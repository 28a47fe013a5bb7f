#include "models/tokenizer/normalizer.h"

#include "models/tokenizer/json_file.h"
#include "runtime/error.h"

namespace attnscope::tokenizer {
namespace {

// spec[key] as a non-empty string; throws naming the step otherwise.
std::string text_field(const nlohmann::json& spec, const char* key, const std::string& where,
                       const std::string& name) {
  check(spec.contains(key) && spec[key].is_string() && !spec[key].get<std::string>().empty(), where,
        name + ": expected a non-empty string \"" + key + "\"");
  return spec[key].get<std::string>();
}

}  // namespace

std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content) {
  std::string replaced;
  std::size_t start = 0;
  for (std::size_t found = text.find(pattern); found != std::string_view::npos;
       found = text.find(pattern, start)) {
    replaced.append(text.substr(start, found - start)).append(content);
    start = found + pattern.size();
  }
  return replaced.append(text.substr(start));
}

Normalizer::Normalizer(const nlohmann::json& spec, const std::string& where) {
  if (!spec.is_null()) add_steps(spec, where);
}

void Normalizer::add_steps(const nlohmann::json& spec, const std::string& where) {
  const std::string type = component_type(spec, "normalizer", where);
  const std::string name = "normalizer " + type;
  if (type == "Sequence") {
    const nlohmann::json& parts = spec.value("normalizers", nlohmann::json());
    check(parts.is_array(), where, name + ": expected a \"normalizers\" list");
    for (const nlohmann::json& part : parts) add_steps(part, where);
    return;
  }
  if (type == "Prepend") {
    steps_.push_back({text_field(spec, "prepend", where, name), "", ""});
    return;
  }
  if (type == "Replace") {
    const nlohmann::json& pattern = spec.value("pattern", nlohmann::json());
    check(pattern.is_object() && pattern.contains("String"), where,
          name + ": only a {\"String\": ...} pattern is supported (found " +
              json_literal(pattern.dump()) + ")");
    check(spec.contains("content") && spec["content"].is_string(), where,
          name + ": expected a string \"content\"");
    steps_.push_back({"", text_field(pattern, "String", where, name + " pattern"),
                      spec["content"].get<std::string>()});
    return;
  }
  throw Error(where, "normalizer " + json_literal(type) +
                         " is not supported: attnscope implements no Unicode normalization or "
                         "case folding (only Prepend, Replace and Sequence)");
}

std::string Normalizer::normalize(std::string_view text) const {
  std::string normalized(text);
  for (const Step& step : steps_) {
    if (step.pattern.empty()) {
      if (!normalized.empty()) normalized.insert(0, step.prepend);
      continue;
    }
    normalized = replace_all(normalized, step.pattern, step.content);
  }
  return normalized;
}

}  // namespace attnscope::tokenizer
