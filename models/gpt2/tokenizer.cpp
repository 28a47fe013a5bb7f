// GPT-2 byte-level BPE tokenizer.
//
// Files: a vocabulary (JSON object, token -> id) and ranked merges (one "left right" pair per
// line, best first). Both write tokens in GPT-2's byte-level alphabet, where each of the 256 bytes
// is one printable character (see ByteAlphabet), so any byte string is a string of tokens.
//
// Encoding a text of n bytes:
//   1. Each literal "<|endoftext|>" becomes eot_id(); the text between goes through steps 2-4.
//   2. The text is cut into maximal runs of valid UTF-8 and single invalid bytes; an invalid byte
//      becomes the token of that byte, so every byte string round-trips. O(n).
//   3. GPT-2's pre-tokenizer regex (models/tokenizer/regex_splitter.h) cuts each run into
//      pieces: words with their leading space, numbers, symbol runs, whitespace. O(n).
//   4. Byte-pair encoding of each piece of m bytes (models/tokenizer/byte_pair_encoder.h) in the
//      rounds of the reference implementations: merge the adjacent pair of best rank, all its
//      occurrences left to right, before the pairs these merges create compete. O(m log m), and
//      pieces seen before come from a cache.
// Decoding concatenates the bytes of the tokens: O(bytes out).
#include "models/gpt2/tokenizer.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#include <utility>

#include "models/tokenizer/byte_alphabet.h"
#include "models/tokenizer/byte_pair_encoder.h"
#include "models/tokenizer/json_file.h"
#include "models/tokenizer/regex_splitter.h"
#include "models/tokenizer/utf8.h"
#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/strict_json.h"

namespace attnscope::gpt2 {
namespace {

namespace fs = std::filesystem;
using tokenizer::ByteAlphabet;
using tokenizer::hex_byte;
using tokenizer::json_literal;

constexpr std::string_view kEndOfText = "<|endoftext|>";
constexpr std::string_view kWhere = "GPT-2 tokenizer";

// The files of the two naming conventions, Hugging Face's first.
struct FileNames {
  std::string_view vocabulary;
  std::string_view merges;
};
constexpr std::array<FileNames, 2> kFileNames{
    {{"vocab.json", "merges.txt"}, {"encoder.json", "vocab.bpe"}}};

bool is_file(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

// The vocabulary file: a JSON object from token (in the byte-level alphabet) to id; the ids must
// be exactly 0..n-1, each used once.
struct Vocabulary {
  std::unordered_map<std::string, std::int32_t> id_of_token;  // the token as the files write it
  std::vector<std::string> token_bytes;                       // id -> the bytes it stands for
};

// The messages of the per-token and per-line checks below are built only on failure, not once
// for each of the 50,000 tokens and merges.
std::string bytes_of_token(const std::string& token, const std::string& where) {
  check(!token.empty(), where, "empty token");
  std::optional<std::string> bytes = ByteAlphabet::bytes_of_token(token);
  if (bytes) return std::move(*bytes);
  const std::optional<char32_t> foreign = ByteAlphabet::first_foreign_character(token);
  if (!foreign) throw Error(where, "token " + json_literal(token) + " is not UTF-8");
  throw Error(where, "token " + json_literal(token) + ": character " +
                         tokenizer::code_point_name(*foreign) +
                         " is not in GPT-2's byte-level alphabet");
}

Vocabulary read_vocabulary(const fs::path& path) {
  const std::string where = path.string();
  const nlohmann::json json = tokenizer::read_json_file(path);
  check(json.is_object(), where, "expected a JSON object mapping each token to its id");
  const std::size_t size = json.size();
  check(size <= std::numeric_limits<std::int32_t>::max(), where, "too many tokens");
  // Every byte's one-byte token first: a vocabulary missing one is not byte-level, whatever else
  // is wrong with its ids.
  for (int byte = 0; byte < 256; ++byte) {
    const std::string& token = ByteAlphabet::character_of_byte(static_cast<unsigned char>(byte));
    check(json.contains(token), where,
          "no token for byte " + hex_byte(byte) + " (" + json_literal(token) + ")");
  }

  Vocabulary vocabulary;
  vocabulary.token_bytes.resize(size);
  std::vector<bool> id_used(size, false);
  for (const auto& entry : json.items()) {
    const std::string& token = entry.key();
    const nlohmann::json& value = entry.value();
    const auto fail = [&](std::string_view problem) {
      throw Error(where,
                  "token " + json_literal(token) + ": id " + value.dump() + std::string(problem));
    };
    if (!value.is_number_integer()) fail(" is not an integer");
    if (!value.is_number_unsigned() || value.get<std::uint64_t>() >= size) {
      fail(" is outside [0, " + std::to_string(size) + ")");
    }
    const auto id = value.get<std::size_t>();
    if (id_used[id]) fail(" is used by another token too");
    id_used[id] = true;
    vocabulary.token_bytes[id] = bytes_of_token(token, where);
    vocabulary.id_of_token.emplace(token, static_cast<std::int32_t>(id));
  }
  return vocabulary;
}

// The merges file: an optional "#version" first line, then "left right" per line, best first.
tokenizer::MergeTable read_merges(const fs::path& path, const Vocabulary& vocabulary) {
  const std::string text = read_input_file(path, kMaxTokenizerBytes, "a tokenizer file");
  tokenizer::MergeTable merges;
  std::int32_t rank = 0;
  std::size_t line_number = 0;
  for (std::size_t begin = 0; begin < text.size();) {
    const std::size_t end = std::min(text.find('\n', begin), text.size());
    std::string_view line(text.data() + begin, end - begin);
    begin = end + 1;
    ++line_number;
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.empty() || (line_number == 1 && line.starts_with("#version"))) continue;

    const auto fail = [&](const std::string& problem) {
      throw Error(path.string() + ":" + std::to_string(line_number), problem);
    };
    const std::size_t space = line.find(' ');
    const bool two_tokens = space != std::string_view::npos && space > 0 &&
                            space + 1 < line.size() && line.find(' ', space + 1) == line.npos;
    if (!two_tokens) {
      fail("expected two tokens separated by one space, found " + json_literal(line));
    }
    const auto id_of = [&](const std::string& token, std::string_view role) {
      const auto found = vocabulary.id_of_token.find(token);
      if (found == vocabulary.id_of_token.end()) {
        fail(std::string(role) + " " + json_literal(token) + " is not in the vocabulary");
      }
      return found->second;
    };
    const std::string left(line.substr(0, space));
    const std::string right(line.substr(space + 1));
    const std::int32_t left_id = id_of(left, "token");
    const std::int32_t right_id = id_of(right, "token");
    const std::int32_t merged_id = id_of(left + right, "merged token");
    const bool added =
        merges.emplace(tokenizer::pair_key(left_id, right_id), tokenizer::Merge{rank, merged_id})
            .second;
    if (!added) fail("duplicate merge " + json_literal(line));
    ++rank;
  }
  return merges;
}

// The id of each byte's one-byte token (read_vocabulary made sure each byte has one).
std::array<std::int32_t, 256> byte_tokens(const Vocabulary& vocabulary) {
  std::array<std::int32_t, 256> byte_token{};
  for (int byte = 0; byte < 256; ++byte) {
    byte_token[byte] = vocabulary.id_of_token.at(
        ByteAlphabet::character_of_byte(static_cast<unsigned char>(byte)));
  }
  return byte_token;
}

std::int32_t end_of_text_id(const Vocabulary& vocabulary, const std::string& where) {
  const auto found = vocabulary.id_of_token.find(std::string(kEndOfText));
  check(found != vocabulary.id_of_token.end(), where,
        "no \"" + std::string(kEndOfText) + "\" token");
  return found->second;
}

// The checks after the vocabulary's own: "<|endoftext|>", then the merges.
tokenizer::BytePairEncoder make_byte_pair_encoder(const Vocabulary& vocabulary,
                                                  const std::string& where,
                                                  const fs::path& merges_path) {
  const std::array<std::int32_t, 256> byte_token = byte_tokens(vocabulary);
  end_of_text_id(vocabulary, where);
  return tokenizer::BytePairEncoder(tokenizer::SymbolAlphabet::bytes(byte_token),
                                    read_merges(merges_path, vocabulary),
                                    tokenizer::MergeOrder::rounds);
}

}  // namespace

struct Tokenizer::Impl {
  Impl(const fs::path& vocabulary_path, const fs::path& merges_path)
      : Impl(read_vocabulary(vocabulary_path), vocabulary_path.string(), merges_path) {}
  Impl(Vocabulary vocabulary, const std::string& where, const fs::path& merges_path)
      : byte_pair_encoder(make_byte_pair_encoder(vocabulary, where, merges_path)),
        eot_id(end_of_text_id(vocabulary, where)),
        token_bytes(std::move(vocabulary.token_bytes)) {}

  // Steps 2 to 4 of the file comment, for text holding no "<|endoftext|>".
  void encode_ordinary(std::string_view text, std::vector<std::int32_t>& ids) const;

  tokenizer::BytePairEncoder byte_pair_encoder;
  std::int32_t eot_id;
  std::vector<std::string> token_bytes;  // id -> bytes
  tokenizer::RegexSplitter pre_tokenizer{tokenizer::kGpt2SplitPattern, std::string(kWhere)};
};

void Tokenizer::Impl::encode_ordinary(std::string_view text, std::vector<std::int32_t>& ids) const {
  std::vector<std::string_view> pieces;
  for (const tokenizer::Utf8Run& run : tokenizer::utf8_runs(text)) {
    if (!run.valid) {
      byte_pair_encoder.encode(run.text, ids);  // one byte: its own token
      continue;
    }
    pieces.clear();
    pre_tokenizer.split(run.text, pieces);
    for (const std::string_view piece : pieces) byte_pair_encoder.encode(piece, ids);
  }
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;
Tokenizer Tokenizer::load(const std::string& dir) {
  for (const FileNames& names : kFileNames) {
    const fs::path vocabulary = fs::path(dir) / names.vocabulary;
    const fs::path merges = fs::path(dir) / names.merges;
    if (is_file(vocabulary) && is_file(merges)) {  // both read under the folder's link policy
      return Tokenizer(std::make_unique<Impl>(model_folder_file(dir, std::string(names.vocabulary)),
                                              model_folder_file(dir, std::string(names.merges))));
    }
  }
  // No complete pair: name the missing half of a pair if one half is there.
  for (const FileNames& names : kFileNames) {
    const fs::path vocabulary = fs::path(dir) / names.vocabulary;
    const fs::path merges = fs::path(dir) / names.merges;
    check(!is_file(vocabulary), merges.string(),
          "missing (needed with " + std::string(names.vocabulary) + ")");
    check(!is_file(merges), vocabulary.string(),
          "missing (needed with " + std::string(names.merges) + ")");
  }
  throw Error(dir,
              "no GPT-2 tokenizer files: expected vocab.json + merges.txt or "
              "encoder.json + vocab.bpe");
}

bool Tokenizer::present_in(const std::string& dir) {
  return std::ranges::any_of(kFileNames, [&](const FileNames& names) {
    return is_file(fs::path(dir) / names.vocabulary) && is_file(fs::path(dir) / names.merges);
  });
}

bool Tokenizer::is_file_name(std::string_view name) {
  return std::ranges::any_of(kFileNames, [&](const FileNames& names) {
    return name == names.vocabulary || name == names.merges;
  });
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids;
  for (std::size_t begin = 0;;) {
    const std::size_t end = std::min(text.find(kEndOfText, begin), text.size());
    impl_->encode_ordinary(text.substr(begin, end - begin), ids);
    if (end == text.size()) break;
    ids.push_back(impl_->eot_id);
    begin = end + kEndOfText.size();
  }
  return ids;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids) const {
  std::string text;
  for (const std::int32_t id : ids) text += token_bytes(id);
  return text;
}

const std::string& Tokenizer::token_bytes(std::int32_t id) const {
  const std::size_t size = impl_->token_bytes.size();
  if (id < 0 || static_cast<std::size_t>(id) >= size) {
    throw Error(kWhere,
                "token id " + std::to_string(id) + " is outside [0, " + std::to_string(size) + ")");
  }
  return impl_->token_bytes[id];
}

std::int32_t Tokenizer::eot_id() const { return impl_->eot_id; }

std::size_t Tokenizer::vocab_size() const { return impl_->token_bytes.size(); }

}  // namespace attnscope::gpt2
