#include "models/tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "models/tokenizer/json_file.h"
#include "models/tokenizer/utf8.h"
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

// The normalization forms by name, with utf8proc's options for each (STABLE: composition
// exclusions respected, so results never change with new Unicode versions).
struct FormName {
  const char* name;
  UnicodeForm form;
  int options;
};
constexpr FormName kForms[] = {
    {"NFC", UnicodeForm::NFC, UTF8PROC_STABLE | UTF8PROC_COMPOSE},
    {"NFD", UnicodeForm::NFD, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE},
    {"NFKC", UnicodeForm::NFKC, UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
    {"NFKD", UnicodeForm::NFKD, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT},
};

}  // namespace

std::string unicode_normalize(std::string_view text, UnicodeForm form) {
  int options = 0;
  for (const FormName& entry : kForms) {
    if (entry.form == form) options = entry.options;
  }
  std::string normalized;
  normalized.reserve(text.size());
  for (const Utf8Run& run : utf8_runs(text)) {
    if (!run.valid) {
      normalized.append(run.text);
      continue;
    }
    utf8proc_uint8_t* mapped = nullptr;
    const utf8proc_ssize_t length =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.text.data()),
                     static_cast<utf8proc_ssize_t>(run.text.size()), &mapped,
                     static_cast<utf8proc_option_t>(options));
    const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(mapped, &std::free);
    check(length >= 0, "tokenizer",
          [&] { return std::string("Unicode normalization failed: ") + utf8proc_errmsg(length); });
    normalized.append(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(length));
  }
  return normalized;
}

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
    steps_.push_back({Step::Kind::prepend, text_field(spec, "prepend", where, name), ""});
    return;
  }
  for (const FormName& entry : kForms) {
    if (type == entry.name) {
      steps_.push_back({Step::Kind::unicode, "", "", entry.form});
      return;
    }
  }
  if (type == "Replace") {
    const nlohmann::json& pattern = spec.value("pattern", nlohmann::json());
    check(pattern.is_object() && pattern.contains("String"), where,
          name + ": only a {\"String\": ...} pattern is supported (found " +
              json_literal(pattern.dump()) + ")");
    check(spec.contains("content") && spec["content"].is_string(), where,
          name + ": expected a string \"content\"");
    steps_.push_back({Step::Kind::replace, text_field(pattern, "String", where, name + " pattern"),
                      spec["content"].get<std::string>()});
    return;
  }
  throw Error(where, "normalizer " + json_literal(type) +
                         " is not supported (only Prepend, Replace, NFC, NFD, NFKC, NFKD and "
                         "Sequence)");
}

std::string Normalizer::normalize(std::string_view text) const {
  std::string normalized(text);
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Step::Kind::prepend:
        if (!normalized.empty()) normalized.insert(0, step.text);
        break;
      case Step::Kind::replace:
        normalized = replace_all(normalized, step.text, step.content);
        break;
      case Step::Kind::unicode:
        normalized = unicode_normalize(normalized, step.form);
        break;
    }
  }
  return normalized;
}

}  // namespace attnscope::tokenizer
