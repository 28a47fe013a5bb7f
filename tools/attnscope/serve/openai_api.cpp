// The OpenAI completions API (tools/attnscope/serve/openai_api.h).
#include "tools/attnscope/serve/openai_api.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/json_grammar.h"
#include "runtime/error.h"
#include "runtime/strict_json.h"
#include "tools/attnscope/serve/partial_match.h"

namespace attnscope::cli {

namespace {

using nlohmann::json;
namespace jinja = tokenizer::jinja;

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError{400, "invalid_request_error", message, param};
}

// The field's integer value, checked to lie in [low, high].
std::int64_t integer(const json& body, const char* name, std::int64_t fallback, std::int64_t low,
                     std::int64_t high) {
  const auto found = body.find(name);
  if (found == body.end() || found->is_null()) return fallback;
  if (!found->is_number_integer()) {
    bad(name, std::string(name) + " must be an integer, got " + json_excerpt(*found));
  }
  const bool huge = found->is_number_unsigned() &&
                    found->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX);
  const std::int64_t value = huge ? 0 : found->get<std::int64_t>();
  if (huge || value < low || value > high) {
    bad(name, std::string(name) + " must be in [" + std::to_string(low) + ", " +
                  std::to_string(high) + "], got " + json_excerpt(*found));
  }
  return value;
}

double number(const json& body, const char* name, double fallback, double low, double high) {
  const auto found = body.find(name);
  if (found == body.end() || found->is_null()) return fallback;
  if (!found->is_number()) {
    bad(name, std::string(name) + " must be a number, got " + json_excerpt(*found));
  }
  const double value = found->get<double>();
  if (!std::isfinite(value) || value < low || value > high) {
    bad(name, std::string(name) + " must be in [" + json(low).dump() + ", " + json(high).dump() +
                  "], got " + json_excerpt(*found));
  }
  return value;
}

bool boolean(const json& body, const char* name) {
  const auto found = body.find(name);
  if (found == body.end() || found->is_null()) return false;
  if (!found->is_boolean()) {
    bad(name, std::string(name) + " must be true or false, got " + json_excerpt(*found));
  }
  return found->get<bool>();
}

std::vector<std::int32_t> token_ids(const json& ids, std::int64_t vocab_size) {
  std::vector<std::int32_t> out;
  for (const json& id : ids) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() >= vocab_size) {
      bad("prompt", "prompt token " + json_excerpt(id) + " is not an id in [0, " +
                        std::to_string(vocab_size) + ")");
    }
    out.push_back(id.get<std::int32_t>());
  }
  return out;
}

// The prompt: a string, ids, or a batch of one of either (n prompts per request: not served).
void read_prompt(const json& body, const TextTokenizer* tokenizer, std::int64_t vocab_size,
                 CompletionRequest& out) {
  const auto found = body.find("prompt");
  if (found == body.end()) bad("prompt", "prompt is required");
  json prompt = *found;
  if (prompt.is_array() && prompt.size() == 1 && (prompt[0].is_string() || prompt[0].is_array())) {
    prompt = json(prompt[0]);
  }
  if (prompt.is_string()) {
    if (tokenizer == nullptr) {
      bad("prompt", "this server has no tokenizer: send the prompt as token ids");
    }
    out.prompt_text = prompt.get<std::string>();
    out.request.prompt = tokenizer->encode(out.prompt_text);
  } else if (prompt.is_array() && std::all_of(prompt.begin(), prompt.end(), [](const json& x) {
               return !x.is_array() && !x.is_string();
             })) {
    out.request.prompt = token_ids(prompt, vocab_size);
    if (tokenizer != nullptr) out.prompt_text = tokenizer->decode_output(out.request.prompt);
  } else {
    bad("prompt", "prompt must be a string or an array of token ids (one prompt per request)");
  }
  if (out.request.prompt.empty()) bad("prompt", "the prompt is empty");
}

std::vector<std::string> read_stop(const json& body) {
  const auto found = body.find("stop");
  if (found == body.end() || found->is_null()) return {};
  std::vector<std::string> stop;
  if (found->is_string()) {
    stop.push_back(found->get<std::string>());
  } else if (found->is_array() && found->size() <= 4 &&
             std::all_of(found->begin(), found->end(),
                         [](const json& x) { return x.is_string(); })) {
    for (const json& s : *found) stop.push_back(s.get<std::string>());
  } else {
    bad("stop", "stop must be a string or an array of at most 4 strings");
  }
  for (const std::string& s : stop) {
    if (s.empty()) bad("stop", "a stop string is empty");
  }
  return stop;
}

// The longest suffix of `text` that is a proper prefix of one of `stop`.
std::size_t possible_stop_start(const std::string& text, const std::vector<std::string>& stop) {
  std::size_t longest = 0;
  for (const std::string& s : stop) longest = std::max(longest, partial_match_at_end(text, s));
  return longest;
}

// Bytes at the end of `text` that start a UTF-8 character not yet complete.
std::size_t incomplete_utf8_tail(const std::string& text) {
  for (std::size_t back = 1; back <= std::min<std::size_t>(3, text.size()); ++back) {
    const auto byte = static_cast<unsigned char>(text[text.size() - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}

}  // namespace

std::string error_body(const ApiError& error) {
  return dump({{"error",
                {{"message", error.message},
                 {"type", error.type},
                 {"param", error.param.empty() ? json(nullptr) : json(error.param)},
                 {"code", nullptr}}}});
}

std::string dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

json parse_body(const std::string& body) {
  json parsed;
  try {
    parsed = parse_json_refusing_duplicates(body, "request", "the body");
  } catch (const Error& e) {
    throw ApiError{400, "invalid_request_error", e.what(), ""};
  }
  if (!parsed.is_object()) bad("", "the body must be a JSON object");
  return parsed;
}

// OpenAI's logit_bias: {"token id": bias in [-100, 100], ...}.
std::vector<std::pair<std::int32_t, float>> read_logit_bias(const json& parsed,
                                                            std::int64_t vocab_size) {
  std::vector<std::pair<std::int32_t, float>> biases;
  const auto found = parsed.find("logit_bias");
  if (found == parsed.end() || found->is_null()) return biases;
  if (!found->is_object()) bad("logit_bias", "logit_bias must be an object of token ids to biases");
  if (found->size() > 1024) bad("logit_bias", "logit_bias may name at most 1024 tokens");
  for (const auto& [key, value] : found->items()) {
    const bool digits =
        !key.empty() && key.size() <= 9 &&
        std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    const std::int64_t id = digits ? std::stoll(key) : -1;
    if (id < 0 || id >= vocab_size) {
      bad("logit_bias", "logit_bias keys must be token ids in [0, " + std::to_string(vocab_size) +
                            "), got " + json_excerpt(json(key)));
    }
    if (!value.is_number() || !(value.get<double>() >= -100.0 && value.get<double>() <= 100.0)) {
      bad("logit_bias",
          "logit_bias values must be numbers in [-100, 100], got " + json_excerpt(value));
    }
    biases.emplace_back(static_cast<std::int32_t>(id), value.get<float>());
  }
  return biases;
}

// OpenAI's response_format, as the JSON schema the reply must be valid under ("" none):
// {"type": "text"} (the default); {"type": "json_object"}, JSON mode, the schema
// {"type": "object"}; {"type": "json_schema", "json_schema": {"name": ..., "schema": {...},
// "strict": ...}}, structured outputs (engine/json_grammar.h says what is enforced; a schema it
// refuses is a 400). The schema is read again from `body` keeping its keys' order: properties
// are written in the order the schema lists them.
std::string read_response_schema(const json& parsed, const std::string& body) {
  const auto found = parsed.find("response_format");
  if (found == parsed.end() || found->is_null()) return "";
  const json type = found->is_object() ? found->value("type", json()) : json();
  if (type == "text") return "";
  if (type == "json_object") return std::string(engine::kJsonObjectSchema);
  if (type != "json_schema") {
    bad("response_format",
        "response_format must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
        "{\"type\": \"json_schema\", \"json_schema\": {\"name\": ..., \"schema\": {...}}}");
  }
  const json described = found->value("json_schema", json());
  if (!described.is_object() || !described.contains("schema") || !described["schema"].is_object()) {
    bad("response_format",
        "response_format json_schema needs \"json_schema\": {\"schema\": {...}}");
  }
  if (const json strict = described.value("strict", json());
      !strict.is_null() && !strict.is_boolean()) {
    bad("response_format", "json_schema's strict must be true or false");
  }
  const std::string schema =
      nlohmann::ordered_json::parse(body)["response_format"]["json_schema"]["schema"].dump();
  try {
    (void)engine::json_schema_grammar(schema);
  } catch (const Error& e) {
    bad("response_format", e.what());
  }
  return schema;
}

// The fields both endpoints read: sampling, stop strings, streaming, n, model and user.
void read_common_fields(const json& parsed, const std::string& body, const TextTokenizer* tokenizer,
                        std::int64_t vocab_size, CompletionRequest& out) {
  engine::Request& request = out.request;
  request.sampling.temperature = static_cast<float>(number(parsed, "temperature", 1.0, 0.0, 100.0));
  request.sampling.top_p = static_cast<float>(number(parsed, "top_p", 1.0, 0.0, 1.0));
  if (request.sampling.top_p == 0.0f) bad("top_p", "top_p must be greater than 0");
  request.sampling.top_k = integer(parsed, "top_k", 0, -1, vocab_size);
  if (request.sampling.top_k == -1) request.sampling.top_k = 0;  // vLLM's "off"
  if (parsed.contains("seed") && !parsed["seed"].is_null()) {
    request.sampling.seed =
        static_cast<std::uint64_t>(integer(parsed, "seed", 0, INT64_MIN, INT64_MAX));
  } else {
    request.sampling.seed = std::random_device{}();
  }
  request.adjustments.presence_penalty =
      static_cast<float>(number(parsed, "presence_penalty", 0.0, -2.0, 2.0));
  request.adjustments.frequency_penalty =
      static_cast<float>(number(parsed, "frequency_penalty", 0.0, -2.0, 2.0));
  request.adjustments.logit_bias = read_logit_bias(parsed, vocab_size);
  // Asked for, but not served: refused rather than ignored, so no answer pretends to obey them.
  if (number(parsed, "repetition_penalty", 1.0, -1e9, 1e9) != 1.0) {
    bad("repetition_penalty",
        "repetition_penalty is not served (presence_penalty and "
        "frequency_penalty are)");
  }
  if (number(parsed, "min_p", 0.0, -1e9, 1e9) != 0.0) bad("min_p", "min_p is not served");
  request.json_schema = read_response_schema(parsed, body);
  request.stop = read_stop(parsed);
  request.ignore_eos = boolean(parsed, "ignore_eos");
  out.stream = boolean(parsed, "stream");
  out.n = integer(parsed, "n", 1, 1, kMaxChoices);
  if (const auto options = parsed.find("stream_options");
      options != parsed.end() && !options->is_null()) {
    if (!options->is_object()) bad("stream_options", "stream_options must be an object");
    out.include_usage = boolean(*options, "include_usage");
  }
  for (const char* text_field : {"model", "user", "suffix"}) {
    const auto found = parsed.find(text_field);
    if (found != parsed.end() && !found->is_null() && !found->is_string()) {
      bad(text_field, std::string(text_field) + " must be a string");
    }
  }
  if (!request.stop.empty() && tokenizer == nullptr) {
    bad("stop", "stop strings need a tokenizer, and this server has none");
  }
}

// A function's parameters as the schema its arguments are written under: a JSON schema object
// ({"type": "object"} when it has none; "type" "object" added when it says no type).
nlohmann::ordered_json parameters_schema(const nlohmann::ordered_json& tool) {
  if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object() ||
      !tool["function"].contains("name") || !tool["function"]["name"].is_string()) {
    bad("tools", "each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
  }
  nlohmann::ordered_json schema =
      tool["function"].value("parameters", nlohmann::ordered_json::object());
  if (!schema.is_object()) bad("tools", "a function's parameters must be a JSON schema object");
  if (!schema.contains("type")) schema["type"] = "object";
  return schema;
}

// Whether every $ref inside `schema` names one of its $defs (or definitions): what still holds
// once the schema is placed inside another, its $defs gathered at the top.
bool refs_name_defs(const nlohmann::ordered_json& schema) {
  if (schema.is_object()) {
    if (const auto ref = schema.find("$ref"); ref != schema.end()) {
      if (!ref->is_string()) return false;
      const std::string text = ref->get<std::string>();
      if (!text.starts_with("#/$defs/") && !text.starts_with("#/definitions/")) return false;
    }
  }
  if (schema.is_object() || schema.is_array()) {
    for (const auto& inner : schema) {
      if (!refs_name_defs(inner)) return false;
    }
  }
  return true;
}

// The schema a forced call is written under, as vLLM builds it: the named function's
// parameters; for "required" (`function` ""), a list of one or more {"name": one function's
// name, "parameters": its parameters}, the functions' $defs gathered at the top. `tools` keeps
// the body's key order. A schema json_grammar.h refuses is a 400.
std::string forced_call_schema(const nlohmann::ordered_json& tools, const std::string& function) {
  using Ordered = nlohmann::ordered_json;
  Ordered schema;
  if (!function.empty()) {
    for (const Ordered& tool : tools) {
      Ordered parameters = parameters_schema(tool);  // each tool's shape checked
      if (tool["function"]["name"] == function) schema = std::move(parameters);
    }
    if (schema.is_null()) {
      bad("tool_choice", "tool_choice names \"" + function + "\", which tools does not list");
    }
  } else {
    Ordered options = Ordered::array();
    Ordered gathered = Ordered::object();
    for (const Ordered& tool : tools) {
      Ordered parameters = parameters_schema(tool);
      for (const char* defs : {"$defs", "definitions"}) {
        if (!parameters.contains(defs)) continue;
        for (const auto& [name, def] : parameters[defs].items()) {
          Ordered& slot = gathered[defs][name];
          if (!slot.is_null() && slot != def) {
            bad("tools", std::string("two functions define ") + defs + "/" + name + " differently");
          }
          slot = def;
        }
        parameters.erase(defs);
      }
      if (!refs_name_defs(parameters)) {
        bad("tool_choice",
            "with tool_choice \"required\", a function's $ref must name one of its $defs");
      }
      options.push_back(
          {{"type", "object"},
           {"properties",
            {{"name", {{"const", tool["function"]["name"]}}}, {"parameters", parameters}}},
           {"required", {"name", "parameters"}},
           {"additionalProperties", false}});
    }
    schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"anyOf", options}}}};
    for (const auto& [defs, named] : gathered.items()) schema[defs] = named;
  }
  std::string text = schema.dump();
  try {
    (void)engine::json_schema_grammar(text);
  } catch (const Error& e) {
    bad("tool_choice", e.what());
  }
  return text;
}

// tool_choice: "auto" (the default when tools are given) reads the reply for calls with the
// server's parser; "none" (the default without tools) does not, nor does a request without
// tools; a named function ({"type": "function", "function": {"name": ...}}) and "required"
// force a call: the reply is written under forced_call_schema's schema (set as the request's
// JSON schema; not beside a response_format's), needing no parser.
ToolCallReading read_tool_choice(const json& parsed, const nlohmann::ordered_json& tools,
                                 std::optional<ToolCallParser> parser, engine::Request& request) {
  const bool has_tools = tools.is_array() && !tools.empty();
  const auto found = parsed.find("tool_choice");
  std::string choice = has_tools ? "auto" : "none";
  std::string function;
  if (found != parsed.end() && !found->is_null()) {
    if (found->is_object()) {
      const json named = found->value("function", json());
      if (found->value("type", json()) != "function" || !named.is_object() ||
          !named.value("name", json()).is_string() || named["name"] == "") {
        bad("tool_choice",
            "tool_choice naming a function must be {\"type\": \"function\", \"function\": "
            "{\"name\": ...}}");
      }
      choice = "named";
      function = named["name"].get<std::string>();
    } else if (!found->is_string()) {
      bad("tool_choice", "tool_choice must be a string or an object");
    } else {
      choice = found->get<std::string>();
    }
  }
  if (choice != "auto" && choice != "none" && choice != "required" && choice != "named") {
    bad("tool_choice", "tool_choice must be \"none\", \"auto\" or \"required\"");
  }
  if (choice == "required" || choice == "named") {
    if (!has_tools) bad("tool_choice", "a forced tool call (tool_choice) needs tools");
    if (!request.json_schema.empty()) {
      bad("tool_choice",
          "a forced tool call cannot go with a response_format json_object or "
          "json_schema");
    }
    request.json_schema = forced_call_schema(tools, function);
    ToolCallReading reading;
    reading.forced = ForcedCall{function};
    return reading;
  }
  if (choice == "none" || !has_tools) return {};
  if (!parser) {
    bad("tool_choice",
        "tool_choice \"auto\" needs the server started with --tool-call-parser "
        "(hermes for Qwen2.5 and Qwen3, llama3_json for Llama 3.1 and 3.2, mistral for "
        "Mistral), or "
        "\"tool_choice\": \"none\" or a forced call (\"required\", or a named function)");
  }
  return parser;
}

}  // namespace

CompletionRequest parse_completion_request(const std::string& body, const TextTokenizer* tokenizer,
                                           std::int64_t vocab_size) {
  const json parsed = parse_body(body);
  CompletionRequest out;
  read_prompt(parsed, tokenizer, vocab_size, out);
  read_common_fields(parsed, body, tokenizer, vocab_size, out);
  engine::Request& request = out.request;
  request.max_tokens = integer(parsed, "max_tokens", 16, 1, std::int64_t{1} << 30);
  out.max_tokens_given = parsed.contains("max_tokens") && !parsed["max_tokens"].is_null();
  request.logprobs = integer(parsed, "logprobs", -1, 0, 20);
  out.echo = boolean(parsed, "echo");
  if (out.echo && request.logprobs >= 0) {
    bad("echo", "echo with logprobs is not served (the prompt's log-probabilities are not kept)");
  }
  if (out.echo && tokenizer == nullptr) bad("echo", "echo needs a tokenizer");
  if (integer(parsed, "best_of", 1, 1, 1) != 1) bad("best_of", "best_of must be 1");
  if (parsed.contains("suffix") && !parsed["suffix"].is_null()) {
    bad("suffix", "suffix (insertion) is not served");
  }
  return out;
}

CompletionRequest parse_chat_request(const std::string& body, const TextTokenizer& tokenizer,
                                     const tokenizer::ChatTemplate& chat_template,
                                     std::optional<ToolCallParser> tool_call_parser,
                                     std::int64_t vocab_size, std::int64_t context_length) {
  const json parsed = parse_body(body);
  // Read again keeping the keys' order, which a template's tojson shows (Python dicts keep it).
  const jinja::Value ordered = jinja::Value::parse(body);
  CompletionRequest out;
  out.chat = true;
  read_common_fields(parsed, body, &tokenizer, vocab_size, out);
  tokenizer::Conversation conversation;
  try {
    conversation = tokenizer::read_conversation(ordered);
  } catch (const tokenizer::ConversationError& e) {
    bad(e.field, e.what());
  }
  out.tool_calls = read_tool_choice(parsed, ordered.value("tools", jinja::Value()),
                                    tool_call_parser, out.request);
  // logprobs: true asks for each token's log-probability, top_logprobs (0-20) for as many
  // alternatives.
  const std::int64_t top = integer(parsed, "top_logprobs", -1, 0, 20);
  if (boolean(parsed, "logprobs")) {
    out.request.logprobs = std::max<std::int64_t>(top, 0);
  } else if (top >= 0) {
    bad("top_logprobs", "top_logprobs needs logprobs: true");
  }
  // add_generation_prompt (true) opens the assistant's turn; continue_final_message leaves the
  // final message open instead, for the model to continue (vLLM refuses both at once, too).
  const bool continue_final = boolean(parsed, "continue_final_message");
  bool add_generation_prompt = true;
  if (parsed.contains("add_generation_prompt") && !parsed["add_generation_prompt"].is_null()) {
    add_generation_prompt = boolean(parsed, "add_generation_prompt");
  }
  if (continue_final && add_generation_prompt) {
    bad("continue_final_message",
        "continue_final_message needs \"add_generation_prompt\": false (a reply cannot both "
        "continue the final message and open a new turn)");
  }
  try {
    out.prompt_text = chat_template.render(
        conversation, tokenizer::chat_ending(add_generation_prompt, continue_final));
  } catch (const Error& e) {
    bad("messages", e.what());
  }
  out.request.prompt = tokenizer.encode(out.prompt_text, false);
  if (out.request.prompt.empty()) bad("messages", "the chat template rendered an empty prompt");
  if (continue_final && !out.request.json_schema.empty()) {
    out.request.json_prefix = tokenizer::continued_text(conversation, out.prompt_text);
  }
  // Without a limit, a chat completion runs to the end of the context, as vLLM's does.
  const std::int64_t room = std::max<std::int64_t>(
      1, context_length - static_cast<std::int64_t>(out.request.prompt.size()));
  const char* limit_field =
      parsed.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  out.request.max_tokens = integer(parsed, limit_field, room, 1, std::int64_t{1} << 30);
  out.max_tokens_given = parsed.contains(limit_field) && !parsed[limit_field].is_null();
  return out;
}

CompletionText::CompletionText(const TextTokenizer* tokenizer, std::vector<std::string> stop)
    : tokenizer_(tokenizer), stop_(std::move(stop)) {}

std::string CompletionText::token_text(std::int32_t token) const {
  return tokenizer_ == nullptr ? std::string() : tokenizer_->output_bytes(token);
}

std::string CompletionText::append(std::int32_t token) {
  if (stopped_ || tokenizer_ == nullptr) return "";
  const std::size_t searched_from = text_.size();
  text_ += tokenizer_->output_bytes(token);
  for (const std::string& s : stop_) {
    const std::size_t from = searched_from >= s.size() ? searched_from - s.size() + 1 : 0;
    const std::size_t at = text_.find(s, from);
    if (at != std::string::npos) {
      text_.resize(at);
      stopped_ = true;
    }
  }
  std::size_t end = text_.size();
  if (!stopped_) end -= std::max(possible_stop_start(text_, stop_), incomplete_utf8_tail(text_));
  if (end <= emitted_) return "";
  std::string now = text_.substr(emitted_, end - emitted_);
  emitted_ = end;
  return now;
}

std::string CompletionText::finish() {
  std::string rest = text_.substr(std::min(emitted_, text_.size()));
  emitted_ = text_.size();
  return rest;
}

json tool_calls_json(const std::vector<ToolCall>& calls, const std::string& completion_id,
                     bool streamed) {
  json out = json::array();
  for (std::size_t i = 0; i < calls.size(); ++i) {
    json call = {{"id", "call_" + completion_id + "_" + std::to_string(i)},
                 {"type", "function"},
                 {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (streamed) call["index"] = i;
    out.push_back(std::move(call));
  }
  return out;
}

const char* finish_reason(engine::FinishReason reason) {
  return reason == engine::FinishReason::length ? "length" : "stop";
}

nlohmann::json chat_logprobs_json(const std::vector<engine::Event>& events,
                                  const CompletionText& text) {
  const auto entry = [&](std::int32_t id, double logprob) {
    const std::string piece = text.token_text(id);
    json bytes = json::array();
    for (const char c : piece) bytes.push_back(static_cast<unsigned char>(c));
    return json{{"token", piece}, {"logprob", logprob}, {"bytes", bytes}};
  };
  json content = json::array();
  for (const engine::Event& e : events) {
    if (!e.has_token) continue;
    json token = entry(e.token, e.logprob);
    token["top_logprobs"] = json::array();
    for (const auto& [id, logprob] : e.top_logprobs)
      token["top_logprobs"].push_back(entry(id, logprob));
    content.push_back(std::move(token));
  }
  return {{"content", content}};
}

nlohmann::json logprobs_json(const std::vector<engine::Event>& events, const CompletionText& text,
                             std::size_t offset) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       offsets = json::array();
  for (const engine::Event& e : events) {
    if (!e.has_token) continue;
    const std::string piece = text.token_text(e.token);
    tokens.push_back(piece);
    token_logprobs.push_back(e.logprob);
    json alternatives = json::object();
    for (const auto& [id, logprob] : e.top_logprobs) alternatives[text.token_text(id)] = logprob;
    top.push_back(alternatives);
    offsets.push_back(offset);
    offset += piece.size();
  }
  return {{"tokens", tokens},
          {"token_logprobs", token_logprobs},
          {"top_logprobs", top},
          {"text_offset", offsets}};
}

}  // namespace attnscope::cli
