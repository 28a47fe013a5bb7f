// `attnscope serve`, driven as a client over loopback HTTP (cpp-httplib's client; and, when the
// `openai` package is installed, OpenAI's own Python client): every endpoint, greedy output equal
// to `attnscope generate`'s, streaming, parameters and their errors, a malformed-request corpus,
// the API key, a full queue, a client that goes away mid-stream, a load of 64 concurrent
// streaming clients, and a graceful shutdown with a request in flight. Each server is started on
// a free port and stopped by the test; every wait is bounded.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/grammar_recognizer.h"
#include "engine/json_grammar.h"
#include "fixture_paths.h"
#include "json_mode_reference.h"
#include "safetensors_writer.h"
#include "server_process.h"

using attnscope::testing::ServerProcess;
using nlohmann::json;

// Whether this build runs under AddressSanitizer (clang's and GCC's ways of saying so).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

namespace {

const std::string kBinary = ATTNSCOPE_BINARY;

// The model every server here serves: tiny (2 layers, GPT-2's vocabulary and tokenizer), small
// blocks, one thread, room for the load test.
const std::vector<std::string> kServeArgs = {
    "--model", "synthetic:tiny", "--threads", "1", "--block-size", "4", "--kv-memory", "2MiB"};

std::vector<std::string> serve_args(std::vector<std::string> extra) {
  std::vector<std::string> args = kServeArgs;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// stdout of `attnscope ARGS` (a command that must succeed).
std::string run_tool(const std::string& args) {
  std::string out;
  FILE* pipe = popen((kBinary + " " + args + " 2>/dev/null").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  std::size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  REQUIRE(pclose(pipe) == 0);
  return out;
}

// What `attnscope generate` gives for these ids: the reference for the server's greedy text.
std::string generate_text(const std::string& ids, int tokens) {
  const json out =
      json::parse(run_tool("generate -m synthetic:tiny --threads 1 --prompt-ids " + ids + " -n " +
                           std::to_string(tokens) + " --ignore-eos --json"));
  return out.at("text").get<std::string>();
}

httplib::Client client(const ServerProcess& server) {
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(30, 0);
  c.set_connection_timeout(5, 0);
  return c;
}

httplib::Result post(httplib::Client& c, const json& body) {
  return c.Post("/v1/completions", body.dump(), "application/json");
}

json greedy_body(const std::vector<int>& ids, int tokens) {
  return {{"model", "synthetic:tiny"},
          {"prompt", ids},
          {"max_tokens", tokens},
          {"temperature", 0},
          {"ignore_eos", true}};
}

std::string comma_ids(const std::vector<int>& ids) {
  std::string text;
  for (int id : ids) {
    if (!text.empty()) text += ',';
    text += std::to_string(id);
  }
  return text;
}

// A streamed completion: the concatenated text, the chunks, and whether [DONE] ended it.
struct Streamed {
  int status = 0;
  std::string text;
  std::vector<json> chunks;
  bool done = false;
};

Streamed post_streamed(httplib::Client& c, json body, int stop_after_chunks = -1,
                       const std::string& path = "/v1/completions") {
  body["stream"] = true;
  Streamed out;
  std::string buffer;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = {{"Content-Type", "application/json"}};
  req.body = body.dump();
  req.content_receiver = [&](const char* data, std::size_t size, std::uint64_t, std::uint64_t) {
    buffer.append(data, size);
    for (std::size_t end; (end = buffer.find("\n\n")) != std::string::npos;) {
      const std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      REQUIRE(event.starts_with("data: "));
      const std::string data_text = event.substr(6);
      if (data_text == "[DONE]") {
        out.done = true;
        continue;
      }
      const json chunk = json::parse(data_text);
      if (chunk.contains("choices") && !chunk["choices"].empty()) {
        const json& choice = chunk["choices"][0];
        if (choice.contains("text")) out.text += choice["text"].get<std::string>();
        if (choice.contains("delta")) out.text += choice["delta"].value("content", "");
      }
      out.chunks.push_back(chunk);
    }
    return stop_after_chunks < 0 || static_cast<int>(out.chunks.size()) < stop_after_chunks;
  };
  const httplib::Result res = c.send(req);
  out.status = res ? res->status : 0;
  return out;
}

json metrics_of(const std::string& text) {
  json values = json::object();
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#' || line.find('{') != std::string::npos) continue;
    const std::size_t space = line.find(' ');
    values[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return values;
}

json metrics(httplib::Client& c) {
  const httplib::Result res = c.Get("/metrics");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  return metrics_of(res->body);
}

// Polls /metrics until the server holds no request and no KV block (up to 5 s).
bool drained(httplib::Client& c) {
  for (int i = 0; i < 250; ++i) {
    const json m = metrics(c);
    if (m["attnscope_num_requests_running"] == 0 && m["attnscope_kv_blocks_used"] == 0 &&
        m["attnscope_num_requests_waiting"] == 0) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

bool has_tokenizer() {
  const bool found = std::filesystem::exists(attnscope::testing::shared_fixtures() +
                                             "/gpt2-tokenizer/encoder.json");
  if (!found) MESSAGE("SKIPPED: GPT-2's vocabulary not found; the server has no tokenizer");
  return found;
}

// A TCP connection to the server on loopback, for requests an HTTP client would not send.
int connect_raw(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  return fd;
}

}  // namespace

TEST_CASE("serve: endpoints, greedy text equal to generate's, streaming, usage, logprobs") {
  if (!has_tokenizer()) return;
  ServerProcess server(kBinary, kServeArgs);
  httplib::Client c = client(server);

  httplib::Result health = c.Get("/health");
  REQUIRE(health);
  CHECK(health->status == 200);
  const httplib::Result models = c.Get("/v1/models");
  REQUIRE(models);
  CHECK(json::parse(models->body)["data"][0]["id"] == "synthetic:tiny");

  const std::vector<int> ids = {464, 2068, 7586, 21831};
  const std::string expected = generate_text(comma_ids(ids), 12);
  const httplib::Result whole = post(c, greedy_body(ids, 12));
  REQUIRE(whole);
  REQUIRE(whole->status == 200);
  const json body = json::parse(whole->body);
  CHECK(body["object"] == "text_completion");
  CHECK(body["choices"][0]["text"] == expected);
  CHECK(body["choices"][0]["finish_reason"] == "length");
  CHECK(body["usage"] ==
        json{{"prompt_tokens", 4}, {"completion_tokens", 12}, {"total_tokens", 16}});

  // The same as text: the prompt's own text encodes back to the same ids.
  json text_body = greedy_body(ids, 12);
  text_body["prompt"] = " The quick brown fox";
  const httplib::Result as_text = post(c, text_body);
  REQUIRE(as_text);
  CHECK(json::parse(as_text->body)["usage"]["prompt_tokens"] == 4);

  // Streamed: the chunks add up to the same text, the last chunk has the finish reason, the
  // usage chunk comes when asked, then [DONE].
  json stream_body = greedy_body(ids, 12);
  stream_body["stream_options"] = {{"include_usage", true}};
  const Streamed streamed = post_streamed(c, stream_body);
  CHECK(streamed.status == 200);
  CHECK(streamed.done);
  CHECK(streamed.text == expected);
  REQUIRE(streamed.chunks.size() >= 2);
  CHECK(streamed.chunks.back()["usage"]["completion_tokens"] == 12);
  CHECK(streamed.chunks[streamed.chunks.size() - 2]["choices"][0]["finish_reason"] == "length");

  // logprobs: one entry per token, the chosen token's among the top ones (greedy: the first).
  json with_logprobs = greedy_body(ids, 5);
  with_logprobs["logprobs"] = 3;
  const json lp = json::parse(post(c, with_logprobs)->body)["choices"][0]["logprobs"];
  REQUIRE(lp["tokens"].size() == 5);
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(lp["token_logprobs"][i].get<double>() <= 0.0);
    CHECK(lp["top_logprobs"][i].size() <= 3);
  }

  // echo: the prompt's text first. stop: the text ends before the stop string.
  json echo = greedy_body(ids, 4);
  echo["echo"] = true;
  const std::string prompt_text = run_tool(
      "detokenize --tokenizer " + attnscope::testing::gpt2_tokenizer_dir() + " " + comma_ids(ids));
  CHECK(json::parse(post(c, echo)->body)["choices"][0]["text"] ==
        prompt_text.substr(0, prompt_text.find_last_not_of('\n') + 1) +
            generate_text(comma_ids(ids), 4));
  const std::string cut = expected.substr(expected.size() / 2, 3);
  json stop = greedy_body(ids, 12);
  stop["stop"] = cut;
  const json stopped = json::parse(post(c, stop)->body)["choices"][0];
  CHECK(stopped["text"] == expected.substr(0, expected.find(cut)));
  CHECK(stopped["finish_reason"] == "stop");
  const Streamed stopped_stream = post_streamed(c, stop);
  CHECK(stopped_stream.text == expected.substr(0, expected.find(cut)));

  // A sampled request is reproducible from its seed.
  const json sampled = {
      {"prompt", ids}, {"max_tokens", 8}, {"temperature", 0.9}, {"seed", 7}, {"ignore_eos", true}};
  const auto sampled_text = [&] {
    return json::parse(post(c, sampled)->body)["choices"][0]["text"].get<std::string>();
  };
  CHECK(sampled_text() == sampled_text());

  const httplib::Result chat = c.Post("/v1/chat/completions", "{}", "application/json");
  REQUIRE(chat);
  CHECK(chat->status == 501);
  CHECK(chat->body.find("this model has no chat template") != std::string::npos);
  CHECK(drained(c));
  CHECK(server.stop(SIGTERM, 10) == 0);
}

// A case of tests/fixtures/chat_templates/cases.json (transformers' renderings), by name.
json chat_case(const std::string& name) {
  std::ifstream file(std::string(ATTNSCOPE_TEST_FIXTURES) + "/chat_templates/cases.json");
  for (const json& c : json::parse(file)) {
    if (c["name"] == name) return c;
  }
  FAIL("no chat template case " << name);
  return {};
}

TEST_CASE("serve: chat completions render the conversation as transformers does") {
  if (!has_tokenizer()) return;
  const json rendered = chat_case("smollm2: system and turns, add_generation_prompt=True");
  const std::string template_file = std::filesystem::temp_directory_path() /
                                    ("attnscope-chat-" + std::to_string(getpid()) + ".jinja");
  {
    std::ofstream out(template_file, std::ios::binary);
    out << rendered["template"].get<std::string>();
  }
  ServerProcess server(kBinary, serve_args({"--chat-template", template_file}));
  CHECK(server.log().find("with a chat template") != std::string::npos);
  httplib::Client c = client(server);
  const json messages = rendered["variables"]["messages"];

  // The reference: the text transformers rendered, completed greedily through /v1/completions.
  const httplib::Result completion = post(c, {{"prompt", rendered["rendered"]},
                                              {"max_tokens", 8},
                                              {"temperature", 0},
                                              {"ignore_eos", true}});
  REQUIRE(completion);
  REQUIRE(completion->status == 200);
  const json expected = json::parse(completion->body);

  const json chat_body = {{"model", "synthetic:tiny"},
                          {"messages", messages},
                          {"max_tokens", 8},
                          {"temperature", 0},
                          {"ignore_eos", true}};
  const httplib::Result whole =
      c.Post("/v1/chat/completions", chat_body.dump(), "application/json");
  REQUIRE(whole);
  REQUIRE(whole->status == 200);
  const json body = json::parse(whole->body);
  CHECK(body["object"] == "chat.completion");
  CHECK(body["id"].get<std::string>().starts_with("chatcmpl-"));
  CHECK(body["choices"][0]["message"] ==
        json{{"role", "assistant"}, {"content", expected["choices"][0]["text"]}});
  CHECK(body["choices"][0]["finish_reason"] == "length");
  CHECK(body["usage"] == expected["usage"]);

  // Streamed: the role first, then the same text in deltas, the finish reason, usage, [DONE].
  json stream_body = chat_body;
  stream_body["stream_options"] = {{"include_usage", true}};
  const Streamed streamed = post_streamed(c, stream_body, -1, "/v1/chat/completions");
  CHECK(streamed.status == 200);
  CHECK(streamed.done);
  CHECK(streamed.text == expected["choices"][0]["text"]);
  REQUIRE(streamed.chunks.size() >= 3);
  CHECK(streamed.chunks.front()["object"] == "chat.completion.chunk");
  CHECK(streamed.chunks.front()["choices"][0]["delta"]["role"] == "assistant");
  CHECK(streamed.chunks[streamed.chunks.size() - 2]["choices"][0]["finish_reason"] == "length");
  CHECK(streamed.chunks.back()["usage"] == expected["usage"]);

  // OpenAI's Python client reads the same, whole and streamed.
  if (std::system("python3 -c 'import openai' 2>/dev/null") != 0) {
    MESSAGE("SKIPPED: the openai package is not installed (pip install openai)");
  } else {
    const std::string messages_file = template_file + ".messages.json";
    const std::string expected_file = template_file + ".expected.txt";
    std::ofstream(messages_file, std::ios::binary) << messages.dump();
    std::ofstream(expected_file, std::ios::binary)
        << expected["choices"][0]["text"].get<std::string>();
    const std::string script =
        std::string(ATTNSCOPE_TEST_FIXTURES) + "/../serve_openai_chat_client.py";
    const std::string command = "python3 " + script +
                                " http://127.0.0.1:" + std::to_string(server.port()) + "/v1 " +
                                messages_file + " " + expected_file;
    CHECK(std::system(command.c_str()) == 0);
    std::filesystem::remove(messages_file);
    std::filesystem::remove(expected_file);
  }

  // logprobs in the chat API's shape, the same numbers as the completion's for the same tokens.
  json with_logprobs = chat_body;
  with_logprobs["logprobs"] = true;
  with_logprobs["top_logprobs"] = 2;
  json completion_logprobs = {{"prompt", rendered["rendered"]},
                              {"max_tokens", 8},
                              {"temperature", 0},
                              {"ignore_eos", true},
                              {"logprobs", 2}};
  const json chat_scored =
      json::parse(c.Post("/v1/chat/completions", with_logprobs.dump(), "application/json")->body);
  const json completion_scored = json::parse(post(c, completion_logprobs)->body);
  const json& content = chat_scored["choices"][0]["logprobs"]["content"];
  const json& reference = completion_scored["choices"][0]["logprobs"];
  REQUIRE(content.size() == 8);
  for (std::size_t i = 0; i < content.size(); ++i) {
    CAPTURE(i);
    CHECK(content[i]["token"] == reference["tokens"][i]);
    CHECK(content[i]["logprob"] == reference["token_logprobs"][i]);
    REQUIRE(content[i]["top_logprobs"].size() == 2);
    for (const json& alternative : content[i]["top_logprobs"]) {
      CHECK(reference["top_logprobs"][i][alternative["token"].get<std::string>()] ==
            alternative["logprob"]);
      std::string bytes;
      for (const json& b : alternative["bytes"]) bytes += static_cast<char>(b.get<int>());
      // The bytes are the token's own; its text has U+FFFD for a part of a character.
      const std::string token = alternative["token"].get<std::string>();
      CHECK((bytes == token || token.find("\xEF\xBF\xBD") != std::string::npos));
    }
  }
  // Streamed, each chunk with a token carries its entry.
  json streamed_logprobs = with_logprobs;
  const Streamed scored_stream = post_streamed(c, streamed_logprobs, -1, "/v1/chat/completions");
  json streamed_content = json::array();
  for (const json& chunk : scored_stream.chunks) {
    if (chunk["choices"].empty() || chunk["choices"][0]["logprobs"].is_null()) continue;
    for (const json& entry : chunk["choices"][0]["logprobs"]["content"])
      streamed_content.push_back(entry);
  }
  CHECK(streamed_content == content);

  // Text parts are joined with newlines; max_completion_tokens is max_tokens' newer name.
  json parts = chat_body;
  parts.erase("max_tokens");
  parts["max_completion_tokens"] = 8;
  parts["messages"][1]["content"] =
      json::array({{{"type", "text"}, {"text", "What is"}}, {{"type", "text"}, {"text", "2+2?"}}});
  const httplib::Result joined = c.Post("/v1/chat/completions", parts.dump(), "application/json");
  REQUIRE(joined);
  CHECK(joined->status == 200);
  CHECK(json::parse(joined->body)["usage"]["completion_tokens"] == 8);

  // continue_final_message: the model continues the assistant's begun reply, from the prompt
  // transformers renders for it (its end-of-turn left out).
  const json continued = chat_case("continue_final_message: smollm2, '{\"color\": \"'");
  const httplib::Result continued_reference = post(c, {{"prompt", continued["rendered"]},
                                                       {"max_tokens", 4},
                                                       {"temperature", 0},
                                                       {"ignore_eos", true}});
  REQUIRE(continued_reference);
  const json continue_body = {{"messages", continued["variables"]["messages"]},
                              {"continue_final_message", true},
                              {"add_generation_prompt", false},
                              {"max_tokens", 4},
                              {"temperature", 0},
                              {"ignore_eos", true}};
  const httplib::Result continuing =
      c.Post("/v1/chat/completions", continue_body.dump(), "application/json");
  REQUIRE(continuing);
  REQUIRE(continuing->status == 200);
  CHECK(json::parse(continuing->body)["choices"][0]["message"]["content"] ==
        json::parse(continued_reference->body)["choices"][0]["text"]);
  CHECK(json::parse(continuing->body)["usage"] == json::parse(continued_reference->body)["usage"]);

  // What the template or the API refuses: a 400 naming it.
  struct Bad {
    json body;
    std::string says;
  };
  const std::vector<Bad> corpus = {
      {{{"max_tokens", 4}}, "messages is required"},
      {{{"messages", json::array()}}, "messages must be a non-empty list"},
      {{{"messages", {{{"content", "x"}}}}}, "messages[0] must be an object with a string role"},
      {{{"messages", {{{"role", "user"}, {"content", 7}}}}}, "messages[0].content must be"},
      {{{"messages",
         {{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", "x"}}}}}}}},
       "only text parts"},
      {{{"messages", messages}, {"top_logprobs", 2}}, "top_logprobs needs logprobs: true"},
      {{{"messages", messages}, {"logprobs", true}, {"top_logprobs", 21}},
       "top_logprobs must be in"},
      {{{"messages", messages}, {"tools", "x"}}, "tools must be a list"},
      {{{"messages", messages}, {"chat_template_kwargs", 3}},
       "chat_template_kwargs must be an object"},
      {{{"messages", messages}, {"continue_final_message", true}},
       "continue_final_message needs \"add_generation_prompt\": false"},
      {{{"messages", messages}, {"max_tokens", 0}}, "max_tokens must be in [1"},
  };
  for (const Bad& bad : corpus) {
    CAPTURE(bad.body.dump());
    const httplib::Result res = c.Post("/v1/chat/completions", bad.body.dump(), "application/json");
    REQUIRE(res);
    CHECK(res->status == 400);
    CHECK(json::parse(res->body)["error"]["message"].get<std::string>().find(bad.says) !=
          std::string::npos);
  }
  CHECK(server.stop(SIGTERM, 10) == 0);

  // A template's raise_exception is the client's 400, with the template's message.
  const json alternating = chat_case("llama2: roles must alternate");
  {
    std::ofstream out(template_file, std::ios::binary);
    out << alternating["template"].get<std::string>();
  }
  ServerProcess llama2(kBinary, serve_args({"--chat-template", template_file}));
  httplib::Client c2 = client(llama2);
  const httplib::Result refused =
      c2.Post("/v1/chat/completions",
              json{{"messages", alternating["variables"]["messages"]}, {"max_tokens", 2}}.dump(),
              "application/json");
  REQUIRE(refused);
  CHECK(refused->status == 400);
  CHECK(refused->body.find("Conversation roles must alternate") != std::string::npos);
  CHECK(llama2.stop(SIGTERM, 10) == 0);
  std::filesystem::remove(template_file);
}

TEST_CASE("serve: tools and tool_choice, with and without --tool-call-parser") {
  if (!has_tokenizer()) return;
  // Qwen2.5's template, which writes tools and tool calls (tests/test_tool_calls.cpp reads
  // calls back out of its renderings); the conversation ends with a tool's result.
  const json qwen = chat_case("qwen2.5: tools, tools_in_user_message=True");
  const std::string template_file = std::filesystem::temp_directory_path() /
                                    ("attnscope-tools-" + std::to_string(getpid()) + ".jinja");
  std::ofstream(template_file, std::ios::binary) << qwen["template"].get<std::string>();
  const json asked = {{"messages", qwen["variables"]["messages"]},
                      {"tools", qwen["variables"]["tools"]},
                      {"max_tokens", 12},
                      {"temperature", 0},
                      {"ignore_eos", true}};
  const auto chat = [](httplib::Client& c, const json& body) {
    const httplib::Result res = c.Post("/v1/chat/completions", body.dump(), "application/json");
    REQUIRE(res);
    return std::pair(res->status, json::parse(res->body));
  };

  // (GPT-2's shape: the conversation and the tools take ~230 tokens, past synthetic:tiny's 128.)
  const std::vector<std::string> args = {
      "--model",     "synthetic:gpt2", "--threads",       "1",
      "--kv-memory", "64MiB",          "--chat-template", template_file};
  // Without a parser, tools need "tool_choice": "none" (vLLM refuses "auto" so too): the reply
  // is then text.
  ServerProcess plain(kBinary, args);
  httplib::Client c = client(plain);
  const auto [refused_status, refused] = chat(c, asked);
  CHECK(refused_status == 400);
  CHECK(refused["error"]["param"] == "tool_choice");
  CHECK(refused["error"]["message"].get<std::string>().find("--tool-call-parser") !=
        std::string::npos);
  json no_calls = asked;
  no_calls["tool_choice"] = "none";
  const auto [text_status, text_reply] = chat(c, no_calls);
  REQUIRE(text_status == 200);
  const json text_message = text_reply["choices"][0]["message"];
  CHECK(text_message["content"].is_string());
  CHECK_FALSE(text_message.contains("tool_calls"));
  CHECK(plain.stop(SIGTERM, 10) == 0);

  // With the hermes parser: a reply with no call in it (a random model's) is the same text,
  // whole and streamed; the calls themselves are tests/test_tool_calls.cpp's.
  std::vector<std::string> parsing_args = args;
  parsing_args.insert(parsing_args.end(), {"--tool-call-parser", "hermes"});
  ServerProcess parsing(kBinary, parsing_args);
  CHECK(parsing.log().find("tool calls read as hermes") != std::string::npos);
  httplib::Client c2 = client(parsing);
  const auto [auto_status, auto_reply] = chat(c2, asked);
  REQUIRE(auto_status == 200);
  CHECK(auto_reply["choices"][0]["message"] == text_message);
  CHECK(auto_reply["choices"][0]["finish_reason"] == "length");
  const Streamed streamed = post_streamed(c2, asked, -1, "/v1/chat/completions");
  CHECK(streamed.done);
  CHECK(streamed.text == text_message["content"]);
  // Refused: a forced call of a function not in tools, and what is no tool_choice.
  struct Refused {
    json choice;
    std::string says;
  };
  for (const Refused& refusal :
       std::vector<Refused>{{{{"type", "function"}, {"function", {{"name", "nowhere"}}}},
                             "tool_choice names \"nowhere\", which tools does not list"},
                            {{{"type", "function"}},
                             "tool_choice naming a function must be {\"type\": \"function\""},
                            {"sometimes", "tool_choice must be \"none\", \"auto\" or \"required\""},
                            {7, "tool_choice must be a string or an object"}}) {
    json bad = asked;
    bad["tool_choice"] = refusal.choice;
    const auto [status, body] = chat(c2, bad);
    CAPTURE(refusal.choice.dump());
    CHECK(status == 400);
    CHECK(body["error"]["message"].get<std::string>().find(refusal.says) != std::string::npos);
  }
  CHECK(parsing.stop(SIGTERM, 10) == 0);
  std::filesystem::remove(template_file);
}

// A GPT-2 checkpoint (GPT-2's vocabulary, 128 dimensions, one layer) that answers `script`
// whatever it is asked: its block adds nothing (zero output projections), so the logits at
// position t are LN(wte[x] + wpe[t]) . wte, and wpe[t] = 16 wte[script[t]] makes script[t] the
// greedy token there (random embeddings in 128 dimensions are nearly orthogonal: a token's
// own dot product, ~128, beats the largest of 50,000 others, ~50). After a one-token prompt,
// greedy decoding replies `script`.
void write_scripted_gpt2(const std::string& dir, const std::vector<int>& script) {
  constexpr std::int64_t kVocab = 50257, kDim = 128, kPositions = 128;
  REQUIRE(static_cast<std::int64_t>(script.size()) <= kPositions);
  std::mt19937 generator(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> wte(static_cast<std::size_t>(kVocab * kDim));
  for (float& x : wte) x = normal(generator);
  std::vector<float> wpe(static_cast<std::size_t>(kPositions * kDim), 0.0f);
  for (std::size_t t = 0; t < script.size(); ++t) {
    for (std::int64_t i = 0; i < kDim; ++i) {
      wpe[t * kDim + i] = 16.0f * wte[static_cast<std::size_t>(script[t] * kDim + i)];
    }
  }
  const auto filled = [](std::int64_t n, float value) {
    return std::vector<float>(static_cast<std::size_t>(n), value);
  };
  attnscope::testing::SafetensorsWriter writer;
  writer.add_f32("wte.weight", {kVocab, kDim}, wte);
  writer.add_f32("wpe.weight", {kPositions, kDim}, wpe);
  for (const char* norm : {"h.0.ln_1", "h.0.ln_2", "ln_f"}) {
    writer.add_f32(std::string(norm) + ".weight", {kDim}, filled(kDim, 1.0f));
    writer.add_f32(std::string(norm) + ".bias", {kDim}, filled(kDim, 0.0f));
  }
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> zero = {
      {"h.0.attn.c_attn", {kDim, 3 * kDim}},
      {"h.0.attn.c_proj", {kDim, kDim}},
      {"h.0.mlp.c_fc", {kDim, 4 * kDim}},
      {"h.0.mlp.c_proj", {4 * kDim, kDim}}};
  for (const auto& [name, shape] : zero) {
    writer.add_f32(name + ".weight", {shape[0], shape[1]}, filled(shape[0] * shape[1], 0.0f));
    writer.add_f32(name + ".bias", {shape[1]}, filled(shape[1], 0.0f));
  }
  attnscope::testing::write_file(dir + "/model.safetensors", writer.serialize());
  attnscope::testing::write_file(dir + "/config.json", json{{"model_type", "gpt2"},
                                                            {"vocab_size", kVocab},
                                                            {"n_positions", kPositions},
                                                            {"n_embd", kDim},
                                                            {"n_layer", 1},
                                                            {"n_head", 2},
                                                            {"eos_token_id", 50256},
                                                            {"bos_token_id", 50256},
                                                            {"activation_function", "gelu_new"}}
                                                           .dump());
}

// Serve arguments for a scripted checkpoint in `dir` that replies `reply` (GPT-2's tokens of it:
// `script`) to a chat whose template writes the last message alone ("Go": one token).
std::vector<std::string> scripted_serve_args(const attnscope::testing::TempDir& dir,
                                             const std::string& reply, std::vector<int>& script) {
  attnscope::testing::write_file(dir.file("reply.txt"), reply);
  script = json::parse(run_tool("tokenize --tokenizer " + attnscope::testing::shared_fixtures() +
                                "/gpt2-tokenizer < " + dir.file("reply.txt")))
               .get<std::vector<int>>();
  write_scripted_gpt2(dir.path().string(), script);
  attnscope::testing::write_file(dir.file("chat.jinja"), "{{ messages[-1].content }}");
  return {"--model",         dir.path().string(),
          "--tokenizer",     attnscope::testing::shared_fixtures() + "/gpt2-tokenizer",
          "--threads",       "1",
          "--kv-memory",     "16MiB",
          "--chat-template", dir.file("chat.jinja")};
}

TEST_CASE(
    "serve: tool_choice naming a function or \"required\" forces the call, no parser needed") {
  if (!has_tokenizer()) return;
  const json weather = {
      {"type", "function"},
      {"function",
       {{"name", "get_weather"}, {"parameters", json::parse(R"({"type": "object", "properties": {
                              "city": {"type": "string"},
                              "days": {"type": "array", "items": {"type": "integer"}}},
                              "required": ["city", "days"]})")}}}};
  const json clock = {
      {"type", "function"},
      {"function", {{"name", "get_time"}, {"parameters", json::parse(R"({"properties": {
                            "zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]})")}}}};
  const std::string arguments = R"({"city": "Paris", "days": [1, 2]})";
  // The reply scripted, the tool_choice asked, and the calls the answer must hold.
  struct Forced {
    std::string script;
    json choice;
  };
  for (const Forced& forced : std::vector<Forced>{
           {arguments, {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
           {R"([{"name": "get_weather", "parameters": )" + arguments + "}]", "required"}}) {
    CAPTURE(forced.choice.dump());
    const attnscope::testing::TempDir dir;
    std::vector<int> script;
    ServerProcess server(kBinary, scripted_serve_args(dir, forced.script, script));
    httplib::Client c = client(server);
    json asked = {{"messages", {{{"role", "user"}, {"content", "Go"}}}},
                  {"tools", {weather, clock}},
                  {"tool_choice", forced.choice},
                  {"max_tokens", script.size() + 8},
                  {"temperature", 0},
                  {"ignore_eos", true}};
    // The script meets the call's schema: it is the call, whole and streamed.
    const json body =
        json::parse(c.Post("/v1/chat/completions", asked.dump(), "application/json")->body);
    const json& message = body["choices"][0]["message"];
    CHECK(message["content"].is_null());
    REQUIRE(message["tool_calls"].size() == 1);
    CHECK(message["tool_calls"][0]["function"]["name"] == "get_weather");
    CHECK(message["tool_calls"][0]["function"]["arguments"] == arguments);
    CHECK(body["choices"][0]["finish_reason"] == "tool_calls");
    const Streamed streamed = post_streamed(c, asked, -1, "/v1/chat/completions");
    CHECK(streamed.text.empty());
    const json& last = streamed.chunks.back()["choices"][0];
    CHECK(last["finish_reason"] == "tool_calls");
    CHECK(last["delta"]["tool_calls"][0]["function"]["arguments"] == arguments);
    // A function the script does not call: the reply is bent into its arguments (a parameters
    // schema without "type" is read as an object's).
    asked["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
    const json bent =
        json::parse(c.Post("/v1/chat/completions", asked.dump(), "application/json")->body);
    const json& bent_message = bent["choices"][0]["message"];
    CAPTURE(bent_message.dump());
    CHECK(bent["choices"][0]["finish_reason"] == "tool_calls");
    REQUIRE(bent_message["tool_calls"].size() == 1);
    CHECK(bent_message["tool_calls"][0]["function"]["name"] == "get_time");
    const json zone =
        json::parse(bent_message["tool_calls"][0]["function"]["arguments"].get<std::string>());
    CHECK((zone == json{{"zone", "UTC"}} || zone == json{{"zone", "CET"}}));
    // A forced call beside a response_format, or without tools, is a 400.
    json both = asked;
    both["response_format"] = {{"type", "json_object"}};
    const httplib::Result refused = c.Post("/v1/chat/completions", both.dump(), "application/json");
    REQUIRE(refused);
    CHECK(refused->status == 400);
    CHECK(refused->body.find("cannot go with a response_format") != std::string::npos);
    json toolless = asked;
    toolless.erase("tools");
    const httplib::Result alone =
        c.Post("/v1/chat/completions", toolless.dump(), "application/json");
    REQUIRE(alone);
    CHECK(alone->status == 400);
    CHECK(alone->body.find("needs tools") != std::string::npos);
    CHECK(server.stop(SIGTERM, 10) == 0);
  }
}

TEST_CASE("serve: a reply's tool call, answered as OpenAI's tool_calls, whole and streamed") {
  if (!has_tokenizer()) return;
  const attnscope::testing::TempDir dir;
  const std::string reply =
      "I'll check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"days\": [1, 2]}}\n</tool_call>";
  std::vector<int> script;
  std::vector<std::string> args = scripted_serve_args(dir, reply, script);
  args.insert(args.end(), {"--tool-call-parser", "hermes"});
  ServerProcess server(kBinary, args);
  httplib::Client c = client(server);
  const json tools = json::array(
      {{{"type", "function"},
        {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}});
  const json asked = {{"messages", {{{"role", "user"}, {"content", "Go"}}}},
                      {"tools", tools},
                      {"max_tokens", script.size()},
                      {"temperature", 0},
                      {"ignore_eos", true}};
  // The reference: the same request's text when the reply is not read for calls.
  json as_text = asked;
  as_text["tool_choice"] = "none";
  const json text_body =
      json::parse(c.Post("/v1/chat/completions", as_text.dump(), "application/json")->body);
  REQUIRE(text_body["usage"]["prompt_tokens"] == 1);
  REQUIRE(text_body["choices"][0]["message"]["content"] == reply);

  const httplib::Result whole = c.Post("/v1/chat/completions", asked.dump(), "application/json");
  REQUIRE(whole);
  REQUIRE(whole->status == 200);
  const json choice = json::parse(whole->body)["choices"][0];
  CHECK(choice["finish_reason"] == "tool_calls");
  CHECK(choice["message"]["content"] == "I'll check.\n");
  REQUIRE(choice["message"]["tool_calls"].size() == 1);
  const json& call = choice["message"]["tool_calls"][0];
  CHECK(call["type"] == "function");
  CHECK(call["id"].get<std::string>().starts_with("call_chatcmpl-"));
  CHECK(call["function"] ==
        json{{"name", "get_weather"}, {"arguments", R"({"city": "Paris", "days": [1, 2]})"}});

  // Two choices: the same call in each, under ids no two calls share.
  json twice = asked;
  twice["n"] = 2;
  const json both =
      json::parse(c.Post("/v1/chat/completions", twice.dump(), "application/json")->body);
  REQUIRE(both["choices"].size() == 2);
  CHECK(both["choices"][1]["index"] == 1);
  CHECK(both["choices"][1]["message"]["tool_calls"][0]["function"] == call["function"]);
  CHECK(both["choices"][0]["message"]["tool_calls"][0]["id"] !=
        both["choices"][1]["message"]["tool_calls"][0]["id"]);

  // Streamed: the content before the call, never a byte of the call, then the call whole.
  const Streamed streamed = post_streamed(c, asked, -1, "/v1/chat/completions");
  CHECK(streamed.done);
  CHECK(streamed.text == "I'll check.\n");
  const json& last = streamed.chunks.back()["choices"][0];
  CHECK(last["finish_reason"] == "tool_calls");
  REQUIRE(last["delta"]["tool_calls"].size() == 1);
  CHECK(last["delta"]["tool_calls"][0]["index"] == 0);
  CHECK(last["delta"]["tool_calls"][0]["function"] == call["function"]);

  // OpenAI's Python client reads the call, whole and streamed.
  if (std::system("python3 -c 'import openai' 2>/dev/null") != 0) {
    MESSAGE("SKIPPED: the openai package is not installed (pip install openai)");
  } else {
    const std::string script_path =
        std::string(ATTNSCOPE_TEST_FIXTURES) + "/../serve_openai_tools_client.py";
    const std::string command = "python3 " + script_path +
                                " http://127.0.0.1:" + std::to_string(server.port()) + "/v1 " +
                                std::to_string(script.size());
    CHECK(std::system(command.c_str()) == 0);
  }
  CHECK(server.stop(SIGTERM, 10) == 0);
}

TEST_CASE("serve: a reasoning reply's thinking as reasoning_content, its call as tool_calls") {
  if (!has_tokenizer()) return;
  const attnscope::testing::TempDir dir;
  const std::string reply =
      "<think>\nParis, so get_weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  std::vector<int> script;
  std::vector<std::string> args = scripted_serve_args(dir, reply, script);
  args.insert(args.end(), {"--tool-call-parser", "hermes", "--reasoning-parser", "qwen3"});
  ServerProcess server(kBinary, args);
  CHECK(server.log().find("reasoning read as qwen3") != std::string::npos);
  httplib::Client c = client(server);
  json asked = {
      {"messages", {{{"role", "user"}, {"content", "Go"}}}},
      {"tools", json::array({{{"type", "function"}, {"function", {{"name", "get_weather"}}}}})},
      {"max_tokens", script.size()},
      {"temperature", 0},
      {"ignore_eos", true}};
  const httplib::Result whole = c.Post("/v1/chat/completions", asked.dump(), "application/json");
  REQUIRE(whole);
  REQUIRE(whole->status == 200);
  const json choice = json::parse(whole->body)["choices"][0];
  CHECK(choice["message"]["reasoning_content"] == "\nParis, so get_weather.\n");
  CHECK(choice["message"]["content"] == "\n\n");
  REQUIRE(choice["message"]["tool_calls"].size() == 1);
  CHECK(choice["message"]["tool_calls"][0]["function"]["arguments"] == R"({"city": "Paris"})");
  CHECK(choice["finish_reason"] == "tool_calls");

  // Streamed: the reasoning in delta.reasoning_content, never a byte of it as content.
  const Streamed streamed = post_streamed(c, asked, -1, "/v1/chat/completions");
  CHECK(streamed.done);
  CHECK(streamed.text == "\n\n");
  std::string reasoning;
  for (const json& chunk : streamed.chunks) {
    if (!chunk["choices"].empty()) {
      reasoning += chunk["choices"][0]["delta"].value("reasoning_content", "");
    }
  }
  CHECK(reasoning == "\nParis, so get_weather.\n");
  CHECK(streamed.chunks.back()["choices"][0]["finish_reason"] == "tool_calls");

  // Without tools the call is answer text; the reasoning is still split.
  asked.erase("tools");
  const json plain =
      json::parse(c.Post("/v1/chat/completions", asked.dump(), "application/json")->body);
  CHECK(plain["choices"][0]["message"]["reasoning_content"] == "\nParis, so get_weather.\n");
  CHECK(
      plain["choices"][0]["message"]["content"].get<std::string>().starts_with("\n\n<tool_call>"));
  CHECK_FALSE(plain["choices"][0]["message"].contains("tool_calls"));
  CHECK(server.stop(SIGTERM, 10) == 0);
}

TEST_CASE("serve: response_format json_object and json_schema: a JSON reply ends at its '}'") {
  if (!has_tokenizer()) return;
  const attnscope::testing::TempDir dir;
  const std::string reply = R"({"city": "Paris", "days": [1, 2]})";
  std::vector<int> script;
  const std::vector<std::string> args = scripted_serve_args(dir, reply, script);
  // Every message's text in turn: "Go" alone, or "Go" and an assistant's reply begun.
  attnscope::testing::write_file(dir.file("chat.jinja"),
                                 "{% for m in messages %}{{ m.content }}{% endfor %}");
  ServerProcess server(kBinary, args);
  httplib::Client c = client(server);
  json asked = {{"messages", {{{"role", "user"}, {"content", "Go"}}}},
                {"max_tokens", script.size() + 8},
                {"temperature", 0},
                {"ignore_eos", true}};
  // As text, the model goes on past the object; in JSON mode the reply ends with it.
  const json text_body =
      json::parse(c.Post("/v1/chat/completions", asked.dump(), "application/json")->body);
  REQUIRE(text_body["choices"][0]["message"]["content"].get<std::string>().starts_with(reply));
  CHECK(text_body["choices"][0]["finish_reason"] == "length");
  asked["response_format"] = {{"type", "json_object"}};
  const json body =
      json::parse(c.Post("/v1/chat/completions", asked.dump(), "application/json")->body);
  CHECK(body["choices"][0]["message"]["content"] == reply);
  CHECK(body["choices"][0]["finish_reason"] == "stop");
  CHECK(body["usage"]["completion_tokens"] == script.size());
  const Streamed streamed = post_streamed(c, asked, -1, "/v1/chat/completions");
  CHECK(streamed.done);
  CHECK(streamed.text == reply);
  CHECK(streamed.chunks.back()["choices"][0]["finish_reason"] == "stop");

  // An assistant's reply begun by the client, continued in JSON mode: the grammar reads the
  // begun text first; one that cannot begin an object is a 400.
  json begun = {{"messages",
                 {{{"role", "user"}, {"content", "Go"}},
                  {{"role", "assistant"}, {"content", R"({"city": ")"}}}},
                {"add_generation_prompt", false},
                {"continue_final_message", true},
                {"response_format", {{"type", "json_object"}}},
                {"max_tokens", script.size() + 8},
                {"temperature", 0},
                {"ignore_eos", true}};
  const json continued =
      json::parse(c.Post("/v1/chat/completions", begun.dump(), "application/json")->body);
  CHECK(continued["choices"][0]["message"]["content"] == R"(Paris", "days": [1, 2]})");
  CHECK(continued["choices"][0]["finish_reason"] == "stop");
  begun["messages"][1]["content"] = "Sure: {";
  const httplib::Result not_json = c.Post("/v1/chat/completions", begun.dump(), "application/json");
  REQUIRE(not_json);
  CHECK(not_json->status == 400);
  CHECK(not_json->body.find("not the start of a reply") != std::string::npos);

  // Structured outputs: a schema the scripted reply meets gives that reply, whole and streamed.
  json structured = asked;
  structured["response_format"] = json::parse(R"({"type": "json_schema", "json_schema": {
      "name": "trip", "strict": true, "schema": {"type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "array",
          "items": {"type": "integer"}}},
        "required": ["city", "days"], "additionalProperties": false}}})");
  const json met =
      json::parse(c.Post("/v1/chat/completions", structured.dump(), "application/json")->body);
  CHECK(met["choices"][0]["message"]["content"] == reply);
  CHECK(met["choices"][0]["finish_reason"] == "stop");
  CHECK(post_streamed(c, structured, -1, "/v1/chat/completions").text == reply);
  // One it does not meet bends it: its properties come in the schema's order (the body is read
  // keeping it: "days" before "city"), and the reply is valid under it, or its start when
  // max_tokens ends it.
  const std::string bending_schema = R"({"type": "object", "properties": {
      "days": {"type": "array", "items": {"type": "integer"}, "maxItems": 1},
      "city": {"enum": ["Rome", "Oslo"]}}, "required": ["days", "city"]})";
  json bending = asked;
  bending.erase("response_format");
  bending["max_tokens"] = 64;
  std::string bending_body = bending.dump();
  bending_body.insert(bending_body.size() - 1, R"(, "response_format": {"type": "json_schema",
      "json_schema": {"name": "trip", "schema": )" +
                                                   bending_schema + "}}");
  const json bent =
      json::parse(c.Post("/v1/chat/completions", bending_body, "application/json")->body);
  const std::string bent_text = bent["choices"][0]["message"]["content"];
  CAPTURE(bent_text);
  const attnscope::engine::Grammar bending_grammar =
      attnscope::engine::json_schema_grammar(bending_schema);
  attnscope::engine::GrammarRecognizer bent_reader(bending_grammar);
  CHECK(bent_text.starts_with(R"({"days")"));
  CHECK(bent_reader.accept(bent_text));
  CHECK(bent_reader.finished() == (bent["choices"][0]["finish_reason"] == "stop"));
  if (bent_reader.finished()) {
    const json value = json::parse(bent_text);
    CHECK(value["days"].size() <= 1);
    CHECK((value["city"] == "Rome" || value["city"] == "Oslo"));
  }

  // A prompt the model answers with prose: JSON mode turns every reply into JSON (a whole
  // object, or one cut short by max_tokens), greedy or sampled, on both endpoints.
  json completion = {{"prompt", "Paris is"},
                     {"max_tokens", 24},
                     {"ignore_eos", true},
                     {"response_format", {{"type", "json_object"}}}};
  for (int seed = 0; seed < 6; ++seed) {
    completion["temperature"] = seed == 0 ? 0.0 : 1.0;
    completion["seed"] = seed;
    const json answer =
        json::parse(c.Post("/v1/completions", completion.dump(), "application/json")->body);
    const std::string text = answer["choices"][0]["text"];
    CAPTURE(text);
    attnscope::engine::GrammarRecognizer recognizer = attnscope::testing::json_mode();
    CHECK(recognizer.accept(text));
    CHECK(recognizer.finished() == (answer["choices"][0]["finish_reason"] == "stop"));
    if (recognizer.finished()) CHECK(json::parse(text).is_object());
  }

  if (std::system("python3 -c 'import openai' 2>/dev/null") != 0) {
    MESSAGE("SKIPPED: the openai package is not installed (pip install openai)");
  } else {
    const std::string command =
        "python3 " + std::string(ATTNSCOPE_TEST_FIXTURES) +
        "/../serve_openai_json_client.py http://127.0.0.1:" + std::to_string(server.port()) +
        "/v1 " + std::to_string(script.size());
    CHECK(std::system(command.c_str()) == 0);
  }
  CHECK(server.stop(SIGTERM, 10) == 0);
}

TEST_CASE("serve: n choices, each sampled with seed + i, sharing the prompt's cached blocks") {
  if (!has_tokenizer()) return;
  ServerProcess server(kBinary, kServeArgs);
  httplib::Client c = client(server);
  std::vector<int> prompt(13);  // three full blocks of 4 and one token
  for (int i = 0; i < 13; ++i) prompt[static_cast<std::size_t>(i)] = 7 * i + 3;
  json asked = greedy_body(prompt, 6);
  asked["temperature"] = 1.0;
  asked["seed"] = 5;
  const auto text_alone = [&](int seed) {
    json one = asked;
    one["seed"] = seed;
    return json::parse(post(c, one)->body)["choices"][0]["text"].get<std::string>();
  };
  const double hits_before = metrics(c)["attnscope_prefix_cache_hits_total"];
  asked["n"] = 3;
  const httplib::Result res = post(c, asked);
  REQUIRE(res);
  REQUIRE(res->status == 200);
  const json body = json::parse(res->body);
  // Choices 1 and 2 came after choice 0's prefill: its three full blocks were theirs too.
  CHECK(metrics(c)["attnscope_prefix_cache_hits_total"].get<double>() - hits_before >= 6);
  REQUIRE(body["choices"].size() == 3);
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(body["choices"][i]["index"] == i);
    CHECK(body["choices"][i]["text"] == text_alone(5 + i));
  }
  CHECK(body["choices"][0]["text"] != body["choices"][1]["text"]);
  CHECK(body["usage"] ==
        json{{"prompt_tokens", 13}, {"completion_tokens", 18}, {"total_tokens", 31}});

  // Streamed: each choice's chunks by its index, one choice after the other, then the usage.
  asked["stream_options"] = {{"include_usage", true}};
  const Streamed streamed = post_streamed(c, asked);
  CHECK(streamed.done);
  std::vector<std::string> texts(3);
  std::vector<int> order;
  for (const json& chunk : streamed.chunks) {
    if (chunk["choices"].empty()) {
      CHECK(chunk["usage"]["completion_tokens"] == 18);
      continue;
    }
    const int index = chunk["choices"][0]["index"];
    texts[static_cast<std::size_t>(index)] += chunk["choices"][0]["text"].get<std::string>();
    if (order.empty() || order.back() != index) order.push_back(index);
  }
  CHECK(order == std::vector<int>{0, 1, 2});
  for (int i = 0; i < 3; ++i)
    CHECK(texts[static_cast<std::size_t>(i)] == body["choices"][i]["text"]);

  for (const int n : {0, 17}) {
    asked["n"] = n;
    asked.erase("stream");
    const httplib::Result bad = post(c, asked);
    REQUIRE(bad);
    CHECK(bad->status == 400);
    CHECK(bad->body.find("n must be in [1, 16]") != std::string::npos);
  }
  CHECK(drained(c));
  CHECK(server.stop(SIGTERM, 10) == 0);
}

TEST_CASE("serve: malformed and out-of-range requests get a 4xx with an OpenAI error object") {
  ServerProcess server(kBinary, serve_args({"--max-body-bytes", "64KiB"}));
  httplib::Client c = client(server);
  struct Bad {
    std::string body, content_type;
    int status;
    std::string says;
  };
  const std::vector<Bad> corpus = {
      {"{not json", "application/json", 400, "not valid JSON"},
      {R"({"prompt": [1, 2], "max_tokens": 4)", "application/json", 400, "not valid JSON"},
      {R"([1, 2, 3])", "application/json", 400, "JSON object"},
      {R"({"max_tokens": 4})", "application/json", 400, "prompt is required"},
      {R"({"prompt": [1, 2], "max_tokens": "4"})", "application/json", 400, "max_tokens"},
      {R"({"prompt": [1, 2], "max_tokens": 0})", "application/json", 400, "max_tokens"},
      {R"({"prompt": [1, 2], "max_tokens": 1e400})", "application/json", 400, "number overflow"},
      {R"({"prompt": [1, 2], "max_tokens": 99999999999999999999999})", "application/json", 400,
       "max_tokens"},
      {R"({"prompt": [1, 2], "temperature": -1})", "application/json", 400, "temperature"},
      {R"({"prompt": [1, 2], "top_p": 0})", "application/json", 400, "top_p"},
      {R"({"prompt": [1, 2], "logprobs": 50})", "application/json", 400, "logprobs"},
      {R"({"prompt": [1, 2], "n": 2.5})", "application/json", 400, "n must be an integer"},
      {R"({"prompt": [1, 2], "presence_penalty": 2.5})", "application/json", 400,
       "presence_penalty must be in [-2.0, 2.0]"},
      {R"({"prompt": [1, 2], "logit_bias": {"x": 1}})", "application/json", 400,
       "logit_bias keys must be token ids"},
      {R"({"prompt": [1, 2], "logit_bias": {"1": 200}})", "application/json", 400,
       "logit_bias values must be numbers in [-100, 100]"},
      {R"({"prompt": [1, 2], "repetition_penalty": 1.2})", "application/json", 400,
       "repetition_penalty is not served"},
      {R"({"prompt": [1, 2], "min_p": 0.1})", "application/json", 400, "min_p is not served"},
      {R"({"prompt": [1, 2], "response_format": {"type": "json_schema"}})", "application/json", 400,
       "json_schema needs \"json_schema\": {\"schema\": {...}}"},
      {R"({"prompt": [1, 2], "response_format": {"type": "json_schema", "json_schema":
          {"name": "x", "schema": {"type": "object", "properties": {"a": {"type": "integer",
          "multipleOf": 5}}}}}})",
       "application/json", 400, "keyword \"multipleOf\" is not supported"},
      {R"({"prompt": [1, 2], "response_format": {"type": "json_schema", "json_schema":
          {"schema": {"type": "string"}}}})",
       "application/json", 400, "the schema's root must be an object"},
      {R"({"prompt": [1, 2], "response_format": {"type": "json_schema", "json_schema":
          {"schema": {"type": "object"}, "strict": "yes"}}})",
       "application/json", 400, "strict must be true or false"},
      {R"({"prompt": [1, 2], "response_format": "json"})", "application/json", 400,
       "response_format must be"},
      {R"({"prompt": [1, 2], "stop": 5})", "application/json", 400, "stop"},
      {R"({"prompt": [1, 999999]})", "application/json", 400, "not an id"},
      {R"({"prompt": [[1], [2]]})", "application/json", 400, "one prompt per request"},
      {R"({"prompt": []})", "application/json", 400, "empty"},
      {R"({"prompt": [1, 2], "stream": "yes"})", "application/json", 400, "stream"},
      {R"({"prompt": [1, 2], "prompt": [3]})", "application/json", 400, "duplicate key"},
      {"{\"prompt\": \"\xff\xfe\"}", "application/json", 400, "not valid JSON"},
      {R"({"prompt": [1, 2]})", "text/plain", 415, "Content-Type"},
      {"{\"prompt\": [" + std::string(70000, '1') + "]}", "application/json", 413, "too large"},
  };
  for (const Bad& bad : corpus) {
    CAPTURE(bad.body.substr(0, 80));
    const httplib::Result res = c.Post("/v1/completions", bad.body, bad.content_type);
    REQUIRE(res);
    CHECK(res->status == bad.status);
    const json error = json::parse(res->body)["error"];
    CHECK(error["message"].get<std::string>().find(bad.says) != std::string::npos);
    CHECK(error.contains("type"));
  }
  // logit_bias +100 all but forces a token, greedy or not; a response_format of text is served.
  json forced = greedy_body({1, 2}, 5);
  forced["logit_bias"] = {{"42", 100}};
  forced["temperature"] = 1.0;
  forced["response_format"] = {{"type", "text"}};
  const httplib::Result forced_reply = post(c, forced);
  REQUIRE(forced_reply);
  REQUIRE(forced_reply->status == 200);
  CHECK(json::parse(forced_reply->body)["choices"][0]["text"] == "KKKKK");  // GPT-2's token 42
  // A prompt past the context (128 positions) is the engine's refusal, said at once.
  std::vector<int> long_prompt(200, 11);
  const httplib::Result too_long = post(c, greedy_body(long_prompt, 4));
  REQUIRE(too_long);
  CHECK(too_long->status == 400);
  CHECK(too_long->body.find("leaves no room") != std::string::npos);
  const httplib::Result missing = c.Get("/v1/nothing");
  REQUIRE(missing);
  CHECK(missing->status == 404);
  CHECK(json::parse(missing->body)["error"]["message"].get<std::string>().find(
            "no such endpoint") != std::string::npos);
  // A client that sends half a body and goes quiet is dropped after the read timeout; the server
  // still answers the others.
  {
    const int fd = connect_raw(server.port());
    const std::string partial =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 100\r\n\r\n{\"prompt\"";
    CHECK(send(fd, partial.data(), partial.size(), 0) == static_cast<ssize_t>(partial.size()));
    const httplib::Result other = c.Get("/health");
    REQUIRE(other);
    CHECK(other->status == 200);
    close(fd);
  }
  // A POST with neither Content-Length nor chunks is refused at once (411), not read until the
  // read timeout (10 s) as cpp-httplib would: the answer must come well before that.
  {
    const int fd = connect_raw(server.port());
    const timeval wait{3, 0};
    REQUIRE(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait) == 0);
    const std::string unframed =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\r\n";
    CHECK(send(fd, unframed.data(), unframed.size(), 0) == static_cast<ssize_t>(unframed.size()));
    // The headers and the body may arrive in separate reads: read until the body's words have
    // come, or nothing more comes within the receive timeout.
    std::string answer;
    char chunk[4096];
    while (answer.find("Content-Length header") == std::string::npos) {
      const ssize_t got = recv(fd, chunk, sizeof chunk, 0);
      if (got <= 0) break;
      answer.append(chunk, static_cast<std::size_t>(got));
    }
    CAPTURE(answer);
    CHECK(answer.rfind("HTTP/1.1 411", 0) == 0);
    CHECK(answer.find("POST needs a Content-Length header") != std::string::npos);
    close(fd);
  }
  // A body's framing is judged from its headers, at once (not after the read timeout): chunks
  // (411), a Content-Length past --max-body-bytes (413), copies that differ or a length that is
  // not a number (400); the answer says to close the connection.
  struct Framing {
    std::string headers;
    int status;
    std::string says;
  };
  for (const Framing& framing : std::vector<Framing>{
           {"Transfer-Encoding: chunked\r\n", 411, "a chunked body is not accepted"},
           {"Content-Length: 2000000\r\n", 413, "more than --max-body-bytes 65536"},
           {"Content-Length: 100000000000000000000000\r\n", 413, "too large"},
           {"Content-Length: 2\r\nContent-Length: 3\r\n", 400,
            "Content-Length headers that differ"},
           {"Content-Length: -5\r\n", 400, "Content-Length must be a decimal number"}}) {
    const std::string& headers = framing.headers;
    const std::string& says = framing.says;
    CAPTURE(headers);
    const int fd = connect_raw(server.port());
    const timeval wait{3, 0};
    REQUIRE(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait) == 0);
    const std::string request =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/json\r\n" +
        headers + "\r\n{}";
    CHECK(send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size()));
    std::string answer;
    char chunk[4096];
    while (answer.find(says) == std::string::npos) {
      const ssize_t got = recv(fd, chunk, sizeof chunk, 0);
      if (got <= 0) break;
      answer.append(chunk, static_cast<std::size_t>(got));
    }
    CAPTURE(answer);
    CHECK(answer.rfind("HTTP/1.1 " + std::to_string(framing.status), 0) == 0);
    CHECK(answer.find(says) != std::string::npos);
    CHECK(answer.find("Connection: close") != std::string::npos);
    close(fd);
  }
  // A known endpoint asked with another method: 405, saying which it answers.
  const httplib::Result wrong_method = c.Get("/v1/completions");
  REQUIRE(wrong_method);
  CHECK(wrong_method->status == 405);
  CHECK(wrong_method->get_header_value("Allow") == "POST");
  CHECK(c.Delete("/health")->status == 405);
  // max_tokens past the context is a 400 (OpenAI's and vLLM's answer); left out, it is cut to
  // the room left.
  const httplib::Result past_context = post(c, greedy_body({1, 2, 3}, 126));
  REQUIRE(past_context);
  CHECK(past_context->status == 400);
  CHECK(past_context->body.find("need 129 positions; a sequence holds at most 128") !=
        std::string::npos);
  json no_limit = greedy_body({1, 2, 3}, 1);
  no_limit.erase("max_tokens");
  no_limit["ignore_eos"] = true;
  const httplib::Result default_limit = post(c, no_limit);
  REQUIRE(default_limit);
  CHECK(default_limit->status == 200);
  CHECK(drained(c));
  CHECK(server.stop(SIGINT, 10) == 0);
}

TEST_CASE("serve: the API key guards every endpoint but /health; a full queue answers 429") {
  ServerProcess server(
      kBinary, serve_args({"--api-key", "s3cret", "--max-queue", "1", "--max-batch-tokens", "8"}));
  httplib::Client c = client(server);
  CHECK(c.Get("/health")->status == 200);
  CHECK(c.Get("/v1/models")->status == 401);
  CHECK(c.Get("/metrics")->status == 401);
  c.set_bearer_token_auth("wrong");
  CHECK(c.Get("/v1/models")->status == 401);
  c.set_bearer_token_auth("s3cret");
  CHECK(c.Get("/v1/models")->status == 200);

  // One long streamed request fills the queue of one; a second is told 429 at once.
  std::atomic<bool> first_started{false};
  std::thread first([&] {
    httplib::Client other = client(server);
    other.set_bearer_token_auth("s3cret");
    json body = greedy_body({1, 2, 3}, 100);
    body["stream"] = true;
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.headers = {{"Content-Type", "application/json"}, {"Authorization", "Bearer s3cret"}};
    req.body = body.dump();
    req.content_receiver = [&](const char*, std::size_t, std::uint64_t, std::uint64_t) {
      first_started = true;
      return true;
    };
    other.send(req);
  });
  for (int i = 0; i < 500 && !first_started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(first_started);
  const auto start = std::chrono::steady_clock::now();
  const httplib::Result full = post(c, greedy_body({4, 5}, 2));
  REQUIRE(full);
  CHECK(full->status == 429);
  CHECK(full->get_header_value("Retry-After") == "1");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  // n choices are n requests in flight: more than --max-queue can never be served (400, not
  // 429's "retry later").
  json many = greedy_body({4, 5}, 2);
  many["n"] = 2;
  const httplib::Result too_many = post(c, many);
  REQUIRE(too_many);
  CHECK(too_many->status == 400);
  CHECK(too_many->body.find("n (2) is more than --max-queue (1)") != std::string::npos);
  first.join();
  CHECK(drained(c));
  CHECK(metrics(c)["attnscope_request_rejected_total"] >= 1);
  CHECK(server.stop(SIGTERM, 10) == 0);
}

TEST_CASE("serve: --kv-dtype f16 serves from a 16-bit cache, which the startup line states") {
  ServerProcess server(kBinary, {"--model", "synthetic:tiny", "--threads", "1", "--kv-dtype", "f16",
                                 "--kv-memory", "1MiB"});
  CHECK(server.log().find("a KV cache of 1.00 MiB in f16") != std::string::npos);
  httplib::Client c = client(server);
  const httplib::Result res = post(c, greedy_body({1, 2, 3}, 4));
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(json::parse(res->body)["usage"]["completion_tokens"] == 4);
  CHECK(server.stop(SIGTERM, 10) == 0);
}

// A model's vocabulary may go past its tokenizer's (Qwen2 pads its rows; here GPT-2's 50,257
// rows with the 1,002 tokens of the llama2 tokenizer). Ids that name no token print as nothing,
// as transformers' decode() skips them, whole and streamed; a streamed one once ended the server.
TEST_CASE("serve: generated ids the tokenizer has no token for print as nothing") {
  const std::string tokenizer = attnscope::testing::test_fixtures() + "/tokenizer_json/llama2";
  const json generated =
      json::parse(run_tool("generate -m synthetic:tiny --threads 1 --tokenizer " + tokenizer +
                           " --prompt-ids 1,5 -n 8 --ignore-eos --json"));
  const auto ids = generated.at("generated_ids").get<std::vector<int>>();
  REQUIRE(std::ranges::any_of(ids, [](int id) { return id >= 1002; }));
  ServerProcess server(kBinary, serve_args({"--tokenizer", tokenizer}));
  httplib::Client c = client(server);
  const httplib::Result whole = post(c, greedy_body({1, 5}, 8));
  REQUIRE(whole);
  CHECK(whole->status == 200);
  const json body = json::parse(whole->body);
  CHECK(body["usage"]["completion_tokens"] == 8);
  const Streamed streamed = post_streamed(c, greedy_body({1, 5}, 8));
  CHECK(streamed.status == 200);
  CHECK(streamed.done);
  CHECK(streamed.text == body["choices"][0]["text"]);
  // generate's text is transformers' decode() of the same ids, which strips the one space a
  // SentencePiece text starts with.
  const std::string text = body["choices"][0]["text"];
  CHECK((text == generated["text"] || text == " " + generated["text"].get<std::string>()));
  CHECK(c.Get("/health")->status == 200);
  CHECK(server.stop(SIGTERM, 10) == 0);
}

// serve loads its model (the synthetic weights are made in parallel regions) on a thread that
// ends (serve.cpp's load_on_a_passing_thread says what a second OpenMP team costs), so after the
// engine has stepped, the process holds the main thread (listening), the signal waiter, the
// connection threads, and one OpenMP team: the loop's thread and its workers. Then SIGTERM drains
// and stops it (no thread of the load left to take the signal's default action).
TEST_CASE("serve: the engine loop's OpenMP team is the process's only one") {
  constexpr int kThreads = 2, kConnectionThreads = 3;
  ServerProcess server(kBinary,
                       {"--model", "synthetic:tiny", "--threads", std::to_string(kThreads),
                        "--http-threads", std::to_string(kConnectionThreads), "--dtype", "q8_0"});
  httplib::Client c = client(server);
  const httplib::Result res = post(c, greedy_body({1, 2, 3}, 4));
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(server.threads() == 1 + 1 + kConnectionThreads + kThreads);
  CHECK(server.stop(SIGTERM, 10) == 0);
}

TEST_CASE("serve: a client gone mid-stream cancels its request; 64 streaming clients; shutdown") {
  if (!has_tokenizer()) return;
  ServerProcess server(kBinary, serve_args({"--max-queue", "80"}));
  httplib::Client c = client(server);

  // Gone after two chunks of a 120-token request: its blocks come back at once.
  const Streamed cut = post_streamed(c, greedy_body({9, 8, 7}, 120), 2);
  CHECK(cut.chunks.size() == 2);
  CHECK(drained(c));
  CHECK(metrics(c)["attnscope_generation_tokens_total"] < 120);

  // 64 clients x 4 requests each, 4 distinct prompts: every answer equal to the prompt's own.
  const std::vector<std::vector<int>> prompts = {
      {464, 2068}, {40, 588, 257}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {50, 60, 70}};
  std::vector<std::string> expected;
  for (const auto& p : prompts) expected.push_back(generate_text(comma_ids(p), 8));
  const auto round = [&](int clients, int each) {
    std::atomic<int> wrong{0}, answered{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < clients; ++t) {
      threads.emplace_back([&, t] {
        httplib::Client mine = client(server);
        for (int r = 0; r < each; ++r) {
          const std::size_t which = static_cast<std::size_t>(t + r) % prompts.size();
          const Streamed s = post_streamed(mine, greedy_body(prompts[which], 8));
          answered += s.status == 200 && s.done ? 1 : 0;
          wrong += s.text == expected[which] ? 0 : 1;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    const int answered_count = answered, wrong_count = wrong;
    INFO("server stderr: " << server.log());
    CHECK(answered_count == clients * each);
    CHECK(wrong_count == 0);
  };
  // Memory flat. Exactly, for what the engine allocates: its allocator holds the same bytes
  // (weights and the KV pool) whenever it is idle, however many requests went through. Loosely,
  // for the process: resident memory at a moment depends on what a step held last and on the
  // malloc arenas of the connection threads (at most 8 per core), so single readings swing by
  // tens of MB; they must stay within 64 MB of the first. (Leaks of the heap are LeakSanitizer's:
  // under ASan a leaking server exits non-zero, which the shutdown below checks.)
  round(64, 2);  // warm
  CHECK(drained(c));
  const double allocated = metrics(c)["attnscope_allocated_bytes"];
  std::vector<long> resident = {server.resident_kib()};
  for (int r = 0; r < 3; ++r) {
    round(64, 2);
    CHECK(drained(c));
    CHECK(metrics(c)["attnscope_allocated_bytes"] == allocated);
    resident.push_back(server.resident_kib());
  }
  INFO("resident KiB after each round: " << resident[0] << " " << resident[1] << " " << resident[2]
                                         << " " << resident[3]);
  if (kAddressSanitizer) {
    // ASan keeps freed blocks in its quarantine (256 MB) before reusing them, so resident
    // memory climbs with every allocation until that fills: not a leak, and LeakSanitizer
    // checks leaks here. The 64 MB bound is the Release build's.
    MESSAGE("resident memory not bounded under AddressSanitizer (its quarantine grows it)");
  } else {
    CHECK(*std::max_element(resident.begin(), resident.end()) - resident[0] < 64 * 1024);
  }
  CHECK(drained(c));

  // SIGTERM with a request in flight: it finishes (200, all its tokens), then the server exits 0.
  int in_flight_status = 0;
  json in_flight_body;
  std::thread request([&] {
    httplib::Client mine = client(server);
    const httplib::Result res = post(mine, greedy_body({5, 6, 7}, 60));
    if (!res) return;
    in_flight_status = res->status;
    in_flight_body = json::parse(res->body);
  });
  for (int i = 0; i < 500 && metrics(c)["attnscope_num_requests_running"] == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(server.stop(SIGTERM, 30) == 0);
  request.join();
  CHECK(in_flight_status == 200);
  CHECK(in_flight_body["usage"]["completion_tokens"] == 60);
  CHECK(server.log().find("stopped") != std::string::npos);
}

TEST_CASE("serve: --request-timeout and the shutdown cut a request short with an error") {
  // GPT-2's shape on one thread writes far fewer than 600 tokens a second.
  const std::vector<std::string> args = {
      "--model", "synthetic:gpt2",    "--threads", "1", "--shutdown-grace", "1", "--read-timeout",
      "2",       "--request-timeout", "1"};
  ServerProcess server(kBinary, args);
  httplib::Client c = client(server);
  json body = greedy_body({1, 2, 3}, 600);
  body["model"] = "synthetic:gpt2";
  // Whole: 504 once the time is up, though tokens keep coming.
  const auto start = std::chrono::steady_clock::now();
  const httplib::Result whole = post(c, body);
  REQUIRE(whole);
  CHECK(whole->status == 504);
  CHECK(json::parse(whole->body)["error"]["type"] == "timeout");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(8));
  // Streamed: the chunks so far, then an error event in a chunked response closed as it must
  // be (cpp-httplib's client reports a cut stream as a failure), and no [DONE].
  const Streamed streamed = post_streamed(c, body);
  CHECK(streamed.status == 200);
  REQUIRE(!streamed.chunks.empty());
  CHECK(streamed.chunks.back()["error"]["type"] == "timeout");
  CHECK_FALSE(streamed.done);
  CHECK(drained(c));
  CHECK(server.stop(SIGTERM, 10) == 0);
  // The shutdown's grace (1 s) passes with a stream in flight: it ends with a 503 error event.
  std::vector<std::string> patient = args;
  patient.back() = "600";  // --request-timeout
  ServerProcess stopping(kBinary, patient);
  httplib::Client d = client(stopping);
  Streamed cut;
  std::thread reader([&] {
    httplib::Client mine = client(stopping);
    cut = post_streamed(mine, body);
  });
  // And a client that trickles its request a byte at a time: it must not keep the process alive
  // past the read timeout (2 s) after the grace.
  const int trickling = connect_raw(stopping.port());
  std::atomic<bool> stop_trickling{false};
  std::thread trickle([&] {
    const std::string request_head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Pad: ";
    send(trickling, request_head.data(), request_head.size(), MSG_NOSIGNAL);
    while (!stop_trickling && send(trickling, "a", 1, MSG_NOSIGNAL) == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  for (int i = 0; i < 2000 && metrics(d)["attnscope_num_requests_running"] == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(metrics(d)["attnscope_num_requests_running"] == 1);
  const auto stopped_at = std::chrono::steady_clock::now();
  CHECK(stopping.stop(SIGTERM, 30) == 0);
  CHECK(std::chrono::steady_clock::now() - stopped_at < std::chrono::seconds(10));
  CHECK(stopping.log().find("a connection is still sending its request") != std::string::npos);
  stop_trickling = true;
  trickle.join();
  close(trickling);
  reader.join();
  CHECK(cut.status == 200);
  REQUIRE(!cut.chunks.empty());
  CHECK(cut.chunks.back()["error"]["message"] == "the server is shutting down");
  CHECK_FALSE(cut.done);
}

TEST_CASE("serve: OpenAI's Python client, as a user would drive it") {
  if (!has_tokenizer()) return;
  if (std::system("python3 -c 'import openai' 2>/dev/null") != 0) {
    MESSAGE("SKIPPED: the openai package is not installed (pip install openai)");
    return;
  }
  ServerProcess server(kBinary, kServeArgs);
  const std::vector<int> ids = {464, 2068, 7586, 21831};
  const std::string expected = generate_text(comma_ids(ids), 12);
  const std::string script = std::string(ATTNSCOPE_TEST_FIXTURES) + "/../serve_openai_client.py";
  const std::string expected_file = std::filesystem::temp_directory_path() /
                                    ("attnscope-expected-" + std::to_string(getpid()) + ".txt");
  {
    std::ofstream out(expected_file, std::ios::binary);
    out << expected;
  }
  const std::string command = "python3 " + script +
                              " http://127.0.0.1:" + std::to_string(server.port()) + "/v1 " +
                              expected_file;
  CHECK(std::system(command.c_str()) == 0);
  std::filesystem::remove(expected_file);
  CHECK(server.stop(SIGTERM, 10) == 0);
}
