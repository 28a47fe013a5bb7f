// JSON mode (engine/json_grammar.h's {"type": "object"}, engine/grammar_token_mask.h) against
// nlohmann's parser as the reference: the recognizer takes whole texts exactly when nlohmann
// accepts them as one JSON object (random documents and byte mutations of them), every prefix it
// takes can still be completed to a document nlohmann accepts, the token mask equals feeding each
// token's bytes on its own, and an engine in JSON mode writes only JSON and ends at the object's
// last byte.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "engine/grammar_recognizer.h"
#include "engine/grammar_token_mask.h"
#include "engine/json_grammar.h"
#include "hf_fixtures.h"
#include "json_mode_reference.h"
#include "models/gpt2/model.h"

using namespace attnscope;
using engine::FinishReason;
using engine::GrammarRecognizer;
using json = nlohmann::json;
using testing::completion;
using testing::json_mode;
using testing::json_mode_grammar;
using testing::recognizes;
using testing::reference_json;
using testing::reference_object;

namespace {

// Random JSON text written byte by byte (nlohmann checks each one): every number form of the
// grammar, escapes including surrogate pairs, raw UTF-8 of every length, whitespace anywhere.
class RandomJson {
 public:
  explicit RandomJson(std::uint32_t seed) : random_(seed) {}

  std::string object() {
    std::string text = whitespace();
    write_object(0, text);
    return text;
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(random_); }

  // A gap as JSON mode writes one (mostly none).
  std::string whitespace() {
    switch (pick(8)) {
      case 0:
        return " ";
      case 1:
      case 2: {
        std::string text = pick(3) == 0 ? "\r\n" : "\n";
        for (int n = pick(22); n > 0; --n) text += pick(4) == 0 ? '\t' : ' ';
        return text;
      }
      default:
        return "";
    }
  }

  void write_object(int depth, std::string& text) {
    text += "{" + whitespace();
    for (int n = depth < 5 ? pick(4) : 0, i = 0; i < n; ++i) {
      if (i > 0) text += "," + whitespace();
      write_string(text);
      text += whitespace() + ":" + whitespace();
      write_value(depth + 1, text);
      text += whitespace();
    }
    text += "}";
  }

  void write_value(int depth, std::string& text) {
    switch (depth < 5 ? pick(7) : 2 + pick(5)) {
      case 0:
        write_object(depth, text);
        return;
      case 1:
        text += "[" + whitespace();
        for (int n = pick(4), i = 0; i < n; ++i) {
          if (i > 0) text += "," + whitespace();
          write_value(depth + 1, text);
          text += whitespace();
        }
        text += "]";
        return;
      case 2:
      case 3:
        write_string(text);
        return;
      case 4:
      case 5:
        write_number(text);
        return;
      default:
        text += std::vector<std::string>{"true", "false", "null"}[pick(3)];
    }
  }

  void write_number(std::string& text) {
    if (pick(2) == 0) text += "-";
    if (pick(3) == 0) {
      text += "0";
    } else {
      text += static_cast<char>('1' + pick(9));
      for (int n = pick(4); n > 0; --n) text += static_cast<char>('0' + pick(10));
    }
    if (pick(2) == 0) {
      text += ".";
      for (int n = 1 + pick(3); n > 0; --n) text += static_cast<char>('0' + pick(10));
    }
    if (pick(3) == 0) {
      text += pick(2) == 0 ? "e" : "E";
      if (pick(2) == 0) text += pick(2) == 0 ? "+" : "-";
      for (int n = 1 + pick(2); n > 0; --n) text += static_cast<char>('0' + pick(10));
    }
  }

  void write_string(std::string& text) {
    static const std::vector<std::string> kPieces = {
        "a",
        "Z",
        " ",
        "0",
        "\\\"",
        "\\\\",
        "\\/",
        "\\b",
        "\\n",
        "\\t",
        "\\u00e9",
        "\\u0000",
        "\\uD83D\\uDE00",
        "\xc3\xa9",          // é
        "\xe2\x82\xac",      // €
        "\xed\x9f\xbf",      // U+D7FF, just below the surrogates
        "\xf0\x9f\x98\x80",  // U+1F600
        "\xf4\x8f\xbf\xbf",  // U+10FFFF
    };
    text += "\"";
    for (int n = pick(6); n > 0; --n) text += kPieces[static_cast<std::size_t>(pick(18))];
    text += "\"";
  }

  std::mt19937 random_;
};

// Bytes a mutation inserts or writes: JSON's own, and bytes that break UTF-8 or JSON.
constexpr std::string_view kMutationBytes =
    "{}[]:,\"\\ \t\n-+.0123456789eEtrufalsnxuDdCc/\x01\x7f\x80\x9f\xa0\xbf\xc0\xc1\xc3\xe0\xed"
    "\xf0\xf4\xf5\xff";

std::string mutated(const std::string& text, std::mt19937& random) {
  std::string out = text;
  const auto position = std::uniform_int_distribution<std::size_t>(0, out.size() - 1)(random);
  const char byte = kMutationBytes[std::uniform_int_distribution<std::size_t>(
      0, kMutationBytes.size() - 1)(random)];
  switch (random() % 3) {
    case 0:
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(position), byte);
      break;
    case 1:
      out[position] = byte;
      break;
    default:
      out.erase(position, 1);
  }
  return out;
}

// Checks that every prefix of `text` the recognizer takes completes to a document nlohmann
// accepts, up to the first byte it refuses.
void check_prefixes_complete(const std::string& text) {
  GrammarRecognizer recognizer = json_mode();
  for (std::size_t i = 0; i <= text.size(); ++i) {
    const std::string whole = text.substr(0, i) + completion(recognizer);
    CAPTURE(whole);
    CHECK(reference_object(whole));
    if (i == text.size() || !recognizer.accept(static_cast<unsigned char>(text[i]))) return;
  }
}

struct Case {
  std::string text;
  bool object;
};

}  // namespace

TEST_CASE("json recognizer: takes the JSON objects nlohmann accepts, and only them") {
  RandomJson generator(7);
  std::mt19937 random(11);
  int documents = 0;
  int mutants_accepted = 0;
  int mutants_refused = 0;
  for (int i = 0; i < 400; ++i) {
    const std::string text = generator.object();
    CAPTURE(text);
    REQUIRE(json::accept(text));  // the generator writes JSON
    CHECK(recognizes(text) == reference_object(text));
    documents += recognizes(text) ? 1 : 0;
    for (int m = 0; m < 30; ++m) {
      const std::string mutant = mutated(text, random);
      CAPTURE(mutant);
      const bool expected = reference_object(mutant);
      CHECK(recognizes(mutant) == expected);
      (expected ? mutants_accepted : mutants_refused) += 1;
    }
  }
  CHECK(documents >= 330);  // those with a trailing gap or an indent past 20 are refused
  CHECK(mutants_accepted > 500);
  CHECK(mutants_refused > 5000);
}

TEST_CASE("json recognizer: every prefix it takes can still become a JSON object") {
  RandomJson generator(3);
  std::mt19937 random(5);
  for (int i = 0; i < 120; ++i) {
    const std::string text = generator.object();
    check_prefixes_complete(text);
    check_prefixes_complete(mutated(text, random));
  }
}

TEST_CASE("json recognizer: the edges of the grammar") {
  const std::vector<Case> cases = {
      {"{}", true},
      {" \n{ } ", false},  // nothing after the object
      {"{\n  \"a\": [1, 2],\r\n\t\"b\" : {}\n}", true},
      {"{  \"a\":1}", false},   // two spaces
      {"{\"a\":1 \n}", false},  // a space, then a line break
      {"[]", false},            // the top level is an object
      {"\"a\"", false},
      {"{\"a\":1}", true},
      {"{\"a\":01}", false},
      {"{\"a\":-0.0e-0}", true},
      {"{\"a\":1.}", false},
      {"{\"a\":.5}", false},
      {"{\"a\":1e}", false},
      {"{\"a\":+1}", false},
      {"{\"a\":[1,]}", false},
      {"{\"a\":1,}", false},
      {"{\"a\" 1}", false},
      {"{1:2}", false},
      {"{\"a\":tru}", false},
      {"{\"a\":[true,false,null]}", true},
      {"{\"a\":\"\\uD83D\\uDE00\"}", true},
      {"{\"a\":\"\\uD83D\"}", false},  // a high surrogate alone
      {"{\"a\":\"\\uDE00\"}", false},  // a low one alone
      {"{\"a\":\"\\uD83D\\u0041\"}", false},
      {"{\"a\":\"\\x\"}", false},
      {"{\"a\":\"\t\"}", false},                // a raw control character
      {"{\"a\":\"\xc0\xaf\"}", false},          // an overlong '/'
      {"{\"a\":\"\xed\xa0\x80\"}", false},      // a surrogate in UTF-8
      {"{\"a\":\"\xf4\x90\x80\x80\"}", false},  // past U+10FFFF
      {"{\"a\":\"\xe2\x82\"}", false},          // a character cut short
      {"{\"a\":]}", false},
      {"{\"a\":[}", false},
      {"{\"a\":1e999}", true},  // JSON, though past a double's range
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    CHECK(recognizes(c.text) == c.object);
    CHECK(reference_object(c.text) == c.object);  // the table agrees with nlohmann
  }
}

TEST_CASE("json recognizer: nesting and whitespace are bounded, and a refusal changes nothing") {
  const int depth = engine::kMaxDepth;
  std::string deep = "{\"a\":" + std::string(static_cast<std::size_t>(depth - 1), '[');
  GrammarRecognizer recognizer = json_mode();
  REQUIRE(recognizer.accept(deep));
  CHECK_FALSE(recognizer.accept('['));
  CHECK_FALSE(recognizer.accept('{'));
  CHECK(recognizer.accept(std::string(static_cast<std::size_t>(depth - 1), ']') + "}"));
  CHECK(recognizer.finished());

  GrammarRecognizer spaced = json_mode();
  CHECK_FALSE(spaced.accept("  {"));    // one space at most
  CHECK_FALSE(spaced.accept("\t{"));    // a tab only indents
  CHECK_FALSE(spaced.accept("\n\n{"));  // one line break
  CHECK_FALSE(spaced.accept("\r {"));
  REQUIRE(spaced.accept("\r\n" + std::string(engine::kMaxIndent, '\t') + "{ "));
  CHECK_FALSE(spaced.accept('\n'));
  CHECK(spaced.accept("}"));  // the refused bytes left no trace
  CHECK(spaced.finished());
  CHECK_FALSE(spaced.accept(' '));
  GrammarRecognizer indented = json_mode();
  REQUIRE(indented.accept("{\n" + std::string(engine::kMaxIndent, ' ')));
  CHECK_FALSE(indented.accept(' '));

  GrammarRecognizer partial = json_mode();
  REQUIRE(partial.accept("{\"a\":1"));
  CHECK_FALSE(partial.accept("2x"));  // '2' was fine, 'x' was not: neither is kept
  CHECK(partial.accept("}"));
  CHECK(partial.finished());
}

TEST_CASE("json recognizer: texts at the same place in the grammar are equal states") {
  const auto state = [](std::string_view text) {
    GrammarRecognizer recognizer = json_mode();
    REQUIRE(recognizer.accept(text));
    return recognizer;
  };
  CHECK(state("{\"a\":\"xyz") == state("{\"bcd\":\"q\\u00e9\xc3\xa9"));
  CHECK(state("{\"a\":12,") == state("{\"b\":\"x\","));
  CHECK(state("{\"a\":[true") == state("{\"a\":[{\"x\":null}"));
  CHECK(state("{\"a\":[{}],") == state("{\"b\":false,"));
  CHECK(state("{\"a\":1,").hash() == state("{\"b\":\"x\",").hash());
  CHECK_FALSE(state("{\"a\":[1,") == state("{\"a\":{\"b\":1,"));  // array or object
  CHECK_FALSE(state("{\"a\":\"x") == state("{\"a"));              // a value or a key
  CHECK_FALSE(state("{ ") == state("{"));                         // the whitespace run
  CHECK_FALSE(state("{\"a\":1") == state("{\"a\":1."));
}

TEST_CASE("json token mask: a token is allowed exactly when the recognizer takes its bytes") {
  // A vocabulary of every single byte, pieces of random documents, and a few control tokens.
  RandomJson generator(17);
  std::mt19937 random(19);
  std::vector<std::string> documents;
  while (documents.size() < 30) {
    const std::string document = generator.object();
    if (recognizes(document)) documents.push_back(document);
  }
  std::vector<std::string> vocabulary;
  for (int byte = 0; byte < 256; ++byte) vocabulary.emplace_back(1, static_cast<char>(byte));
  for (int i = 0; i < 3000; ++i) {
    const std::string& document = documents[random() % documents.size()];
    const std::size_t start = random() % document.size();
    vocabulary.push_back(document.substr(start, 1 + random() % 8));
    if (i % 500 == 0) vocabulary.emplace_back();  // a control token
  }
  vocabulary.push_back(vocabulary[300]);  // two tokens with the same bytes
  engine::GrammarTokenMask mask(json_mode_grammar(),
                                std::make_shared<const engine::SortedVocabulary>(vocabulary));
  std::vector<float> logits(vocabulary.size() + 3);  // a model's rows padded past the vocabulary
  for (float& x : logits) x = std::uniform_real_distribution<float>(-5.0f, 5.0f)(random);

  int states = 0;
  for (const std::string& document : documents) {
    GrammarRecognizer recognizer = mask.start();
    for (const char byte : document) {
      const std::span<const float> restricted = mask.restrict(recognizer, logits);
      REQUIRE(restricted.size() == logits.size());
      std::vector<std::size_t> wrong;  // the ids the mask got wrong
      for (std::size_t id = 0; id < logits.size(); ++id) {
        GrammarRecognizer alone = recognizer;
        const bool allowed =
            id < vocabulary.size() && !vocabulary[id].empty() && alone.accept(vocabulary[id]);
        if (restricted[id] != (allowed ? logits[id] : -INFINITY)) wrong.push_back(id);
      }
      CHECK(wrong.empty());
      REQUIRE(recognizer.accept(static_cast<unsigned char>(byte)));
      ++states;
    }
  }
  CHECK(states > 300);
  // Every walk's result is remembered by state, and replies pass through far fewer states than
  // bytes (these random ones, of every kind of whitespace and nesting, about 1 in 5).
  CAPTURE(states);
  CHECK(mask.remembered_states() * 4 < static_cast<std::size_t>(states));

  // A vocabulary that cannot continue an open string: no token at all.
  engine::GrammarTokenMask letters(
      json_mode_grammar(),
      std::make_shared<const engine::SortedVocabulary>(std::vector<std::string>{"a", "b"}));
  GrammarRecognizer open = letters.start();
  REQUIRE(open.accept("{"));
  CHECK(letters.restrict(open, std::vector<float>(2, 0.0f)).empty());
}

TEST_CASE("engine: JSON mode writes one JSON object and ends with it") {
  Context ctx(2);
  gpt2::Model model = gpt2::Model::open(testing::hf_fixture_dir("tiny-a"), ctx);
  // Token t reads as a piece of JSON (or of text), whatever it is; 511 is the model's eos.
  static const std::vector<std::string> kPieces = {
      "{",    "}",    "[",   "]",      "\"", ":",   ",",        " ",    "a",   "1",
      "true", "null", "\\n", "\"k\":", "x}", "{\"", "\xc3\xa9", "\n  ", "0.5", "-"};
  engine::TokenVocabulary vocabulary{
      [](std::int32_t id) { return kPieces[static_cast<std::size_t>(id) % kPieces.size()]; },
      [](std::int32_t id) { return id == 7; }};  // one control token (7 is a space)
  engine::Engine engine(model, ctx, engine::EngineOptions{}, vocabulary);
  struct Reply {
    std::string text;
    std::vector<std::int32_t> tokens;
    FinishReason reason = FinishReason::length;
    std::string error;
  };
  // A sampled request in JSON mode, its reply continuing `prefix`.
  const auto json_request = [](std::uint64_t seed, const std::string& prefix) {
    engine::Request request;
    request.prompt = {1, 2, 3};
    request.max_tokens = 40;
    request.sampling.temperature = 1.5f;
    request.sampling.seed = seed;
    request.json_schema = engine::kJsonObjectSchema;
    request.json_prefix = prefix;
    return request;
  };
  // Steps the engine until every request of `replies` is done, filling in their replies.
  const auto run = [&](std::map<engine::RequestId, Reply>& replies) {
    while (!engine.idle()) {
      for (const engine::Event& e : engine.step().events) {
        Reply& reply = replies.at(e.id);
        if (e.has_token) {
          reply.tokens.push_back(e.token);
          reply.text += vocabulary.text(e.token);
        }
        if (e.finished) {
          reply.reason = e.reason;
          reply.error = e.error;
        }
      }
    }
  };
  std::map<engine::RequestId, Reply> replies;
  for (std::uint64_t seed = 1; seed <= 24; ++seed) replies[engine.submit(json_request(seed, ""))];
  run(replies);
  int objects = 0;
  for (const auto& entry : replies) {
    const Reply& reply = entry.second;  // not a structured binding: clang 14's CAPTURE refuses
    CAPTURE(reply.text);
    for (const std::int32_t token : reply.tokens) {
      CHECK(token != 7);    // the control token
      CHECK(token != 511);  // eos
    }
    if (reply.reason == FinishReason::stop) {
      CHECK(reference_object(reply.text));
      ++objects;
    } else {
      CHECK(reply.reason == FinishReason::length);
      CHECK(reply.tokens.size() == 40);
      GrammarRecognizer recognizer = json_mode();
      REQUIRE(recognizer.accept(reply.text));
      CHECK(reference_object(reply.text + completion(recognizer)));
    }
  }
  CHECK(objects >= 4);

  // A reply that continues a text: the grammar reads the text first; a text that cannot start an
  // object, or is a whole one, is refused.
  const std::string prefix = "{\"a\": [1, ";
  std::map<engine::RequestId, Reply> continued;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    continued[engine.submit(json_request(seed, prefix))];
  }
  std::map<engine::RequestId, Reply> refused;
  for (const char* bad : {"[1, ", "{\"a\": 1}", "{\"a\" 1"}) {
    refused[engine.submit(json_request(1, bad))];
  }
  std::map<engine::RequestId, Reply> all = continued;
  all.insert(refused.begin(), refused.end());
  run(all);
  int continued_objects = 0;
  for (const auto& entry : all) {
    const Reply& reply = entry.second;
    CAPTURE(reply.text);
    if (refused.count(entry.first) != 0) {
      CHECK(reply.reason == FinishReason::refused);
      CHECK(reply.error.find("the text continued") != std::string::npos);
    } else if (reply.reason == FinishReason::stop) {
      CHECK(reference_object(prefix + reply.text));
      ++continued_objects;
    }
  }
  CHECK(continued_objects >= 1);

  // Without the vocabulary's text there is no JSON mode.
  engine::Engine textless(model, ctx, engine::EngineOptions{});
  engine::Request request;
  request.prompt = {1, 2, 3};
  request.json_schema = engine::kJsonObjectSchema;
  const engine::RequestId id = textless.submit(request);
  const std::vector<engine::Event> events = textless.step().events;
  REQUIRE(events.size() == 1);
  CHECK(events[0].id == id);
  CHECK(events[0].reason == FinishReason::refused);
  CHECK(events[0].error.find("JSON mode and JSON schemas need") != std::string::npos);
}
