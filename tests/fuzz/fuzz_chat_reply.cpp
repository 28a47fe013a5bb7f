// libFuzzer harness for a chat model's reply as serve splits it (tools/attnscope/serve/
// chat_reply.h: reasoning, content, tool calls).
//
// Input: the first byte picks a piece size (1 to 64), the rest is the reply (a model's output is
// any text). For every reasoning parser and tool-call reading (each parser, a forced named call,
// forced "required" calls), the reply is split whole and streamed in pieces of that size.
// Checked: the streamed parts put together equal the whole reply's, and every call's arguments
// are a JSON object's text; anything else, a crash, a hang or a sanitizer report is a bug. Cost:
// linear in the reply per parser pair.
// Seeds: tests/fuzz/corpus/chat_reply/.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "tools/attnscope/serve/chat_reply.h"

using attnscope::cli::ChatReply;
using attnscope::cli::ChatReplyStream;
using attnscope::cli::ReasoningParser;
using attnscope::cli::ToolCallParser;
using attnscope::cli::ToolCallReading;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = data[0] % 64 + 1;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  for (const std::optional<ReasoningParser> reasoning :
       {std::optional<ReasoningParser>(), std::optional(ReasoningParser::qwen3),
        std::optional(ReasoningParser::deepseek_r1)}) {
    ToolCallReading named, required;
    named.forced = attnscope::cli::ForcedCall{"f"};
    required.forced = attnscope::cli::ForcedCall{""};
    for (const ToolCallReading& tools :
         {ToolCallReading(), ToolCallReading(ToolCallParser::hermes),
          ToolCallReading(ToolCallParser::llama3_json), ToolCallReading(ToolCallParser::mistral),
          named, required}) {
      const ChatReply whole = attnscope::cli::parse_chat_reply(text, reasoning, tools);
      ChatReplyStream stream(reasoning, tools);
      std::string reasoning_text, content;
      for (std::size_t at = 0; at < text.size(); at += piece) {
        const ChatReply part = stream.append(text.substr(at, piece));
        if (!part.tool_calls.empty()) __builtin_trap();
        reasoning_text += part.reasoning;
        content += part.content;
      }
      const ChatReply rest = stream.finish("");
      if (reasoning_text + rest.reasoning != whole.reasoning) __builtin_trap();
      if (content + rest.content != whole.content) __builtin_trap();
      if (rest.tool_calls.size() != whole.tool_calls.size()) __builtin_trap();
      for (const attnscope::cli::ToolCall& call : whole.tool_calls) {
        const nlohmann::json arguments = nlohmann::json::parse(call.arguments, nullptr, false);
        if (!arguments.is_object()) __builtin_trap();
      }
    }
  }
  return 0;
}
