// The `attnscope` binary from the outside: exit codes, one-line errors, JSON output, and
// end-to-end greedy generation on a Hugging Face fixture.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "engine/grammar_recognizer.h"
#include "engine/json_grammar.h"
#include "fixture_paths.h"
#include "json_mode_reference.h"
#include "runtime/cpu_features.h"
#include "runtime/npy.h"
#include "safetensors_writer.h"

namespace {

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Every Markdown table in `md` has as many cells in each row as in its header: a column added to
// the rows but not to the header shifts every later column under the wrong name.
void check_table_widths(const std::string& md) {
  std::istringstream lines(md);
  std::string line;
  std::ptrdiff_t header_cells = -1;  // -1: not inside a table
  int tables = 0;
  while (std::getline(lines, line)) {
    if (!line.starts_with("|")) {
      header_cells = -1;
      continue;
    }
    const std::ptrdiff_t cells = std::count(line.begin(), line.end(), '|') - 1;
    if (header_cells < 0) {
      header_cells = cells;
      ++tables;
      continue;
    }
    CAPTURE(line);
    CHECK(cells == header_cells);
  }
  CHECK(tables > 0);
}

// Runs `attnscope ARGS` (arguments are passed through the shell as written).
Result run(const std::string& args, const std::string& stdin_text = "") {
  attnscope::testing::TempDir dir;
  const std::string in = dir.file("stdin"), out = dir.file("stdout"), err = dir.file("stderr");
  attnscope::testing::write_file(in, stdin_text);
  const std::string command =
      std::string(ATTNSCOPE_BINARY) + " " + args + " <" + in + " >" + out + " 2>" + err;
  const int status = std::system(command.c_str());
  Result result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_all(out);
  result.err = read_all(err);
  return result;
}

// `r`, after requiring that its command exited with 0 (a failure shows the command's stderr).
Result require_success(Result r) {
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  return r;
}

// The JSON on the stdout of a command that must succeed.
nlohmann::json success_json(const Result& r) {
  return nlohmann::json::parse(require_success(r).out);
}

// The JSON in the file at `path`.
nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_all(path)); }

// The report.json that `attnscope ARGS --out OUT_DIR`, which must succeed, writes.
nlohmann::json report_json(const std::string& args, const std::string& out_dir) {
  require_success(run(args + " --out " + out_dir));
  return read_json(out_dir + "/report.json");
}

std::string fixture(const std::string& name) {
  return attnscope::testing::test_fixtures() + "/hf/" + name;
}

// A failed run: the expected exit code and exactly one error line, the last line on stderr
// (progress lines such as "loaded MODEL" may precede it), naming `needle`.
void check_one_line_error(const Result& r, int exit_code, const std::string& needle) {
  CAPTURE(r.err);
  CHECK(r.exit_code == exit_code);
  const std::string marker = "attnscope: error: ";
  const std::size_t at = r.err.find(marker);
  REQUIRE(at != std::string::npos);
  CHECK((at == 0 || r.err[at - 1] == '\n'));
  CHECK(r.err.find(marker, at + 1) == std::string::npos);
  CHECK(r.err.find('\n', at) == r.err.size() - 1);
  CHECK(r.err.find(needle, at) != std::string::npos);
}

// "1,2,3", as --prompt-ids takes them.
std::string comma_separated(const std::vector<int>& ids) {
  std::string text;
  for (int id : ids) {
    if (!text.empty()) text += ',';
    text += std::to_string(id);
  }
  return text;
}

// Without a usable GPU (or without the CUDA path in this build), --device cuda is refused with
// one line that names the flag; on a machine with a GPU the command simply runs.
void check_cuda_refused_or_runs(const Result& r) {
  if (r.exit_code == 0) {
    MESSAGE("a CUDA device is usable here: --device cuda ran");
    return;
  }
  check_one_line_error(r, 1, "--device cuda");
}

}  // namespace

TEST_CASE("--device cuda is refused with one line when no GPU can be used; bad flags too") {
  const std::string tiny = "generate --model synthetic:tiny --prompt-ids 1,2 -n 2";
  check_cuda_refused_or_runs(run(tiny + " --device cuda"));
  check_one_line_error(run(tiny + " --device tpu"), 2, "--device");
  check_one_line_error(run(tiny + " --dtype f64"), 2, "--dtype");
}

TEST_CASE("usage errors exit with 2 and one line") {
  check_one_line_error(run("generate --model synthetic:tiny --frobnicate"), 2, "frobnicate");
  check_one_line_error(run("generate --model synthetic:tiny --attn fastest"), 2, "valid: naive");
  check_one_line_error(run("generate --model synthetic:tiny --top-p 0"), 2, "top-p");
  check_one_line_error(run("generate --model synthetic:tiny --temperature -1"), 2, "temperature");
  check_one_line_error(run("generate --model synthetic:tiny -n lots"), 2, "max-new-tokens");
  check_one_line_error(run("generate"), 2, "--model");
  check_one_line_error(run("generate --model synthetic:tiny --prompt hi --prompt-ids 1"), 2,
                       "excludes");
  check_one_line_error(run(""), 2, "subcommand");
  check_one_line_error(run("detokenize --tokenizer x"), 2, "ids");
}

TEST_CASE("--help works on every command") {
  for (const char* command : {"", "generate", "tokenize", "detokenize", "inspect", "bench",
                              "bench-attention", "profile", "compare", "study"}) {
    const Result r = run(std::string(command) + " --help");
    CAPTURE(command);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("--help") != std::string::npos);
  }
  CHECK(run("generate --help").out.find("naive") != std::string::npos);  // lists backends
}

TEST_CASE("bad models and bad inputs exit with 1 and one line") {
  check_one_line_error(run("generate --model /no/such/dir"), 1, "no such file");
  check_one_line_error(run("generate --model synthetic:gpt5"), 1, "valid: gpt2");
  attnscope::testing::TempDir dir;
  attnscope::testing::write_file(dir.file("pytorch_model.bin"), "pickle");
  check_one_line_error(run("generate --model " + dir.path().string()), 1, "safetensors");

  attnscope::testing::TempDir broken;
  std::filesystem::copy_file(fixture("tiny-a") + "/config.json", broken.file("config.json"));
  attnscope::testing::write_file(
      broken.file("model.safetensors"),
      attnscope::testing::SafetensorsWriter::with_declared_length(1ull << 62, "{}"));
  check_one_line_error(run("inspect --model " + broken.path().string()), 1, "model.safetensors");

  const std::string tiny_a = "generate --model " + fixture("tiny-a");  // context 64, vocab 512
  std::string long_prompt = "1";
  for (int i = 0; i < 64; ++i) long_prompt += ",1";
  check_one_line_error(run(tiny_a + " --prompt-ids " + long_prompt), 1, "context length");
  check_one_line_error(run(tiny_a + " --prompt-ids 1,2 -n 64"), 1,
                       "2 prompt tokens + 64 new tokens need 65 positions, more than the context "
                       "length of 64");
  check_one_line_error(run(tiny_a + " --prompt-ids 1,512"), 1, "vocabulary");
  // A malformed id is a usage error (2), said before the model loads.
  check_one_line_error(run(tiny_a + " --prompt-ids 1,-2"), 2, "not a token id");
  for (const char* typo : {"1,,2", ",1", "1,"}) {
    check_one_line_error(run(tiny_a + " --prompt-ids " + typo), 2, "a comma with no id beside it");
  }
  check_one_line_error(run(tiny_a + " --prompt hello"), 1, "tokenizer");
}

TEST_CASE("generate needs P + N - 1 positions: the last new token is never fed back") {
  const std::string tiny_a = "generate --model " + fixture("tiny-a");  // context 64
  const nlohmann::json two =
      success_json(run(tiny_a + " --prompt-ids 1,2 -n 63 --ignore-eos --json"));
  CHECK(two["generated_ids"].size() == 63);
  std::string full_prompt = "1";
  for (int i = 1; i < 64; ++i) full_prompt += ",1";
  const nlohmann::json full =
      success_json(run(tiny_a + " --prompt-ids " + full_prompt + " -n 1 --json"));
  CHECK(full["generated_ids"].size() == 1);
}

TEST_CASE("an eos_token_id outside the vocabulary warns once and never stops generation") {
  const std::string eos_outside = "generate --model " + fixture("eos-outside");  // vocab 64
  const Result r =
      require_success(run(eos_outside + " --prompt-ids 1,2,3 -n 30 --json"));  // 32 positions
  CHECK(nlohmann::json::parse(r.out)["generated_ids"].size() == 30);
  const std::string warning =
      "attnscope: warning: eos_token_id = 50256 is outside the "
      "vocabulary [0, 64): generation will not stop at an end-of-text "
      "token\n";
  const std::size_t at = r.err.find(warning);
  CHECK(at != std::string::npos);
  CHECK(r.err.find(warning, at + 1) == std::string::npos);
  check_one_line_error(run(eos_outside), 1, "an empty prompt starts from eos_token_id = 50256");
}

TEST_CASE("generation stops at any id of config.json's eos_token_id list, as transformers does") {
  // Llama 3.1 Instruct lists three; a chat turn ends with the last (<|eot_id|>). Here the list
  // is [2, T] with T the fourth token the fixture generates greedily (its eos, 2, never comes).
  const std::string source = attnscope::testing::test_fixtures() + "/hf-llama/gqa-tied-llama3";
  const auto greedy = [](const std::string& dir, const std::string& more) {
    return success_json(run("generate --model " + dir + " --prompt-ids 3,4,5 -n 8 --json" + more));
  };
  const auto all = greedy(source, " --ignore-eos")["generated_ids"].get<std::vector<int>>();
  REQUIRE(all.size() == 8);
  const int stop_at = all[3];
  REQUIRE(std::find(all.begin(), all.begin() + 3, stop_at) == all.begin() + 3);
  REQUIRE(std::find(all.begin(), all.end(), 2) == all.end());

  const attnscope::testing::TempDir dir;
  nlohmann::json config = read_json(source + "/config.json");
  config["eos_token_id"] = {2, stop_at};
  attnscope::testing::write_file(dir.file("config.json"), config.dump());
  std::filesystem::copy_file(source + "/model.safetensors", dir.file("model.safetensors"));
  const nlohmann::json stopped = greedy(dir.path().string(), "");
  CHECK(stopped["generated_ids"].get<std::vector<int>>() ==
        std::vector<int>(all.begin(), all.begin() + 4));
  CHECK(stopped["stop_reason"] == "eos");
  const nlohmann::json inspected =
      success_json(run("inspect --model " + dir.path().string() + " --json"));
  CHECK(inspected["config"]["eos_token_ids"] == nlohmann::json::array({2, stop_at}));
  CHECK(inspected["config"]["eos_token_id"] == 2);
  // An empty list: no end-of-text token, said as such (not as an id -1 outside the vocabulary).
  config["eos_token_id"] = nlohmann::json::array();
  attnscope::testing::write_file(dir.file("config.json"), config.dump());
  const Result none = run("generate --model " + dir.path().string() + " --prompt-ids 3 -n 2");
  CHECK(none.exit_code == 0);
  CHECK(none.err.find("warning: the config names no eos_token_id") != std::string::npos);
  CHECK(none.err.find("eos_token_id = -1") == std::string::npos);
}

TEST_CASE("generate --json reproduces Hugging Face's greedy continuation with every backend") {
  const nlohmann::json reference = read_json(fixture("tiny-b") + "/reference.json");
  const auto prompt = reference["greedy"]["prompt_ids"].get<std::vector<int>>();
  const auto expected = reference["greedy"]["generated_ids"].get<std::vector<int>>();
  const std::string ids = comma_separated(prompt);
  for (const char* attention : {"naive", "eager", "inplace", "math", "fused", "flash"}) {
    CAPTURE(attention);
    // stdout holds exactly one object
    const nlohmann::json out = success_json(run(
        "generate --model " + fixture("tiny-b") + " --prompt-ids " + ids + " -n " +
        std::to_string(expected.size()) + " --ignore-eos --threads 2 --json --attn " + attention));
    CHECK(out["prompt_ids"].get<std::vector<int>>() == prompt);
    CHECK(out["generated_ids"].get<std::vector<int>>() == expected);
    CHECK(out["attention"] == (std::string(attention) == "eager" ? "naive" : attention));
    CHECK(out["prefill_tokens_per_s"].get<double>() > 0);
    CHECK(out["decode_tokens_per_s"].get<double>() > 0);
    CHECK(out["decode_tokens"] == expected.size() - 1);
  }
}

TEST_CASE("an empty prompt starts from <|endoftext|>; sampling is reproducible by seed") {
  const std::string base = "generate --model " + fixture("tiny-a") +
                           " -n 12 --temperature 0.9 --top-k 50 --top-p 0.95 --json";
  const nlohmann::json json_a = success_json(run(base + " --seed 5"));
  const Result b = run(base + " --seed 5");
  const Result c = run(base + " --seed 6");
  CHECK(json_a["prompt_ids"] == nlohmann::json::array({511}));  // tiny-a's eos_token_id
  CHECK(json_a["generated_ids"] == nlohmann::json::parse(b.out)["generated_ids"]);
  CHECK(json_a["generated_ids"] != nlohmann::json::parse(c.out)["generated_ids"]);
}

TEST_CASE("--dtype bf16, f16 and q8_0 on the cpu narrow the weights, and generate --json says so") {
  for (const char* dtype : {"bf16", "f16", "q8_0"}) {
    CAPTURE(dtype);
    const Result r = require_success(
        run("generate --model synthetic:tiny --prompt-ids 1,2 -n 3 --json --dtype " +
            std::string(dtype)));
    CAPTURE(r.err);
    const nlohmann::json out = nlohmann::json::parse(r.out);
    CHECK(out["dtype"] == dtype);
    CHECK(out["activation_dtype"] == "f32");
    CHECK(attnscope::parse_cpu_level(out["cpu_kernels"].get<std::string>()).has_value());
    CHECK(out["generated_ids"].size() == 3);
    CHECK(r.err.find(std::string(dtype) + " weights, f32 activations") != std::string::npos);
  }
}

TEST_CASE("inspect --dtype reports the bytes of the weights at that dtype") {
  const nlohmann::json f32 =
      nlohmann::json::parse(run("inspect --model synthetic:tiny --json").out);
  const nlohmann::json bf16 =
      nlohmann::json::parse(run("inspect --model synthetic:tiny --json --dtype bf16").out);
  CHECK(f32["dtype"] == "f32");
  CHECK(bf16["dtype"] == "bf16");
  CHECK(bf16["activation_dtype"] == "f32");
  const auto parameters = f32["parameters"].get<std::uint64_t>();
  CHECK(f32["weight_bytes"].get<std::uint64_t>() == 4 * parameters);
  // synthetic:tiny: GPT-2's vocabulary (50257) x width 64 tied embedding, 2 layers of 4 linear
  // matrices (64x192, 64x64, 64x256, 256x64) in 2 bytes; everything else (wpe 128x64, biases,
  // layer norms) in 4.
  const std::uint64_t matrices = 50257 * 64 + 2 * (64 * 192 + 64 * 64 + 64 * 256 + 256 * 64);
  CHECK(bf16["weight_bytes"].get<std::uint64_t>() == 4 * parameters - 2 * matrices);
  CHECK(bf16["resident_bytes"].get<std::uint64_t>() < f32["resident_bytes"].get<std::uint64_t>());
  // q8_0: every matrix row (64 or 256 wide) is whole blocks of 32 values in 34 bytes.
  const nlohmann::json q8 =
      nlohmann::json::parse(run("inspect --model synthetic:tiny --json --dtype q8_0").out);
  CHECK(q8["dtype"] == "q8_0");
  CHECK(q8["weight_bytes"].get<std::uint64_t>() ==
        4 * parameters - 4 * matrices + matrices / 32 * 34);
}

TEST_CASE("--dtype q8_0 is refused with one line on cuda and for rows that are not whole blocks") {
  check_one_line_error(
      run("generate --model synthetic:tiny --prompt-ids 1 -n 1 --device cuda --dtype q8_0"), 1,
      "q8_0 runs on the cpu only");
  // tiny-b's MLP is 200 wide (n_inner), not a multiple of 32.
  check_one_line_error(
      run("generate --model " + fixture("tiny-b") + " --prompt-ids 1 -n 1 --dtype q8_0"), 1,
      "n_inner is 200");
}

TEST_CASE("inspect reports config, parameters and the stored tensors") {
  const nlohmann::json out = success_json(run("inspect --model " + fixture("tiny-b") + " --json"));
  CHECK(out["config"]["n_layers"] == 3);
  CHECK(out["config"]["d_ff"] == 200);
  // wte 700x96 + wpe 48x96 + 3 layers x (4x96 LN + 96x288+288 + 96x96+96 + 96x200+200
  // + 200x96+96) + 2x96 final LN.
  const int per_layer = 4 * 96 + 96 * 288 + 288 + 96 * 96 + 96 + 96 * 200 + 200 + 200 * 96 + 96;
  CHECK(out["parameters"] == 700 * 96 + 48 * 96 + 3 * per_layer + 2 * 96);
  bool legacy_buffer_listed = false;
  for (const auto& t : out["tensors"]) legacy_buffer_listed |= t["name"] == "h.0.attn.bias";
  CHECK(legacy_buffer_listed);
  CHECK(run("inspect --model synthetic:gpt2").out.find("124439808") != std::string::npos);
}

TEST_CASE("generate --chat: the prompt is the conversation as transformers renders it") {
  if (!attnscope::testing::shared_fixtures_present()) return;
  // transformers' rendering of SmolLM2's template for one user message "Hello!"
  // (tests/fixtures/chat_templates/cases.json), tokenized with the model's GPT-2 vocabulary, is
  // the prompt --chat must build.
  nlohmann::json rendered;
  for (const nlohmann::json& c :
       read_json(attnscope::testing::test_fixtures() + "/chat_templates/cases.json")) {
    if (c["name"] == "smollm2: one turn, add_generation_prompt=True") rendered = c;
  }
  REQUIRE(rendered.is_object());
  REQUIRE(rendered["variables"]["messages"] ==
          nlohmann::json::array({{{"role", "user"}, {"content", "Hello!"}}}));
  const attnscope::testing::TempDir dir;
  const std::string template_file = dir.file("smollm2.jinja");
  attnscope::testing::write_file(template_file, rendered["template"].get<std::string>());
  const auto ids_of = [](const std::string& text) {
    return nlohmann::json::parse(
        require_success(
            run("tokenize --tokenizer " + attnscope::testing::gpt2_tokenizer_dir(), text))
            .out);
  };
  const nlohmann::json chat =
      success_json(run("generate -m synthetic:tiny --chat --prompt 'Hello!' --chat-template " +
                       template_file + " -n 3 --ignore-eos --json"));
  CHECK(chat["prompt_ids"] == ids_of(rendered["rendered"].get<std::string>()));
  CHECK(chat["generated_ids"].size() == 3);
  // --system comes first, in the template's system turn (SmolLM2's default one is then left out).
  const nlohmann::json with_system =
      success_json(run("generate -m synthetic:tiny --chat --system 'Be brief.' --prompt 'Hello!' "
                       "--chat-template " +
                       template_file + " -n 1 --json"));
  CHECK(with_system["prompt_ids"] ==
        ids_of("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
               "<|im_start|>assistant\n"));
  // --messages: a whole conversation (a tool call and its result) and its tools, as a chat
  // completions request writes them; transformers' rendering of Qwen2.5's template again.
  // (Read keeping the keys' order, which the template's tojson shows.)
  nlohmann::ordered_json with_tools;
  std::ifstream cases_file(attnscope::testing::test_fixtures() + "/chat_templates/cases.json");
  for (const nlohmann::ordered_json& c : nlohmann::ordered_json::parse(cases_file)) {
    if (c["name"] == "qwen2.5: tools, tools_in_user_message=True") with_tools = c;
  }
  REQUIRE(with_tools.is_object());
  const std::string qwen_template = dir.file("qwen2.5.jinja");
  attnscope::testing::write_file(qwen_template, with_tools["template"].get<std::string>());
  const std::string conversation = dir.file("conversation.json");
  attnscope::testing::write_file(
      conversation, nlohmann::ordered_json{{"model", "m"},
                                           {"messages", with_tools["variables"]["messages"]},
                                           {"tools", with_tools["variables"]["tools"]}}
                        .dump());
  const nlohmann::json from_file =
      success_json(run("generate -m synthetic:gpt2 --chat --messages " + conversation +
                       " --chat-template " + qwen_template + " -n 1 --json"));
  CHECK(from_file["prompt_ids"] == ids_of(with_tools["rendered"].get<std::string>()));
  // --continue-final-message: the assistant's begun reply left open, as transformers renders it.
  nlohmann::ordered_json continued;
  std::ifstream continued_file(attnscope::testing::test_fixtures() + "/chat_templates/cases.json");
  for (const nlohmann::ordered_json& c : nlohmann::ordered_json::parse(continued_file)) {
    if (c["name"].get<std::string>().starts_with("continue_final_message: qwen2.5")) continued = c;
  }
  REQUIRE(continued.is_object());
  attnscope::testing::write_file(
      conversation,
      nlohmann::ordered_json{{"messages", continued["variables"]["messages"]}}.dump());
  const nlohmann::json continuing = success_json(
      run("generate -m synthetic:tiny --chat --messages " + conversation +
          " --continue-final-message --chat-template " + qwen_template + " -n 1 --json"));
  CHECK(continuing["prompt_ids"] == ids_of(continued["rendered"].get<std::string>()));
  attnscope::testing::write_file(conversation, R"({"messages": [{"role": "user", "content": 1}]})");
  check_one_line_error(
      run("generate -m synthetic:tiny --chat --messages " + conversation + " --chat-template " +
          qwen_template),
      1, conversation + ": messages[0].content must be a string, null or a list of text parts");
  attnscope::testing::write_file(conversation, R"({"messages": [], "messages": []})");
  check_one_line_error(run("generate -m synthetic:tiny --chat --messages " + conversation +
                           " --chat-template " + qwen_template),
                       1, "duplicate key 'messages'");
  // No template: one clear error; the flags that need --chat say so, and --chat needs a message.
  check_one_line_error(run("generate -m synthetic:tiny --chat --prompt hi"), 1,
                       "this model has no chat template");
  check_one_line_error(run("generate -m synthetic:tiny --prompt hi --system x"), 2, "--chat");
  check_one_line_error(run("generate -m synthetic:tiny --messages " + conversation), 2, "--chat");
  check_one_line_error(run("generate -m synthetic:tiny --chat"), 1,
                       "--chat: needs --prompt (the user's message) or --messages FILE");
}

TEST_CASE("tokenize and detokenize use OpenAI's GPT-2 vocabulary") {
  if (!attnscope::testing::shared_fixtures_present()) return;
  const std::string dir = attnscope::testing::gpt2_tokenizer_dir();
  const Result encoded = run("tokenize --tokenizer " + dir + " --text 'Hello, world!'");
  CHECK(encoded.exit_code == 0);
  CHECK(encoded.out == "[15496,11,995,0]\n");
  const Result from_stdin = run("tokenize --tokenizer " + dir, "Attention is all you need.");
  CHECK(from_stdin.out == "[8086,1463,318,477,345,761,13]\n");
  // One file of the pair names its folder (it was read as a tokenizer.json).
  for (const char* file : {"/encoder.json", "/vocab.bpe"}) {
    CAPTURE(file);
    const Result named = run("tokenize --tokenizer " + dir + file + " --text 'Hello, world!'");
    CHECK(named.exit_code == 0);
    CHECK(named.out == "[15496,11,995,0]\n");
  }
  const Result decoded = run("detokenize --tokenizer " + dir + " 464,2068 7586");
  CHECK(decoded.exit_code == 0);
  CHECK(decoded.out == "The quick brown\n");
  check_one_line_error(run("detokenize --tokenizer " + dir + " 50257"), 1, "50257");
  check_one_line_error(run("tokenize --tokenizer /nowhere --text x"), 1, "/nowhere");
  const Result text = run("generate --model synthetic:tiny --tokenizer " + dir +
                          " --prompt 'The quick' -n 3 --json");
  CHECK(nlohmann::json::parse(text.out)["prompt_ids"] == nlohmann::json::array({464, 2068}));
}

TEST_CASE("tokenize and detokenize read a tokenizer.json (Llama 3 style)") {
  // The ids transformers gives (tools/fixtures/make_tokenizer_json_cases.py's llama3 tokenizer).
  const std::string dir = attnscope::testing::test_fixtures() + "/tokenizer_json/llama3";
  const Result plain =
      run("tokenize --no-special-tokens --tokenizer " + dir + " --text 'Hello, world!'");
  CHECK(plain.exit_code == 0);
  CHECK(plain.out == "[44,73,80,334,16,288,281,80,72,5]\n");
  const Result with_bos = run("tokenize --add-special-tokens --tokenizer " + dir +
                              "/tokenizer.json --text 'Hello, world!'");
  CHECK(with_bos.out == "[0,44,73,80,334,16,288,281,80,72,5]\n");
  // By default tokenize encodes as generate does a prompt: with the post-processor's tokens.
  const Result by_default = run("tokenize --tokenizer " + dir + " --text 'Hello, world!'");
  CHECK(by_default.out == with_bos.out);
  const Result decoded = run("detokenize --tokenizer " + dir + " 0,44,73,80,334");
  CHECK(decoded.out == "<|begin_of_text|>Hello\n");
  check_one_line_error(run("detokenize --tokenizer " + dir + " 703"), 1, "703");
  // A FIFO in the folder's place of a tokenizer file is refused as one, not taken for a missing
  // file (and never waited on); a tokenizer_config.json that is not an object is refused.
  attnscope::testing::TempDir broken;
  REQUIRE(::mkfifo((broken.path() / "tokenizer.json").c_str(), 0600) == 0);
  check_one_line_error(run("tokenize --tokenizer " + broken.path().string() + " --text hi"), 1,
                       "tokenizer.json: not a regular file");
  attnscope::testing::TempDir copied;
  std::filesystem::copy_file(dir + "/tokenizer.json", copied.path() / "tokenizer.json");
  attnscope::testing::write_file(copied.file("tokenizer_config.json"), "[]");
  check_one_line_error(run("generate -m synthetic:tiny -n 1 --chat --prompt hi --tokenizer " +
                           copied.path().string()),
                       1, "tokenizer_config.json: expected a JSON object");
}

TEST_CASE("tokenize, detokenize and generate read a SentencePiece tokenizer.json (Llama 2 style)") {
  // The ids transformers gives (tools/fixtures/make_sentencepiece_tokenizer_cases.py's llama2).
  const std::string dir = attnscope::testing::test_fixtures() + "/tokenizer_json/llama2";
  const Result encoded = run("tokenize --tokenizer " + dir + " --text 'Hello, world!'");
  CHECK(encoded.exit_code == 0);
  CHECK(encoded.out == "[1,573,345,299,926,283,289,918,917,36]\n");
  // transformers' decode: "<s>" then " Hello" (the normalizer's space stays after a special
  // token); without it the decoder strips the space the text starts with.
  CHECK(run("detokenize --tokenizer " + dir + " 1,573,345,299").out == "<s> Hello\n");
  CHECK(run("detokenize --tokenizer " + dir + " 573,345,299,926,283").out == "Hello, w\n");
  const nlohmann::json out =
      success_json(run("generate --model synthetic:tiny --tokenizer " + dir +
                       " --prompt 'Hello, world!' -n 4 --ignore-eos --json --threads 1"));
  CHECK(out["prompt_ids"].get<std::vector<int>>() ==
        std::vector<int>{1, 573, 345, 299, 926, 283, 289, 918, 917, 36});
  CHECK(out["generated_ids"].size() == 4);
  // --chat with the template saved beside the tokenizer (TinyLlama-Chat's): transformers'
  // apply_chat_template ids for one user message "Hello!" (chat.json's first case).
  const nlohmann::json chat_case = read_json(dir + "/chat.json")[0];
  REQUIRE(chat_case["messages"] ==
          nlohmann::json::array({{{"role", "user"}, {"content", "Hello!"}}}));
  const nlohmann::json chat =
      success_json(run("generate --model synthetic:tiny --tokenizer " + dir +
                       " --chat --prompt 'Hello!' -n 1 --json --threads 1"));
  CHECK(chat["prompt_ids"] == chat_case["ids"]);
}

// The backends `bench-attention --attn all` must cover: the names its usage error lists as valid
// ("valid: all, naive, ..., eager (= naive)"), aliases left out.
static std::vector<std::string> registered_backend_names() {
  const Result usage = run("bench-attention --attn no-such-backend");
  const std::string marker = "valid: all, ";
  const std::size_t start = usage.err.find(marker);
  REQUIRE(start != std::string::npos);
  std::istringstream list(usage.err.substr(start + marker.size()));
  std::vector<std::string> names;
  std::string name;
  while (std::getline(list, name, ',')) {
    if (name.starts_with(" ")) name.erase(0, 1);
    if (name.find(" (= ") != std::string::npos) break;  // the aliases come last
    names.push_back(name);
  }
  return names;
}

static const std::string kTinyBench =
    "bench-attention --batch 1 --heads 2 --seq-len 16 --head-dim 8 --reps 2 --warmup 0";

TEST_CASE("bench-attention --output json measures every backend against its cost model") {
  const nlohmann::json report = success_json(run(kTinyBench + " --output json"));
  CHECK(report["shape"]["q_len"] == 16);
  CHECK(report["shape"]["kv_len"] == 16);
  CHECK(report["shape"]["kv_heads"] == 2);
  CHECK(report["shape"]["dtype"] == "f32");
  CHECK(report["reps"] == 2);

  const std::vector<std::string> names = registered_backend_names();
  REQUIRE(report["results"].size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const nlohmann::json& row = report["results"][i];
    CAPTURE(row.dump());
    CHECK(row["backend"] == names[i]);
    REQUIRE(!row.contains("error"));
    CHECK(row["times_ms"].size() == 2);
    CHECK(row["median_ms"].get<double>() > 0);
    CHECK(row["min_ms"].get<double>() <= row["max_ms"].get<double>());
    CHECK(row["peak_temporary_bytes"] == row["predicted_temporary_bytes"]);
    CHECK(row["steps_observed"] == row["steps_predicted"]);
    if (names[i] == "naive") {
      CHECK(row["peak_temporary_bytes"] == 4 * 1 * 2 * 16 * 16 * 4);  // four B H T T f32 buffers
      CHECK(row["speedup_vs_naive"] == 1.0);
    }
  }

  // Decode: one query row against the cache of 16.
  const nlohmann::json decode =
      nlohmann::json::parse(run(kTinyBench + " --decode --attn naive --output json").out);
  CHECK(decode["shape"]["q_len"] == 1);
  CHECK(decode["results"][0]["peak_temporary_bytes"] == 4 * 1 * 2 * 1 * 16 * 4);

  // Paged: the same shape through each backend's attend_paged, blocks of 5 in a random order;
  // naive now also gathers q (2 x 16 x 8), K and V (2 x 2 x 16 x 8) and out (2 x 16 x 8).
  const nlohmann::json paged = success_json(
      run("bench-attention --batch 2 --heads 2 --seq-len 16 --head-dim 8 --reps 2 --warmup 0 "
          "--paged 5 --output json"));
  CHECK(paged["shape"]["paged_block_tokens"] == 5);
  REQUIRE(paged["results"].size() == names.size());
  for (const nlohmann::json& row : paged["results"]) {
    CAPTURE(row.dump());
    REQUIRE(!row.contains("error"));
    CHECK(row["peak_temporary_bytes"] == row["predicted_temporary_bytes"]);
    CHECK(row["steps_observed"] == row["steps_predicted"]);
  }
  CHECK(paged["results"][0]["peak_temporary_bytes"] ==
        (4 * 2 * 16 * 16 + 2 * 16 * 8 + 2 * 2 * 16 * 8 + 2 * 16 * 8) * 4);
  CHECK(paged["shape"]["paged_kv_dtype"] == "f32");

  // A bf16 cache: flash serves it with its rows as f32 in more temporary memory, as planned.
  const nlohmann::json bf16 = success_json(
      run("bench-attention --batch 2 --heads 2 --seq-len 16 --head-dim 8 --reps 2 --warmup 0 "
          "--paged 5 --kv-dtype bf16 --attn flash --output json"));
  CHECK(bf16["shape"]["paged_kv_dtype"] == "bf16");
  const nlohmann::json& flash = bf16["results"][0];
  REQUIRE(!flash.contains("error"));
  CHECK(flash["peak_temporary_bytes"] == flash["predicted_temporary_bytes"]);
  for (const nlohmann::json& row : paged["results"]) {
    if (row["backend"] == "flash") {
      CHECK(flash["peak_temporary_bytes"].get<double>() >
            row["peak_temporary_bytes"].get<double>());
    }
  }
  check_one_line_error(run(kTinyBench + " --kv-dtype bf16"), 1, "give --paged N too");
  check_one_line_error(run(kTinyBench + " --paged 4 --kv-dtype i32"), 2, "--kv-dtype");
}

TEST_CASE("bench-attention prints a Markdown table, one row per chosen backend") {
  const Result all = require_success(run(kTinyBench));
  CHECK(all.out.find("| backend | median ms |") != std::string::npos);
  CHECK(all.out.find("speedup vs naive") != std::string::npos);

  const Result two = require_success(run(kTinyBench + " --attn naive,fused"));
  std::istringstream lines(two.out);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("| ") && !line.starts_with("| backend ")) rows.push_back(line);
  }
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].starts_with("| naive |"));
  CHECK(rows[1].starts_with("| fused |"));
  CHECK(run("bench-attention --help").out.find("--kv-heads") != std::string::npos);
}

TEST_CASE("bench-attention rejects bad flags and reports what a backend cannot serve") {
  check_one_line_error(run(kTinyBench + " --batch 0"), 2, "--batch");
  check_one_line_error(run("bench-attention --heads 0"), 2, "--heads");
  check_one_line_error(run("bench-attention --heads 3 --kv-heads 2"), 2, "multiple");
  check_one_line_error(run("bench-attention --attn naive,bogus"), 2, "valid: all, naive");
  check_one_line_error(run("bench-attention --output xml"), 2, "--output");
  check_one_line_error(run("bench-attention --dtype f64"), 2, "--dtype");
  check_one_line_error(run("bench-attention --reps 0"), 2, "--reps");
  check_cuda_refused_or_runs(run(kTinyBench + " --device cuda"));

  // bf16: math upcasts it; the f32-only backends say why they cannot, and the run still succeeds.
  const nlohmann::json report = success_json(run(kTinyBench + " --dtype bf16 --output json"));
  CHECK(report["shape"]["dtype"] == "bf16");
  bool math_ran = false;
  for (const nlohmann::json& row : report["results"]) {
    if (row["backend"] == "math") math_ran = !row.contains("error") && row["median_ms"] > 0;
    if (row["backend"] == "naive") {
      REQUIRE(row.contains("error"));
      CHECK(row["error"].get<std::string>().find("bf16") != std::string::npos);
    }
  }
  CHECK(math_ran);
  CHECK(run(kTinyBench + " --dtype bf16").out.find("| naive | unsupported: ") != std::string::npos);
  // Only an f32-only backend chosen: nothing ran, so the command fails.
  check_one_line_error(run(kTinyBench + " --dtype bf16 --attn naive"), 1, "no backend");
}

// ---- attnscope bench ----

static const std::string kTinyModelBench =
    "bench -m synthetic:tiny -p 8 -n 4 -r 2 --warmup 0 --threads 1";

TEST_CASE("bench records the cpu kernel level, which ATTNSCOPE_CPU_LEVEL caps or refuses") {
  const auto level = success_json(run(kTinyModelBench + " --output json"))["machine"]["cpu_kernels"]
                         .get<std::string>();
  CHECK(attnscope::parse_cpu_level(level).has_value());
  ::setenv("ATTNSCOPE_CPU_LEVEL", "portable", 1);
  const Result capped = run(kTinyModelBench + " --output json");
  ::unsetenv("ATTNSCOPE_CPU_LEVEL");
  CHECK(success_json(capped)["machine"]["cpu_kernels"] == "portable");
  // An unknown level is refused at once, in one line, whatever the command.
  ::setenv("ATTNSCOPE_CPU_LEVEL", "sse9", 1);
  const Result unknown = run("inspect --model synthetic:tiny");
  ::unsetenv("ATTNSCOPE_CPU_LEVEL");
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.out.empty());
  CHECK(unknown.err ==
        "attnscope: error: ATTNSCOPE_CPU_LEVEL: unknown level 'sse9' (portable, avx2, avx512, "
        "avx512vnni, avx512bf16 or amx)\n");
}

TEST_CASE("bench records the commit it was built from") {
  // git is the reference: the binary was built from this checkout, so it names HEAD's short hash
  // (with -dirty when tracked files differ from it), or "unknown" outside a git checkout.
  attnscope::testing::TempDir dir;
  const std::string head = dir.file("head");
  const std::string root = std::string(ATTNSCOPE_TEST_FIXTURES) + "/../..";
  const bool in_git =
      std::system(
          ("git -C " + root + " rev-parse --short HEAD >" + head + " 2>/dev/null").c_str()) == 0;
  const auto revision = success_json(run(kTinyModelBench + " --output json"))["attnscope_revision"]
                            .get<std::string>();
  if (!in_git) {
    CHECK(revision == "unknown");
    return;
  }
  std::string hash = read_all(head);
  while (!hash.empty() && hash.back() == '\n') hash.pop_back();
  REQUIRE(!hash.empty());
  // Fails also when the binary is older than the checkout (a commit since the last build).
  INFO("bench says " << revision << ", git HEAD is " << hash << ": rebuild if HEAD moved");
  CHECK((revision == hash || revision == hash + "-dirty"));
}

TEST_CASE("bench --output json has one row per combination and keeps every repetition") {
  const nlohmann::json report =
      success_json(run(kTinyModelBench + " --attn naive,flash -b 1,2 -d 0,3 --output json"));
  CHECK(report["op"] == "model");
  CHECK(report["repetitions"] == 2);
  CHECK(report["machine"]["threads"] == 1);
  CHECK(report["machine"]["gpu"].is_null());
  CHECK(!report["attnscope_revision"].get<std::string>().empty());
  // 2 backends x 2 batches x (pp8, tg4, tg4 @ d3).
  REQUIRE(report["results"].size() == 12);
  std::set<std::string> combinations;
  for (const nlohmann::json& row : report["results"]) {
    CAPTURE(row.dump());
    combinations.insert(row["backend"].get<std::string>() + " " + row["batch"].dump() + " " +
                        row["test"].get<std::string>());
    CHECK(row["samples_tokens_per_s"].size() == 2);
    CHECK(row["tokens_per_s_mean"].get<double>() > 0);
    CHECK(row["peak_bytes"].get<std::int64_t>() > 0);
    const bool decode = row["test"].get<std::string>().starts_with("tg4");
    CHECK(row["samples_ttft_ms"].size() == (decode ? 2u : 0u));
    CHECK(row["ttft_ms_mean"].is_null() == !decode);
  }
  CHECK(combinations.size() == 12);
  CHECK(combinations.count("flash 2 tg4 @ d3") == 1);
}

TEST_CASE("bench --dtype f32,bf16,f16,q8_0 on the cpu: one row per dtype, weight bytes to match") {
  const nlohmann::json report =
      success_json(run(kTinyModelBench + " --dtype f32,bf16,f16,q8_0 --output json"));
  REQUIRE(report["results"].size() == 8);  // 4 dtypes x (pp8, tg4)
  std::map<std::string, std::uint64_t> weight_bytes;
  for (const nlohmann::json& row : report["results"]) {
    weight_bytes[row["dtype"].get<std::string>()] = row["weight_bytes"].get<std::uint64_t>();
  }
  REQUIRE(weight_bytes.size() == 4);
  CHECK(weight_bytes["bf16"] == weight_bytes["f16"]);
  CHECK(weight_bytes["bf16"] < weight_bytes["f32"]);
  CHECK(weight_bytes["q8_0"] < weight_bytes["bf16"]);
  for (const nlohmann::json& row : report["results"]) {
    if (row["test"] == "tg4") CHECK(row["weights_gb_per_s_mean"].get<double>() > 0.0);
  }
}

TEST_CASE("bench --read-roof gives decode's weight GB/s as a share of the probe's best") {
  const nlohmann::json report =
      success_json(run(kTinyModelBench + " --read-roof --membw-mib 4 --output json"));
  REQUIRE(report["results"].size() == 2);  // pp8, tg4
  for (const nlohmann::json& row : report["results"]) {
    CAPTURE(row["test"]);
    const double roof = row["read_roof_gb_per_s"].get<double>();
    CHECK(roof > 0);
    CHECK(std::set<std::string>{"simd-sum", "accumulators", "streams", "prefetch"}.contains(
        row["read_roof_variant"].get<std::string>()));
    if (row["test"] == "pp8") {
      CHECK_FALSE(row.contains("weights_share_of_read_roof"));
    } else {
      CHECK(row["weights_share_of_read_roof"].get<double>() ==
            doctest::Approx(row["weights_gb_per_s_mean"].get<double>() / roof));
    }
  }
  const Result md = require_success(run(kTinyModelBench + " --read-roof --membw-mib 4"));
  CHECK(md.out.find("% of read roof") != std::string::npos);
}

TEST_CASE("bench --output md, csv and jsonl print one row per test") {
  const Result md = require_success(run(kTinyModelBench));
  CHECK(md.out.find("| synthetic:tiny | flash | f32 | 1 | 1 | pp8 |") != std::string::npos);
  CHECK(md.out.find("| tg4 |") != std::string::npos);

  const Result csv = require_success(run(kTinyModelBench + " --attn naive -o csv"));
  std::istringstream csv_lines(csv.out);
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv_lines, line);) lines.push_back(line);
  REQUIRE(lines.size() == 3);  // the header, pp8, tg4
  CHECK(lines[0].starts_with("model,backend,dtype,threads,batch,test,tokens_per_s_mean"));
  CHECK(lines[1].starts_with("synthetic:tiny,naive,f32,1,1,pp8,"));
  CHECK(lines[2].starts_with("synthetic:tiny,naive,f32,1,1,tg4,"));

  const Result jsonl = require_success(run(kTinyModelBench + " -o jsonl"));
  std::istringstream jsonl_lines(jsonl.out);
  int rows = 0;
  for (std::string line; std::getline(jsonl_lines, line); ++rows) {
    const nlohmann::json row = nlohmann::json::parse(line);
    CHECK(row["samples_s"].size() == 2);
    CHECK(row.contains("machine"));
  }
  CHECK(rows == 2);
}

TEST_CASE("bench --op attention and --op membw") {
  const nlohmann::json report = success_json(run(
      "bench --op attention --attn naive,flash --batch 1 --heads 2 --seq-len 16 --head-dim 8 -r 2 "
      "--warmup 0 -o json"));
  REQUIRE(report["results"].size() == 2);
  const nlohmann::json& naive = report["results"][0];
  CHECK(naive["backend"] == "naive");
  CHECK(naive["samples_ms"].size() == 2);
  CHECK(naive["peak_temporary_bytes"] == 4 * 1 * 2 * 16 * 16 * 4);
  CHECK(naive["steps_observed"] == naive["steps_predicted"]);
  // mean +- stddev, and the median inside its interval, which lies within the samples' range.
  const double low = naive["time_ms_median_low"], high = naive["time_ms_median_high"];
  const auto samples = naive["samples_ms"].get<std::vector<double>>();
  CHECK(low <= naive["time_ms_median"].get<double>());
  CHECK(high >= naive["time_ms_median"].get<double>());
  CHECK(low >= *std::min_element(samples.begin(), samples.end()));
  CHECK(high <= *std::max_element(samples.begin(), samples.end()));
  CHECK(naive.contains("time_ms_stddev"));
  CHECK(naive["bf16_products"] == false);

  // --bf16-products: the calls say so, and flash's temporaries are its cost model's whether or not
  // the amx level packs K and V for its tiles (test_flash.cpp checks the numbers), contiguous or
  // paged. A flag of the op alone: refused beside the other ops.
  for (const char* rounded_call :
       {"--batch 1 --heads 2 --seq-len 40", "--batch 2 --heads 2 --seq-len 70 --paged 16"}) {
    CAPTURE(rounded_call);
    const nlohmann::json rounded =
        success_json(run(std::string("bench --op attention --attn flash ") + rounded_call +
                         " --head-dim 64 -r 1 --warmup 0 --bf16-products -o json"));
    REQUIRE(rounded["results"].size() == 1);
    CHECK(rounded["results"][0]["bf16_products"] == true);
    CHECK(rounded["results"][0]["peak_temporary_bytes"] ==
          rounded["results"][0]["predicted_temporary_bytes"]);
  }
  check_one_line_error(run("bench --op model --model synthetic:tiny --bf16-products"), 2,
                       "--bf16-products");
  check_one_line_error(run("bench --op serving --model synthetic:tiny --seq-len 8"), 2,
                       "--seq-len");
  check_one_line_error(run("explain --model synthetic:tiny --bf16-products"), 2, "excludes");

  const Result membw = require_success(run("bench --op membw --membw-mib 4 -r 2 -o csv"));
  CHECK(
      membw.out.starts_with("test,variant,best,threads,gb_per_s_median,gb_per_s_median_low,"
                            "gb_per_s_median_high,gb_per_s_mean"));
  // Every way of reading gets a row with the same sum (the buffer's), the fastest is the best.
  const nlohmann::json probe =
      success_json(run("bench --op membw --membw-mib 4 -r 3 -o json"))["results"];
  REQUIRE(probe.size() == 4);
  std::set<std::string> variants;
  int best = 0;
  double highest = 0;
  for (const nlohmann::json& row : probe) {
    variants.insert(row["variant"].get<std::string>());
    CHECK(row["samples_gb_per_s"].size() == 3);
    CHECK(row["gb_per_s_median"].get<double>() > 0);
    CHECK(row["checksum"].get<double>() ==
          doctest::Approx(probe[0]["checksum"].get<double>()).epsilon(1e-3));
    highest = std::max(highest, row["gb_per_s_median"].get<double>());
  }
  for (const nlohmann::json& row : probe) {
    if (!row["best"].get<bool>()) continue;
    ++best;
    CHECK(row["gb_per_s_median"].get<double>() == highest);
  }
  CHECK(best == 1);
  CHECK(variants == std::set<std::string>{"simd-sum", "accumulators", "streams", "prefetch"});
}

TEST_CASE("bench --op serving: the engine at each concurrency, every request answered") {
  attnscope::testing::TempDir dir;
  const std::string dataset = dir.file("requests.jsonl");
  {
    std::ofstream out(dataset);
    out << "{\"prompt_ids\": [1, 2, 3, 4, 5], \"max_tokens\": 3}\n\n"
        << "{\"prompt_ids\": [7, 8], \"max_tokens\": 5}\n"
        << "{\"prompt_ids\": [9, 10, 11]}\n";
  }
  for (const std::string& workload :
       {std::string("--requests 6 --input-len 4:12 --output-len 2:4 --shared-prefix 3"),
        "--dataset " + dataset + " --output-len 4"}) {
    CAPTURE(workload);
    const nlohmann::json report =
        success_json(run("bench --op serving -m synthetic:tiny --attn naive,flash -c 1,4 "
                         "--block-size 4 --kv-memory 64KiB -r 2 --warmup 0 --threads 1 -o json " +
                         workload));
    REQUIRE(report["results"].size() == 4);  // 2 backends x 2 concurrencies
    for (const nlohmann::json& row : report["results"]) {
      const std::int64_t requests = row["requests"];
      CHECK(requests == (workload.starts_with("--dataset") ? 3 : 6));
      CHECK(row["samples_output_tokens_per_s"].size() == 2);
      CHECK(row["output_tokens"].get<std::int64_t>() >= requests);
      CHECK(row["ttft_ms_p99"].get<double>() >= row["ttft_ms_median"].get<double>());
      CHECK(row["kv_used_bytes_peak"].get<double>() > 0);
      CHECK(row["kv_contiguous_waste"].get<double>() > row["kv_paged_waste"].get<double>());
      CHECK(row.contains("speedup_vs_one_at_a_time"));
    }
    CHECK(report["results"][0]["speedup_vs_one_at_a_time"] == 1.0);
    CHECK(report["results"][0]["kv_dtype"] == "f32");
  }
  // A bf16 cache on the cpu: half the bytes of the f32 one for the same blocks.
  const auto peak_kv_bytes = [&](const std::string& kv_dtype) {
    const nlohmann::json report = success_json(
        run("bench --op serving -m synthetic:tiny -c 2 --requests 3 --input-len 6 --output-len 3 "
            "-r 1 --warmup 0 --threads 1 -o json --kv-dtype " +
            kv_dtype));
    CHECK(report["results"][0]["kv_dtype"] == kv_dtype);
    return report["results"][0]["kv_used_bytes_peak"].get<double>();
  };
  CHECK(peak_kv_bytes("bf16") * 2 == peak_kv_bytes("f32"));
  // --trace: one more run, profiled: every step a scope named by its batch, a track per request.
  const std::string trace = dir.file("serving.json");
  require_success(
      run("bench --op serving -m synthetic:tiny -c 3 --requests 5 --input-len 4:9 "
          "--output-len 2:3 -r 1 --warmup 0 --threads 1 --trace " +
          trace));
  int steps = 0, requests_named = 0;
  std::set<std::int64_t> request_tracks;
  const nlohmann::json traced = read_json(trace);
  for (const nlohmann::json& event : traced["traceEvents"]) {
    const std::string name = event.value("name", "");
    if (event["ph"] == "X" && name.starts_with("engine.step: ")) ++steps;
    if (event["ph"] == "X" && event.value("cat", "") == "request") {
      request_tracks.insert(event["tid"].get<std::int64_t>());
      CHECK((name == "queued" || name == "prefill" || name == "decode"));
    }
    if (event["ph"] == "M" && event["args"].value("name", "") == "requests") ++requests_named;
  }
  CHECK(steps >= 3);  // 5 requests of at least 2 tokens, 3 at a time
  CHECK(request_tracks.size() == 5);
  CHECK(requests_named == 1);
  // --json-schema: every request's reply under the schema (the workload says so); a schema the
  // grammar refuses fails before any model loads.
  attnscope::testing::write_file(
      dir.file("schema.json"),
      R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})");
  const nlohmann::json structured = success_json(
      run("bench --op serving -m " + fixture("tiny-a") + " --tokenizer " + fixture("perplexity") +
          " -c 2 --requests 3 --input-len 6 --output-len 8 -r 1 --warmup 0 --threads 1 -o json "
          "--json-schema " +
          dir.file("schema.json")));
  CHECK(structured["results"][0]["workload"].get<std::string>().find("JSON schema") !=
        std::string::npos);
  attnscope::testing::write_file(dir.file("string.json"), R"({"type": "string"})");
  check_one_line_error(
      run("bench --op serving -m synthetic:tiny --json-schema " + dir.file("string.json")), 1,
      "--json-schema: json_schema: the schema's root must be an object");
  check_one_line_error(run("bench --op serving -m synthetic:tiny --input-len 9:3"), 1,
                       "--input-len");
  check_one_line_error(run("bench --op serving -m synthetic:tiny --kv-memory lots"), 1,
                       "--kv-memory");
  check_one_line_error(run("bench --op serving -m synthetic:tiny --kv-dtype i32"), 2, "--kv-dtype");
  check_one_line_error(
      run("bench --op serving -m synthetic:tiny --kv-dtype q8_0 -r 1 --input-len 8 "
          "--output-len 8"),
      1, "q8_0 needs heads a multiple of 32 wide (whole blocks), not 16");
  check_one_line_error(
      run("bench --op serving -m synthetic:tiny --input-len 100 --output-len 8 --kv-memory 64KiB "
          "-r 1 --warmup 0"),
      1, "needs more than the whole KV cache");
  // A workload the context would cut short is refused, not measured short.
  check_one_line_error(
      run("bench --op serving -m synthetic:tiny --input-len 8 --output-len 121 -r 1 --warmup 0"), 1,
      "a request of 8 prompt tokens and 121 new ones passes synthetic:tiny's context of 128");
  check_one_line_error(run("bench --op serving -m synthetic:tiny --dataset " + dir.file("none")), 1,
                       "none");
}

TEST_CASE("bench rejects bad values, other devices and dtypes, and depths past the context") {
  check_one_line_error(run("bench --batch 0"), 2, "--batch");
  // Numbers past an integer flag's type are refused, not saturated (CLI11 2.1 would run them
  // as 2^63 - 1, and -1 as 2^64 - 1 in an unsigned one).
  check_one_line_error(run("generate -m synthetic:tiny -n 1 --seed 9223372036854775808"), 2,
                       "--seed: 9223372036854775808 is out of range (a 64-bit integer)");
  check_one_line_error(run("generate -m synthetic:tiny -n 1 --top-k 99999999999999999999"), 2,
                       "--top-k: 99999999999999999999 is out of range");
  check_one_line_error(run("bench-attention --seed -1"), 2,
                       "--seed: -1 is out of range (0 to 2^64 - 1)");
  // A comma list with an empty item is refused, not read without it (CLI11 2.1 drops it).
  check_one_line_error(run("bench -m synthetic:tiny -b 1,,2 -p 8 -n 0"), 2,
                       "--batch: '1,,2' has an empty item");
  check_one_line_error(run("bench -m synthetic:tiny --dtype=f32, -p 8 -n 0"), 2,
                       "--dtype: 'f32,' has an empty item");
  check_one_line_error(run("bench -m synthetic:tiny -b , -p 8 -n 0"), 2,
                       "--batch: ',' has an empty item");
  check_one_line_error(run("compare -m synthetic:tiny --prompt-lens ,8"), 2,
                       "--prompt-lens: ',8' has an empty item");
  // A flag's value is not read as a flag, whatever it looks like.
  CHECK(run("generate -m synthetic:tiny --prompt '-b ,' -n 1").exit_code == 0);
  check_one_line_error(run("bench --attn bogus"), 2, "valid: all, naive");
  check_one_line_error(run("bench -o xml"), 2, "--output");
  check_one_line_error(run("bench -r 0"), 2, "--repetitions");
  check_one_line_error(run("bench --op sing"), 2, "--op");
  check_cuda_refused_or_runs(run(kTinyModelBench + " --device cuda"));
  check_one_line_error(run("bench --op membw --device cuda --membw-mib 4"), 1, "host memory");
  check_one_line_error(run(kTinyModelBench + " -d 2000"), 1, "context length of 128");
  check_one_line_error(run(kTinyModelBench + " -p 129"), 1, "context length of 128");
}

TEST_CASE("profile prints a summary, writes a trace and JSON, and measures its overhead") {
  const Result table =
      run("profile --model synthetic:tiny --attn naive --prompt-len 6 --gen 4 --threads 1");
  CAPTURE(table.err);
  CHECK(table.exit_code == 0);
  CHECK(table.out.find("attention.naive") != std::string::npos);
  CHECK(table.out.find("profiling overhead on decode steps") != std::string::npos);
  CHECK(table.out.find("differ from the cost model: 0") != std::string::npos);

  attnscope::testing::TempDir dir;
  const std::string trace = dir.file("trace.json"), summary = dir.file("summary.json");
  const Result files =
      run("profile --model synthetic:tiny --attn flash --prompt-len 6 --gen 2 "
          "--steps decode --sort calls --threads 1 --trace " +
          trace + " --json " + summary);
  CHECK(files.exit_code == 0);
  CHECK(files.out.empty());  // no --summary: files only
  const auto events = read_json(trace)["traceEvents"];
  CHECK(events.size() > 10);
  const auto json = read_json(summary);
  CHECK(json["format"] == "attnscope-profile-summary");
  CHECK(json["rows"][0]["calls"] >= json["rows"][1]["calls"]);
  int forwards = 0;
  for (const auto& row : json["rows"]) {
    if (row["name"] == "forward") forwards = row["calls"];
  }
  CHECK(forwards == 2);  // decode steps only: --gen 2 profiles 2 (P U U P, 4 steps run)

  const Result op =
      run("profile --op attention --attn fused --batch 1 --heads 2 --seq-len 32 "
          "--head-dim 8 --reps 4 --threads 1");
  CHECK(op.exit_code == 0);
  CHECK(op.out.find("fused.scale_mask_softmax") != std::string::npos);
  CHECK(op.out.find("profiling overhead on attention steps") != std::string::npos);

  const Result diff = run("compare --diff " + summary + " " + summary);
  CHECK(diff.exit_code == 0);
  CHECK(diff.out.find("| forward | 2 |") != std::string::npos);
}

TEST_CASE("two output flags naming one file are a usage error, before any work") {
  attnscope::testing::TempDir dir;
  const std::string same = dir.file("out"), again = (dir.path() / "." / "out").string();
  for (const auto& entry : std::vector<std::pair<std::string, std::string>>{
           {"generate -m synthetic:tiny -n 1 --logits-out " + same + " --attention-out " + again,
            "--attention-out: names the same file as --logits-out"},
           {"profile -m synthetic:tiny --prompt-len 4 --gen 1 --trace " + same + " --json " + again,
            "--json: names the same file as --trace"},
           {"diverge -m synthetic:tiny --prompt-ids 1,2 --json " + same + " --heatmap " + again,
            "--heatmap: names the same file as --json"},
           {"explain --json " + same + " --roofline " + again,
            "--roofline: names the same file as --json"}}) {
    const std::string& command = entry.first;  // not a structured binding: clang 14's CAPTURE
    CAPTURE(command);
    check_one_line_error(run(command), 2, entry.second);
    CHECK_FALSE(std::filesystem::exists(same));
  }
}

TEST_CASE("profile and compare reject bad flags with one line") {
  check_one_line_error(run("profile"), 2, "--model");
  check_one_line_error(run("profile --model synthetic:tiny --op attention"), 2, "excludes");
  check_one_line_error(run("profile --model synthetic:tiny --sort speed"), 2, "sort");
  check_one_line_error(run("profile --model synthetic:tiny --steps some"), 2, "steps");
  check_one_line_error(run("profile --op softmax"), 2, "op");
  check_one_line_error(run("profile --model synthetic:tiny --prompt-len 0"), 2, "prompt-len");
  // A flag of the other kind of run is refused, not ignored.
  check_one_line_error(run("profile --model synthetic:tiny --heads 4"), 2, "--heads requires --op");
  check_one_line_error(run("profile --op attention --gen 4"), 2, "--op excludes --gen");
  check_one_line_error(run("profile --model synthetic:tiny --prompt-len 1000"), 1,
                       "context length");
  check_one_line_error(
      run("profile --model synthetic:tiny --prompt-len 4 --gen 1 --trace /no/such/dir/t.json"), 1,
      "cannot open");
  check_one_line_error(run("profile --model synthetic:tiny --gen 0 --steps decode"), 2,
                       "--steps: decode with --gen 0 would profile no step");
  check_one_line_error(run("compare --model synthetic:tiny"), 2, "--out");
  check_one_line_error(run("compare --model synthetic:tiny --out x --attn fastest"), 2,
                       "valid: naive");
  check_one_line_error(run("compare --diff a.json"), 2, "diff");
  check_one_line_error(run("compare --diff /no/such/a.json /no/such/b.json"), 1, "no such file");
  // A FIFO or a directory is refused before a byte is read (a FIFO would block for ever).
  attnscope::testing::TempDir dir;
  const std::string fifo = dir.file("fifo.json");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  check_one_line_error(run("compare --diff " + fifo + " " + fifo), 1, "not a regular file");
  check_one_line_error(run("compare --diff /tmp /tmp"), 1, "/tmp: not a regular file");
}

// The header dict and the f32 values of a .npy file of any rank.
std::pair<std::string, std::vector<float>> read_npy(const std::string& path) {
  const std::string bytes = read_all(path);
  REQUIRE(bytes.size() >= 10);
  const std::size_t header_len =
      static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  std::vector<float> values((bytes.size() - 10 - header_len) / sizeof(float));
  std::memcpy(values.data(), bytes.data() + 10 + header_len, values.size() * sizeof(float));
  return {bytes.substr(10, header_len), values};
}

TEST_CASE("--attention-out saves the map of generate's whole sequence and of profile's prefill") {
  attnscope::testing::TempDir dir;
  const std::string map = dir.file("map.npy");
  // 3 prompt tokens, 3 new ones: the last is never fed back, so 5 positions.
  const Result generated =
      run("generate --model synthetic:tiny --prompt-ids 1,2,3 -n 3 --attn flash "
          "--threads 1 --attention-layers 1 --attention-heads 2,0 "
          "--attention-out " +
          map);
  CAPTURE(generated.err);
  CHECK(generated.exit_code == 0);
  CHECK(generated.err.find("flash never materialises") != std::string::npos);
  // A path that cannot be written fails before the run: no token is generated.
  const Result unwritable =
      run("generate --model synthetic:tiny --prompt-ids 1,2,3 -n 3 --threads 1 --json "
          "--attention-out " +
          dir.file("none/map.npy"));
  check_one_line_error(unwritable, 1, "map.npy: cannot open for writing");
  CHECK(unwritable.out.empty());
  const std::pair<std::string, std::vector<float>> npy = read_npy(map);
  const std::vector<float>& values = npy.second;
  CHECK(npy.first.find("'shape': (1, 2, 5, 5)") != std::string::npos);
  REQUIRE(values.size() == 50);
  for (std::size_t row = 0; row < 10; ++row) {
    double visible = 0, beyond = 0;
    for (std::size_t key = 0; key < 5; ++key) {
      (key <= row % 5 ? visible : beyond) += values[row * 5 + key];
    }
    CHECK(visible == doctest::Approx(1.0).epsilon(1e-5));
    CHECK(beyond == 0.0);
  }

  const Result profiled =
      run("profile --model synthetic:tiny --attn naive --prompt-len 6 --gen 2 "
          "--batch 2 --threads 1 --attention-out " +
          map);
  CAPTURE(profiled.err);
  CHECK(profiled.exit_code == 0);
  CHECK(profiled.out.find("attention_map.copy") != std::string::npos);
  CHECK(read_npy(map).first.find("'shape': (2, 4, 6, 6)") != std::string::npos);

  check_one_line_error(run("generate --model synthetic:tiny --attention-layers 0"), 2,
                       "--attention-out");
  check_one_line_error(run("generate --model synthetic:tiny --prompt-ids 1 -n 1 "
                           "--attention-out " +
                           map + " --attention-layers 2"),
                       1, "outside the model's 2");
  check_one_line_error(run("profile --op attention --attention-out " + map), 2, "excludes");
}

TEST_CASE("diverge reports per layer, writes JSON and a heat map, and finds a perturbed layer") {
  attnscope::testing::TempDir dir;
  const std::string json_path = dir.file("d.json"), svg = dir.file("d.svg");
  const Result same =
      run("diverge --model synthetic:tiny --attn naive --against naive "
          "--prompt-len 6 --threads 1 --json " +
          json_path + " --heatmap " + svg);
  CAPTURE(same.err);
  REQUIRE(same.exit_code == 0);
  check_table_widths(same.out);
  CHECK(same.out.find("first layer whose logit-lens top-1 flips: none") != std::string::npos);
  const auto report = read_json(json_path);
  for (const char* field :
       {"run", "against", "tokens", "positions", "perturb_layer", "first_output_difference_layer",
        "first_input_difference_layer", "first_flip_layer", "kl_mean", "kl_max", "layers"}) {
    CAPTURE(field);
    CHECK(report.contains(field));
  }
  CHECK(report["positions"] == 6);
  CHECK(report["first_output_difference_layer"].is_null());
  CHECK(report["kl_max"] == 0.0);
  REQUIRE(report["layers"].size() == 2);
  CHECK(report["layers"][1]["heads"].size() == 4);
  CHECK(report["layers"][0]["out_max"] == 0.0);
  CHECK(report["layers"][0]["source"] == "equal");
  CHECK(read_all(svg).starts_with("<svg"));

  const Result perturbed =
      run("diverge --model synthetic:llama-tiny --attn flash --against flash --perturb-layer 1 "
          "--prompt-ids 3,1,4,1,5 --threads 1 --json " +
          json_path);
  CAPTURE(perturbed.err);
  REQUIRE(perturbed.exit_code == 0);
  const auto found = read_json(json_path);
  CHECK(found["first_output_difference_layer"] == 1);
  CHECK(found["perturb_layer"] == 1);
  CHECK(found["layers"][0]["out_max"] == 0.0);
  CHECK(found["layers"][1]["source"] == "backend");
  CHECK(found["kl_max"] > 0.0);

  check_one_line_error(run("diverge --model synthetic:tiny --against fastest"), 2, "valid: naive");
  check_one_line_error(run("diverge --model synthetic:tiny --against-dtype f64"), 2,
                       "--against-dtype");
  check_one_line_error(run("diverge --model synthetic:tiny --prompt hi --prompt-len 3"), 2,
                       "excludes");
  check_one_line_error(run("diverge --model synthetic:tiny --prompt-len 4 --perturb-layer 2"), 1,
                       "outside the model's 2 layers");
  check_one_line_error(run("diverge --model synthetic:tiny --prompt-ids 1,2,3 --against-model "
                           "synthetic:llama-tiny"),
                       1, "not of one model");
  check_one_line_error(run("diverge --model synthetic:tiny --prompt-len 4 --against-dtype q8_0 "
                           "--against-device cuda"),
                       1, "cuda");
}

TEST_CASE("compare writes a report whose numbers recompute from its JSON") {
  attnscope::testing::TempDir dir;
  const std::string out = dir.file("report");
  const auto report = report_json(
      "compare --model synthetic:tiny --prompt-lens 4,9 --gen 4 --reps 2 --threads 1", out);
  CHECK(report["cases"].size() == 10);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  for (const auto& c : report["cases"]) {
    CAPTURE(c["backend"]);
    double naive_prefill = 0, naive_decode = 0;
    for (const auto& other : report["cases"]) {
      if (other["backend"] == "naive" && other["prompt_len"] == c["prompt_len"]) {
        naive_prefill = median(other["prefill_ms"]);
        naive_decode = median(other["decode_ms"]);
      }
    }
    CHECK(c["prefill_ms_median"].get<double>() == doctest::Approx(median(c["prefill_ms"])));
    CHECK(c["prefill_speedup_vs_naive"].get<double>() ==
          doctest::Approx(naive_prefill / median(c["prefill_ms"])));
    CHECK(c["decode_speedup_vs_naive"].get<double>() ==
          doctest::Approx(naive_decode / median(c["decode_ms"])));
    CHECK(c["decode_weight_gb_per_s"].get<double>() ==
          doctest::Approx(report["setup"]["weight_bytes"].get<double>() /
                          (median(c["decode_ms"]) * 1e-3) / 1e9));
    CHECK(c["prefill_steps_observed"][0] == c["prefill_steps_expected"]);
    CHECK(c["prefill_steps_observed"][1] == c["prefill_steps_expected"]);
    CHECK(c["step_mismatches"].empty());
    CHECK(c["prefill_temporary_bytes"] == c["prefill_temporary_bytes_expected"]);
  }
  // Every median and ratio carries an interval around it; every comparison's verdict follows
  // the finding rule, and only "faster" comparisons become "beats" findings.
  for (const auto& c : report["cases"]) {
    CHECK(c["repetitions"] == 2);
    CHECK(c["prefill_ms_interval"][0].get<double>() <= c["prefill_ms_median"].get<double>());
    CHECK(c["prefill_ms_interval"][1].get<double>() >= c["prefill_ms_median"].get<double>());
    CHECK(c["decode_speedup_vs_naive_interval"][0].get<double>() <=
          c["decode_speedup_vs_naive"].get<double>());
  }
  CHECK(report["comparisons"].size() == 2 * 2 * 10);
  int wins = 0;
  for (const auto& pair : report["comparisons"]) {
    const double low = pair["interval"][0], high = pair["interval"][1];
    const std::string expected = low > 1 ? "faster" : high < 1 ? "slower" : "indistinguishable";
    CHECK(pair["verdict"] == expected);
    wins += pair["verdict"] == "faster";
  }
  int beats = 0;
  for (const auto& finding : report["findings"]) {
    beats += finding.get<std::string>().find(" beats ") != std::string::npos;
  }
  CHECK(beats == wins);
  CHECK(report["setup"]["rounds"] == 2);
  CHECK(attnscope::parse_cpu_level(report["setup"]["cpu_kernels"].get<std::string>()).has_value());
  CHECK(report["conditions"]["load_average_during"].size() == 2);
  const std::string markdown = read_all(out + "/report.md");
  CHECK(markdown.find("Conditions: Load average") != std::string::npos);
  CHECK(markdown.find("## Prompt length 9") != std::string::npos);
  check_table_widths(markdown);
  CHECK(markdown.find("Every profiled attention call ran exactly the steps") != std::string::npos);
  CHECK(read_all(out + "/prefill_ms_p4.svg").starts_with("<svg"));
  CHECK(read_all(out + "/decode_ms_p9.svg").find("flash") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// See the numbers: generate --top-logprobs and --logits-out; perplexity and its baselines.

namespace {

std::string perplexity_fixture() { return fixture("perplexity"); }

// `perplexity` on tiny-a and the perplexity fixture's text and tokenizer, with `extra` flags.
// One thread: a window of tiny-a is far too small to share, and on a loaded machine two threads
// wait on each other at every op (measured: 6200 tokens/s on one thread, 320 on two).
Result run_perplexity(const std::string& extra) {
  return run("perplexity --model " + fixture("tiny-a") + " --tokenizer " + perplexity_fixture() +
             " --file " + perplexity_fixture() + "/text.txt --threads 1 " + extra);
}

}  // namespace

TEST_CASE("generate --top-logprobs reports each token's log-probability; --logits-out its logits") {
  const nlohmann::json reference = read_json(fixture("tiny-a") + "/reference.json");
  const auto prompt = reference["greedy"]["prompt_ids"].get<std::vector<int>>();
  const std::string ids = comma_separated(prompt);
  attnscope::testing::TempDir dir;
  const std::string npy = dir.file("logits.npy");
  const nlohmann::json out = success_json(run(
      "generate --model " + fixture("tiny-a") + " --tokenizer " + perplexity_fixture() +
      " --prompt-ids " + ids + " -n 6 --ignore-eos --json --top-logprobs 3 --logits-out " + npy));
  const auto generated = out["generated_ids"].get<std::vector<int>>();
  const nlohmann::json& content = out["logprobs"]["content"];
  REQUIRE(content.size() == generated.size());

  attnscope::NpyReader logits(npy);
  REQUIRE(logits.rows() == static_cast<std::int64_t>(generated.size()));
  REQUIRE(logits.cols() == 512);
  std::vector<float> row(512);
  for (std::size_t i = 0; i < generated.size(); ++i) {
    CAPTURE(i);
    logits.read_row(row);
    const nlohmann::json& entry = content[i];
    // Greedy: the chosen token is the most probable one, and both log-probs are those of the row.
    CHECK(entry["id"] == generated[i]);
    REQUIRE(entry["top_logprobs"].size() == 3);
    CHECK(entry["top_logprobs"][0]["id"] == generated[i]);
    CHECK(entry["top_logprobs"][0]["logprob"] == entry["logprob"]);
    double sum = 0.0;
    for (float z : row) sum += std::exp(static_cast<double>(z) - row[generated[i]]);
    CHECK(entry["logprob"].get<double>() == doctest::Approx(-std::log(sum)).epsilon(1e-12));
    CHECK(entry["top_logprobs"][1]["logprob"] <= entry["top_logprobs"][0]["logprob"]);
    // The tokenizer knows the id: its bytes and text are there.
    CHECK(entry["bytes"].size() == entry["token"].get<std::string>().size());
    if (i == 0) {
      // The first row is Hugging Face's logits at the prompt's last position.
      const auto expected = reference["logits"][0][prompt.size() - 1].get<std::vector<float>>();
      float worst = 0.0f;
      for (std::size_t v = 0; v < row.size(); ++v)
        worst = std::max(worst, std::abs(row[v] - expected[v]));
      CHECK(worst < 1e-4f);
    }
  }
  check_one_line_error(run("generate --model synthetic:tiny --top-logprobs 2"), 2, "--json");
  check_one_line_error(
      run("generate --model synthetic:tiny -n 1 --logits-out " + dir.file("no/such/dir.npy")), 1,
      "cannot be written");
}

// Every token of tiny-a's 512 with its raw log-probability at each generated step, best first
// (generate --top-logprobs 512), and the ids generate chose.
struct RankedSteps {
  std::vector<int> chosen;
  std::vector<nlohmann::json> ranked;  // per step: top_logprobs, all 512
  std::string stop_reason;
  std::string text;
};

RankedSteps generate_ranked(const std::string& flags) {
  const nlohmann::json reference = read_json(fixture("tiny-a") + "/reference.json");
  const auto prompt = reference["greedy"]["prompt_ids"].get<std::vector<int>>();
  const nlohmann::json out = success_json(
      run("generate --model " + fixture("tiny-a") + " --tokenizer " + perplexity_fixture() +
          " --prompt-ids " + comma_separated(prompt) + " --json --top-logprobs 512 " + flags));
  RankedSteps steps{
      out["generated_ids"].get<std::vector<int>>(), {}, out["stop_reason"], out.value("text", "")};
  for (const nlohmann::json& entry : out["logprobs"]["content"]) {
    REQUIRE(entry["top_logprobs"].size() == 512);
    steps.ranked.push_back(entry["top_logprobs"]);
  }
  REQUIRE(steps.ranked.size() == steps.chosen.size());
  return steps;
}

std::string bytes_of(const nlohmann::json& entry) {
  std::string bytes;
  for (const nlohmann::json& byte : entry.value("bytes", nlohmann::json::array())) {
    bytes += static_cast<char>(byte.get<int>());
  }
  return bytes;
}

TEST_CASE(
    "generate --json-object, --json-schema: greedy takes the likeliest token the grammar lets") {
  attnscope::testing::TempDir dir;
  const std::string schema = R"({"type": "object", "properties": {"name": {"type": "string"},
      "tags": {"type": "array", "items": {"enum": ["x", "y"]}, "maxItems": 2}},
    "required": ["tags"]})";
  attnscope::testing::write_file(dir.file("schema.json"), schema);
  const attnscope::engine::Grammar schema_grammar = attnscope::engine::json_schema_grammar(schema);
  const std::vector<std::pair<std::string, const attnscope::engine::Grammar*>> modes = {
      {"--json-object", &attnscope::testing::json_mode_grammar()},
      {"--json-schema " + dir.file("schema.json"), &schema_grammar}};
  for (const auto& mode : modes) {
    CAPTURE(mode.first);
    const RankedSteps steps = generate_ranked("-n 40 " + mode.first);
    attnscope::engine::GrammarRecognizer json(*mode.second);
    std::string text;
    for (std::size_t i = 0; i < steps.chosen.size(); ++i) {
      CAPTURE(i);
      CAPTURE(text);
      // Every token likelier than the chosen one cannot continue the text (or is
      // <|endoftext|>, 511, a control token); the chosen one can.
      for (const nlohmann::json& entry : steps.ranked[i]) {
        const int id = entry["id"];
        attnscope::engine::GrammarRecognizer next = json;
        if (id == steps.chosen[i]) {
          REQUIRE(next.accept(bytes_of(entry)));
          json = next;
          text += bytes_of(entry);
          break;
        }
        CHECK((id == 511 || !next.accept(bytes_of(entry))));
      }
    }
    CAPTURE(text);
    CHECK(text.substr(text.find_first_not_of(" \t\n\r"), 1) == "{");
    if (steps.stop_reason == "stop") {
      CHECK(json.finished());
      CHECK(nlohmann::json::parse(text).is_object());
    } else {
      CHECK(steps.stop_reason == "length");
      CHECK(steps.chosen.size() == 40);
    }
  }
  check_one_line_error(run("generate --model synthetic:llama-tiny --json-object -n 2"), 1,
                       "a JSON reply needs the model's tokenizer");
  attnscope::testing::write_file(dir.file("string.json"), R"({"type": "string"})");
  const std::string with_tokenizer =
      "generate --model " + fixture("tiny-a") + " --tokenizer " + perplexity_fixture() + " -n 2 ";
  check_one_line_error(run(with_tokenizer + "--json-schema " + dir.file("string.json")), 1,
                       "--json-schema: json_schema: the schema's root must be an object");
  check_one_line_error(run(with_tokenizer + "--json-schema " + dir.file("missing.json")), 1,
                       "missing.json");
  check_one_line_error(
      run(with_tokenizer + "--json-object --json-schema " + dir.file("schema.json")), 2,
      "--json-object excludes --json-schema");
}

TEST_CASE("generate --json-object --continue-final-message continues the begun object") {
  attnscope::testing::TempDir dir;
  attnscope::testing::write_file(dir.file("chat.jinja"),
                                 "{% for m in messages %}{{ m.content }}{% endfor %}");
  const auto generate_continuing = [&](const std::string& begun) {
    attnscope::testing::write_file(dir.file("messages.json"),
                                   nlohmann::json{{"messages",
                                                   {{{"role", "user"}, {"content", "Go"}},
                                                    {{"role", "assistant"}, {"content", begun}}}}}
                                       .dump());
    return run("generate --model " + fixture("tiny-a") + " --tokenizer " + perplexity_fixture() +
               " --chat --messages " + dir.file("messages.json") + " --chat-template " +
               dir.file("chat.jinja") + " --continue-final-message --json-object -n 40 --json");
  };
  const std::string begun = "{\"a\": [";
  const nlohmann::json out = success_json(generate_continuing(begun));
  const std::string whole = begun + out["text"].get<std::string>();
  CAPTURE(whole);
  attnscope::engine::GrammarRecognizer json = attnscope::testing::json_mode();
  CHECK(json.accept(whole));
  CHECK(json.finished() == (out["stop_reason"] == "stop"));
  check_one_line_error(generate_continuing("Sure: {"), 1, "not the start of a reply");
}

TEST_CASE("generate --presence-penalty, --frequency-penalty and --logit-bias, as OpenAI's") {
  const double presence = 0.8, frequency = 0.5;
  const std::map<int, double> bias = {{7, 3.5}, {100, -100.0}, {311, 1.25}};
  const RankedSteps steps = generate_ranked(
      "-n 16 --ignore-eos --presence-penalty 0.8 --frequency-penalty 0.5 "
      "--logit-bias 7:3.5,100:-100 --logit-bias 311:1.25");
  std::map<int, int> counts;
  for (std::size_t i = 0; i < steps.chosen.size(); ++i) {
    CAPTURE(i);
    // The arg max of log p - frequency * count - presence * (count > 0) + bias, lowest id on
    // ties.
    int best = -1;
    double best_score = -INFINITY;
    for (const nlohmann::json& entry : steps.ranked[i]) {
      const int id = entry["id"];
      const int count = counts.count(id) ? counts[id] : 0;
      const double score = entry["logprob"].get<double>() - frequency * count -
                           (count > 0 ? presence : 0.0) + (bias.count(id) ? bias.at(id) : 0.0);
      if (score > best_score + 1e-5 || (std::abs(score - best_score) <= 1e-5 && id < best)) {
        best = id;
        best_score = score;
      }
    }
    CHECK(steps.chosen[i] == best);
    ++counts[steps.chosen[i]];
  }
  // Without them, tiny-a repeats itself within 16 tokens; with them, less.
  const RankedSteps plain = generate_ranked("-n 16 --ignore-eos");
  const auto distinct = [](const std::vector<int>& ids) {
    return std::set<int>(ids.begin(), ids.end()).size();
  };
  CHECK(distinct(steps.chosen) > distinct(plain.chosen));
  check_one_line_error(run("generate --model synthetic:tiny --presence-penalty 3"), 2, "[-2, 2]");
  check_one_line_error(run("generate --model synthetic:tiny --logit-bias 42:101"), 1,
                       "a logit_bias must be in [-100, 100]");
  for (const char* bad : {"42", "42:x", ":5"}) {
    check_one_line_error(run(std::string("generate --model synthetic:tiny --logit-bias ") + bad), 2,
                         "--logit-bias");
  }
  check_one_line_error(run("generate --model synthetic:tiny --logit-bias 99999999:1"), 1,
                       "outside the vocabulary");
}

TEST_CASE("perplexity equals transformers' own for every window setting of the fixture") {
  const nlohmann::json reference = read_json(perplexity_fixture() + "/reference.json");
  for (const nlohmann::json& expected : reference["perplexity"]) {
    const std::string windows =
        "--ctx " + expected["ctx"].dump() + " --stride " + expected["stride"].dump();
    CAPTURE(windows);
    const nlohmann::json out = success_json(run_perplexity(windows + " --json"));
    CHECK(out["tokens"] == reference["token_ids"].size());
    CHECK(out["windows"] == expected["windows"]);
    CHECK(out["scored_tokens"] == expected["scored_tokens"]);
    const double ppl = expected["perplexity"].get<double>();
    CHECK(std::abs(out["perplexity"].get<double>() - ppl) <= 1e-4 * ppl);
    CHECK(out["perplexity_stderr"].get<double>() > 0);
    CHECK(out["tokens_per_s"].get<double>() > 0);
  }
  const Result text = require_success(run_perplexity("--ctx 64 --stride 32"));
  CHECK(text.out.starts_with("perplexity "));
  CHECK(text.out.find(" +/- ") != std::string::npos);
  CHECK(text.err.find("tokens/s") != std::string::npos);
}

// The bound on backends against each other. Every backend computes softmax(q k^T / sqrt(D)) v in
// f32 with its own order of sums (naive and math sum in one pass, flash rescales running sums
// block by block), so an attention output differs by a few ulp per summed term: with at most 64
// keys, |rel. error| <~ 64 * 2^-24 ~ 4e-6. Through tiny-a's 2 layers (gains ~ 0.2 sqrt(64) ~ 1.6
// per projection, layer norms renormalising) to logits of magnitude ~ 10-30, that is
// |d z| <~ 30 * 1.6^4 * 4e-6 ~ 8e-4: the test allows 1e-3 (measured: a few 1e-6). KL then follows
// from Hoeffding's lemma (runtime/log_probs.h): KL <= max|d z|^2 / 2, exactly, for every token.
TEST_CASE("perplexity --kl-divergence: 0 against itself, within the f32 bound across backends") {
  attnscope::testing::TempDir dir;
  const std::string baseline = dir.file("naive.npy");
  const std::string windows = "--ctx 48 --stride 17 --json ";
  require_success(run_perplexity(windows + "--attn naive --save-logits " + baseline));
  attnscope::NpyReader saved(baseline);
  CHECK(saved.cols() == 512);

  const nlohmann::json same = success_json(
      run_perplexity(windows + "--attn naive --kl-divergence " + baseline))["kl_divergence"];
  CHECK(same["tokens"] == saved.rows());
  CHECK(same["mean_kl"] == 0.0);
  CHECK(same["max_kl"] == 0.0);
  CHECK(same["top1_agreement_percent"] == 100.0);
  CHECK(same["max_abs_logit_diff"] == 0.0);

  for (const char* attention : {"inplace", "math", "fused", "flash"}) {
    CAPTURE(attention);
    const nlohmann::json kl = success_json(run_perplexity(
        windows + "--attn " + attention + " --kl-divergence " + baseline))["kl_divergence"];
    const double diff = kl["max_abs_logit_diff"].get<double>();
    MESSAGE(std::string(attention) << ": max |logit diff| " << diff << ", max KL " << kl["max_kl"]);
    CHECK(diff < 1e-3);
    CHECK(kl["max_kl"].get<double>() <= diff * diff / 2 + 1e-12);
    CHECK(kl["mean_kl"].get<double>() <= kl["max_kl"].get<double>());
    CHECK(kl["top1_agreement_percent"] == 100.0);
  }
}

TEST_CASE("perplexity refuses bad input with one line") {
  attnscope::testing::TempDir dir;
  const std::string empty = dir.file("empty.txt"), short_text = dir.file("short.txt");
  attnscope::testing::write_file(empty, "");
  attnscope::testing::write_file(short_text, "a");
  const std::string model = "perplexity --model " + fixture("tiny-a") + " --tokenizer " +
                            perplexity_fixture() + " --threads 1 --file ";
  check_one_line_error(run(model + empty), 1, "empty text file");
  check_one_line_error(run(model + short_text), 1, "too short");
  check_one_line_error(run(model + dir.file("missing.txt")), 1, "no such file");
  const std::string text = perplexity_fixture() + "/text.txt";
  check_one_line_error(run(model + text + " --ctx 65"), 1, "context length of 64");
  check_one_line_error(run(model + text + " --ctx 16 --stride 17"), 1, "exceeds --ctx 16");
  check_one_line_error(run(model + text + " --ctx -1"), 2, "--ctx");
  check_one_line_error(run("perplexity --model " + fixture("tiny-a") + " --file " + text), 1,
                       "--tokenizer");

  const std::string baseline = dir.file("base.npy");
  require_success(run(model + text + " --ctx 32 --stride 8 --save-logits " + baseline));
  check_one_line_error(run(model + text + " --ctx 32 --stride 16 --kl-divergence " + baseline), 1,
                       "--stride 8");
  attnscope::testing::write_file(dir.file("other.txt"), "Another text, of other tokens.");
  check_one_line_error(
      run(model + dir.file("other.txt") + " --ctx 32 --stride 8 --kl-divergence " + baseline), 1,
      "another text");
  check_one_line_error(run(model + text + " --kl-divergence " + dir.file("none.npy")), 1,
                       "none.npy: no such file");
  check_one_line_error(run(model + text + " --save-logits a --kl-divergence b"), 2, "excludes");
  // A baseline with a logit that is not finite is refused, naming it (a KL divergence against
  // +inf would read 0); a FIFO as its description is refused, not waited on.
  for (const std::uint32_t bits : {0x7f800000u, 0xff800000u, 0x7fc00000u}) {  // +inf, -inf, NaN
    std::string bytes = read_all(baseline);
    const std::size_t header_len =
        static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    std::memcpy(bytes.data() + 10 + header_len + 4 * 5, &bits, sizeof bits);
    const std::string broken = dir.file("broken.npy");
    attnscope::testing::write_file(broken, bytes);
    attnscope::testing::write_file(broken + ".json", read_all(baseline + ".json"));
    check_one_line_error(run(model + text + " --ctx 32 --stride 8 --kl-divergence " + broken), 1,
                         "broken.npy: holds a logit that is not finite (row 0)");
  }
  const std::string fifo_baseline = dir.file("fifo.npy");
  attnscope::testing::write_file(fifo_baseline, read_all(baseline));
  REQUIRE(::mkfifo((fifo_baseline + ".json").c_str(), 0600) == 0);
  check_one_line_error(run(model + text + " --ctx 32 --stride 8 --kl-divergence " + fifo_baseline),
                       1, "fifo.npy.json: not a regular file");
}

TEST_CASE("study predicts, observes and sets the study's numbers beside them") {
  attnscope::testing::TempDir dir;
  const std::string out = dir.file("study");
  const auto report =
      report_json("study --batch 1 --heads 2 --seq-len 32 --head-dim 8 --reps 3 --threads 1", out);
  REQUIRE(report["backends"].size() == 5);
  for (const auto& b : report["backends"]) {
    CAPTURE(b["backend"]);
    const auto& o = b["observation"];
    CHECK(o["steps_observed"][0] == b["prediction"]["steps"]);
    CHECK(o["temporary_bytes"] == b["prediction"]["temporary_bytes"]);
    CHECK(o["repetitions"] == 3);
    CHECK(o["interval_ms"][0].get<double>() <= o["median_ms"].get<double>());
    CHECK(read_all(out + "/" + o["trace"].get<std::string>()).find("traceEvents") !=
          std::string::npos);
  }
  CHECK(report["backends"][1]["observation"]["x_inplace"] == 1.0);  // inplace is the baseline
  CHECK(report["backends"][2]["published_a100"]["kernels"] == 20);  // SDPA math
  CHECK(report["comparisons"].size() == 10);
  for (const auto& pair : report["comparisons"]) {
    const double low = pair["interval"][0], high = pair["interval"][1];
    CHECK(pair["verdict"] == (low > 1 ? "faster" : high < 1 ? "slower" : "indistinguishable"));
  }
  // Prediction, then observation, then the published numbers: the study's order.
  const std::string md = read_all(out + "/report.md");
  const auto prediction = md.find("## 1. The prediction"), observation = md.find("## 2. The obs");
  const auto published = md.find("## 3. The study's A100 numbers");
  CHECK(prediction < observation);
  CHECK(observation < published);
  CHECK(published != std::string::npos);
  CHECK(md.find("The study's math / inplace = 3.7x on the A100") != std::string::npos);
  // Said as it is: 3 repetitions give no real interval, the shape is not the study's, one thread
  // has no cores to keep busy, and the tiny GFLOP count keeps its significant digits.
  CHECK(md.find("With only 3 repetitions these are not real 95% intervals") != std::string::npos);
  CHECK(md.find("(B=1, H=2, T=32, D=8) is not the study's (B=8, H=16, T=1024, D=64)") !=
        std::string::npos);
  CHECK(md.find("both cores") == std::string::npos);
  CHECK(md.find("one thread here") != std::string::npos);
  CHECK(md.find("| 0.0000338 |") != std::string::npos);  // 4 D x T (T + 1) / 2 x H flops
  check_table_widths(md);
  CHECK(read_all(out + "/time.svg").starts_with("<svg"));
  check_one_line_error(run("study --out x --seq-len 0"), 2, "--seq-len");
  check_one_line_error(run("study --seq-len 8"), 2, "--out");
  check_one_line_error(run("study --out x --attn fastest"), 2, "--attn");
  // q8_0 is a weight format: the attention op alone refuses it, in every tool that runs it
  // (bench-attention's --dtype already lists f32, f16 and bf16 only).
  for (const std::string& command :
       {"study --out " + dir.file("q8") + " --seq-len 8 --dtype q8_0",
        std::string("profile --op attention --seq-len 8 --dtype q8_0")}) {
    CAPTURE(command);
    check_one_line_error(run(command), 1, "q8_0 is a weight format");
  }
  check_one_line_error(run("bench-attention --seq-len 8 --dtype q8_0"), 2, "--dtype");
}

TEST_CASE("compare adds rounds within its budget until the intervals are narrow enough") {
  attnscope::testing::TempDir dir;
  const std::string out = dir.file("report");
  // A target no timing can reach: rounds go on to --max-reps (the tiny model's rounds take
  // milliseconds, far inside the budget).
  const auto report = report_json(
      "compare --model synthetic:tiny --prompt-lens 4 --gen 2 --attn naive,flash --reps 2 "
      "--budget-s 60 --target-percent 0.1 --max-reps 4 --threads 1",
      out);
  CHECK(report["setup"]["rounds"] == 4);
  for (const auto& c : report["cases"]) CHECK(c["prefill_ms"].size() == 4);
  check_one_line_error(run("compare --model synthetic:tiny --out x --reps 1"), 2, "--reps");
  check_one_line_error(run("compare --model synthetic:tiny --out x --budget-s -1"), 2,
                       "--budget-s");
}

// ---- Llama models through the same tools ----

TEST_CASE("generate runs a Llama checkpoint and reproduces transformers' greedy tokens") {
  const std::string dir = attnscope::testing::test_fixtures() + "/hf-llama/gqa-tied-llama3";
  const nlohmann::json reference = read_json(dir + "/reference.json");
  const auto prompt = reference["greedy"]["prompt_ids"].get<std::vector<int>>();
  const auto expected = reference["greedy"]["generated_ids"].get<std::vector<int>>();
  for (const char* attention : {"naive", "flash"}) {
    CAPTURE(attention);
    const nlohmann::json out = success_json(run(
        "generate --model " + dir + " --prompt-ids " + comma_separated(prompt) + " -n " +
        std::to_string(expected.size()) + " --ignore-eos --threads 2 --json --attn " + attention));
    CHECK(out["generated_ids"].get<std::vector<int>>() == expected);
  }
}

TEST_CASE("generate, inspect and bench take synthetic:llama-tiny; a tokenizer.json encodes") {
  const std::string tokenizer = attnscope::testing::test_fixtures() + "/tokenizer_json/llama3";
  const nlohmann::json out =
      success_json(run("generate --model synthetic:llama-tiny --tokenizer " + tokenizer +
                       " --prompt 'Hello, world!' -n 3 --ignore-eos --json"));
  // transformers' ids with the post-processor's <|begin_of_text|> (id 0) in front.
  CHECK(out["prompt_ids"].get<std::vector<int>>() ==
        std::vector<int>{0, 44, 73, 80, 334, 16, 288, 281, 80, 72, 5});
  CHECK(out["generated_ids"].size() == 3);

  const nlohmann::json info = success_json(run("inspect --model synthetic:llama-tiny --json"));
  CHECK(info["config"]["n_kv_heads"] == 2);
  // embed 512x64 + head 512x64 + 2 layers x (2x64 norms + 64x128 qkv + 64x64 o + 3x64x128 mlp)
  // + 64 final norm.
  CHECK(info["parameters"] == 2 * 512 * 64 + 2 * (2 * 64 + 64 * 128 + 64 * 64 + 3 * 64 * 128) + 64);

  const nlohmann::json bench = success_json(
      run("bench -m synthetic:llama-tiny -p 8 -n 4 -r 1 --warmup 0 --threads 1 --output json"));
  CHECK(bench["results"].size() == 2);
}

// The cost model, counted independently from the checkpoint's config.json. wide-heads has 4
// query heads and 2 key/value heads of width D = 16 (not hidden_size / heads = 8) and a SwiGLU
// MLP. Per token, each layer multiplies its q, k, v projections [(Hq + 2 Hkv) D, C], o_proj
// [C, Hq D] and gate, up, down (3 C F weights): 2 FLOPs per weight. A prefill of P tokens adds
// the LM head on the last row (2 V C) and, per layer, attention's 4 Hq D FLOPs per visible
// query-key pair (P (P + 1) / 2 of them), reading q and writing out [Hq, P, D] and reading k and
// v [Hkv, P, D] in f32. A batch of B prompts (--batch) costs all of that B times.
TEST_CASE("profile and inspect cost a Llama by its real head_dim, key/value heads and MLP") {
  const std::string dir = attnscope::testing::test_fixtures() + "/hf-llama/wide-heads";
  const nlohmann::json config = read_json(dir + "/config.json");
  const std::int64_t c = config["hidden_size"], f = config["intermediate_size"];
  const std::int64_t layers = config["num_hidden_layers"], vocab = config["vocab_size"];
  const std::int64_t heads = config["num_attention_heads"],
                     kv_heads = config["num_key_value_heads"];
  const std::int64_t d = config["head_dim"];
  REQUIRE(d != c / heads);
  REQUIRE(kv_heads < heads);

  CHECK(success_json(run("inspect --model " + dir + " --json"))["config"]["head_dim"] == d);

  const std::int64_t prompt = 6;
  const std::int64_t projection_weights =
      layers * ((heads + 2 * kv_heads) * d * c + c * heads * d + 3 * c * f);
  const std::int64_t attention_flops = 4 * heads * d * prompt * (prompt + 1) / 2;
  const std::int64_t attention_bytes = 4 * d * (2 * heads * prompt + 2 * kv_heads * prompt);
  for (const std::int64_t batch : {1, 2}) {
    CAPTURE(batch);
    attnscope::testing::TempDir out;
    const std::string summary = out.file("summary.json");
    require_success(run("profile --model " + dir + " --prompt-len " + std::to_string(prompt) +
                        " --batch " + std::to_string(batch) +
                        " --gen 1 --steps prefill --threads 1 --json " + summary));
    const nlohmann::json rows = read_json(summary)["rows"];
    int found = 0;
    for (const nlohmann::json& row : rows) {
      if (row["name"] == "forward") {
        ++found;
        CHECK(row["calls"] == 1);
        CHECK(row["flops"] ==
              batch * (2 * projection_weights * prompt + 2 * vocab * c + layers * attention_flops));
      }
      if (row["category"] == "attention") {
        ++found;
        CHECK(row["calls"] == layers);
        CHECK(row["flops"] == batch * layers * attention_flops);
        // What flash moves at least: q, k, v and out, and its temporaries (a call's measured
        // peak) written and read once.
        const std::int64_t temporaries = row["peak_bytes"];
        CHECK(row["bytes"] == batch * layers * attention_bytes + 2 * layers * temporaries);
      }
    }
    CHECK(found == 2);
  }
}

TEST_CASE("a failed write is an error naming the output, never a silent success") {
  // /dev/full accepts open() and fails every write with ENOSPC, as a full disk does.
  if (!std::filesystem::exists("/dev/full")) {
    MESSAGE("SKIPPED: no /dev/full on this system");
    return;
  }
  attnscope::testing::TempDir dir;
  // Standard output itself: the tokens are lost, so the run must not report success.
  const std::string err = dir.file("stderr");
  const int status =
      std::system((std::string(ATTNSCOPE_BINARY) +
                   " generate --model synthetic:tiny -n 4 --threads 1 >/dev/full 2>" + err)
                      .c_str());
  const Result to_full{WIFEXITED(status) ? WEXITSTATUS(status) : -1, "", read_all(err)};
  check_one_line_error(to_full, 1, "standard output: write failed");
  // So is the help or the version text lost.
  for (const char* asked : {"--help", "generate --help", "--version"}) {
    CAPTURE(asked);
    const int help_status =
        std::system((std::string(ATTNSCOPE_BINARY) + " " + asked + " >/dev/full 2>" + err).c_str());
    check_one_line_error(
        {WIFEXITED(help_status) ? WEXITSTATUS(help_status) : -1, "", read_all(err)}, 1,
        "standard output: write failed");
  }

  const std::string tiny = "profile --model synthetic:tiny --prompt-len 4 --gen 1 --threads 1 ";
  check_one_line_error(run(tiny + "--trace /dev/full"), 1, "/dev/full: write failed");
  check_one_line_error(run(tiny + "--json /dev/full"), 1, "/dev/full: write failed");

  // A report file that cannot be written: a link to /dev/full where the command writes `file`.
  for (const auto& [command, file] :
       {std::pair{"compare --model synthetic:tiny --prompt-lens 4 --gen 2 --reps 2", "report.md"},
        std::pair{"study --batch 1 --heads 2 --seq-len 32 --head-dim 8 --reps 3",
                  "trace-naive.json"}}) {
    const std::string out = dir.file(std::string(file) + ".folder");
    std::filesystem::create_directories(out);
    std::filesystem::create_symlink("/dev/full", out + "/" + file);
    check_one_line_error(run(std::string(command) + " --threads 1 --out " + out), 1,
                         std::string(file) + ": write failed");
  }
}

TEST_CASE("inspect shows how positions enter and whether the LM head is the embedding") {
  const std::string llama = attnscope::testing::test_fixtures() + "/hf-llama/";
  auto config_of = [](const std::string& model) {
    const Result r = run("inspect --json --model " + model);
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out)["config"];
  };
  const auto tied = config_of(llama + "gqa-tied-llama3");
  CHECK(tied["positions"] == "rotary");
  CHECK(tied["rope_theta"] == 10000.0);
  CHECK(tied["rope_scaling"] == "llama3 factor=8 low_freq_factor=1 high_freq_factor=4 original=16");
  CHECK(tied["tied_embeddings"] == true);
  // config.json says tied, the checkpoint's own different head is used (as transformers does).
  const auto own_head = config_of(llama + "tied-config-own-head");
  CHECK(own_head["tied_embeddings"] == false);
  CHECK(own_head["rope_scaling"] == "none");
  const auto gpt2 = config_of("synthetic:tiny");
  CHECK(gpt2["positions"] == "learned");
  CHECK(gpt2["tied_embeddings"] == true);
  CHECK_FALSE(gpt2.contains("rope_theta"));
  // The text form lines tensor names up whatever their length.
  const Result text = run("inspect --model " + llama + "gqa-tied-llama3");
  CHECK(text.out.find("post_attention_layernorm.weight  F32") != std::string::npos);
}

TEST_CASE("a mistyped command is named with the nearest one; help is a command") {
  check_one_line_error(run("generat --model synthetic:tiny"), 2,
                       "unknown command 'generat' (did you mean 'generate'?)");
  check_one_line_error(run("frobnicate"), 2, "the commands are generate, tokenize");
  const Result help = run("help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("perplexity") != std::string::npos);
  const Result bench_help = run("help bench");
  CHECK(bench_help.exit_code == 0);
  CHECK(bench_help.out.find("--prompt-len") != std::string::npos);
}

TEST_CASE("sampling flags: one short usage error each, NaN and inf alike; --seed -1 is random") {
  const std::string tiny = "generate -m synthetic:tiny -n 2 -t 1 ";
  const Result top_k = run(tiny + "--top-k -1");
  check_one_line_error(top_k, 2, "--top-k: must be >= 0");
  CHECK(top_k.err.size() < 120);  // no 309-digit bound
  check_one_line_error(run(tiny + "--temperature nan"), 2, "--temperature: must be a number");
  check_one_line_error(run(tiny + "--temp inf"), 2, "--temperature: must be a number");
  const Result attn = run(tiny + "--attn fastest");
  check_one_line_error(attn, 2, "--attn: unknown attention backend 'fastest'");
  CHECK(attn.err.find("--attn: --attn:") == std::string::npos);
  check_one_line_error(run(tiny + "--prompt-ids ''"), 1, "--prompt-ids: no token ids given");
  check_one_line_error(run(tiny + "--seed -2"), 2, "--seed");

  const Result random = run(tiny + "--seed -1 --temp 1 --json");
  CAPTURE(random.err);
  REQUIRE(random.exit_code == 0);
  const std::string marker = "attnscope: seed ";
  const std::size_t at = random.err.find(marker);
  REQUIRE(at != std::string::npos);
  const std::uint64_t printed = std::stoull(random.err.substr(at + marker.size()));
  const auto out = nlohmann::json::parse(random.out);
  CHECK(out["seed"].get<std::uint64_t>() == printed);
  // The printed seed reproduces the run.
  const auto again = nlohmann::json::parse(
      run(tiny + "--temp 1 --json --seed " + std::to_string(printed % (1ull << 63))).out);
  if (printed < (1ull << 63)) CHECK(again["generated_ids"] == out["generated_ids"]);
}

TEST_CASE("defaults a llama.cpp or transformers user expects: flash, short flags, bounded ctx") {
  const Result generated = run("generate -m synthetic:tiny -n 2 -t 1 --json");
  CAPTURE(generated.err);
  REQUIRE(generated.exit_code == 0);
  CHECK(nlohmann::json::parse(generated.out)["attention"] == "flash");
  // profile's default prompt fits a model whose context is shorter than 128 + --gen.
  const Result profiled = run("profile -m synthetic:tiny -t 1 --gen 2");
  CAPTURE(profiled.err);
  CHECK(profiled.exit_code == 0);
  CHECK(profiled.out.find("attention flash") != std::string::npos);
  // perplexity: -f and -c, and a directory is named as one.
  check_one_line_error(run("perplexity -m synthetic:tiny -f /tmp -c 16"), 1,
                       "/tmp: not a regular file");
  // More threads than the machine has: said once, and the run goes on.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const Result oversubscribed =
      run("generate -m synthetic:tiny -n 1 -t " + std::to_string(cores + 1));
  CHECK(oversubscribed.exit_code == 0);
  CHECK(oversubscribed.err.find("warning: --threads " + std::to_string(cores + 1) +
                                " exceeds this machine's") != std::string::npos);
}

TEST_CASE("a request too large for memory is refused up front, with the flag to change") {
  // 1M rows of GPT-2: about 2 TiB of KV cache and logits. Refused before anything is allocated
  // (the run would otherwise grow to the machine's memory before failing).
  const Result bench = run("bench -m synthetic:gpt2 -b 1048576 -p 16 -n 0 -r 1 -t 1");
  check_one_line_error(bench, 1, "positions need at least");
  CHECK(bench.err.find("KV cache") != std::string::npos);
  CHECK(bench.err.find("(lower -b/--batch") != std::string::npos);
  // A decode test's largest step is one token per row: its cache alone is refused.
  check_one_line_error(run("bench -m synthetic:gpt2 -b 1048576 -p 0 -n 4 -r 1 -t 1"), 1,
                       "tg4: batch: 1048576 x 4 positions need at least");
  check_one_line_error(run("profile -m synthetic:gpt2 --batch 1048576 --prompt-len 8 --gen 2"), 1,
                       "(lower --batch, --prompt-len or --gen)");
}

TEST_CASE("profile --op attention --decode profiles one query against the cache") {
  attnscope::testing::TempDir dir;
  const std::string summary = dir.file("decode.json");
  const Result r =
      run("profile --op attention --attn fused --batch 1 --heads 2 --seq-len 32 "
          "--head-dim 8 --decode --reps 2 --threads 1 --json " +
          summary);
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  const auto step = read_json(summary)["facts"]["steps"][0];
  CHECK(step["q_len"] == 1);
  CHECK(step["kv_len"] == 32);
  CHECK(step["steps_observed_min"] == step["steps_expected"]);
  CHECK(step["temporary_bytes"] == step["temporary_bytes_expected"]);
  check_one_line_error(run("profile -m synthetic:tiny --decode"), 2, "--decode");
}

// ---- attnscope explain, and the roofline of profile ----

// Every explain and --roofline run of this process reads one ceilings cache, in a temporary
// folder (never the user's ~/.cache): the first measures, the rest read it.
static std::string ceilings_cache_dir() {
  static attnscope::testing::TempDir dir;
  static const bool set = setenv("ATTNSCOPE_CACHE_DIR", dir.path().c_str(), 1) == 0;
  REQUIRE(set);
  return dir.path().string();
}

TEST_CASE("explain: FLOPs and bytes equal the shape's formulas, and every plan matches its trace") {
  ceilings_cache_dir();
  attnscope::testing::TempDir out;
  const std::int64_t b = 2, h = 2, t = 40, d = 16;
  require_success(
      run("explain --batch 2 --heads 2 --seq-len 40 --head-dim 16 --reps 2 "
          "--threads 1 --json " +
          out.file("e.json") + " --roofline " + out.file("r.svg")));
  const nlohmann::json report = read_json(out.file("e.json"));
  REQUIRE(report["calls"].size() == 5);
  CHECK(report["cannot_run"].empty());
  const double ridge = report["ceilings"]["ridge"];
  CHECK(ridge > 0);
  for (const nlohmann::json& call : report["calls"]) {
    CAPTURE(call["backend"]);
    const nlohmann::json& cost = call["cost"];
    // FlashAttention's causal convention, exact per visible pair: 4 D per pair, T (T + 1) / 2.
    CHECK(cost["flops"] == doctest::Approx(4.0 * b * h * d * t * (t + 1) / 2));
    CHECK(cost["bytes"] == 4 * b * h * t * d * 4);  // q, k, v read, out written, in f32
    CHECK(cost["bytes_with_temporaries"] ==
          cost["bytes"].get<std::int64_t>() + 2 * cost["temporary_bytes"].get<std::int64_t>());
    CHECK(call["plan_matches_trace"] == true);
    CHECK(call["observed_steps"].size() == cost["steps"]);
    const double intensity = call["intensity"];
    CHECK(call["bound_by"] == (intensity < ridge ? "memory" : "compute"));
    CHECK(call["roofline_share"] > 0);
    CHECK(call["plan"]["materialises_scores"] == (call["backend"] != "flash"));
  }
  const std::string svg = read_all(out.file("r.svg"));
  CHECK(svg.rfind("<svg", 0) == 0);
  for (const char* backend : {"naive", "inplace", "math", "fused", "flash"}) {
    CHECK(svg.find(std::string(">") + backend + "<") != std::string::npos);
  }
}

TEST_CASE("explain: flash's split-KV choice follows the threads, and the trace shows it") {
  ceilings_cache_dir();
  // One head of one query against 1024 keys: on 2 threads it cannot share out, so it splits.
  const std::string decode =
      "explain --attn flash --batch 1 --heads 1 --seq-len 1024 --decode "
      "--reps 2 --json ";
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    attnscope::testing::TempDir out;
    require_success(run(decode + out.file("e.json") + " --threads " + std::to_string(threads)));
    const nlohmann::json call = read_json(out.file("e.json"))["calls"][0];
    std::vector<std::string> observed;
    for (const nlohmann::json& step : call["observed_steps"]) observed.push_back(step["name"]);
    const std::vector<std::string> expected =
        threads == 1
            ? std::vector<std::string>{"flash.tiled"}
            : std::vector<std::string>{"flash.split_kv_partials", "flash.split_kv_combine"};
    CHECK(observed == expected);
    CHECK(call["plan"]["steps"] == expected);
    CHECK(call["plan_matches_trace"] == true);
    CHECK(call["plan"]["path"] == (threads == 1 ? "tiled" : "split-KV in 2 chunks"));
  }
}

TEST_CASE("explain lists what cannot run and why; a model step gets its attention per layer") {
  const std::string cache = ceilings_cache_dir();
  attnscope::testing::TempDir out;
  // bf16 on the cpu: only math takes it; the others are listed with the dtype rule, not run.
  const Result bf16 =
      require_success(run("explain --batch 1 --heads 2 --seq-len 32 --dtype bf16 "
                          "--reps 2 --threads 1 --json " +
                          out.file("b.json")));
  CHECK(bf16.out.find("cannot run here:") != std::string::npos);
  const nlohmann::json report = read_json(out.file("b.json"));
  REQUIRE(report["calls"].size() == 1);
  CHECK(report["calls"][0]["backend"] == "math");
  REQUIRE(report["cannot_run"].size() == 4);
  for (const nlohmann::json& refused : report["cannot_run"]) {
    CHECK(refused["reason"].get<std::string>().find("bf16") != std::string::npos);
  }
  // The ceilings came from the cache the earlier runs wrote.
  CHECK(report["ceilings"]["source"].get<std::string>().rfind("cached in " + cache, 0) == 0);
  // Too large for this machine's memory: refused up front, with the bytes.
  check_one_line_error(run("explain --attn naive --batch 8 --heads 16 --seq-len 65536 "
                           "--threads 1 --reps 2 --json " +
                           out.file("h.json")),
                       1, "no backend could run");
  const nlohmann::json huge = read_json(out.file("h.json"));
  REQUIRE(huge["cannot_run"].size() == 1);
  CHECK(huge["cannot_run"][0]["backend"] == "naive");
  CHECK(huge["cannot_run"][0]["reason"].get<std::string>().find("needs at least") !=
        std::string::npos);

  // A model: its prefill and one decode step, each with one attention call per layer.
  require_success(
      run("explain --model synthetic:tiny --attn naive,flash --prompt-len 8 "
          "--threads 1 --json " +
          out.file("m.json")));
  const nlohmann::json model = read_json(out.file("m.json"));
  REQUIRE(model["calls"].size() == 4);
  for (const nlohmann::json& call : model["calls"]) {
    CAPTURE(call["backend"]);
    CAPTURE(call["phase"]);
    CHECK(call["shape"]["q_len"] == (call["phase"] == "prefill" ? 8 : 1));
    CHECK(call["plan_matches_trace"] == true);
    REQUIRE(call["layers"].size() == 2);  // synthetic:tiny's layers
    double layer_sum = 0;
    for (const nlohmann::json& layer : call["layers"]) {
      CHECK(layer["calls"] == 1);
      layer_sum += layer["attention_ms"].get<double>();
    }
    CHECK(layer_sum == doctest::Approx(2 * call["ms_per_call"].get<double>()));
  }

  check_one_line_error(run("explain --model synthetic:tiny --heads 4"), 2, "--heads");
  check_one_line_error(run("explain --paged 16"), 2, "--paged");
  check_one_line_error(run("explain --model synthetic:tiny --batch 2"), 2, "--batch");
  check_one_line_error(run("explain --attn bogus"), 2, "valid: all");
}

TEST_CASE("profile: attention per layer adds up to each step's attention; --roofline draws it") {
  ceilings_cache_dir();
  attnscope::testing::TempDir out;
  const Result printed = require_success(
      run("profile --model synthetic:tiny --prompt-len 8 --gen 2 --threads 1 --summary --json " +
          out.file("p.json") + " --roofline " + out.file("r.svg")));
  CHECK(printed.out.find("attention per layer, prefill steps") != std::string::npos);
  CHECK(printed.out.find("attention per layer, decode steps") != std::string::npos);
  int profiled = 0;
  const nlohmann::json summary = read_json(out.file("p.json"));
  for (const nlohmann::json& step : summary["facts"]["steps"]) {
    if (!step["profiled"].get<bool>()) continue;
    ++profiled;
    double sum = 0;
    for (const nlohmann::json& layer : step["attention_by_layer"]) {
      sum += layer["attention_ms"].get<double>();
    }
    CHECK(step["attention_by_layer"].size() == 2);
    CHECK(sum == doctest::Approx(step["attention_ms"].get<double>()));
  }
  CHECK(profiled == 3);  // the prefill and 2 decode steps
  // First an unprofiled prefill and decode step, so that no profiled op pays for a first touch.
  const nlohmann::json& steps = summary["facts"]["steps"];
  REQUIRE(steps.size() == 7);  // 2 warm-up, the prefill, 4 decode steps (2 profiled)
  CHECK(steps[0]["phase"] == "warm-up prefill");
  CHECK(steps[1]["phase"] == "warm-up decode");
  CHECK(steps[2]["phase"] == "prefill");
  CHECK(steps[2]["kv_len"] == 8);  // the warm-up's tokens left the cache
  CHECK_FALSE(steps[0]["profiled"].get<bool>());
  const std::string svg = read_all(out.file("r.svg"));
  CHECK(svg.find(">attention.flash<") != std::string::npos);
  CHECK(svg.find(">linear<") != std::string::npos);
  const std::size_t not_drawn = svg.find("not drawn (no FLOPs): ");
  REQUIRE(not_drawn != std::string::npos);
  CHECK(svg.find("split_qkv", not_drawn) != std::string::npos);
}

TEST_CASE("profile --cuda-graphs and explain's outputs refuse what they cannot do, in one line") {
  ceilings_cache_dir();
  check_one_line_error(run("profile --model synthetic:tiny --prompt-len 4 --gen 1 --cuda-graphs"),
                       1, "--cuda-graphs");
  check_one_line_error(run("profile --op attention --cuda-graphs"), 2, "--cuda-graphs");
  const std::string tiny = "explain --attn flash --batch 1 --heads 1 --seq-len 16 --reps 2 -t 1";
  check_one_line_error(run(tiny + " --json /dev/full"), 1, "/dev/full");
  check_one_line_error(run(tiny + " --roofline /dev/full"), 1, "/dev/full");
  check_one_line_error(run("profile --model synthetic:tiny --prompt-len 4 --gen 1 --threads 1 "
                           "--roofline /dev/full"),
                       1, "/dev/full");
}
