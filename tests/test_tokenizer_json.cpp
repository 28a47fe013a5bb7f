// Tests of the tokenizer.json (Hugging Face) BPE tokenizer, byte-level and SentencePiece.
//
// Exact ids against transformers: tests/fixtures/tokenizer_json/<style>/ holds a small tokenizer
// of each style (GPT-2, SmolLM2, Llama 3, Qwen2 with its NFC normalizer) trained and saved by the
// `tokenizers` library and transformers, and the ids and decoded text transformers gave varied
// texts (tools/fixtures/make_tokenizer_json_cases.py); the llama2* styles are SentencePiece
// models converted by transformers' LlamaConverter, as Llama 2's and TinyLlama's files are
// (tools/fixtures/make_sentencepiece_tokenizer_cases.py). Round trips of seeded random text and
// bytes; the merge order, the older merges format, each SentencePiece option against the ids the
// `tokenizers` library gives, and the refusals on files written to a scratch directory.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "fixture_paths.h"
#include "models/tokenizer/byte_alphabet.h"
#include "models/tokenizer/json_file.h"
#include "models/tokenizer/normalizer.h"
#include "models/tokenizer/tokenizer_json.h"
#include "random_text.h"
#include "runtime/error.h"
#include "safetensors_writer.h"

namespace {

using attnscope::Error;
using attnscope::tokenizer::TokenizerJson;
using Ids = std::vector<std::int32_t>;
using Json = nlohmann::json;
namespace fs = std::filesystem;

constexpr std::array<const char*, 7> kStyles{
    "gpt2", "smollm2", "llama3", "qwen2", "llama2", "llama2-metaspace", "llama2-no-fallback"};

std::string style_dir(const std::string& style) {
  return attnscope::testing::test_fixtures() + "/tokenizer_json/" + style;
}

Json read_json(const std::string& path) {
  std::ifstream file(path);
  REQUIRE_MESSAGE(file.is_open(), "cannot open " << path);
  return Json::parse(file);
}

struct StyleCase {
  std::string text;
  Ids ids;
  Ids ids_with_special;
  std::string decoded;
};

std::vector<StyleCase> read_style_cases(const std::string& style) {
  const std::string path = style_dir(style) + "/cases.jsonl";
  std::ifstream file(path);
  REQUIRE_MESSAGE(file.is_open(), "cannot open " << path);
  std::vector<StyleCase> cases;
  for (std::string line; std::getline(file, line);) {
    if (line.empty()) continue;
    const Json entry = Json::parse(line);
    cases.push_back({entry.at("text").get<std::string>(), entry.at("ids").get<Ids>(),
                     entry.at("ids_with_special").get<Ids>(),
                     entry.at("decoded").get<std::string>()});
  }
  return cases;
}

using attnscope::testing::TempDir;

// Writes `tokenizer` as dir/tokenizer.json, where TokenizerJson::load(dir) looks for it.
void write_tokenizer_json(const TempDir& dir, const Json& tokenizer) {
  attnscope::testing::write_file(dir.file("tokenizer.json"), tokenizer.dump());
}

// A minimal byte-level BPE tokenizer.json: byte b has id b, then "aa" 256, "aaa" 257; the merges
// "aa a" before "a a" (an order no training makes, where the merge orders differ).
Json small_tokenizer() {
  Json vocab = Json::object();
  for (int byte = 0; byte < 256; ++byte) {
    vocab[attnscope::tokenizer::ByteAlphabet::character_of_byte(static_cast<unsigned char>(byte))] =
        byte;
  }
  vocab["aa"] = 256;
  vocab["aaa"] = 257;
  const Json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", true},
                           {"use_regex", true}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", Json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level},
          {"post_processor", nullptr},
          {"decoder", byte_level},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", Json::array({Json::array({"aa", "a"}), Json::array({"a", "a"})})}}}};
}

// The message of the Error that loading `tokenizer` throws, or "no error".
std::string load_error(const Json& tokenizer) {
  const TempDir dir;
  write_tokenizer_json(dir, tokenizer);
  try {
    TokenizerJson::load(dir.path());
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

bool contains(const std::string& message, const std::string& part) {
  return message.find(part) != std::string::npos;
}

// Random text from code point ranges picked uniformly (ASCII, whitespace, Latin, combining marks,
// Arabic, CJK, emoji, private use, the astral planes), sometimes one of `specials`.
std::string random_text(std::mt19937& rng, std::size_t length,
                        const std::vector<std::string>& specials) {
  constexpr attnscope::testing::CodePointRange kRanges[] = {
      {0x20, 0x7E},     {0x09, 0x0D},       {0xA0, 0x24F},    {0x300, 0x36F},     {0x600, 0x6FF},
      {0x4E00, 0x9FFF}, {0x1F300, 0x1F9FF}, {0xE000, 0xFFFF}, {0x10000, 0x10FFFF}};
  return attnscope::testing::random_text(rng, length, kRanges,
                                         [&] { return specials[rng() % specials.size()]; });
}

}  // namespace

TEST_CASE("the ids and decoded text of transformers, for each style of tokenizer.json") {
  for (const char* style : kStyles) {
    CAPTURE(style);
    const TokenizerJson tokenizer = TokenizerJson::load(style_dir(style));
    const std::vector<StyleCase> cases = read_style_cases(style);
    REQUIRE(cases.size() > 300);
    for (const StyleCase& reference : cases) {
      CAPTURE(reference.text);
      CHECK(tokenizer.encode(reference.text, false) == reference.ids);
      CHECK(tokenizer.encode(reference.text, true) == reference.ids_with_special);
      CHECK(tokenizer.decode(reference.ids) == reference.decoded);
    }
  }
}

TEST_CASE("Llama 3 style: <|begin_of_text|> only with add_special_tokens, ignore_merges") {
  const TokenizerJson tokenizer = TokenizerJson::load(style_dir("llama3") + "/tokenizer.json");
  const std::optional<std::int32_t> bos = tokenizer.token_id("<|begin_of_text|>");
  REQUIRE(bos.has_value());
  const Ids plain = tokenizer.encode("Hello", false);
  Ids with_bos{*bos};
  with_bos.insert(with_bos.end(), plain.begin(), plain.end());
  CHECK(tokenizer.encode("Hello", true) == with_bos);
  CHECK(tokenizer.encode("", true) == Ids{*bos});
  CHECK(tokenizer.encode("", false).empty());
  CHECK(tokenizer.vocab_size() == 703);  // 700 trained (5 special) + 3 added
  CHECK(tokenizer.token_bytes(*tokenizer.token_id("<mask>")) == "<mask>");
  CHECK(tokenizer.token_bytes(*tokenizer.token_id(" spaced ")) == " spaced ");
  // No post-processor tokens in the other styles.
  const TokenizerJson smollm2 = TokenizerJson::load(style_dir("smollm2"));
  CHECK(smollm2.encode("Hello", true) == smollm2.encode("Hello", false));
}

TEST_CASE("merges written as \"left right\" strings load as the [left, right] pairs do") {
  Json tokenizer = read_json(style_dir("llama3") + "/tokenizer.json");
  REQUIRE(tokenizer["model"]["merges"][0].is_array());
  for (Json& merge : tokenizer["model"]["merges"]) {
    merge = merge[0].get<std::string>() + " " + merge[1].get<std::string>();
  }
  const TempDir dir;
  write_tokenizer_json(dir, tokenizer);
  const TokenizerJson strings = TokenizerJson::load(dir.path());
  const TokenizerJson pairs = TokenizerJson::load(style_dir("llama3"));
  for (const StyleCase& reference : read_style_cases("llama3")) {
    CAPTURE(reference.text);
    CHECK(strings.encode(reference.text, false) == pairs.encode(reference.text, false));
  }
}

TEST_CASE("BPE merges the best pair first, pairs just made included, as `tokenizers` does") {
  const TempDir dir;
  write_tokenizer_json(dir, small_tokenizer());
  const TokenizerJson tokenizer = TokenizerJson::load(dir.path());
  // The ids tokenizers 0.23.3 gives (GPT-2's rounds would give "aaaa" as {256, 256}).
  CHECK(tokenizer.encode("aaaa", false) == Ids{257, 'a'});
  CHECK(tokenizer.encode("aaa", false) == Ids{257});
  CHECK(tokenizer.encode("aaaaa", false) == Ids{257, 256});
}

namespace {

// `text` as an NFC normalizer leaves it: each stretch between the special tokens in NFC (a
// normalizer never sees the added tokens, so a mark after one does not compose with its last
// character).
std::string nfc_between(std::string_view text, const std::vector<std::string>& specials) {
  std::string normalized;
  while (!text.empty()) {
    std::size_t next = text.size(), length = 0;
    for (const std::string& special : specials) {
      const std::size_t found = text.find(special);
      if (found < next) std::tie(next, length) = std::pair(found, special.size());
    }
    normalized += attnscope::tokenizer::unicode_normalize(text.substr(0, next),
                                                          attnscope::tokenizer::UnicodeForm::NFC);
    normalized += text.substr(next, length);
    text.remove_prefix(std::min(text.size(), next + length));
  }
  return normalized;
}

}  // namespace

TEST_CASE("unicode_normalize: NFC, NFD, NFKC and NFKD equal Python's unicodedata") {
  using attnscope::tokenizer::unicode_normalize;
  using attnscope::tokenizer::UnicodeForm;
  // Every code point of Unicode 14 that a form changes, and random runs of marks and jamo
  // (tools/fixtures/make_unicode_normalization_cases.py).
  const std::string path = attnscope::testing::test_fixtures() + "/unicode/normalization.jsonl";
  std::ifstream file(path);
  REQUIRE_MESSAGE(file.is_open(), "cannot open " << path);
  int rows = 0, mismatches = 0;
  for (std::string line; std::getline(file, line); ++rows) {
    const Json row = Json::parse(line);
    const std::string text = row.at(0).get<std::string>();
    const UnicodeForm forms[] = {UnicodeForm::NFC, UnicodeForm::NFD, UnicodeForm::NFKC,
                                 UnicodeForm::NFKD};
    for (std::size_t i = 0; i < 4; ++i) {
      if (unicode_normalize(text, forms[i]) == row.at(i + 1).get<std::string>()) continue;
      if (++mismatches <= 10) MESSAGE("form " << i << " of " << Json(text).dump());
    }
  }
  CHECK(rows > 6000);
  CHECK(mismatches == 0);
  // Bytes that are not UTF-8 stay; the valid runs around them are normalized each on its own.
  CHECK(unicode_normalize("e\xcc\x81\xff"
                          "A\xcc\x8a\xc0",
                          UnicodeForm::NFC) == "\xc3\xa9\xff\xc3\x85\xc0");
  CHECK(unicode_normalize("", UnicodeForm::NFKC).empty());
  CHECK(unicode_normalize(std::string("a\0b", 3), UnicodeForm::NFC) == std::string("a\0b", 3));
}

TEST_CASE("decode(encode(text)) == text for random text and random bytes") {
  std::mt19937 rng(20261130);
  std::uniform_int_distribution<std::size_t> pick_length(0, 60);
  const std::vector<std::string> specials = {"<|endoftext|>", "<|im_end|>"};
  // llama2 (SentencePiece, byte_fallback): its decoder strips the space its normalizer adds, and
  // "<|endoftext|>" is text to it, not a special token. qwen2's NFC normalizer rewrites the text
  // (NFC itself is checked against Python's below): decoding gives the text in NFC.
  for (const std::string style : {"gpt2", "smollm2", "qwen2", "llama2"}) {
    CAPTURE(style);
    const TokenizerJson tokenizer = TokenizerJson::load(style_dir(style));
    const auto expected = [&](const std::string& text) {
      return style == "qwen2" ? nfc_between(text, specials) : text;
    };
    int normalized = 0;
    for (int i = 0; i < 500; ++i) {
      const std::string text = random_text(rng, pick_length(rng), specials);
      CAPTURE(text);
      CHECK(tokenizer.decode(tokenizer.encode(text, false)) == expected(text));
      normalized += expected(text) != text;
    }
    if (style == "qwen2") CHECK(normalized > 10);  // the random texts do exercise NFC
    // Bytes that are not valid UTF-8 become their own byte tokens (byte fallback tokens).
    for (int i = 0; i < 500; ++i) {
      std::string bytes;
      for (std::size_t n = pick_length(rng); n > 0; --n) bytes += static_cast<char>(rng() % 256);
      CAPTURE(bytes);
      CHECK(tokenizer.decode(tokenizer.encode(bytes, false)) == expected(bytes));
    }
  }
}

TEST_CASE("decode and token_bytes refuse ids that name no token") {
  const TempDir dir;
  write_tokenizer_json(dir, small_tokenizer());
  const TokenizerJson tokenizer = TokenizerJson::load(dir.path());
  CHECK(tokenizer.vocab_size() == 258);
  CHECK(tokenizer.decode(Ids{256, ' ', 257}) == "aa aaa");
  CHECK_THROWS_AS(tokenizer.decode(Ids{258}), Error);
  CHECK_THROWS_AS(tokenizer.token_bytes(-1), Error);
  CHECK(tokenizer.token_id("aa") == 256);
  CHECK_FALSE(tokenizer.token_id("zzz").has_value());
}

TEST_CASE("load refuses what it does not support, in one line naming it") {
  Json tokenizer = small_tokenizer();
  CHECK(load_error(tokenizer) == "no error");
  SUBCASE("the file") {
    const TempDir empty;
    CHECK_FALSE(TokenizerJson::present_in(empty.path()));
    CHECK_THROWS_WITH_AS(TokenizerJson::load(empty.path()),
                         doctest::Contains("missing (expected a tokenizer.json)"), Error);
    std::ofstream(empty.file("tokenizer.json")) << "{\"model\": ";
    CHECK(TokenizerJson::present_in(empty.path()));
    CHECK_THROWS_WITH_AS(TokenizerJson::load(empty.path()),
                         doctest::Contains("tokenizer.json: not valid JSON"), Error);
  }
  SUBCASE("the normalizer") {
    tokenizer["normalizer"] = {{"type", "Lowercase"}};
    CHECK(contains(load_error(tokenizer),
                   "normalizer \"Lowercase\" is not supported (only Prepend, Replace, NFC, NFD, "
                   "NFKC, NFKD and Sequence)"));
    tokenizer["normalizer"] = {
        {"type", "Replace"}, {"pattern", {{"Regex", " +"}}}, {"content", "_"}};
    CHECK(contains(load_error(tokenizer), "normalizer Replace: only a {\"String\": ...} pattern"));
    tokenizer["normalizer"] = {{"type", "Prepend"}, {"prepend", ""}};
    CHECK(contains(load_error(tokenizer), "Prepend: expected a non-empty string \"prepend\""));
  }
  SUBCASE("the model") {
    Json model = tokenizer;
    model["model"]["type"] = "WordPiece";
    CHECK(contains(load_error(model), "model \"WordPiece\" is not supported"));
    model["model"]["type"] = "Unigram";
    CHECK(contains(load_error(model), "model \"Unigram\" is not supported"));
    model["model"] = nullptr;
    CHECK(contains(load_error(model), "no \"model\" (the vocabulary and merges"));
    model.erase("model");
    CHECK(contains(load_error(model), "no \"model\" (the vocabulary and merges"));
    model = tokenizer;
    model["model"]["dropout"] = 0.1;
    CHECK(contains(load_error(model), "dropout is not supported"));
    model = tokenizer;
    model["model"]["continuing_subword_prefix"] = "##";
    CHECK(contains(load_error(model), "continuing_subword_prefix is not supported"));
    model = tokenizer;
    model["model"]["vocab"].erase("a");
    CHECK(contains(load_error(model), "no token for byte 0x61"));
    model = tokenizer;
    model["model"]["merges"].push_back("a  a");
    CHECK(contains(load_error(model), "merge 2: expected two tokens separated by one space"));
    model = tokenizer;
    model["model"]["merges"].push_back(Json::array({"a", "b"}));
    CHECK(contains(load_error(model), "merge 2: \"ab\" is not in the vocabulary"));
    model = tokenizer;
    model["model"]["merges"].push_back("a a");
    CHECK(contains(load_error(model), "merge 2: duplicate merge \"a a\""));
    model = tokenizer;
    model["model"]["vocab"]["b"] = 97;
    CHECK(contains(load_error(model), "id 97 is used by another token too"));
    // An id past 2^24 is refused, not given a table of gigabytes.
    model = tokenizer;
    model["added_tokens"] =
        Json::array({{{"id", 1000000000}, {"content", "<x>"}, {"special", true}}});
    CHECK(contains(load_error(model),
                   "added token \"<x>\": id 1000000000 is not an integer in [0, 2^24)"));
    model = tokenizer;
    model["model"]["vocab"]["b"] = -1;
    CHECK(contains(load_error(model), "id -1 is not an integer in [0, 2^24)"));
  }
  SUBCASE("the pre-tokenizer") {
    Json pre = tokenizer;
    pre["pre_tokenizer"] = nullptr;
    CHECK(contains(load_error(pre), "the decoder is ByteLevel but the pre-tokenizer is not"));
    pre["pre_tokenizer"] = {{"type", "Whitespace"}};
    CHECK(contains(load_error(pre), "pre_tokenizer Whitespace is not supported"));
    pre["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers", Json::array({{{"type", "Whitespace"}}, tokenizer["pre_tokenizer"]})}};
    CHECK(contains(load_error(pre), "pre_tokenizer Whitespace is not supported"));
    const Json split = {{"type", "Split"},
                        {"pattern", {{"Regex", "\\s+"}}},
                        {"behavior", "Removed"},
                        {"invert", false}};
    pre["pre_tokenizer"] = {{"type", "Sequence"},
                            {"pretokenizers", Json::array({split, tokenizer["pre_tokenizer"]})}};
    CHECK(contains(load_error(pre), "behavior \"Removed\" is not supported (only Isolated)"));
    pre["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Isolated";
    pre["pre_tokenizer"]["pretokenizers"][0]["invert"] = true;
    CHECK(contains(load_error(pre), "invert true is not supported"));
    pre["pre_tokenizer"]["pretokenizers"][0]["invert"] = false;
    pre["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Regex", "(unclosed"}};
    CHECK(contains(load_error(pre), "cannot compile the split regex"));
    pre["pre_tokenizer"]["pretokenizers"] = Json::array({tokenizer["pre_tokenizer"], split});
    CHECK(contains(load_error(pre), "ByteLevel must be the last pre-tokenizer"));
  }
  SUBCASE("the post-processor and the decoder") {
    Json other = tokenizer;
    other["post_processor"] = {{"type", "RobertaProcessing"}};
    CHECK(contains(load_error(other), "post_processor \"RobertaProcessing\" is not supported"));
    other = tokenizer;
    other["decoder"] = {{"type", "WordPiece"}};
    CHECK(contains(load_error(other), "decoder \"WordPiece\" is not supported"));
    other["decoder"] = nullptr;
    CHECK(contains(load_error(other), "decoder: expected an object with a \"type\""));
    other["decoder"] = {{"type", "Sequence"}, {"decoders", Json::array({{{"type", "Fuse"}}})}};
    CHECK(contains(load_error(other), "the pre-tokenizer is ByteLevel but the decoder is not"));
  }
}

TEST_CASE("a Split with a String pattern isolates the literal") {
  Json tokenizer = small_tokenizer();
  const Json split = {{"type", "Split"},
                      {"pattern", {{"String", "a."}}},
                      {"behavior", "Isolated"},
                      {"invert", false}};
  Json byte_level = tokenizer["pre_tokenizer"];
  byte_level["use_regex"] = false;
  tokenizer["pre_tokenizer"] = {{"type", "Sequence"},
                                {"pretokenizers", Json::array({split, byte_level})}};
  const TempDir dir;
  write_tokenizer_json(dir, tokenizer);
  const TokenizerJson loaded = TokenizerJson::load(dir.path());
  // "aaa.aa" -> "aa", "a.", "aa": the literal "a." (not the regex a.) is cut out.
  CHECK(loaded.encode("aaa.aa", false) == Ids{256, 'a', '.', 256});
  CHECK(loaded.encode("aaab", false) == Ids{257, 'b'});
}

TEST_CASE("ignore_merges: a piece in the vocabulary is one token; add_prefix_space") {
  // The ids tokenizers 0.23.3 gives these files. " ab" is in the vocabulary, with no merges
  // that would make it.
  Json tokenizer = small_tokenizer();
  tokenizer["model"]["ignore_merges"] = true;
  tokenizer["model"]["vocab"]["\u0120ab"] = 258;
  {
    const TempDir dir;
    write_tokenizer_json(dir, tokenizer);
    const TokenizerJson loaded = TokenizerJson::load(dir.path());
    CHECK(loaded.encode("x ab", false) == Ids{'x', 258});
    CHECK(loaded.encode("x abab", false) == Ids{'x', ' ', 'a', 'b', 'a', 'b'});
    CHECK(loaded.encode("aaaa", false) == Ids{257, 'a'});
  }
  tokenizer["pre_tokenizer"]["add_prefix_space"] = true;
  const TempDir dir;
  write_tokenizer_json(dir, tokenizer);
  const TokenizerJson loaded = TokenizerJson::load(dir.path());
  CHECK(loaded.encode("ab", false) == Ids{258});
  CHECK(loaded.encode(" ab", false) == Ids{258});
  CHECK(loaded.encode("ab cd", false) == Ids{258, ' ', 'c', 'd'});
}

namespace {

// A minimal SentencePiece-style tokenizer.json (as transformers' LlamaConverter writes them):
// <unk> 0, <s> 1, "<0x00>".."<0xFF>" 2..257, then "▁" 258, "a" 259, "b" 260, "a▁" 261, "▁b" 262;
// the merges "a ▁" then "▁ b"; Llama 2's normalizer and decoder, byte_fallback and fuse_unk.
Json small_sentencepiece_tokenizer() {
  Json vocab = {{"<unk>", 0}, {"<s>", 1}};
  for (int byte = 0; byte < 256; ++byte) {
    vocab[std::string("<").append(attnscope::tokenizer::hex_byte(byte)).append(">")] = 2 + byte;
  }
  const std::array<const char*, 5> pieces{"\u2581", "a", "b", "a\u2581", "\u2581b"};
  for (std::size_t i = 0; i < pieces.size(); ++i) vocab[pieces[i]] = 258 + i;
  const auto special = [](int id, const char* content) {
    return Json{{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
                {"rstrip", false}, {"normalized", false}, {"special", true}};
  };
  const Json normalizer = {
      {"type", "Sequence"},
      {"normalizers",
       Json::array(
           {{{"type", "Prepend"}, {"prepend", "\u2581"}},
            {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}})}};
  const Json decoder = {
      {"type", "Sequence"},
      {"decoders",
       Json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                    {{"type", "ByteFallback"}},
                    {{"type", "Fuse"}},
                    {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", Json::array({special(0, "<unk>"), special(1, "<s>")})},
      {"normalizer", normalizer},
      {"pre_tokenizer", nullptr},
      {"post_processor", nullptr},
      {"decoder", decoder},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", "<unk>"},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", true},
        {"byte_fallback", true},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", Json::array({Json::array({"a", "\u2581"}), Json::array({"\u2581", "b"})})}}}};
}

// The ids of each text, add_special_tokens off.
std::vector<Ids> encode_all(const Json& tokenizer, const std::vector<std::string>& texts) {
  const TempDir dir;
  write_tokenizer_json(dir, tokenizer);
  const TokenizerJson loaded = TokenizerJson::load(dir.path());
  std::vector<Ids> ids;
  for (const std::string& text : texts) ids.push_back(loaded.encode(text, false));
  return ids;
}

}  // namespace

TEST_CASE("SentencePiece options give the ids of the tokenizers library") {
  // Every expected id list is what tokenizers 0.23.3 gives the same file and text.
  const std::vector<std::string> texts{"a b", "ab", " a", "a  b", "c", "a\u00e9\u20acb", "<s>a b"};
  Json tokenizer = small_sentencepiece_tokenizer();
  SUBCASE("the legacy normalizer, byte fallback") {
    CHECK(encode_all(tokenizer, texts) == std::vector<Ids>{{258, 261, 260},
                                                           {258, 259, 260},
                                                           {258, 258, 259},
                                                           {258, 261, 262},
                                                           {258, 101},
                                                           {258, 259, 197, 171, 228, 132, 174, 260},
                                                           {1, 258, 261, 260}});
  }
  SUBCASE("Metaspace: prepend_scheme and split") {
    tokenizer["normalizer"] = nullptr;
    tokenizer["pre_tokenizer"] = {{"type", "Metaspace"},
                                  {"replacement", "\u2581"},
                                  {"prepend_scheme", "always"},
                                  {"split", true}};
    CHECK(encode_all(tokenizer, texts) == std::vector<Ids>{{258, 259, 262},
                                                           {258, 259, 260},
                                                           {258, 259},
                                                           {258, 259, 258, 262},
                                                           {258, 101},
                                                           {258, 259, 197, 171, 228, 132, 174, 260},
                                                           {1, 258, 259, 262}});
    tokenizer["pre_tokenizer"]["prepend_scheme"] = "first";  // not after <s>
    tokenizer["pre_tokenizer"]["split"] = false;
    CHECK(encode_all(tokenizer, texts) == std::vector<Ids>{{258, 261, 260},
                                                           {258, 259, 260},
                                                           {258, 259},
                                                           {258, 261, 262},
                                                           {258, 101},
                                                           {258, 259, 197, 171, 228, 132, 174, 260},
                                                           {1, 261, 260}});
    tokenizer["pre_tokenizer"]["prepend_scheme"] = "never";
    tokenizer["pre_tokenizer"]["split"] = true;
    CHECK(encode_all(tokenizer, texts) == std::vector<Ids>{{259, 262},
                                                           {259, 260},
                                                           {258, 259},
                                                           {259, 258, 262},
                                                           {101},
                                                           {259, 197, 171, 228, 132, 174, 260},
                                                           {1, 259, 262}});
  }
  SUBCASE("without byte fallback: unk_token, fused or not, or nothing") {
    tokenizer["model"]["byte_fallback"] = false;
    const std::vector<Ids> known{
        {258, 261, 260}, {258, 259, 260}, {258, 258, 259}, {258, 261, 262}};
    std::vector<Ids> expected = known;
    expected.insert(expected.end(), {{258, 0}, {258, 259, 0, 260}, {1, 258, 261, 260}});
    CHECK(encode_all(tokenizer, texts) == expected);
    tokenizer["model"]["fuse_unk"] = false;
    expected[5] = {258, 259, 0, 0, 260};
    CHECK(encode_all(tokenizer, texts) == expected);
    tokenizer["model"]["unk_token"] = nullptr;
    expected[4] = {258};
    expected[5] = {258, 259, 260};
    CHECK(encode_all(tokenizer, texts) == expected);
  }
}

TEST_CASE("the SentencePiece decoder: spaces, byte fallback, Strip once at the start") {
  Json tokenizer = small_sentencepiece_tokenizer();
  {
    const TempDir dir;
    write_tokenizer_json(dir, tokenizer);
    const TokenizerJson loaded = TokenizerJson::load(dir.path());
    CHECK(loaded.decode(Ids{258, 259, 258, 260}) == "a b");
    CHECK(loaded.decode(Ids{2 + 0x41, 2 + 0xE2, 2 + 0x82, 2 + 0xAC}) == "A\u20ac");
    // A token's bytes continue a text: the space stays; decode() strips one at the start.
    CHECK(loaded.token_bytes(262) == " b");
    CHECK(loaded.decode(Ids{262}) == "b");
    CHECK(loaded.decode(Ids{258, 258, 262}) == "  b");
  }
  // As tokenizers 0.23.3 decodes: Strip's start and stop; "<0x0a>" is a byte too.
  tokenizer["decoder"]["decoders"][3] = {
      {"type", "Strip"}, {"content", "b"}, {"start", 2}, {"stop", 1}};
  tokenizer["model"]["vocab"]["<0x0a>"] = tokenizer["model"]["vocab"]["<0x0A>"];
  tokenizer["model"]["vocab"].erase("<0x0A>");
  tokenizer["model"]["byte_fallback"] = false;
  const TempDir dir;
  write_tokenizer_json(dir, tokenizer);
  const TokenizerJson loaded = TokenizerJson::load(dir.path());
  CHECK(loaded.decode(Ids{260, 260, 260, 259, 260, 260}) == "bab");
  CHECK(loaded.decode(Ids{2 + 0x0A}) == "\n");
}

TEST_CASE(
    "the GGUF converter's decoder order (ByteFallback, Fuse, Replace, Strip) reads the same") {
  Json tokenizer = small_sentencepiece_tokenizer();
  const Json steps = tokenizer["decoder"]["decoders"];
  tokenizer["decoder"]["decoders"] = Json::array({steps[1], steps[2], steps[0], steps[3]});
  const TempDir dir;
  write_tokenizer_json(dir, tokenizer);
  const TokenizerJson loaded = TokenizerJson::load(dir.path());
  CHECK(loaded.decode(Ids{258, 259, 258, 260}) == "a b");
  CHECK(loaded.decode(Ids{2 + 0x41, 262}) == "A b");
  CHECK(loaded.token_bytes(262) == " b");
}

TEST_CASE("SentencePiece files: what is refused, in one line naming it") {
  const Json tokenizer = small_sentencepiece_tokenizer();
  CHECK(load_error(tokenizer) == "no error");
  Json other = tokenizer;
  other["model"]["vocab"].erase("<0x7F>");
  CHECK(contains(load_error(other), "byte_fallback is set but the vocabulary has no \"<0x7F>\""));
  other = tokenizer;
  other["model"]["unk_token"] = "<missing>";
  CHECK(contains(load_error(other), "unk_token \"<missing>\" is not in the vocabulary"));
  other = tokenizer;
  other["pre_tokenizer"] = {
      {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "sometimes"}};
  CHECK(contains(load_error(other), "prepend_scheme \"sometimes\" is not"));
  other["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers", Json::array({{{"type", "Metaspace"}, {"replacement", "\u2581"}},
                                     small_tokenizer()["pre_tokenizer"]})}};
  CHECK(contains(load_error(other), "Metaspace and ByteLevel together are not supported"));
  other = tokenizer;
  other["decoder"] = {{"type", "ByteLevel"}};
  CHECK(contains(load_error(other), "the decoder is ByteLevel but the pre-tokenizer is not"));
  const auto decoder_with = [&](const Json& steps) {
    Json changed = tokenizer;
    changed["decoder"]["decoders"] = steps;
    return load_error(changed);
  };
  const Json& steps = tokenizer["decoder"]["decoders"];
  CHECK(contains(decoder_with(Json::array({steps[0], steps[3]})),
                 "Strip before Fuse would strip every token"));
  CHECK(contains(decoder_with(Json::array({steps[2], steps[3], steps[0]})), "Replace after Strip"));

  CHECK(contains(decoder_with(Json::array({{{"type", "Metaspace"}}})),
                 "decoder Metaspace is not supported in a decoder Sequence"));
  Json strip = steps[3];
  strip["content"] = "ab";
  CHECK(
      contains(decoder_with(Json::array({steps[2], strip})), "\"content\" must be one character"));
}

TEST_CASE("a folder's tokenizer.json follows the model folder's link policy") {
  namespace fs = std::filesystem;
  const attnscope::testing::TempDir dir;
  const fs::path real = fs::path(attnscope::testing::test_fixtures()) / "tokenizer_json" /
                        "llama3" / "tokenizer.json";
  const fs::path model = dir.path() / "model";
  fs::create_directories(model / "files");
  fs::copy_file(real, model / "files" / "tokenizer.json");
  fs::create_symlink("files/tokenizer.json", model / "tokenizer.json");  // inside: read
  CHECK(TokenizerJson::load(model.string()).encode("Hello", false) ==
        TokenizerJson::load(real.string()).encode("Hello", false));
  const fs::path outside = dir.path() / "outside";
  fs::create_directories(outside);
  fs::create_symlink(fs::canonical(real), outside / "tokenizer.json");  // out of the folder
  CHECK_THROWS_WITH_AS(TokenizerJson::load(outside.string()),
                       doctest::Contains("outside the model folder"), Error);
  // A file named itself is the user's choice: read through its link.
  CHECK_NOTHROW(TokenizerJson::load((outside / "tokenizer.json").string()));
}
