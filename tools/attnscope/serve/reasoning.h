// A reasoning model's thinking, split from its answer (`attnscope serve --reasoning-parser
// NAME`), so a chat completion carries it as `reasoning_content` beside `content`, as vLLM's
// reasoning parsers and DeepSeek's API give it:
//   qwen3        Qwen3: a reply that begins with <think> reasons until </think>; any other
//                reply is all answer (Qwen3 with thinking off, or a model that does not think);
//   deepseek_r1  DeepSeek R1 and its distills: the template opens <think> in the prompt, so the
//                reply reasons from its start (a repeated <think> is dropped) until </think>.
// Reasoning that never reaches </think> (the reply ran out of tokens) is all reasoning. The
// answer is the text after </think>, as the model wrote it. Cost: linear in the reply.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace attnscope::cli {

enum class ReasoningParser { qwen3, deepseek_r1 };

// The parser named `name` ("qwen3", "deepseek_r1"), or nullopt.
std::optional<ReasoningParser> reasoning_parser_named(std::string_view name);

// Where a reply (or the part of it generated so far) stands: its reasoning is
// text[reasoning_begin, reasoning_end) and its answer starts at answer_begin. While a reply
// streams, nothing before reasoning_end changes role as more text comes, and answer_begin is
// set only once the answer has begun for certain; bytes that might still turn out to be a tag
// are in neither part yet.
struct ReasoningSplit {
  std::size_t reasoning_begin = 0;
  std::size_t reasoning_end = 0;
  std::optional<std::size_t> answer_begin;
};

// `finished`: the reply is whole (nothing is held back any more).
ReasoningSplit split_reasoning(std::string_view text, ReasoningParser parser, bool finished);

}  // namespace attnscope::cli
