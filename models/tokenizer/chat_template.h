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
#include "runtime/error.h"

namespace attnscope::tokenizer {

// A conversation as OpenAI's chat completions API sends it: `messages`, each an object with a
// string role and a content (a string, null, or a list of text parts, read as their texts joined
// with newlines), and `tools` (null or a list), handed to the template as they came, keys in
// their order (a template's tojson shows it); and vLLM's `chat_template_kwargs`, more variables
// for the template (Qwen3's enable_thinking), as transformers passes apply_chat_template's
// keyword arguments (over the special tokens).
struct Conversation {
  jinja::Value messages;
  jinja::Value tools;
  jinja::Value template_variables = jinja::Value::object();
};

// What is wrong with a conversation, and where: `field` names the part ("messages[2].content").
class ConversationError : public Error {
 public:
  ConversationError(std::string part, const std::string& what)
      : Error(what), field(std::move(part)) {}
  std::string field;
};

// The conversation of a chat completions request (`request`: its body, an object; other fields
// are ignored). Throws ConversationError.
Conversation read_conversation(const jinja::Value& request);

// Where a rendered conversation stops: after its last message, as the template writes it;
// with the assistant's turn opened (transformers' add_generation_prompt), for a reply; or inside
// the final message, before whatever ends it (continue_final_message), so the model continues
// that message (an assistant's reply begun by the caller: "Sure, here is the JSON: {").
enum class ChatEnding { after_last_message, assistant_turn_opened, final_message_open };

// transformers' two flags as one ending: continue_final_message, else add_generation_prompt
// (asking for both is the caller's error to report).
ChatEnding chat_ending(bool add_generation_prompt, bool continue_final_message);

// With ChatEnding::final_message_open: the final message's text as the rendered `prompt` ends
// with it (less its trailing whitespace when the template strips it), the text a reply
// continues; "" when the final message has no text.
std::string continued_text(const Conversation& conversation, const std::string& prompt);

class ChatTemplate {
 public:
  ChatTemplate(std::string_view source, jinja::Value special_tokens)
      : template_(source),
        special_tokens_(std::move(special_tokens)),
        reads_content_(source.find("content") != std::string_view::npos) {}

  // The chat template of a checkpoint's folder, where transformers saves it: chat_template.jinja,
  // else tokenizer_config.json's "chat_template" (a string, or a list of named templates, of
  // which "default"); nullopt when the folder has none. The special tokens are
  // tokenizer_config.json's, over `default_tokens` (a JSON object: GPT-2's vocab.json tokenizer
  // has bos, eos and unk "<|endoftext|>" without saying so). Throws Error when a file is
  // malformed or the template uses a statement the interpreter does not support
  // (jinja_syntax.h), naming the file.
  static std::optional<ChatTemplate> find_in(const std::string& dir,
                                             const jinja::Value& default_tokens);
  // A template file (attnscope serve --chat-template), with the special tokens as find_in reads
  // them from `config_dir` ("": `default_tokens` alone). Throws Error as find_in does.
  static ChatTemplate from_file(const std::string& path, const std::string& config_dir,
                                const jinja::Value& default_tokens);

  // The prompt text of `conversation`, ending as `ending` says. Throws Error when the template
  // raises (raise_exception: roles out of order, ...) or fails on the conversation, and for
  // final_message_open when the final message has no text or the template does not write it
  // out whole (transformers' checks).
  std::string render(const Conversation& conversation, ChatEnding ending) const;

 private:
  jinja::Template template_;
  jinja::Value special_tokens_;
  bool reads_content_;  // the source names "content" (continue_final_message needs it)
};

}  // namespace attnscope::tokenizer
