// A reasoning model's thinking, split from its answer (reasoning.h).
#include "tools/attnscope/serve/reasoning.h"

#include <algorithm>

#include "tools/attnscope/serve/partial_match.h"

namespace attnscope::cli {

namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

}  // namespace

std::optional<ReasoningParser> reasoning_parser_named(std::string_view name) {
  if (name == "qwen3") return ReasoningParser::qwen3;
  if (name == "deepseek_r1") return ReasoningParser::deepseek_r1;
  return std::nullopt;
}

ReasoningSplit split_reasoning(std::string_view text, ReasoningParser parser, bool finished) {
  const std::size_t first = std::min(text.find_first_not_of(" \t\r\n"), text.size());
  const std::string_view start = text.substr(first);
  const bool opens = start.starts_with(kOpen);
  // Only spaces, or the beginning of <think>, so far: whether the reply reasons is not known yet.
  if (!opens && !finished && kOpen.starts_with(start)) return {};
  if (parser == ReasoningParser::qwen3 && !opens) return {0, 0, 0};
  const std::size_t begin = opens ? first + kOpen.size() : 0;
  if (const std::size_t close = text.find(kClose, begin); close != std::string_view::npos) {
    return {begin, close, close + kClose.size()};
  }
  const std::size_t held = finished ? 0 : partial_match_at_end(text.substr(begin), kClose);
  return {begin, text.size() - held, std::nullopt};
}

}  // namespace attnscope::cli
