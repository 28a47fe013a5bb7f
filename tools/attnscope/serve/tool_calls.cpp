// Tool calls in a chat model's reply (tool_calls.h).
#include "tools/attnscope/serve/tool_calls.h"

#include <algorithm>
#include <utility>

#include "models/tokenizer/jinja_values.h"
#include "runtime/strict_json.h"
#include "tools/attnscope/serve/partial_match.h"

namespace attnscope::cli {

namespace {

using tokenizer::jinja::Value;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";
constexpr std::string_view kMistralCallId = "[CALL_ID]";
constexpr std::string_view kMistralArgs = "[ARGS]";

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

// The JSON value whose bracket ('{' or '[') is text[at], and one past its end; nullopt when
// there is none. Values nested deeper than kMaxJsonDepth are not read (a reply is untrusted).
std::optional<std::pair<Value, std::size_t>> json_at(std::string_view text, std::size_t at) {
  if (at >= text.size() || (text[at] != '{' && text[at] != '[')) return std::nullopt;
  const Brackets value = brackets(text, at);
  if (value.end == std::string_view::npos || value.deepest > kMaxJsonDepth) return std::nullopt;
  Value parsed = Value::parse(text.substr(at, value.end - at), nullptr,
                              /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return std::nullopt;
  return std::pair(std::move(parsed), value.end);
}

// A call from its JSON object, {"name": "...", "arguments" (or "parameters"): {...}}.
std::optional<ToolCall> call_of(const Value& call) {
  if (!call.is_object()) return std::nullopt;
  const auto name = call.find("name");
  auto arguments = call.find("arguments");
  if (arguments == call.end()) arguments = call.find("parameters");
  if (name == call.end() || !name->is_string() || arguments == call.end() ||
      !arguments->is_object()) {
    return std::nullopt;
  }
  return ToolCall{name->get<std::string>(), tokenizer::jinja::python_json(*arguments)};
}

// The call whose JSON object starts at text[at], and one past its end.
std::optional<std::pair<ToolCall, std::size_t>> call_at(std::string_view text, std::size_t at) {
  if (at >= text.size() || text[at] != '{') return std::nullopt;
  const auto object = json_at(text, at);
  if (!object) return std::nullopt;
  std::optional<ToolCall> call = call_of(object->first);
  if (!call) return std::nullopt;
  return std::pair(std::move(*call), object->second);
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

// After the first [TOOL_CALLS]: a JSON list of call objects (Mistral 7B v0.3, Nemo), or one or
// more name[ARGS]{...}, each after its own [TOOL_CALLS] and perhaps with [CALL_ID]id before
// [ARGS] (Mistral Small 3.2, Devstral, Ministral 3).
std::optional<std::vector<ToolCall>> mistral_calls(std::string_view text, std::size_t first) {
  std::vector<ToolCall> calls;
  std::size_t at = skip_spaces(text, first + kMistralCalls.size());
  if (at < text.size() && text[at] == '[') {
    const auto list = json_at(text, at);
    if (!list || !list->first.is_array() || list->first.empty()) return std::nullopt;
    for (const Value& object : list->first) {
      std::optional<ToolCall> call = call_of(object);
      if (!call) return std::nullopt;
      calls.push_back(std::move(*call));
    }
    if (skip_spaces(text, list->second) != text.size()) return std::nullopt;
    return calls;
  }
  while (true) {
    const std::size_t args = text.find(kMistralArgs, at);
    if (args == std::string_view::npos) return std::nullopt;
    std::string_view name = text.substr(at, args - at);
    name = name.substr(0, name.find(kMistralCallId));
    const std::size_t value_at = skip_spaces(text, args + kMistralArgs.size());
    const auto arguments = json_at(text, value_at);
    if (name.empty() || name.find_first_of("[ \n") != std::string_view::npos || !arguments ||
        !arguments->first.is_object()) {
      return std::nullopt;
    }
    calls.push_back({std::string(name), tokenizer::jinja::python_json(arguments->first)});
    at = skip_spaces(text, arguments->second);
    if (at == text.size()) return calls;
    if (!text.substr(at).starts_with(kMistralCalls)) return std::nullopt;
    at += kMistralCalls.size();
  }
}

// How many leading bytes of `text` come before `tag` for certain: up to the tag when it is
// there, else all but a tail that could still begin it.
std::size_t settled_before(std::string_view text, std::string_view tag) {
  if (const std::size_t found = text.find(tag); found != std::string_view::npos) return found;
  return text.size() - partial_match_at_end(text, tag);
}

bool starts_llama3_call(std::string_view text) {
  const std::size_t first = skip_spaces(text, 0);
  return text.starts_with(kPythonTag) || (first < text.size() && text[first] == '{');
}

}  // namespace

std::optional<ToolCallParser> tool_call_parser_named(std::string_view name) {
  if (name == "hermes") return ToolCallParser::hermes;
  if (name == "llama3_json") return ToolCallParser::llama3_json;
  if (name == "mistral") return ToolCallParser::mistral;
  return std::nullopt;
}

Reply parse_reply(std::string_view text, ToolCallParser parser) {
  std::optional<std::vector<ToolCall>> calls;
  std::size_t content_end = text.size();
  if (parser == ToolCallParser::hermes || parser == ToolCallParser::mistral) {
    const bool hermes = parser == ToolCallParser::hermes;
    const std::size_t first = text.find(hermes ? kHermesOpen : kMistralCalls);
    if (first != std::string_view::npos) {
      calls = hermes ? hermes_calls(text, first) : mistral_calls(text, first);
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
  if (parser == ToolCallParser::hermes) return settled_before(text, kHermesOpen);
  if (parser == ToolCallParser::mistral) return settled_before(text, kMistralCalls);
  // llama3_json: a call is the whole reply, so nothing is settled until the reply's first
  // characters show it is not one.
  const bool undecided = skip_spaces(text, 0) == text.size() || kPythonTag.starts_with(text);
  return undecided || starts_llama3_call(text) ? 0 : text.size();
}

std::vector<ToolCall> forced_calls(std::string_view text, const ForcedCall& forced) {
  const auto value = json_at(text, skip_spaces(text, 0));
  if (!value || skip_spaces(text, value->second) != text.size()) return {};
  if (!forced.function.empty()) {
    if (!value->first.is_object()) return {};
    return {ToolCall{forced.function, tokenizer::jinja::python_json(value->first)}};
  }
  if (!value->first.is_array() || value->first.empty()) return {};
  std::vector<ToolCall> calls;
  for (const Value& item : value->first) {
    std::optional<ToolCall> call = call_of(item);
    if (!call) return {};
    calls.push_back(std::move(*call));
  }
  return calls;
}

}  // namespace attnscope::cli
