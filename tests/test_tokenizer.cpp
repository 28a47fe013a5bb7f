// Tests of the GPT-2 tokenizer.
//
// Exact ids against reference encodings: OpenAI's cases in the shared fixtures and Hugging Face's
// GPT2Tokenizer output in tests/fixtures/tokenizer/cases_extra.jsonl (made by
// tools/fixtures/make_tokenizer_cases.py). Round trips of seeded random UTF-8 and random bytes.
// The BPE round rule and the validation of the files, on small files written to a scratch
// directory, need no fixtures.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fixture_paths.h"
#include "models/gpt2/tokenizer.h"
#include "random_text.h"
#include "runtime/error.h"
#include "safetensors_writer.h"

namespace {

using attnscope::Error;
using attnscope::gpt2::Tokenizer;
using attnscope::testing::TempDir;
using attnscope::testing::write_file;
using Ids = std::vector<std::int32_t>;
namespace fs = std::filesystem;

// The shared GPT-2 tokenizer, loaded once for all the tests that use it.
const Tokenizer& gpt2() {
  static const Tokenizer tokenizer = Tokenizer::load(attnscope::testing::gpt2_tokenizer_dir());
  return tokenizer;
}

// decode(encode(text)) gives back every byte of `text`, valid UTF-8 or not.
void check_round_trip(const Tokenizer& tokenizer, const std::string& text) {
  CAPTURE(text);
  CHECK(tokenizer.decode(tokenizer.encode(text)) == text);
}

// The message of the Error that loading `dir` throws, or "no error".
std::string load_error(const TempDir& dir) {
  try {
    Tokenizer::load(dir.path());
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

std::string to_utf8(char32_t value) {
  std::string text;
  if (value < 0x80) {
    text += static_cast<char>(value);
  } else if (value < 0x800) {
    text += static_cast<char>(0xC0 | (value >> 6));
    text += static_cast<char>(0x80 | (value & 0x3F));
  } else if (value < 0x10000) {
    text += static_cast<char>(0xE0 | (value >> 12));
    text += static_cast<char>(0x80 | ((value >> 6) & 0x3F));
    text += static_cast<char>(0x80 | (value & 0x3F));
  } else {
    text += static_cast<char>(0xF0 | (value >> 18));
    text += static_cast<char>(0x80 | ((value >> 12) & 0x3F));
    text += static_cast<char>(0x80 | ((value >> 6) & 0x3F));
    text += static_cast<char>(0x80 | (value & 0x3F));
  }
  return text;
}

// Byte b as GPT-2's files write it: printable Latin-1 bytes as themselves, the other 68 bytes as
// U+0100, U+0101, ... in byte order.
std::string byte_as_token(int byte) {
  const auto printable = [](int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  if (printable(byte)) return to_utf8(static_cast<char32_t>(byte));
  char32_t character = 0x100;
  for (int b = 0; b < byte; ++b) character += printable(b) ? 0 : 1;
  return to_utf8(character);
}

// A small valid vocabulary: byte b has id b, then "aa" 256, "aaa" 257, "<|endoftext|>" 258.
nlohmann::json small_vocabulary() {
  nlohmann::json vocabulary = nlohmann::json::object();
  for (int byte = 0; byte < 256; ++byte) vocabulary[byte_as_token(byte)] = byte;
  vocabulary["aa"] = 256;
  vocabulary["aaa"] = 257;
  vocabulary["<|endoftext|>"] = 258;
  return vocabulary;
}

// "aa a" ranks before "a a", though "a a" makes the "aa" it needs.
const std::string kSmallMerges = "#version: 0.2\naa a\na a\n";

struct Case {
  std::string text;
  Ids ids;
};

std::vector<Case> read_cases(const std::string& path) {
  std::ifstream file(path);
  REQUIRE_MESSAGE(file.is_open(), "cannot open " << path);
  std::vector<Case> cases;
  for (std::string line; std::getline(file, line);) {
    if (line.empty()) continue;
    const nlohmann::json entry = nlohmann::json::parse(line);
    cases.push_back({entry.at("text").get<std::string>(), entry.at("ids").get<Ids>()});
  }
  return cases;
}

void check_reference_cases(const std::string& path) {
  const std::vector<Case> cases = read_cases(path);
  REQUIRE_FALSE(cases.empty());
  for (const Case& reference : cases) {
    CAPTURE(reference.text);
    CHECK(gpt2().encode(reference.text) == reference.ids);
    CHECK(gpt2().decode(reference.ids) == reference.text);
  }
}

// Random text: code points drawn from ranges picked uniformly, so that ASCII, whitespace,
// accented Latin, combining marks, Arabic, Devanagari, CJK, emoji and unassigned or private-use
// planes all come up. Sometimes a literal "<|endoftext|>".
std::string random_utf8(std::mt19937& rng, std::size_t length) {
  constexpr attnscope::testing::CodePointRange kRanges[] = {
      {0x20, 0x7E},     {0x09, 0x0D},       {0xA0, 0x24F},    {0x300, 0x36F},
      {0x600, 0x6FF},   {0x900, 0x97F},     {0x2000, 0x206F}, {0x3000, 0x30FF},
      {0x4E00, 0x9FFF}, {0x1F300, 0x1F9FF}, {0xE000, 0xFFFF}, {0x10000, 0x10FFFF}};
  return attnscope::testing::random_text(rng, length, kRanges,
                                         [] { return std::string("<|endoftext|>"); });
}

// Random bytes, mostly above 0x7F, where UTF-8 goes wrong.
std::string random_bytes(std::mt19937& rng, std::size_t length) {
  std::uniform_int_distribution<int> pick(0, 255);
  std::string bytes;
  for (std::size_t i = 0; i < length; ++i) {
    const int byte = pick(rng);
    bytes += static_cast<char>(byte < 64 ? byte + 32 : byte);
  }
  return bytes;
}

}  // namespace

TEST_CASE("the ids of OpenAI's reference cases") {
  if (!attnscope::testing::shared_fixtures_present()) return;
  check_reference_cases(attnscope::testing::gpt2_tokenizer_dir() + "/cases.jsonl");
}

TEST_CASE("the ids of Hugging Face's GPT2Tokenizer on varied text") {
  if (!attnscope::testing::shared_fixtures_present()) return;
  check_reference_cases(attnscope::testing::test_fixtures() + "/tokenizer/cases_extra.jsonl");
}

TEST_CASE("GPT-2's vocabulary and <|endoftext|>") {
  if (!attnscope::testing::shared_fixtures_present()) return;
  const Tokenizer& tokenizer = gpt2();
  CHECK(tokenizer.vocab_size() == 50257);
  CHECK(tokenizer.eot_id() == 50256);
  CHECK(tokenizer.token_bytes(50256) == "<|endoftext|>");
  CHECK(tokenizer.token_bytes(220) == " ");
  CHECK(tokenizer.encode("<|endoftext|>") == Ids{50256});
  CHECK(tokenizer.encode("a<|endoftext|>b") == Ids{64, 50256, 65});
  CHECK(tokenizer.encode("<|endoftext|><|endoftext|>") == Ids{50256, 50256});
  // Whitespace before the special token ends its text, as in Hugging Face's tokenizer.
  CHECK(tokenizer.encode("a  <|endoftext|>  b") == Ids{64, 220, 220, 50256, 220, 275});
  CHECK(tokenizer.encode("<|endoftext|") == Ids{27, 91, 437, 1659, 5239, 91});
}

TEST_CASE("\\s means what it means in Python's regex module") {
  if (!attnscope::testing::shared_fixtures_present()) return;
  const Tokenizer& tokenizer = gpt2();
  // U+00A0 and U+3000 are whitespace...
  CHECK(tokenizer.encode("x \u00a0 y") == Ids{87, 5624, 331});
  CHECK(tokenizer.encode("a \u3000b") == Ids{64, 220, 5099, 222, 65});
  // ...U+180E is not (PCRE2's own \s says it is), so " \u180e?" stays one piece.
  CHECK(tokenizer.encode("a \u180e?") == Ids{64, 28053, 254, 236, 30});
}

TEST_CASE("invalid UTF-8 bytes become their own one-byte tokens") {
  if (!attnscope::testing::shared_fixtures_present()) return;
  const Tokenizer& tokenizer = gpt2();
  const Ids lone_byte = tokenizer.encode("\xff");
  REQUIRE(lone_byte.size() == 1);
  CHECK(tokenizer.token_bytes(lone_byte[0]) == "\xff");
  CHECK(tokenizer.encode("a\xff"
                         "b") == Ids{64, lone_byte[0], 65});
  const std::vector<std::string> invalid{"\x80",                       // a continuation byte alone
                                         "\xc0\xaf",                   // an overlong '/'
                                         "\xe0\x80\xaf",               // another overlong '/'
                                         "\xed\xa0\x80",               // a surrogate, U+D800
                                         "\xf4\x90\x80\x80",           // above U+10FFFF
                                         "\xe2\x82",                   // a truncated euro sign
                                         "caf\xc3",                    // truncated at the end
                                         "\xf8\x88\x80\x80\x80",       // a five-byte form
                                         std::string("nul\0byte", 8),  // NUL is valid UTF-8
                                         "  \xff  ",  // whitespace around a bad byte
                                         "<|endoftext|>\xff<|endoftext|>"};
  for (const std::string& text : invalid) check_round_trip(tokenizer, text);
}

TEST_CASE("decode(encode(text)) == text for random UTF-8 and random bytes") {
  if (!attnscope::testing::shared_fixtures_present()) return;
  const Tokenizer& tokenizer = gpt2();
  std::mt19937 rng(20240531);
  std::uniform_int_distribution<std::size_t> pick_length(0, 80);
  for (int i = 0; i < 2000; ++i) check_round_trip(tokenizer, random_utf8(rng, pick_length(rng)));
  for (int i = 0; i < 2000; ++i) check_round_trip(tokenizer, random_bytes(rng, pick_length(rng)));
}

TEST_CASE("encode gives the same ids from several threads at once") {
  if (!attnscope::testing::shared_fixtures_present()) return;
  const Tokenizer& tokenizer = gpt2();
  std::mt19937 rng(7);
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) texts.push_back(random_utf8(rng, 40));
  std::vector<Ids> expected;
  for (const std::string& text : texts) expected.push_back(tokenizer.encode(text));

  std::array<bool, 4> all_equal{};
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < all_equal.size(); ++t) {
    threads.emplace_back([&, t] {
      all_equal[t] = true;
      for (int round = 0; round < 5; ++round) {
        for (std::size_t i = 0; i < texts.size(); ++i) {
          all_equal[t] = all_equal[t] && tokenizer.encode(texts[i]) == expected[i];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const bool equal : all_equal) CHECK(equal);
}

TEST_CASE("BPE merges a pair's occurrences in rounds, as the reference implementations do") {
  const TempDir dir;
  write_file(dir.file("vocab.json"), small_vocabulary().dump());
  write_file(dir.file("merges.txt"), kSmallMerges);
  const Tokenizer tokenizer = Tokenizer::load(dir.path());
  // "a a" merges everywhere first; only then may "aa a" join what it made.
  CHECK(tokenizer.encode("aaaa") == Ids{256, 256});
  CHECK(tokenizer.encode("aaa") == Ids{257});
  CHECK(tokenizer.encode("aaaaa") == Ids{256, 257});
  CHECK(tokenizer.encode("aa<|endoftext|>aaa") == Ids{256, 258, 257});
  CHECK(tokenizer.eot_id() == 258);
  CHECK(tokenizer.vocab_size() == 259);
}

TEST_CASE("decode and token_bytes refuse ids outside the vocabulary") {
  const TempDir dir;
  write_file(dir.file("vocab.json"), small_vocabulary().dump());
  write_file(dir.file("merges.txt"), kSmallMerges);
  const Tokenizer tokenizer = Tokenizer::load(dir.path());
  CHECK(tokenizer.decode(Ids{256, 258}) == "aa<|endoftext|>");
  CHECK_THROWS_AS(tokenizer.decode(Ids{259}), Error);
  CHECK_THROWS_AS(tokenizer.decode(Ids{97, -1}), Error);
  CHECK_THROWS_AS(tokenizer.token_bytes(259), Error);
  CHECK_THROWS_WITH_AS(tokenizer.decode(Ids{1000}),
                       "GPT-2 tokenizer: token id 1000 is outside [0, 259)", Error);
}

TEST_CASE("both names of the files load") {
  const TempDir hugging_face;
  write_file(hugging_face.file("vocab.json"), small_vocabulary().dump());
  write_file(hugging_face.file("merges.txt"), kSmallMerges);
  const TempDir openai;
  write_file(openai.file("encoder.json"), small_vocabulary().dump());
  write_file(openai.file("vocab.bpe"), kSmallMerges);
  const TempDir empty;

  CHECK(Tokenizer::present_in(hugging_face.path()));
  CHECK(Tokenizer::present_in(openai.path()));
  CHECK_FALSE(Tokenizer::present_in(empty.path()));
  CHECK_FALSE(Tokenizer::present_in(empty.file("not-there")));
  CHECK(Tokenizer::load(hugging_face.path()).encode("aaaaa") == Ids{256, 257});
  CHECK(Tokenizer::load(openai.path()).encode("aaaaa") == Ids{256, 257});
}

TEST_CASE("GPT-2's files load under Hugging Face's names") {
  if (!attnscope::testing::shared_fixtures_present()) return;
  const TempDir dir;
  const fs::path shared = attnscope::testing::gpt2_tokenizer_dir();
  fs::copy_file(shared / "encoder.json", dir.file("vocab.json"));
  fs::copy_file(shared / "vocab.bpe", dir.file("merges.txt"));
  const std::string text = "Hello, world! It's 2026.";
  CHECK(Tokenizer::load(dir.path()).encode(text) == gpt2().encode(text));
}

TEST_CASE("load names the missing or invalid file and says what is wrong") {
  const TempDir dir;
  const auto contains = [](const std::string& message, const std::string& part) {
    return message.find(part) != std::string::npos;
  };
  const auto vocabulary_error = [&](const std::string& vocabulary) {
    write_file(dir.file("vocab.json"), vocabulary);
    write_file(dir.file("merges.txt"), kSmallMerges);
    return load_error(dir);
  };
  const auto merges_error = [&](const std::string& merges) {
    write_file(dir.file("vocab.json"), small_vocabulary().dump());
    write_file(dir.file("merges.txt"), merges);
    return load_error(dir);
  };

  SUBCASE("no files") {
    CHECK(
        contains(load_error(dir), "expected vocab.json + merges.txt or encoder.json + vocab.bpe"));
  }
  SUBCASE("half a pair") {
    write_file(dir.file("encoder.json"), small_vocabulary().dump());
    CHECK(contains(load_error(dir), "vocab.bpe: missing (needed with encoder.json)"));
    fs::remove(dir.file("encoder.json"));
    write_file(dir.file("merges.txt"), kSmallMerges);
    CHECK(contains(load_error(dir), "vocab.json: missing (needed with merges.txt)"));
  }
  SUBCASE("the vocabulary") {
    nlohmann::json vocabulary = small_vocabulary();
    CHECK(contains(vocabulary_error("{\"a\": 1,"), "vocab.json: not valid JSON: parse error"));
    CHECK(contains(vocabulary_error("[1, 2]"), "vocab.json: expected a JSON object"));
    vocabulary["aa"] = "256";
    CHECK(contains(vocabulary_error(vocabulary.dump()), "\"aa\": id \"256\" is not an integer"));
    vocabulary["aa"] = 256.5;
    CHECK(contains(vocabulary_error(vocabulary.dump()), "\"aa\": id 256.5 is not an integer"));
    vocabulary["aa"] = 1000;
    CHECK(contains(vocabulary_error(vocabulary.dump()), "\"aa\": id 1000 is outside [0, 259)"));
    vocabulary["aa"] = -1;
    CHECK(contains(vocabulary_error(vocabulary.dump()), "\"aa\": id -1 is outside [0, 259)"));
    vocabulary["aa"] = 5;
    CHECK(contains(vocabulary_error(vocabulary.dump()), "is used by another token too"));
  }
  SUBCASE("the tokens of the vocabulary") {
    nlohmann::json vocabulary = small_vocabulary();
    vocabulary["\u4e2d"] = 259;
    CHECK(contains(vocabulary_error(vocabulary.dump()),
                   "character U+4E2D is not in GPT-2's byte-level alphabet"));
    vocabulary.erase("\u4e2d");
    vocabulary[""] = 259;
    CHECK(contains(vocabulary_error(vocabulary.dump()), "vocab.json: empty token"));
    vocabulary.erase("");
    vocabulary.erase("z");
    vocabulary["zz"] = 'z';
    CHECK(contains(vocabulary_error(vocabulary.dump()), "vocab.json: no token for byte 0x7A"));
    vocabulary.erase("zz");  // a byte's token gone, leaving a hole in the ids: the byte is named
    CHECK(contains(vocabulary_error(vocabulary.dump()), "vocab.json: no token for byte 0x7A"));
    vocabulary["z"] = 'z';
    vocabulary.erase("<|endoftext|>");
    vocabulary["zz"] = 258;
    CHECK(contains(vocabulary_error(vocabulary.dump()), "vocab.json: no \"<|endoftext|>\" token"));
  }
  SUBCASE("the merges") {
    CHECK(contains(merges_error("#version: 0.2\na a\na  a\n"),
                   "merges.txt:3: expected two tokens separated by one space"));
    CHECK(contains(merges_error("a\n"), "merges.txt:1: expected two tokens"));
    CHECK(contains(merges_error("a a a\n"), "merges.txt:1: expected two tokens"));
    CHECK(contains(merges_error("a zz\n"), "merges.txt:1: token \"zz\" is not in the vocabulary"));
    CHECK(contains(merges_error("a b\n"),
                   "merges.txt:1: merged token \"ab\" is not in the vocabulary"));
    CHECK(
        contains(merges_error("a a\r\naa a\r\na a\r\n"), "merges.txt:3: duplicate merge \"a a\""));
  }
  SUBCASE("an empty merges file is valid: every byte stays a token") {
    write_file(dir.file("vocab.json"), small_vocabulary().dump());
    write_file(dir.file("merges.txt"), "");
    CHECK(Tokenizer::load(dir.path()).encode("aaa") == Ids{'a', 'a', 'a'});
  }
}

TEST_CASE("a small learned vocabulary encodes as Hugging Face's GPT2Tokenizer does") {
  // tests/fixtures/hf/perplexity: 256 bytes + 255 merges learned from text.txt, and the ids
  // Hugging Face gave text.txt (tools/fixtures/make_hf_fixtures.py).
  const std::string dir = attnscope::testing::test_fixtures() + "/hf/perplexity";
  const Tokenizer tokenizer = Tokenizer::load(dir);
  std::ifstream reference_file(dir + "/reference.json");
  const nlohmann::json reference = nlohmann::json::parse(reference_file);
  std::ifstream text_file(dir + "/text.txt", std::ios::binary);
  const std::string text(std::istreambuf_iterator<char>(text_file), {});
  CHECK(tokenizer.vocab_size() == 512);
  CHECK(tokenizer.eot_id() == 511);
  CHECK(tokenizer.encode(text) == reference["token_ids"].get<Ids>());
}
