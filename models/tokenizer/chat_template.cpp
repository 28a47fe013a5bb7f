// ChatTemplate (chat_template.h): finding a checkpoint's chat template and rendering it.
#include "models/tokenizer/chat_template.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "models/tokenizer/json_file.h"
#include "runtime/error.h"
#include "runtime/input_file.h"

namespace attnscope::tokenizer {

namespace {

namespace fs = std::filesystem;

// A chat template file is a few KiB; anything near this is not one.
constexpr std::uint64_t kMaxTemplateBytes = std::uint64_t{1} << 20;

// tokenizer_config.json's special tokens, each a string or an AddedToken object's "content",
// over `tokens`.
jinja::Value special_tokens(const std::optional<nlohmann::json>& config, jinja::Value tokens) {
  if (!config) return tokens;
  for (const char* name : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    const auto found = config->find(name);
    if (found == config->end()) continue;
    if (found->is_string()) tokens[name] = found->get<std::string>();
    if (found->is_object() && found->contains("content") && (*found)["content"].is_string()) {
      tokens[name] = (*found)["content"].get<std::string>();
    }
  }
  return tokens;
}

// A template, or the error naming where it came from.
ChatTemplate parse(const std::string& source, jinja::Value tokens, const std::string& where) {
  try {
    return ChatTemplate(source, std::move(tokens));
  } catch (const Error& error) {
    throw Error(where, error.what());
  }
}

std::optional<nlohmann::json> tokenizer_config(const fs::path& dir) {
  const fs::path path = dir / "tokenizer_config.json";
  if (!fs::is_regular_file(path)) return std::nullopt;
  return read_json_file(path);
}

}  // namespace

std::optional<ChatTemplate> ChatTemplate::find_in(const std::string& dir,
                                                  const jinja::Value& default_tokens) {
  const std::optional<nlohmann::json> config = tokenizer_config(dir);
  jinja::Value tokens = special_tokens(config, default_tokens);
  const fs::path file = fs::path(dir) / "chat_template.jinja";
  if (fs::is_regular_file(file)) {
    return parse(read_input_file(file, kMaxTemplateBytes, "chat template"), std::move(tokens),
                 file.string());
  }
  if (!config) return std::nullopt;
  const auto found = config->find("chat_template");
  if (found == config->end() || found->is_null()) return std::nullopt;
  const std::string where = (fs::path(dir) / "tokenizer_config.json").string();
  if (found->is_string()) return parse(found->get<std::string>(), std::move(tokens), where);
  if (found->is_array()) {  // [{"name": "default", "template": ...}, {"name": "tool_use", ...}]
    for (const nlohmann::json& named : *found) {
      if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
          named["template"].is_string()) {
        return parse(named["template"].get<std::string>(), std::move(tokens), where);
      }
    }
    throw Error(where, "chat_template is a list without a template named \"default\"");
  }
  throw Error(where, "chat_template must be a string or a list of named templates");
}

ChatTemplate ChatTemplate::from_file(const std::string& path, const std::string& config_dir,
                                     const jinja::Value& default_tokens) {
  const std::optional<nlohmann::json> config =
      config_dir.empty() ? std::nullopt : tokenizer_config(config_dir);
  return parse(read_input_file(path, kMaxTemplateBytes, "chat template"),
               special_tokens(config, default_tokens), path);
}

std::string ChatTemplate::render(const jinja::Value& messages, const jinja::Value& tools,
                                 bool add_generation_prompt) const {
  jinja::Value variables = special_tokens_;
  variables["messages"] = messages;
  variables["tools"] = tools;
  variables["documents"] = nullptr;
  variables["add_generation_prompt"] = add_generation_prompt;
  return template_.render(variables);
}

}  // namespace attnscope::tokenizer
