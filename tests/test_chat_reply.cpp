// A chat reply split by the server's parsers (tools/attnscope/serve/chat_reply.h): a reasoning
// model's thinking apart from its answer, as vLLM's qwen3 and deepseek_r1 reasoning parsers split
// it (reasoning.h), the answer's tool calls read after it; and, streamed in pieces of any size,
// the same parts as the whole reply, never a byte sent as one part that the whole gives to
// another.
#include <doctest/doctest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tools/attnscope/serve/chat_reply.h"

namespace {

using attnscope::cli::ChatReply;
using attnscope::cli::ChatReplyStream;
using attnscope::cli::parse_chat_reply;
using attnscope::cli::ReasoningParser;
using attnscope::cli::ToolCallParser;

// Streams `text` in pieces of 1 to `largest` bytes: the parts put together are the whole reply's.
void check_streamed_as_whole(const std::string& text, std::optional<ReasoningParser> reasoning,
                             std::optional<ToolCallParser> tools, std::size_t largest) {
  const ChatReply whole = parse_chat_reply(text, reasoning, tools);
  std::mt19937 generator(static_cast<unsigned>(text.size() * 31 + largest));
  std::uniform_int_distribution<std::size_t> size(1, largest);
  ChatReplyStream stream(reasoning, tools);
  ChatReply joined;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t n = std::min(size(generator), text.size() - at);
    const ChatReply part = stream.append(std::string_view(text).substr(at, n));
    CHECK(part.tool_calls.empty());
    joined.reasoning += part.reasoning;
    joined.content += part.content;
    at += n;
  }
  const ChatReply rest = stream.finish("");
  CHECK(joined.reasoning + rest.reasoning == whole.reasoning);
  CHECK(joined.content + rest.content == whole.content);
  CHECK(rest.tool_calls.size() == whole.tool_calls.size());
}

}  // namespace

TEST_CASE("chat replies: qwen3 reasoning is what <think> opens and </think> closes") {
  const auto qwen3 = [](const std::string& text) {
    return parse_chat_reply(text, ReasoningParser::qwen3, {});
  };
  const ChatReply thought = qwen3("<think>\nLet me add.\n</think>\n\nThe answer is 4.");
  CHECK(thought.reasoning == "\nLet me add.\n");
  CHECK(thought.content == "\n\nThe answer is 4.");    // as the model wrote it, as vLLM gives it
  CHECK(qwen3("The answer is 4.").reasoning.empty());  // thinking off: all answer
  CHECK(qwen3("The answer is 4.").content == "The answer is 4.");
  CHECK(qwen3("  <think>a</think>b").reasoning == "a");
  const ChatReply cut = qwen3("<think>still thinking");  // out of tokens before </think>
  CHECK(cut.reasoning == "still thinking");
  CHECK(cut.content.empty());
  CHECK(qwen3("<thi").content == "<thi");  // a reply that only began like <think>
  CHECK(qwen3("x <think>y</think>").reasoning.empty());
}

TEST_CASE("chat replies: deepseek_r1 reasons from the start until </think>") {
  const auto r1 = [](const std::string& text) {
    return parse_chat_reply(text, ReasoningParser::deepseek_r1, {});
  };
  CHECK(r1("Let me see.</think>Answer").reasoning == "Let me see.");
  CHECK(r1("Let me see.</think>Answer").content == "Answer");
  CHECK(r1("<think>again</think>A").reasoning == "again");  // a repeated <think> is dropped
  CHECK(r1("thinking, cut off").reasoning == "thinking, cut off");
  CHECK(r1("thinking, cut off").content.empty());
}

TEST_CASE("chat replies: tool calls are read in the answer, never in the reasoning") {
  const std::string call =
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>";
  const ChatReply reply =
      parse_chat_reply("<think>I will call f.</think>\nOk. " + call, ReasoningParser::qwen3,
                       std::optional(ToolCallParser::hermes));
  CHECK(reply.reasoning == "I will call f.");
  CHECK(reply.content == "\nOk. ");
  REQUIRE(reply.tool_calls.size() == 1);
  CHECK(reply.tool_calls[0].arguments == "{\"x\": 1}");
  const ChatReply mused =
      parse_chat_reply("<think>maybe " + call + "?</think>No call.", ReasoningParser::qwen3,
                       std::optional(ToolCallParser::hermes));
  CHECK(mused.tool_calls.empty());
  CHECK(mused.content == "No call.");
}

TEST_CASE("chat replies: streamed in pieces of any size, the parts are the whole reply's") {
  const std::string call = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
  const std::vector<std::string> texts = {
      "<think>\nLet me add.\n</think>\n\nThe answer is 4.",
      "<think>a </thinking> b </thin</think> c",
      "  <think>x</think>" + call,
      "<think>maybe " + call + "?</think>No call. <tool",
      "Plain answer, no thinking.",
      "<thi",
      "</think>",
      "Let me see.</think>Answer " + call + " tail",
      "<think>cut off </thi",
  };
  for (const std::string& text : texts) {
    for (const std::optional<ReasoningParser> reasoning :
         {std::optional<ReasoningParser>(), std::optional(ReasoningParser::qwen3),
          std::optional(ReasoningParser::deepseek_r1)}) {
      for (const std::optional<ToolCallParser> tools :
           {std::optional<ToolCallParser>(), std::optional(ToolCallParser::hermes)}) {
        for (const std::size_t largest : {1, 3, 64}) {
          CAPTURE(text);
          CAPTURE(largest);
          check_streamed_as_whole(text, reasoning, tools, largest);
        }
      }
    }
  }
}

TEST_CASE("chat replies: a forced call's reply is the calls, sent once whole, or the text") {
  attnscope::cli::ToolCallReading forced;
  forced.forced = attnscope::cli::ForcedCall{"f"};
  const std::string reply = "{\"q\": \"<think>x</think>\"}";
  ChatReplyStream stream(ReasoningParser::qwen3, forced);
  for (const char c : reply) {
    const ChatReply part = stream.append(std::string(1, c));
    CHECK(part.content.empty());
    CHECK(part.reasoning.empty());
  }
  const ChatReply whole = stream.finish("");
  REQUIRE(whole.tool_calls.size() == 1);
  CHECK(whole.tool_calls[0].name == "f");
  CHECK(whole.content.empty());
  CHECK(whole.reasoning.empty());
  const ChatReply cut = parse_chat_reply("{\"q\": \"x", std::nullopt, forced);
  CHECK(cut.tool_calls.empty());
  CHECK(cut.content == "{\"q\": \"x");
}

TEST_CASE("chat replies: the parsers by name") {
  CHECK(attnscope::cli::reasoning_parser_named("qwen3") == ReasoningParser::qwen3);
  CHECK(attnscope::cli::reasoning_parser_named("deepseek_r1") == ReasoningParser::deepseek_r1);
  CHECK_FALSE(attnscope::cli::reasoning_parser_named("granite").has_value());
}
