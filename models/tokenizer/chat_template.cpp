// ChatTemplate (chat_template.h): finding a checkpoint's chat template and rendering it.
#include "models/tokenizer/chat_template.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "models/tokenizer/jinja_values.h"
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

// A message's content as text: a string, null (an assistant turn of tool calls only) or
// OpenAI's list of parts, whose text parts are joined with newlines (as vLLM joins them for a
// template that reads content as a string).
jinja::Value message_content(const jinja::Value& content, const std::string& message_field) {
  const std::string field = message_field + ".content";
  if (content.is_string() || content.is_null()) return content;
  if (!content.is_array()) {
    throw ConversationError(field, field + " must be a string, null or a list of text parts");
  }
  std::string text;
  for (const jinja::Value& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      throw ConversationError(
          field, field + ": only text parts ({\"type\": \"text\", \"text\": ...}) are served");
    }
    if (!text.empty()) text += '\n';
    text += part["text"].get_ref<const std::string&>();
  }
  return text;
}

std::optional<nlohmann::json> tokenizer_config(const fs::path& dir) {
  // Present means anything there: a FIFO or a directory is refused by the reader, not taken
  // for a missing file.
  const fs::path path = dir / "tokenizer_config.json";
  std::error_code error;
  if (!fs::exists(path, error)) return std::nullopt;
  nlohmann::json config = read_json_file(path);
  check(config.is_object(), path.string(), "expected a JSON object");
  return config;
}

}  // namespace

std::optional<ChatTemplate> ChatTemplate::find_in(const std::string& dir,
                                                  const jinja::Value& default_tokens) {
  const std::optional<nlohmann::json> config = tokenizer_config(dir);
  jinja::Value tokens = special_tokens(config, default_tokens);
  const fs::path file = fs::path(dir) / "chat_template.jinja";
  std::error_code error;
  if (fs::exists(file, error)) {
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

std::string continued_text(const Conversation& conversation, const std::string& prompt) {
  const jinja::Value& content = conversation.messages.back()["content"];
  if (!content.is_string()) return "";
  const std::string text = content.get<std::string>();
  return prompt.ends_with(text) ? text : jinja::strip(text, false, true, std::nullopt);
}

Conversation read_conversation(const jinja::Value& request) {
  const auto messages = request.find("messages");
  if (messages == request.end()) throw ConversationError("messages", "messages is required");
  if (!messages->is_array() || messages->empty()) {
    throw ConversationError("messages",
                            "messages must be a non-empty list of {\"role\", \"content\"} objects");
  }
  Conversation conversation{jinja::Value::array(), request.value("tools", jinja::Value())};
  for (std::size_t i = 0; i < messages->size(); ++i) {
    jinja::Value message = (*messages)[i];
    const std::string field = "messages[" + std::to_string(i) + "]";
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string()) {
      throw ConversationError(field, field + " must be an object with a string role");
    }
    message["content"] = message_content(message.value("content", jinja::Value()), field);
    conversation.messages.push_back(std::move(message));
  }
  if (!conversation.tools.is_null() && !conversation.tools.is_array()) {
    throw ConversationError("tools", "tools must be a list");
  }
  const jinja::Value variables = request.value("chat_template_kwargs", jinja::Value());
  if (!variables.is_null()) {
    if (!variables.is_object()) {
      throw ConversationError("chat_template_kwargs", "chat_template_kwargs must be an object");
    }
    for (const char* own : {"messages", "tools", "documents", "add_generation_prompt"}) {
      if (variables.contains(own)) {
        throw ConversationError(
            "chat_template_kwargs",
            std::string("chat_template_kwargs cannot set ") + own + " (the request's own field)");
      }
    }
    conversation.template_variables = variables;
  }
  return conversation;
}

ChatEnding chat_ending(bool add_generation_prompt, bool continue_final_message) {
  if (continue_final_message) return ChatEnding::final_message_open;
  return add_generation_prompt ? ChatEnding::assistant_turn_opened : ChatEnding::after_last_message;
}

std::string ChatTemplate::render(const Conversation& conversation, ChatEnding ending) const {
  jinja::Value variables = special_tokens_;
  variables.update(conversation.template_variables);
  variables["messages"] = conversation.messages;
  variables["tools"] = conversation.tools;
  variables["documents"] = nullptr;
  variables["add_generation_prompt"] = ending == ChatEnding::assistant_turn_opened;
  if (ending != ChatEnding::final_message_open) return template_.render(variables);

  // As transformers does it: the final message's text is rendered followed by a tag, and the
  // text is cut where the tag begins, so whatever the template writes after a message (its
  // end-of-turn token) is left out. A template that strips the message's trailing spaces also
  // takes the space the tag ends with: the cut then drops the spaces before the tag too.
  constexpr std::string_view kTag = "CONTINUE_FINAL_MESSAGE_TAG ";
  const jinja::Value& final_content = conversation.messages.back()["content"];
  if (!final_content.is_string()) {
    throw Error("continue_final_message: the final message has no text content to continue");
  }
  if (!reads_content_) {
    throw Error("continue_final_message: the chat template never reads a message's content");
  }
  const std::string final_text = final_content.get<std::string>();
  variables["messages"].back()["content"] = final_text + std::string(kTag);
  std::string text = template_.render(variables);
  const std::string_view tag_word = kTag.substr(0, kTag.size() - 1);
  const std::size_t tag = text.rfind(tag_word);
  const std::string stripped = jinja::strip(final_text, true, true, std::nullopt);
  if (tag == std::string::npos || text.find(stripped) == std::string::npos) {
    throw Error(
        "continue_final_message: the final message does not appear in the rendered chat (the "
        "template changes it)");
  }
  const bool tag_whole = text.compare(tag, kTag.size(), kTag) == 0;
  text.resize(tag);
  return tag_whole ? text : jinja::strip(text, false, true, std::nullopt);
}

}  // namespace attnscope::tokenizer
