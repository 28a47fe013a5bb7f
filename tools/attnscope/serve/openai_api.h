// The OpenAI completions and chat completions API as `attnscope serve` speaks it: a request body
// read into an engine request (every known field checked, with the error OpenAI's clients
// expect; a chat's messages rendered by the model's chat template), the completion's text as it
// streams (whole UTF-8 characters only, cut before a stop string), and the response bodies: one
// JSON object, or server-sent events ending with `data: [DONE]`.
//
// POST /v1/completions fields: prompt (a string, an array of token ids, or an array of one
// string or of one array of ids), max_tokens (16), temperature (1), top_p (1), top_k (0: off;
// vLLM's extension), presence_penalty and frequency_penalty (0; -2 to 2), logit_bias, seed
// (random when absent), stop (a string or up to 4), logprobs (0-20), echo, stream,
// stream_options.include_usage, ignore_eos (vLLM's extension), response_format (text,
// json_object: JSON mode, or json_schema: structured outputs; engine/json_grammar.h), n (1 to 16
// choices), model, user. Unknown fields are ignored, as OpenAI's server does; known ones not
// served (repetition_penalty, min_p, a schema keyword not enforced) and a known field of the
// wrong type or out of range are a 400 naming it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "models/tokenizer/chat_template.h"
#include "tools/attnscope/cli/text_tokenizer.h"
#include "tools/attnscope/serve/reasoning.h"
#include "tools/attnscope/serve/tool_calls.h"

namespace attnscope::cli {

// An error answer: HTTP status, OpenAI's error type ("invalid_request_error", ...), the message,
// and the field it is about ("" when none).
struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;
};

// {"error": {"message", "type", "param", "code"}}
std::string error_body(const ApiError& error);

// The most choices (`n`) one request may ask for.
constexpr std::int64_t kMaxChoices = 16;

struct CompletionRequest {
  engine::Request request;  // choice 0's; choice i samples with seed + i
  std::int64_t n = 1;       // choices, each an engine request of its own
  std::string prompt_text;  // the prompt as text (decoded when given as ids, rendered for chat)
  bool chat = false;        // from /v1/chat/completions: answered as chat.completion objects
  bool stream = false;
  bool echo = false;
  bool include_usage = false;  // stream_options.include_usage
  // Whether the client set max_tokens (or max_completion_tokens): one past what a sequence can
  // hold is then a 400, as OpenAI's and vLLM's; the default is cut to fit.
  bool max_tokens_given = false;
  // How a chat's reply is read for tool calls: tool_choice "auto" by the server's parser, a
  // named function or "required" as a forced call (request.json_schema then holds its schema).
  ToolCallReading tool_calls;
  // A chat whose reply's reasoning is split from its answer (the server's parser).
  std::optional<ReasoningParser> reasoning;
};

// Reads a /v1/completions body. `tokenizer` may be null (then the prompt must be token ids).
// Throws ApiError.
CompletionRequest parse_completion_request(const std::string& body, const TextTokenizer* tokenizer,
                                           std::int64_t vocab_size);

// Reads a /v1/chat/completions body: messages (required: role and content, a string, null or
// text parts), tools (passed to the template), tool_choice ("auto", the default with tools:
// the reply is read for calls by `tool_call_parser`, which must then be set, as vLLM's
// --tool-call-parser must; "none": it is not; {"type": "function", "function": {"name": ...}}
// and "required": a forced call, the reply written under a JSON schema of the named function's
// arguments or of a list of calls, as vLLM does, needing no parser),
// add_generation_prompt (true), max_tokens or max_completion_tokens (default: the rest of the
// context), logprobs (true/false) with top_logprobs (0-20), and the sampling, stop, stream and
// stream_options fields of a completion. The conversation is rendered by the checkpoint's chat
// template and tokenized without adding special tokens. Throws ApiError (400 when the template
// refuses the conversation, with its message).
CompletionRequest parse_chat_request(const std::string& body, const TextTokenizer& tokenizer,
                                     const tokenizer::ChatTemplate& chat_template,
                                     std::optional<ToolCallParser> tool_call_parser,
                                     std::int64_t vocab_size, std::int64_t context_length);

// A reply's tool calls as OpenAI's `tool_calls`: [{"id", "type": "function", "function":
// {"name", "arguments"}}], each id made from the completion's ("call_<completion id>_<i>");
// streamed, each also carries its "index".
nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls, const std::string& completion_id,
                               bool streamed);

// The generated text, token by token, as a client may see it: only whole UTF-8 characters, and
// never the stop string nor a tail that could still become one (OpenAI excludes the stop
// string from the text).
class CompletionText {
 public:
  CompletionText(const TextTokenizer* tokenizer, std::vector<std::string> stop);
  // Appends a token's bytes; returns the text that can be sent now.
  std::string append(std::int32_t token);
  // The end: whatever is left, cut at the first stop string.
  std::string finish();
  // The token's own text, as logprobs show it.
  std::string token_text(std::int32_t token) const;

 private:
  const TextTokenizer* tokenizer_;
  std::vector<std::string> stop_;
  std::string text_;         // every byte so far, cut at a stop string once one is seen
  std::size_t emitted_ = 0;  // bytes of text_ already returned
  bool stopped_ = false;
};

// "stop" or "length": OpenAI's finish_reason for an engine's reason.
const char* finish_reason(engine::FinishReason reason);

// The logprobs object of a completion choice from the tokens' events: tokens (their text),
// token_logprobs, top_logprobs ({text: logprob}) and text_offset (byte offsets, from `offset`).
nlohmann::json logprobs_json(const std::vector<engine::Event>& events, const CompletionText& text,
                             std::size_t offset);

// A chat choice's logprobs object: {"content": [{token, logprob, bytes, top_logprobs: [{token,
// logprob, bytes}]}]}, one entry per token of `events`, as OpenAI's chat API gives them.
nlohmann::json chat_logprobs_json(const std::vector<engine::Event>& events,
                                  const CompletionText& text);

// A JSON text with any invalid UTF-8 replaced (a token may hold half a character).
std::string dump(const nlohmann::json& value);

}  // namespace attnscope::cli
