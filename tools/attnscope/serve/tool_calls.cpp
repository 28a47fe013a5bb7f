// Tool calls in a chat model's reply (tool_calls.h).
#include "tools/attnscope/serve/tool_calls.h"

#include <algorithm>
#include <utility>

#include "models/tokenizer/jinja_values.h"
#include "runtime/strict_json.h"

namespace attnscope::cli {

namespace {

using tokenizer::jinja::Value;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::size_t skip_spaces(std::string_view text, std::size_t at) {
  while (at < text.size() && is_space(text[at])) ++at;
  return at;
}

// Walks `text` from the bracket at `start`, outside JSON strings: one past where that bracket
// closes (npos: never), and the deepest nesting on the way.
struct Brackets {
  std::size_t end = std::string_view::npos;
  int deepest = 0;
};

Brackets brackets(std::string_view text, std::size_t start) {
  Brackets out;
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      out.deepest = std::max(out.deepest, ++depth);
    } else if ((c == '}' || c == ']') && --depth == 0) {
      out.end = i + 1;
      return out;
    }
  }
  return out;
}

// The call whose JSON object starts at text[at], {"name": "...", "arguments" (or "parameters"):
// {...}}, and one past its end; nullopt when there is none. Objects nested deeper than
// kMaxJsonDepth are not read (a reply is untrusted text).
std::optional<std::pair<ToolCall, std::size_t>> call_at(std::string_view text, std::size_t at) {
  if (at >= text.size() || text[at] != '{') return std::nullopt;
  const Brackets object = brackets(text, at);
  if (object.end == std::string_view::npos || object.deepest > kMaxJsonDepth) return std::nullopt;
  const Value call = Value::parse(text.substr(at, object.end - at), nullptr,
                                  /*allow_exceptions=*/false);
  if (!call.is_object()) return std::nullopt;
  const auto name = call.find("name");
  auto arguments = call.find("arguments");
  if (arguments == call.end()) arguments = call.find("parameters");
  if (name == call.end() || !name->is_string() || arguments == call.end() ||
      !arguments->is_object()) {
    return std::nullopt;
  }
  return std::pair(ToolCall{name->get<std::string>(), tokenizer::jinja::python_json(*arguments)},
                   object.end);
}

// Each <tool_call> holds one object, with only whitespace around it.
std::optional<std::vector<ToolCall>> hermes_calls(std::string_view text, std::size_t first) {
  std::vector<ToolCall> calls;
  for (std::size_t at = first; at != std::string_view::npos;) {
    const std::size_t start = at + kHermesOpen.size();
    const std::size_t close = text.find(kHermesClose, start);
    const std::string_view body = text.substr(start, close - start);
    const auto call = call_at(body, skip_spaces(body, 0));
    if (!call || skip_spaces(body, call->second) != body.size()) return std::nullopt;
    calls.push_back(call->first);
    at = close == std::string_view::npos ? close : text.find(kHermesOpen, close);
  }
  return calls;
}

// The whole reply is calls, separated by ';' and whitespace.
std::optional<std::vector<ToolCall>> llama3_calls(std::string_view text) {
  std::vector<ToolCall> calls;
  std::size_t at = skip_spaces(text, text.starts_with(kPythonTag) ? kPythonTag.size() : 0);
  while (at < text.size()) {
    const auto call = call_at(text, at);
    if (!call) return std::nullopt;
    calls.push_back(call->first);
    at = skip_spaces(text, call->second);
    if (at < text.size() && text[at] == ';') at = skip_spaces(text, at + 1);
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

bool starts_llama3_call(std::string_view text) {
  const std::size_t first = skip_spaces(text, 0);
  return text.starts_with(kPythonTag) || (first < text.size() && text[first] == '{');
}

}  // namespace

std::optional<ToolCallParser> tool_call_parser_named(std::string_view name) {
  if (name == "hermes") return ToolCallParser::hermes;
  if (name == "llama3_json") return ToolCallParser::llama3_json;
  return std::nullopt;
}

Reply parse_reply(std::string_view text, ToolCallParser parser) {
  std::optional<std::vector<ToolCall>> calls;
  std::size_t content_end = text.size();
  if (parser == ToolCallParser::hermes) {
    const std::size_t first = text.find(kHermesOpen);
    if (first != std::string_view::npos) {
      calls = hermes_calls(text, first);
      content_end = first;
    }
  } else if (starts_llama3_call(text)) {
    calls = llama3_calls(text);
    content_end = 0;
  }
  if (!calls) return {std::string(text), {}};
  return {std::string(text.substr(0, content_end)), std::move(*calls)};
}

std::size_t settled_content(std::string_view text, ToolCallParser parser) {
  if (parser == ToolCallParser::hermes) {
    if (const std::size_t first = text.find(kHermesOpen); first != std::string_view::npos) {
      return first;
    }
    // Hold back a tail that <tool_call> could still begin with.
    for (std::size_t held = std::min(text.size(), kHermesOpen.size() - 1); held > 0; --held) {
      if (kHermesOpen.starts_with(text.substr(text.size() - held))) return text.size() - held;
    }
    return text.size();
  }
  // llama3_json: a call is the whole reply, so nothing is settled until the reply's first
  // characters show it is not one.
  const bool undecided = skip_spaces(text, 0) == text.size() || kPythonTag.starts_with(text);
  return undecided || starts_llama3_call(text) ? 0 : text.size();
}

}  // namespace attnscope::cli
