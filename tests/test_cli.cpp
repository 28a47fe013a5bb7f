// The `attnscope` binary from the outside: exit codes, one-line errors, JSON output, and
// end-to-end greedy generation on a Hugging Face fixture.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fixture_paths.h"
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

}  // namespace

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
  for (const char* command : {"", "generate", "tokenize", "detokenize", "inspect"}) {
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
  check_one_line_error(run(tiny_a + " --prompt-ids 1,2 -n 63"), 1, "context length");
  check_one_line_error(run(tiny_a + " --prompt-ids 1,512"), 1, "vocabulary");
  check_one_line_error(run(tiny_a + " --prompt-ids 1,-2"), 1, "not a token id");
  check_one_line_error(run(tiny_a + " --prompt hello"), 1, "tokenizer");
}

TEST_CASE("generate --json reproduces Hugging Face's greedy continuation with every backend") {
  std::ifstream in(fixture("tiny-b") + "/reference.json");
  const nlohmann::json reference = nlohmann::json::parse(in);
  const auto prompt = reference["greedy"]["prompt_ids"].get<std::vector<int>>();
  const auto expected = reference["greedy"]["generated_ids"].get<std::vector<int>>();
  std::string ids;
  for (int id : prompt) {
    if (!ids.empty()) ids += ',';
    ids += std::to_string(id);
  }
  for (const char* attention : {"naive", "eager", "inplace", "math", "fused", "flash"}) {
    const Result r = run("generate --model " + fixture("tiny-b") + " --prompt-ids " + ids +
                         " -n " + std::to_string(expected.size()) +
                         " --ignore-eos --threads 2 --json --attn " + attention);
    CAPTURE(attention);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json out = nlohmann::json::parse(r.out);  // stdout holds exactly one object
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
  const Result a = run(base + " --seed 5");
  const Result b = run(base + " --seed 5");
  const Result c = run(base + " --seed 6");
  REQUIRE(a.exit_code == 0);
  const auto json_a = nlohmann::json::parse(a.out);
  CHECK(json_a["prompt_ids"] == nlohmann::json::array({511}));  // tiny-a's eos_token_id
  CHECK(json_a["generated_ids"] == nlohmann::json::parse(b.out)["generated_ids"]);
  CHECK(json_a["generated_ids"] != nlohmann::json::parse(c.out)["generated_ids"]);
}

TEST_CASE("inspect reports config, parameters and the stored tensors") {
  const Result r = run("inspect --model " + fixture("tiny-b") + " --json");
  REQUIRE(r.exit_code == 0);
  const nlohmann::json out = nlohmann::json::parse(r.out);
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

TEST_CASE("tokenize and detokenize use OpenAI's GPT-2 vocabulary") {
  if (!attnscope::testing::shared_fixtures_present()) return;
  const std::string dir = attnscope::testing::gpt2_tokenizer_dir();
  const Result encoded = run("tokenize --tokenizer " + dir + " --text 'Hello, world!'");
  CHECK(encoded.exit_code == 0);
  CHECK(encoded.out == "[15496,11,995,0]\n");
  const Result from_stdin = run("tokenize --tokenizer " + dir, "Attention is all you need.");
  CHECK(from_stdin.out == "[8086,1463,318,477,345,761,13]\n");
  const Result decoded = run("detokenize --tokenizer " + dir + " 464,2068 7586");
  CHECK(decoded.exit_code == 0);
  CHECK(decoded.out == "The quick brown\n");
  check_one_line_error(run("detokenize --tokenizer " + dir + " 50257"), 1, "50257");
  check_one_line_error(run("tokenize --tokenizer /nowhere --text x"), 1, "/nowhere");
  const Result text = run("generate --model synthetic:tiny --tokenizer " + dir +
                          " --prompt 'The quick' -n 3 --json");
  CHECK(nlohmann::json::parse(text.out)["prompt_ids"] == nlohmann::json::array({464, 2068}));
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
  const Result r = run(kTinyBench + " --output json");
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json report = nlohmann::json::parse(r.out);
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
}

TEST_CASE("bench-attention prints a Markdown table, one row per chosen backend") {
  const Result all = run(kTinyBench);
  CAPTURE(all.err);
  REQUIRE(all.exit_code == 0);
  CHECK(all.out.find("| backend | median ms |") != std::string::npos);
  CHECK(all.out.find("speedup vs naive") != std::string::npos);

  const Result two = run(kTinyBench + " --attn naive,fused");
  REQUIRE(two.exit_code == 0);
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
  check_one_line_error(run(kTinyBench + " --device cuda"), 1, "not available in this build");

  // bf16: math upcasts it; the f32-only backends say why they cannot, and the run still succeeds.
  const Result r = run(kTinyBench + " --dtype bf16 --output json");
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json report = nlohmann::json::parse(r.out);
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
