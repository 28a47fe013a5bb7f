// Tool calls in a chat model's reply, found as vLLM's tool parsers find them
// (`attnscope serve --tool-call-parser NAME`), so a chat completion answers them as OpenAI's
// `tool_calls` instead of text. Each format is the one the family's chat template writes an
// assistant's tool call in (tests/test_tool_calls.cpp reads the calls back out of transformers'
// renderings of the real templates):
//   hermes       Qwen2.5, Qwen3, Hermes 2/3: any text, then one or more
//                <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> (the last one may
//                be cut off before its closing tag);
//   llama3_json  Llama 3.1 / 3.2: the whole reply is {"name": ..., "parameters": {...}}
//                ("arguments" also read), after an optional <|python_tag|>, several joined by ";";
//   mistral      Mistral: any text, then [TOOL_CALLS] and a JSON list of {"name", "arguments"}
//                objects (7B v0.3, Nemo), or [TOOL_CALLS]name[ARGS]{...} per call, perhaps with
//                [CALL_ID]id before [ARGS] (Small 3.2, Devstral, Ministral 3).
// A reply whose calls do not parse (not JSON, no string name, arguments not an object) is text,
// as vLLM returns it. Cost: linear in the reply.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::cli {

enum class ToolCallParser { hermes, llama3_json, mistral };

// The parser named `name` ("hermes", "llama3_json", "mistral"), or nullopt.
std::optional<ToolCallParser> tool_call_parser_named(std::string_view name);

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object's text, as OpenAI sends it (Python's json.dumps)
};

struct Reply {
  std::string content;  // the text before the first call; the whole reply when it has none
  std::vector<ToolCall> tool_calls;
};

// Splits a whole reply into its text and its tool calls.
Reply parse_reply(std::string_view text, ToolCallParser parser);

// While a reply streams: how many leading bytes of `text` (the reply so far) are content for
// certain, never part of a tool call that has started or might be starting. Once a reply has
// been parsed whole, its content starts with exactly these bytes.
std::size_t settled_content(std::string_view text, ToolCallParser parser);

// A forced call (tool_choice naming a function, or "required"), as vLLM does it without a
// parser: the reply is written under a JSON schema of the call (serve/openai_api.cpp builds it),
// so it is the call and nothing else: the named function's arguments object, or a JSON list of
// one or more {"name": ..., "parameters": {...}}.
struct ForcedCall {
  std::string function;  // the function named; "" for "required"
};

// The calls of a whole reply written under a forced call's schema; none when it is not one (cut
// short by max_tokens).
std::vector<ToolCall> forced_calls(std::string_view text, const ForcedCall& forced);

// How a chat reply is read for tool calls: by the parser of the model's own format
// (tool_choice "auto"), as a forced call, or not at all (neither set).
struct ToolCallReading {
  ToolCallReading(std::optional<ToolCallParser> format = std::nullopt)  // NOLINT: implicit
      : parser(format) {}
  std::optional<ToolCallParser> parser;
  std::optional<ForcedCall> forced;
};

}  // namespace attnscope::cli
