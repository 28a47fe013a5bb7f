// ChatTemplate: how a checkpoint turns a conversation into its prompt text, as transformers'
// apply_chat_template does: the checkpoint's Jinja chat template (jinja.h) rendered with the
// messages, the tools, add_generation_prompt and the tokenizer's special tokens (bos_token,
// eos_token, unk_token, pad_token from tokenizer_config.json) as its variables. The text is
// then tokenized without adding special tokens: the template writes them itself.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "models/tokenizer/jinja.h"

namespace attnscope::tokenizer {

class ChatTemplate {
 public:
  ChatTemplate(std::string_view source, jinja::Value special_tokens)
      : template_(source), special_tokens_(std::move(special_tokens)) {}

  // The chat template of a checkpoint's folder, where transformers saves it: chat_template.jinja,
  // else tokenizer_config.json's "chat_template" (a string, or a list of named templates, of
  // which "default"); nullopt when the folder has none. The special tokens are
  // tokenizer_config.json's, over `default_tokens` (a JSON object: GPT-2's vocab.json tokenizer
  // has bos, eos and unk "<|endoftext|>" without saying so). Throws Error when a file is
  // malformed or the template uses what the interpreter does not support (jinja_syntax.h),
  // naming the file.
  static std::optional<ChatTemplate> find_in(const std::string& dir,
                                             const jinja::Value& default_tokens);
  // A template file (attnscope serve --chat-template), with the special tokens as find_in reads
  // them from `config_dir` ("": `default_tokens` alone). Throws Error as find_in does.
  static ChatTemplate from_file(const std::string& path, const std::string& config_dir,
                                const jinja::Value& default_tokens);

  // The prompt text of `messages` (OpenAI's [{"role": ..., "content": ...}, ...]); `tools` is
  // null or the request's list. Throws Error when the template raises (raise_exception: roles
  // out of order, ...) or fails on the conversation.
  std::string render(const jinja::Value& messages, const jinja::Value& tools,
                     bool add_generation_prompt) const;

 private:
  jinja::Template template_;
  jinja::Value special_tokens_;
};

}  // namespace attnscope::tokenizer
