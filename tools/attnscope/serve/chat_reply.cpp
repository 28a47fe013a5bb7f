// A chat model's reply as a chat completion answers it (chat_reply.h).
#include "tools/attnscope/serve/chat_reply.h"

#include <algorithm>

namespace attnscope::cli {

ChatReply ChatReplyStream::append(std::string_view piece) {
  text_ += piece;
  return advance(false);
}

ChatReply ChatReplyStream::finish(std::string_view last_piece) {
  text_ += last_piece;
  return advance(true);
}

ChatReply ChatReplyStream::advance(bool finished) {
  ChatReply out;
  if (tools_.forced) {
    if (!finished) return out;
    out.tool_calls = forced_calls(text_, *tools_.forced);
    if (out.tool_calls.empty()) out.content = text_;
    return out;
  }
  const ReasoningSplit split =
      reasoning_ ? split_reasoning(text_, *reasoning_, finished) : ReasoningSplit{0, 0, 0};
  const std::size_t reasoning_from = std::max(reasoning_sent_, split.reasoning_begin);
  if (split.reasoning_end > reasoning_from) {
    out.reasoning = text_.substr(reasoning_from, split.reasoning_end - reasoning_from);
    reasoning_sent_ = split.reasoning_end;
  }
  if (!split.answer_begin) return out;
  const std::string_view answer = std::string_view(text_).substr(*split.answer_begin);
  std::size_t settled = answer.size();
  if (tools_.parser && finished) {
    Reply reply = parse_reply(answer, *tools_.parser);
    settled = reply.content.size();
    out.tool_calls = std::move(reply.tool_calls);
  } else if (tools_.parser) {
    settled = settled_content(answer, *tools_.parser);
  }
  if (settled > content_sent_) {
    out.content = std::string(answer.substr(content_sent_, settled - content_sent_));
    content_sent_ = settled;
  }
  return out;
}

ChatReply parse_chat_reply(std::string_view text, std::optional<ReasoningParser> reasoning,
                           ToolCallReading tools) {
  return ChatReplyStream(reasoning, std::move(tools)).finish(text);
}

}  // namespace attnscope::cli
