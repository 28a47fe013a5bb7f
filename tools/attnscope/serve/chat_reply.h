// A chat model's reply as a chat completion answers it: its reasoning (reasoning.h), then its
// answer's text and tool calls (tool_calls.h), each split only where the server has a parser;
// a forced call's reply (tool_calls.h's ForcedCall) is the calls alone, read once it is whole
// (the text, when it is not one).
// The streamed parts are the whole reply's, cut into pieces: parse_chat_reply is a stream fed
// the whole text at once, so the two never disagree.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/attnscope/serve/reasoning.h"
#include "tools/attnscope/serve/tool_calls.h"

namespace attnscope::cli {

struct ChatReply {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;
};

// A reply as it streams: each piece of text in, what of the reasoning and the answer is settled
// out (never a byte that might still change part: a tag's beginning, a tool call's).
class ChatReplyStream {
 public:
  ChatReplyStream(std::optional<ReasoningParser> reasoning, ToolCallReading tools)
      : reasoning_(reasoning), tools_(std::move(tools)) {}

  // The reply's next text; returns the newly settled reasoning and content.
  ChatReply append(std::string_view piece);
  // The reply's last text (perhaps none): the rest of its reasoning and content, and its tool
  // calls.
  ChatReply finish(std::string_view last_piece);

 private:
  ChatReply advance(bool finished);

  std::optional<ReasoningParser> reasoning_;
  ToolCallReading tools_;
  std::string text_;
  std::size_t reasoning_sent_ = 0;  // the end of the reasoning sent, in text_
  std::size_t content_sent_ = 0;    // bytes of the answer sent as content
};

// The whole reply, split.
ChatReply parse_chat_reply(std::string_view text, std::optional<ReasoningParser> reasoning,
                           ToolCallReading tools);

}  // namespace attnscope::cli
