// `attnscope serve`: an OpenAI-compatible HTTP server over the engine (engine/engine.h), so that
// the clients and benchmark tools that speak OpenAI's API (the `openai` package, vLLM's bench
// serve, guidellm) drive attnscope as they drive vLLM or llama.cpp's llama-server.
//
//   POST /v1/completions       a completion, whole or streamed as server-sent events
//                              (serve/openai_api.h has the fields)
//   POST /v1/chat/completions  a chat completion: the conversation rendered by the checkpoint's
//                              chat template (or --chat-template's), whole or streamed; 501
//                              saying why when the model has none or it cannot be rendered;
//                              with --tool-call-parser, a reply's tool calls as `tool_calls`,
//                              with --reasoning-parser, its thinking as `reasoning_content`
//   GET  /v1/models            the one model served
//   GET  /metrics              Prometheus text: requests running and waiting, KV blocks, prefix
//                              cache hits, preemptions, tokens, time-to-first-token and
//                              inter-token histograms
//   GET  /health               200 while serving, 503 while shutting down or after a device
//                              error (no key needed)
//
// Threads: cpp-httplib's pool answers connections; each request becomes an engine request
// through EngineLoop (serve/engine_loop.h), the one thread that runs the engine, and reads its
// events back. A streamed request whose client goes away is cancelled, its blocks returned at
// once. A full queue (--max-queue requests in flight) answers 429 at once. The model loads on a
// thread of its own that ends, so the loop's OpenMP team is the only one.
//
// Limits: --host 127.0.0.1 unless told otherwise; --api-key makes every endpoint but /health
// need "Authorization: Bearer KEY" (compared in constant time); request bodies sent with a
// Content-Length of up to --max-body-bytes (413 beyond, answered from the headers; chunked
// bodies 411), a read timeout for a client that stops sending (one that trickles a byte at a
// time keeps its connection thread: put a proxy in front for untrusted clients),
// --request-timeout for a whole request (504, or an error event when streamed), nothing on disk
// is ever served. An engine step that fails (out of memory)
// answers 500 to the requests it ran; the others and the server go on. After a device error
// (a kernel fault leaves the CUDA context unusable) every request answers 503 with it and
// /health says 503 "device failed", so whatever supervises the server restarts it. SIGINT or
// SIGTERM: stop accepting (503), let the requests in flight finish for up to --shutdown-grace
// seconds, cancel the rest, exit 0.
#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "profiler/summary.h"
#include "runtime/error.h"
#include "tools/attnscope/cli/engine_flags.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/model_loading.h"
#include "tools/attnscope/commands/commands.h"
#include "tools/attnscope/serve/chat_reply.h"
#include "tools/attnscope/serve/engine_loop.h"
#include "tools/attnscope/serve/metrics_text.h"
#include "tools/attnscope/serve/openai_api.h"

namespace attnscope::cli {

namespace {

using nlohmann::json;

struct ServeFlags {
  std::string model;
  std::string tokenizer;
  std::string chat_template;              // a Jinja file; default: the checkpoint's own
  std::string tool_call_parser = "none";  // serve/tool_calls.h's parsers by name, or none
  std::string reasoning_parser = "none";  // serve/reasoning.h's parsers by name, or none
  std::string attention = "flash";
  DeviceOptions device;
  EngineFlags engine;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;
  std::string served_model_name;  // default: the --model spec
  std::int64_t max_queue = 256;
  int http_threads = 0;  // 0: max_queue + 8, so a full queue can still be told so
  std::string max_body = "1MiB";
  int read_timeout_s = 10;
  int request_timeout_s = 600;
  int shutdown_grace_s = 30;
};

// Equal without an early exit: the time taken does not say how much of a key was right.
bool constant_time_equal(const std::string& a, const std::string& b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return difference == 0;
}

void send_error(httplib::Response& res, const ApiError& error) {
  res.status = error.status;
  res.set_content(error_body(error), "application/json");
}

// The error a request answers with when its last event ends it without a completion: refused
// (400), or failed because the engine's step that ran it failed (500). None otherwise (a
// cancellation is answered by whoever cancelled).
std::optional<ApiError> finish_error(const engine::Event& event) {
  if (!event.finished) return std::nullopt;
  if (event.reason == engine::FinishReason::refused) {
    return ApiError{400, "invalid_request_error", event.error, "prompt"};
  }
  if (event.reason == engine::FinishReason::failed) {
    return ApiError{500, "server_error", event.error, ""};
  }
  return std::nullopt;
}

const ApiError kTimedOut{504, "timeout", "the request took longer than --request-timeout", ""};
const ApiError kShuttingDown{503, "server_error", "the server is shutting down", ""};

// Everything a handler needs, alive for the whole server.
struct Service {
  const ServeFlags& flags;
  const LanguageModel& model;
  const std::optional<TextTokenizer>& tokenizer;
  const std::optional<tokenizer::ChatTemplate>& chat_template;
  std::string no_chat;           // why /v1/chat/completions is not served, when it is not
  const engine::Engine& engine;  // refusal() only: the loop thread owns the rest
  EngineLoop& loop;
  std::string model_name;
  std::optional<ToolCallParser> tool_call_parser;
  std::optional<ReasoningParser> reasoning_parser;
  std::uint64_t max_body_bytes = 0;
  std::time_t started = std::time(nullptr);
  std::atomic<std::int64_t> next_id{1};
  std::atomic<bool> shutting_down{false};
  std::atomic<std::int64_t> open_streams{0};  // streamed answers not yet ended

  const TextTokenizer* text() const { return tokenizer ? &*tokenizer : nullptr; }
};

// A completion's common fields (a chat completion's, or one of its streamed chunks').
json completion_head(Service& service, const std::string& id, bool chat, bool chunk = false) {
  const char* object = !chat   ? "text_completion"
                       : chunk ? "chat.completion.chunk"
                               : "chat.completion";
  return {{"id", id},
          {"object", object},
          {"created", static_cast<std::int64_t>(std::time(nullptr))},
          {"model", service.model_name}};
}

json usage_json(std::int64_t prompt, std::int64_t completion) {
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion}};
}

std::string completion_id(Service& service, bool chat) {
  return (chat ? "chatcmpl-" : "cmpl-") + std::to_string(service.next_id++);
}

// The n choices of one completion (OpenAI's `n`), each an engine request of its own: choice i
// samples with seed + i. Choice 0 goes first, alone; the others follow once it has sampled its
// first token, when its prompt's full blocks are in the prefix cache, so they compute only the
// rest of the prompt (about one prefill for n choices, as vLLM's forked sequences share theirs).
// The handlers read the choices one after another.
class Choices {
 public:
  Choices(Service& service, engine::Request request, std::int64_t count,
          std::shared_ptr<EngineLoop::Stream> first)
      : service_(service), request_(std::move(request)), count_(static_cast<std::size_t>(count)) {
    streams_.push_back(std::move(first));
  }

  std::size_t size() const { return count_; }
  // The next event of choice `index` (read in order: choice 0 first), waiting up to `timeout`;
  // false when none came in time. Throws ApiError (429) when the queue refuses a later choice.
  bool next(std::size_t index, engine::Event& event, std::chrono::milliseconds timeout) {
    if (!streams_[index]->next(event, timeout)) return false;
    if (index == 0 && event.has_token && streams_.size() < count_) submit_the_others();
    return true;
  }
  // Cancels every choice's request (a client gone, a timeout, an error).
  void cancel() {
    for (const auto& stream : streams_) service_.loop.cancel(stream);
  }

 private:
  void submit_the_others() {
    for (std::size_t index = 1; index < count_; ++index) {
      engine::Request request = request_;
      request.sampling.seed += index;
      std::shared_ptr<EngineLoop::Stream> stream = service_.loop.submit(std::move(request));
      if (!stream) {
        cancel();
        throw ApiError{429, "rate_limit_error",
                       "the queue is full (--max-queue " +
                           std::to_string(service_.flags.max_queue) +
                           " requests in flight, each choice one): retry later",
                       ""};
      }
      streams_.push_back(std::move(stream));
    }
  }

  Service& service_;
  engine::Request request_;  // choice 0's
  std::size_t count_;
  std::vector<std::shared_ptr<EngineLoop::Stream>> streams_;
};

// One choice of a whole completion: its text (or chat message, split by the server's parsers),
// finish reason and logprobs.
json whole_choice(const CompletionRequest& asked, std::size_t index, const std::string& text,
                  const std::vector<engine::Event>& events, const CompletionText& tokens,
                  std::size_t offset, engine::FinishReason reason, const std::string& call_id) {
  json choice = {{"index", index},
                 {"text", text},
                 {"logprobs", nullptr},
                 {"finish_reason", finish_reason(reason)}};
  if (asked.chat) {
    choice.erase("text");
    const ChatReply reply = parse_chat_reply(text, asked.reasoning, asked.tool_calls);
    json& message = choice["message"] = {{"role", "assistant"}, {"content", reply.content}};
    if (reply.content.empty() && (!reply.reasoning.empty() || !reply.tool_calls.empty())) {
      message["content"] = nullptr;
    }
    if (asked.reasoning) {
      message["reasoning_content"] =
          reply.reasoning.empty() ? json(nullptr) : json(reply.reasoning);
    }
    if (!reply.tool_calls.empty()) {
      message["tool_calls"] = tool_calls_json(reply.tool_calls, call_id, false);
      choice["finish_reason"] = "tool_calls";
    }
  }
  if (asked.request.logprobs >= 0) {
    choice["logprobs"] =
        asked.chat ? chat_logprobs_json(events, tokens) : logprobs_json(events, tokens, offset);
  }
  return choice;
}

// The id a choice's tool calls are named by: the completion's, and for choice i > 0 "-i" after
// it, so that no two calls of a response share one.
std::string call_id(const std::string& completion, std::size_t index) {
  return index == 0 ? completion : completion + "-" + std::to_string(index);
}

// Waits for every choice of a whole completion and answers it as one JSON object.
void answer_whole(Service& service, const CompletionRequest& asked, Choices& choices,
                  httplib::Response& res) {
  const std::string id = completion_id(service, asked.chat);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(service.flags.request_timeout_s);
  json body = completion_head(service, id, asked.chat);
  body["choices"] = json::array();
  std::int64_t generated = 0;
  for (std::size_t index = 0; index < choices.size(); ++index) {
    CompletionText text(service.text(), asked.request.stop);
    std::vector<engine::Event> events;
    std::string body_text = asked.echo ? asked.prompt_text : std::string();
    const std::size_t offset = body_text.size();
    engine::Event event;
    for (;;) {
      try {
        const bool arrived = choices.next(index, event, std::chrono::milliseconds(100));
        if (std::chrono::steady_clock::now() >= deadline) {
          choices.cancel();
          return send_error(res, kTimedOut);
        }
        if (!arrived) continue;
      } catch (const ApiError& error) {
        return send_error(res, error);
      }
      if (event.has_token) {
        body_text += text.append(event.token);
        events.push_back(event);
      }
      if (event.finished) break;
    }
    if (const std::optional<ApiError> error = finish_error(event)) {
      choices.cancel();
      return send_error(res, *error);
    }
    if (event.reason == engine::FinishReason::cancelled) {  // only the shutdown cancels
      choices.cancel();
      return send_error(res, kShuttingDown);
    }
    body_text += text.finish();
    body["choices"].push_back(whole_choice(asked, index, body_text, events, text, offset,
                                           event.reason, call_id(id, index)));
    generated += static_cast<std::int64_t>(events.size());
  }
  body["usage"] = usage_json(static_cast<std::int64_t>(asked.request.prompt.size()), generated);
  res.set_content(dump(body), "application/json");
}

// Streams a completion as server-sent events: a chunk per piece of text, the last one with the
// finish reason, the usage when asked, then `data: [DONE]`. A chat completion's chunks carry
// the text as `delta.content`, the first the assistant's role. A reply split by the server's
// parsers (chat_reply.h) carries its reasoning as `delta.reasoning_content`, holds back what may
// still be a tag or a tool call, and its last chunk carries the calls, whole, as
// `delta.tool_calls`. With n choices, each choice's chunks (by their index) follow the last of
// the one before.
void answer_streamed(Service& service, const CompletionRequest& asked,
                     const std::shared_ptr<Choices>& choices, httplib::Response& res) {
  struct State {
    CompletionRequest asked;
    std::string id;
    std::shared_ptr<Choices> choices;
    std::chrono::steady_clock::time_point deadline;
    std::int64_t tokens = 0;  // every choice's
    bool finished = false;
    // The choice being streamed.
    std::size_t index = 0;
    bool started = false;  // its first chunks (the echoed prompt, the chat role) are sent
    CompletionText text;
    std::size_t offset = 0;
    ChatReplyStream parts;  // its reply split (the text as it came, without parsers)
  };
  auto state = std::make_shared<State>(State{
      asked, completion_id(service, asked.chat), choices,
      std::chrono::steady_clock::now() + std::chrono::seconds(service.flags.request_timeout_s), 0,
      false, 0, false, CompletionText(service.text(), asked.request.stop), 0,
      ChatReplyStream(asked.reasoning, asked.tool_calls)});
  const auto chunk = [&service, state](const std::string& piece, const json& logprobs,
                                       const json& reason, const std::string& reasoning = "",
                                       const json& tool_calls = nullptr) {
    json body = completion_head(service, state->id, state->asked.chat, true);
    json choice = {{"index", state->index},
                   {"text", piece},
                   {"logprobs", logprobs},
                   {"finish_reason", reason}};
    if (state->asked.chat) {
      choice.erase("text");
      choice["delta"] = json::object();
      if (!piece.empty()) choice["delta"]["content"] = piece;
      if (!reasoning.empty()) choice["delta"]["reasoning_content"] = reasoning;
      if (!tool_calls.is_null()) choice["delta"]["tool_calls"] = tool_calls;
    }
    body["choices"] = json::array({choice});
    return "data: " + dump(body) + "\n\n";
  };
  res.set_chunked_content_provider(
      "text/event-stream",
      [&service, state, chunk](std::size_t, httplib::DataSink& sink) {
        const auto send = [&](const std::string& data) {
          return sink.write(data.data(), data.size());
        };
        // An error ends the stream with an error event (no [DONE]), closed as a chunked
        // response must be, and cancels every choice.
        const auto end_with = [&](const ApiError& error) {
          send("data: " + error_body(error) + "\n\n");
          sink.done();
          state->choices->cancel();
          state->finished = true;
          return true;
        };
        // An exception must not leave this callback (it would end the server): the stream ends
        // with the error, and the request is cancelled.
        try {
          if (!state->started) {
            state->started = true;
            if (state->asked.echo && !send(chunk(state->asked.prompt_text, nullptr, nullptr))) {
              return false;
            }
            if (state->asked.chat) {
              json first = completion_head(service, state->id, true, true);
              first["choices"] = json::array({{{"index", state->index},
                                               {"delta", {{"role", "assistant"}, {"content", ""}}},
                                               {"logprobs", nullptr},
                                               {"finish_reason", nullptr}}});
              if (!send("data: " + dump(first) + "\n\n")) return false;
            }
            state->offset = state->asked.echo ? state->asked.prompt_text.size() : 0;
          }
          engine::Event event;
          const bool arrived =
              state->choices->next(state->index, event, std::chrono::milliseconds(100));
          if (std::chrono::steady_clock::now() >= state->deadline) return end_with(kTimedOut);
          // No event yet: still connected? (A false return cancels the request.)
          if (!arrived) return sink.is_writable();
          if (const std::optional<ApiError> error = finish_error(event)) return end_with(*error);
          if (event.reason == engine::FinishReason::cancelled) return end_with(kShuttingDown);
          std::string piece;
          json logprobs = nullptr;
          if (event.has_token) {
            ++state->tokens;
            piece = state->text.append(event.token);
            if (state->asked.request.logprobs >= 0) {
              logprobs = state->asked.chat ? chat_logprobs_json({event}, state->text)
                                           : logprobs_json({event}, state->text, state->offset);
            }
            state->offset += piece.size();
          }
          if (!event.finished) {
            const ChatReply part = state->parts.append(piece);
            if (part.content.empty() && part.reasoning.empty() && logprobs.is_null()) return true;
            return send(chunk(part.content, logprobs, nullptr, part.reasoning));
          }
          json reason = finish_reason(event.reason);
          const ChatReply last = state->parts.finish(piece + state->text.finish());
          json tool_calls = nullptr;
          if (!last.tool_calls.empty()) {
            tool_calls = tool_calls_json(last.tool_calls, call_id(state->id, state->index), true);
            reason = "tool_calls";
          }
          if (!send(chunk(last.content, logprobs, reason, last.reasoning, tool_calls))) {
            return false;
          }
          if (++state->index < state->choices->size()) {
            state->started = false;  // the next choice, from its first chunk
            state->text = CompletionText(service.text(), state->asked.request.stop);
            state->parts = ChatReplyStream(state->asked.reasoning, state->asked.tool_calls);
            return true;
          }
          if (state->asked.include_usage) {
            json usage = completion_head(service, state->id, state->asked.chat, true);
            usage["choices"] = json::array();
            usage["usage"] = usage_json(
                static_cast<std::int64_t>(state->asked.request.prompt.size()), state->tokens);
            send("data: " + dump(usage) + "\n\n");
          }
          send("data: [DONE]\n\n");
          state->finished = true;
          sink.done();
          return true;
        } catch (const ApiError& error) {  // a later choice refused by a full queue
          return end_with(error);
        } catch (const std::exception& error) {
          std::cerr << "attnscope serve: streamed " << state->id << ": " << error.what() << "\n";
          return end_with({500, "server_error", error.what(), ""});
        }
      },
      [&service, state](bool /*success*/) {
        if (!state->finished) state->choices->cancel();  // the client went away
        --service.open_streams;
      });
  ++service.open_streams;
}

void handle_completion(Service& service, const httplib::Request& req, httplib::Response& res,
                       bool chat) {
  if (chat && !service.no_chat.empty()) {
    return send_error(res, {501, "invalid_request_error", service.no_chat, ""});
  }
  const std::string content_type = req.get_header_value("Content-Type");
  if (content_type.find("application/json") == std::string::npos) {
    return send_error(res, {415, "invalid_request_error",
                            "the body must be JSON, sent with Content-Type: application/json", ""});
  }
  CompletionRequest asked;
  const ModelConfig& config = service.model.config();
  try {
    asked = chat ? parse_chat_request(req.body, *service.tokenizer, *service.chat_template,
                                      service.tool_call_parser, config.vocab_size,
                                      config.context_length)
                 : parse_completion_request(req.body, service.text(), config.vocab_size);
  } catch (const ApiError& error) {
    return send_error(res, error);
  }
  if (chat) asked.reasoning = service.reasoning_parser;
  if (asked.n > service.flags.max_queue) {  // each choice is a request in flight
    return send_error(res, {400, "invalid_request_error",
                            "n (" + std::to_string(asked.n) + ") is more than --max-queue (" +
                                std::to_string(service.flags.max_queue) +
                                "), the requests the server holds at once",
                            "n"});
  }
  if (std::string why = service.engine.refusal(asked.request); !why.empty()) {
    return send_error(res, {400, "invalid_request_error", why, "prompt"});
  }
  const auto prompt_tokens = static_cast<std::int64_t>(asked.request.prompt.size());
  const std::int64_t longest = service.engine.longest_sequence();
  if (asked.max_tokens_given && prompt_tokens + asked.request.max_tokens > longest) {
    return send_error(
        res, {400, "invalid_request_error",
              "the prompt (" + std::to_string(prompt_tokens) + " tokens) and max_tokens (" +
                  std::to_string(asked.request.max_tokens) + ") need " +
                  std::to_string(prompt_tokens + asked.request.max_tokens) +
                  " positions; a sequence holds at most " + std::to_string(longest) +
                  (longest < config.context_length ? " (the KV cache's size; raise --kv-memory)"
                                                   : " (the model's context)"),
              "max_tokens"});
  }
  if (service.shutting_down) return send_error(res, kShuttingDown);
  if (std::string failure = service.engine.device_failure(); !failure.empty()) {
    return send_error(res, {503, "server_error", std::move(failure), ""});
  }
  std::shared_ptr<EngineLoop::Stream> stream = service.loop.submit(asked.request);
  if (!stream) {
    res.set_header("Retry-After", "1");
    return send_error(res,
                      {429, "rate_limit_error",
                       "the queue is full (--max-queue " + std::to_string(service.flags.max_queue) +
                           " requests in flight): retry later",
                       ""});
  }
  auto choices = std::make_shared<Choices>(service, asked.request, asked.n, std::move(stream));
  if (asked.stream) return answer_streamed(service, asked, choices, res);
  answer_whole(service, asked, *choices, res);
}

// What is wrong with a request's framing, checked from its headers before a byte of its body
// is read (cpp-httplib 0.11 would read it first): a POST needs a Content-Length, one decimal
// number (copies that differ are a 400, as RFC 9112 asks, since two readers could cut the
// stream differently), at most `max_body` (413 at once, not after reading the whole body to
// discard it). A chunked body is refused (411): its size is known only at its end, and
// cpp-httplib would read all of it past the limit.
std::optional<ApiError> framing_error(const httplib::Request& req, std::uint64_t max_body) {
  const bool sends_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
  if (!sends_body) return std::nullopt;
  if (req.has_header("Transfer-Encoding")) {
    return ApiError{411, "invalid_request_error",
                    "a chunked body is not accepted: send the body with a Content-Length header",
                    ""};
  }
  const std::size_t lengths = req.get_header_value_count("Content-Length");
  if (lengths == 0) {
    return ApiError{411, "invalid_request_error", req.method + " needs a Content-Length header",
                    ""};
  }
  const std::string length = req.get_header_value("Content-Length");
  for (std::size_t i = 1; i < lengths; ++i) {
    if (req.get_header_value("Content-Length", i) != length) {
      return ApiError{400, "invalid_request_error", "Content-Length headers that differ", ""};
    }
  }
  std::uint64_t bytes = 0;
  const auto [end, error] = std::from_chars(length.data(), length.data() + length.size(), bytes);
  if (length.empty() || error == std::errc::invalid_argument ||
      end != length.data() + length.size()) {
    return ApiError{400, "invalid_request_error",
                    "Content-Length must be a decimal number of bytes", ""};
  }
  if (error == std::errc::result_out_of_range || bytes > max_body) {
    return ApiError{413, "invalid_request_error",
                    "the request body is too large (more than --max-body-bytes " +
                        std::to_string(max_body) + ")",
                    ""};
  }
  return std::nullopt;
}

void add_routes(httplib::Server& server, Service& service) {
  server.set_pre_routing_handler([&service](const httplib::Request& req, httplib::Response& res) {
    if (std::optional<ApiError> error = framing_error(req, service.max_body_bytes)) {
      res.set_header("Connection", "close");  // the unread body must not be read as a request
      send_error(res, *error);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (service.flags.api_key.empty() || req.path == "/health") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const std::string expected = "Bearer " + service.flags.api_key;
    if (constant_time_equal(req.get_header_value("Authorization"), expected)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, {401, "invalid_request_error",
                     "missing or wrong API key (Authorization: Bearer KEY)", ""});
    return httplib::Server::HandlerResponse::Handled;
  });
  server.Get("/health", [&service](const httplib::Request&, httplib::Response& res) {
    const std::string device_failure = service.engine.device_failure();
    res.status = service.shutting_down || !device_failure.empty() ? 503 : 200;
    const json status = service.shutting_down ? json{{"status", "shutting down"}}
                        : device_failure.empty()
                            ? json{{"status", "ok"}}
                            : json{{"status", "device failed"}, {"error", device_failure}};
    res.set_content(dump(status), "application/json");
  });
  server.Get("/v1/models", [&service](const httplib::Request&, httplib::Response& res) {
    const json body = {{"object", "list"},
                       {"data",
                        {{{"id", service.model_name},
                          {"object", "model"},
                          {"created", static_cast<std::int64_t>(service.started)},
                          {"owned_by", "attnscope"},
                          {"max_model_len", service.model.config().context_length}}}}};
    res.set_content(dump(body), "application/json");
  });
  server.Get("/metrics", [&service](const httplib::Request&, httplib::Response& res) {
    res.set_content(prometheus_text(service.loop.metrics()), "text/plain; version=0.0.4");
  });
  server.Post("/v1/completions", [&service](const httplib::Request& req, httplib::Response& res) {
    handle_completion(service, req, res, false);
  });
  server.Post("/v1/chat/completions",
              [&service](const httplib::Request& req, httplib::Response& res) {
                handle_completion(service, req, res, true);
              });
  server.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr error) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        std::cerr << "attnscope serve: " << req.method << " " << req.path << ": " << what << "\n";
        send_error(res, {500, "server_error", what, ""});
      });
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // a handler's own error answer
    const bool posted_to = req.path == "/v1/completions" || req.path == "/v1/chat/completions";
    const bool got_from =
        req.path == "/health" || req.path == "/v1/models" || req.path == "/metrics";
    if (res.status == 404 && (posted_to || got_from)) {
      res.status = 405;
      res.set_header("Allow", posted_to ? "POST" : "GET");
    }
    const std::string what =
        res.status == 405   ? req.path + " answers " + res.get_header_value("Allow") + " only"
        : res.status == 404 ? "no such endpoint: " + req.method + " " + req.path
        : res.status == 413 ? "the request body is too large"
                            : "the request could not be served";
    send_error(res, {res.status, "invalid_request_error", what, ""});
  });
}

// Blocks SIGINT and SIGTERM in this thread and every thread it starts afterwards, so that only
// the waiter (sigwait) receives them.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// Loads the model on a thread that ends before serving starts, so that EngineLoop's thread holds
// the process's only OpenMP team. libgomp keeps a team of worker threads for every thread that
// ran a parallel region (converting or quantizing weights at load does), and once its teams
// together hold more threads than the machine has cores, it cuts their busy wait between regions
// from 300,000 spins to 100 (GOMP_SPINCOUNT's documentation): each of a step's parallel regions
// then wakes its workers through the kernel. A thread that ends takes its team with it.
// Measured (docs/results/2026-12-04-serve-one-team/, 5 rounds): a streamed q8_0 GPT-2 token on 2
// cores, median 7.35 ms with the load on the main thread, 4.90 ms with it here.
// The loading thread blocks the stop signals, as every serving thread does: a worker of its team
// can outlive it (seen under AddressSanitizer, where libgomp kept it for the loop's team), and a
// thread that did not block SIGTERM would take its default action and kill the server undrained.
ModelOnDevice load_on_a_passing_thread(const ServeFlags& flags) {
  ModelOnDevice loaded;
  std::exception_ptr failed;
  std::thread([&] {
    block_stop_signals();
    try {
      loaded = load_model_on_device(flags.model, flags.device, flags.attention);
    } catch (...) {
      failed = std::current_exception();
    }
  }).join();
  if (failed) std::rethrow_exception(failed);
  return loaded;
}

int run_serve(const ServeFlags& flags) {
  const ModelOnDevice loaded = load_on_a_passing_thread(flags);
  const std::optional<TextTokenizer> tokenizer = find_tokenizer(flags.tokenizer, flags.model);
  std::string no_chat;
  const std::optional<tokenizer::ChatTemplate> chat_template =
      find_chat_template(flags.chat_template, flags.tokenizer, flags.model, tokenizer, no_chat);
  if (!no_chat.empty()) std::cerr << "attnscope serve: no chat completions: " << no_chat << "\n";
  const engine::TokenVocabulary vocabulary =
      tokenizer ? tokenizer->vocabulary() : engine::TokenVocabulary{};
  const std::uint64_t max_body = parse_bytes(flags.max_body, "--max-body-bytes");
  engine::Engine engine(*loaded.model, *loaded.ctx, engine_options(flags.engine), vocabulary);

  const sigset_t signals = block_stop_signals();
  EngineLoop loop(engine, flags.max_queue);
  Service service{flags,
                  *loaded.model,
                  tokenizer,
                  chat_template,
                  no_chat,
                  engine,
                  loop,
                  flags.served_model_name.empty() ? flags.model : flags.served_model_name,
                  tool_call_parser_named(flags.tool_call_parser),
                  reasoning_parser_named(flags.reasoning_parser),
                  max_body};
  httplib::Server server;
  const int threads =
      flags.http_threads > 0 ? flags.http_threads : static_cast<int>(flags.max_queue) + 8;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_payload_max_length(max_body);
  server.set_read_timeout(flags.read_timeout_s, 0);
  server.set_write_timeout(flags.read_timeout_s, 0);
  add_routes(server, service);
  // The listening socket: SO_REUSEADDR (a restart may bind at once) but not cpp-httplib's default
  // SO_REUSEPORT, which would let a second server share the port silently.
  int listening = -1;
  server.set_socket_options([&listening](int socket) {
    const int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listening = socket;
  });
  const int port = flags.port == 0
                       ? server.bind_to_any_port(flags.host)
                       : (server.bind_to_port(flags.host, flags.port) ? flags.port : -1);
  check(port > 0, "--port", [&] {
    return "cannot listen on " + flags.host + ":" + std::to_string(flags.port) +
           " (in use, or not an address of this machine)";
  });
  // cpp-httplib listens with a backlog of 5 connections (CPPHTTPLIB_LISTEN_BACKLOG, fixed when the
  // library was built): a burst of clients connecting at once (a benchmark's 64) overflows it and
  // loses connections. Listening again on the same socket raises the backlog.
  check(::listen(listening, SOMAXCONN) == 0, "serve", "cannot raise the listen backlog");
  std::cerr << "attnscope serve: " << service.model_name << " ("
            << run_description(*loaded.model, *loaded.ctx) << ", a KV cache of "
            << profiler::binary_bytes(engine.kv_usage().reserved_bytes) << " in "
            << dtype_name(engine.cache().geometry().dtype) << ", "
            << (tokenizer ? "with" : "without") << " a tokenizer, "
            << (no_chat.empty() ? "with" : "without") << " a chat template"
            << (service.tool_call_parser ? ", tool calls read as " + flags.tool_call_parser : "")
            << (service.reasoning_parser ? ", reasoning read as " + flags.reasoning_parser : "")
            << ") listening on http://" << flags.host << ":" << port << std::endl;

  std::mutex listening_mutex;
  std::condition_variable listening_ended;
  bool still_listening = true;
  std::thread waiter([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    std::cerr << "attnscope serve: " << (signal == SIGINT ? "SIGINT" : "SIGTERM")
              << ": no new requests; letting the ones in flight finish (up to "
              << flags.shutdown_grace_s << " s)" << std::endl;
    service.shutting_down = true;
    loop.stop_accepting();
    const std::int64_t cancelled =
        loop.drain(std::chrono::steady_clock::now() + std::chrono::seconds(flags.shutdown_grace_s));
    if (cancelled > 0) std::cerr << "attnscope serve: cancelled " << cancelled << " requests\n";
    // cpp-httplib ends every stream where it is once stopped: the streams send their last
    // event (a cancelled one's error) first, for up to the read timeout.
    const auto sent_by =
        std::chrono::steady_clock::now() + std::chrono::seconds(flags.read_timeout_s);
    while (service.open_streams > 0 && std::chrono::steady_clock::now() < sent_by) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    server.stop();
    // listen_after_bind returns once every connection thread has ended, and one still reading a
    // request (a client trickling a byte at a time) never does: after the read timeout, the
    // process exits without it (the engine has stopped; nothing is left to finish).
    std::unique_lock lock(listening_mutex);
    const auto patience = std::chrono::seconds(flags.read_timeout_s + 1);
    if (!listening_ended.wait_for(lock, patience, [&] { return !still_listening; })) {
      std::cerr << "attnscope serve: a connection is still sending its request; exiting without it"
                << std::endl;
      std::_Exit(0);
    }
  });
  const bool listened = server.listen_after_bind();
  {
    std::lock_guard lock(listening_mutex);
    still_listening = false;
  }
  listening_ended.notify_all();
  waiter.join();
  check(listened, "serve", "the server stopped listening on an error");
  std::cerr << "attnscope serve: stopped" << std::endl;
  return 0;
}

}  // namespace

Subcommand add_serve(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* sub = app.add_subcommand(
      "serve",
      "Serve the model over HTTP with OpenAI's completions and chat completions API (continuous "
      "batching)");
  add_model_flag(*sub, flags->model);
  sub->add_option("--tokenizer", flags->tokenizer,
                  "Directory with vocab.json + merges.txt, or with a tokenizer.json; default: the "
                  "model directory's own (without one, prompts must be token ids)");
  sub->add_option("--chat-template", flags->chat_template,
                  "A Jinja chat template file for /v1/chat/completions; default: the checkpoint's "
                  "own (chat_template.jinja, or tokenizer_config.json's chat_template)")
      ->check(CLI::ExistingFile);
  sub->add_option("--tool-call-parser", flags->tool_call_parser,
                  "How a chat reply is read for tool calls when the request gives tools: hermes "
                  "(Qwen2.5, Qwen3: <tool_call> tags), llama3_json (Llama 3.1, 3.2: a JSON "
                  "reply), mistral ([TOOL_CALLS]), or none (a request with tools must then say "
                  "\"tool_choice\": \"none\")")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "hermes", "llama3_json", "mistral"}));
  sub->add_option("--reasoning-parser", flags->reasoning_parser,
                  "How a chat reply's reasoning is split from its answer, into "
                  "reasoning_content: qwen3 (a reply that begins with <think>), deepseek_r1 (the "
                  "reply reasons until </think>), or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "qwen3", "deepseek_r1"}));
  add_attention_flag(*sub, flags->attention);
  add_device_flags(*sub, flags->device);
  const std::string group = "Engine";
  add_engine_flags(*sub, flags->engine, group);
  sub->add_option("--host", flags->host, "Address to listen on (0.0.0.0: every interface)")
      ->capture_default_str();
  sub->add_option("--port", flags->port, "Port to listen on (0: any free one, printed)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  sub->add_option("--api-key", flags->api_key,
                  "Require Authorization: Bearer KEY on every endpoint but /health");
  sub->add_option("--served-model-name", flags->served_model_name,
                  "The model's name in the API (default: the --model spec)");
  sub->add_option("--max-queue", flags->max_queue,
                  "Requests in flight (waiting or running) at most; beyond, 429 at once")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 16));
  sub->add_option("--http-threads", flags->http_threads,
                  "Connection threads (default: --max-queue + 8)")
      ->check(CLI::Range(0, 1 << 16));
  sub->add_option("--max-body-bytes", flags->max_body, "Largest request body (413 beyond)")
      ->capture_default_str();
  sub->add_option("--read-timeout", flags->read_timeout_s,
                  "Seconds a slow client may take to send a request (and to read an answer)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  sub->add_option("--request-timeout", flags->request_timeout_s,
                  "Seconds a request may run before it is cancelled (504)")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  sub->add_option("--shutdown-grace", flags->shutdown_grace_s,
                  "On SIGINT/SIGTERM, seconds the requests in flight may take to finish")
      ->capture_default_str()
      ->check(CLI::Range(0, 3600));
  return {sub, [flags] { return run_serve(*flags); }};
}

}  // namespace attnscope::cli
