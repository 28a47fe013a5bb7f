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
//   3. GPT-2's pre-tokenizer regex (PCRE2, compiled once, JIT when available) cuts each run into
//      pieces: words with their leading space, numbers, symbol runs, whitespace. O(n).
//   4. Byte-pair encoding of each piece of m bytes: start with one token per byte and merge the
//      adjacent pair of best rank, all its occurrences left to right, before the pairs these
//      merges create compete (the rounds of the reference implementations). A heap of candidate
//      pairs over a linked list of symbols makes that O(m log m). Real text repeats its pieces,
//      so their tokens are cached.
// Decoding concatenates the bytes of the tokens: O(bytes out).
#include "models/gpt2/tokenizer.h"

// pcre2.h declares the functions of one code unit width, chosen by this definition.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <shared_mutex>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "runtime/error.h"

namespace attnscope::gpt2 {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kEndOfText = "<|endoftext|>";
constexpr std::string_view kWhere = "GPT-2 tokenizer";

// GPT-2's pre-tokenizer, with \s written \p{White_Space}: that is what \s means in Python's
// `regex` module, which the reference implementations use, while PCRE2's \s also matches U+180E.
constexpr std::string_view kPreTokenizerPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+)"
    R"(|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+)";

// The piece cache holds at most this many pieces (when full it starts over) of at most this many
// bytes (longer pieces rarely repeat), which bounds its memory whatever the input.
constexpr std::size_t kCacheCapacity = std::size_t{1} << 16;
constexpr std::size_t kMaxCachedPieceBytes = 256;

// The files of the two naming conventions, Hugging Face's first.
struct FileNames {
  std::string_view vocabulary;
  std::string_view merges;
};
constexpr std::array<FileNames, 2> kFileNames{
    {{"vocab.json", "merges.txt"}, {"encoder.json", "vocab.bpe"}}};

// GPT-2 writes byte b as one printable character: the bytes that are printable Latin-1
// characters ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves, the other 68
// (controls, space, 0x7F..0xA0, 0xAD) become U+0100, U+0101, ... in byte order.
struct ByteAlphabet {
  static constexpr char32_t kEnd = 0x100 + 68;  // one past the largest character used
  std::array<char32_t, 256> character_of_byte{};
  std::array<int, kEnd> byte_of_character{};  // -1: not a character of the alphabet

  ByteAlphabet() {
    byte_of_character.fill(-1);
    char32_t next_extra = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
      const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                             (byte >= 0xAE && byte <= 0xFF);
      const char32_t character = printable ? static_cast<char32_t>(byte) : next_extra++;
      character_of_byte[byte] = character;
      byte_of_character[character] = byte;
    }
  }

  // The character of `byte` as UTF-8 (all the characters are below U+0800: one or two bytes).
  std::string utf8_of_byte(int byte) const {
    const char32_t character = character_of_byte[byte];
    if (character < 0x80) return std::string(1, static_cast<char>(character));
    return {static_cast<char>(0xC0 | (character >> 6)),
            static_cast<char>(0x80 | (character & 0x3F))};
  }
};

const ByteAlphabet& byte_alphabet() {
  static const ByteAlphabet alphabet;
  return alphabet;
}

// One code point read from UTF-8; length 0 when the bytes there are not a valid sequence.
struct CodePoint {
  char32_t value;
  std::size_t length;
};

// Reads the UTF-8 sequence at text[pos] by the strict rules that PCRE2 also checks: no overlong
// forms, no surrogates, nothing above U+10FFFF.
CodePoint decode_utf8(std::string_view text, std::size_t pos) {
  constexpr CodePoint kInvalid{0, 0};
  // The smallest value of each length: a smaller one is an overlong form.
  constexpr std::array<char32_t, 5> kSmallest{0, 0, 0x80, 0x800, 0x10000};
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return {lead, 1};
  // The lead byte gives the length and the top bits of the value.
  std::size_t length = 0;
  char32_t value = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    value = lead & 0x1Fu;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    value = lead & 0x0Fu;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    value = lead & 0x07u;
  } else {
    return kInvalid;  // a continuation byte, or 0xF8..0xFF
  }
  if (text.size() - pos < length) return kInvalid;
  for (std::size_t i = 1; i < length; ++i) {
    const auto byte = static_cast<unsigned char>(text[pos + i]);
    if ((byte & 0xC0) != 0x80) return kInvalid;
    value = (value << 6) | (byte & 0x3Fu);
  }
  const bool surrogate = value >= 0xD800 && value <= 0xDFFF;
  if (value < kSmallest[length] || surrogate || value > 0x10FFFF) return kInvalid;
  return {value, length};
}

// `text` as a JSON string literal, cut after 60 bytes: safe to put in a one-line message.
std::string json_literal(std::string_view text) {
  constexpr std::size_t kShown = 60;
  std::string shown(text.substr(0, kShown));
  if (text.size() > kShown) shown += "...";
  return nlohmann::json(shown).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string hex_byte(int byte) {
  std::array<char, 8> text{};
  std::snprintf(text.data(), text.size(), "0x%02X", static_cast<unsigned>(byte));
  return text.data();
}

std::string code_point_name(char32_t value) {
  std::array<char, 16> text{};
  std::snprintf(text.data(), text.size(), "U+%04X", static_cast<unsigned>(value));
  return text.data();
}

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  check(file.is_open(), path.string(), "cannot open the file");
  std::ostringstream content;
  content << file.rdbuf();
  check(!file.bad(), path.string(), "cannot read the file");
  return std::move(content).str();
}

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
  const ByteAlphabet& alphabet = byte_alphabet();
  std::string bytes;
  for (std::size_t pos = 0; pos < token.size();) {
    const CodePoint character = decode_utf8(token, pos);
    if (character.length == 0) throw Error(where, "token " + json_literal(token) + " is not UTF-8");
    const int byte =
        character.value < ByteAlphabet::kEnd ? alphabet.byte_of_character[character.value] : -1;
    if (byte < 0) {
      throw Error(where, "token " + json_literal(token) + ": character " +
                             code_point_name(character.value) +
                             " is not in GPT-2's byte-level alphabet");
    }
    bytes += static_cast<char>(byte);
    pos += character.length;
  }
  return bytes;
}

Vocabulary read_vocabulary(const fs::path& path) {
  const std::string where = path.string();
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::parse_error& error) {
    // what() reads "[json.exception.parse_error.101] parse error at line 1, ...".
    const std::string_view message = error.what();
    throw Error(where, "invalid JSON: " + std::string(message.substr(message.find(']') + 2)));
  }
  check(json.is_object(), where, "expected a JSON object mapping each token to its id");
  const std::size_t size = json.size();
  check(size <= std::numeric_limits<std::int32_t>::max(), where, "too many tokens");

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

// A pair of adjacent token ids as one hash key.
std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
  return (std::uint64_t{static_cast<std::uint32_t>(left)} << 32) |
         static_cast<std::uint32_t>(right);
}

struct Merge {
  std::int32_t rank;       // 0 merges first
  std::int32_t merged_id;  // the token of the two joined
};

// The merges file: an optional "#version" first line, then "left right" per line, best first.
std::unordered_map<std::uint64_t, Merge> read_merges(const fs::path& path,
                                                     const Vocabulary& vocabulary) {
  const std::string text = read_file(path);
  std::unordered_map<std::uint64_t, Merge> merges;
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
    const bool added = merges.emplace(pair_key(left_id, right_id), Merge{rank, merged_id}).second;
    if (!added) fail("duplicate merge " + json_literal(line));
    ++rank;
  }
  return merges;
}

struct RegexCodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

std::string pcre2_message(int error_code) {
  std::array<PCRE2_UCHAR, 256> message{};
  pcre2_get_error_message(error_code, message.data(), message.size());
  return reinterpret_cast<const char*>(message.data());
}

std::unique_ptr<pcre2_code, RegexCodeDeleter> compile_pre_tokenizer() {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  // ANCHORED: every match starts where the previous one ended.
  std::unique_ptr<pcre2_code, RegexCodeDeleter> code(pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(kPreTokenizerPattern.data()), kPreTokenizerPattern.size(),
      PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &error_code, &error_offset, nullptr));
  check(code != nullptr, kWhere,
        "cannot compile the pre-tokenizer regex: " + pcre2_message(error_code));
  // JIT matches several times faster. Where it is unavailable this call fails and pcre2_match
  // interprets the same compiled pattern instead, with identical results.
  pcre2_jit_compile(code.get(), PCRE2_JIT_COMPLETE);
  return code;
}

// Heterogeneous lookup, so that a cache hit costs no string allocation.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const {
    return std::hash<std::string_view>{}(text);
  }
};

}  // namespace

struct Tokenizer::Impl {
  Impl(const fs::path& vocabulary_path, const fs::path& merges_path);

  // Steps 2 to 4 of the file comment, for text holding no "<|endoftext|>".
  void encode_ordinary(std::string_view text, pcre2_match_data* match_data,
                       std::vector<std::int32_t>& ids) const;
  void encode_valid_utf8(std::string_view run, pcre2_match_data* match_data,
                         std::vector<std::int32_t>& ids) const;
  void encode_piece(std::string_view piece, std::vector<std::int32_t>& ids) const;
  std::vector<std::int32_t> byte_pair_encode(std::string_view piece) const;

  std::vector<std::string> token_bytes;             // id -> bytes
  std::array<std::int32_t, 256> byte_token{};       // byte -> the id of its one-byte token
  std::unordered_map<std::uint64_t, Merge> merges;  // pair_key(left, right) -> merge
  std::int32_t eot_id = 0;
  std::unique_ptr<pcre2_code, RegexCodeDeleter> pre_tokenizer = compile_pre_tokenizer();

  mutable std::shared_mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<std::int32_t>, StringHash, std::equal_to<>>
      cache;  // piece -> its tokens
};

Tokenizer::Impl::Impl(const fs::path& vocabulary_path, const fs::path& merges_path) {
  Vocabulary vocabulary = read_vocabulary(vocabulary_path);
  const std::string where = vocabulary_path.string();
  for (int byte = 0; byte < 256; ++byte) {
    const std::string token = byte_alphabet().utf8_of_byte(byte);
    const auto found = vocabulary.id_of_token.find(token);
    if (found == vocabulary.id_of_token.end()) {
      throw Error(where, "no token for byte " + hex_byte(byte) + " (" + json_literal(token) + ")");
    }
    byte_token[byte] = found->second;
  }
  const auto end_of_text = vocabulary.id_of_token.find(std::string(kEndOfText));
  check(end_of_text != vocabulary.id_of_token.end(), where,
        "no \"" + std::string(kEndOfText) + "\" token");
  eot_id = end_of_text->second;
  merges = read_merges(merges_path, vocabulary);
  token_bytes = std::move(vocabulary.token_bytes);
}

void Tokenizer::Impl::encode_ordinary(std::string_view text, pcre2_match_data* match_data,
                                      std::vector<std::int32_t>& ids) const {
  std::size_t run_begin = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t length = decode_utf8(text, pos).length;
    if (length > 0) {
      pos += length;
      continue;
    }
    encode_valid_utf8(text.substr(run_begin, pos - run_begin), match_data, ids);
    ids.push_back(byte_token[static_cast<unsigned char>(text[pos])]);
    run_begin = ++pos;
  }
  encode_valid_utf8(text.substr(run_begin), match_data, ids);
}

void Tokenizer::Impl::encode_valid_utf8(std::string_view run, pcre2_match_data* match_data,
                                        std::vector<std::int32_t>& ids) const {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(run.data());
  // The first call checks the UTF-8 of the whole run (a second opinion on decode_utf8's); the
  // later calls skip that check, which would otherwise make the loop quadratic.
  std::uint32_t options = 0;
  for (std::size_t offset = 0; offset < run.size(); options = PCRE2_NO_UTF_CHECK) {
    // Every character matches one alternative, so no input makes this fail: a failure is a bug.
    const int result =
        pcre2_match(pre_tokenizer.get(), subject, run.size(), offset, options, match_data, nullptr);
    if (result <= 0) throw Error(kWhere, "pre-tokenizer regex failed: " + pcre2_message(result));
    const PCRE2_SIZE* match = pcre2_get_ovector_pointer(match_data);
    check(match[0] == offset && match[1] > offset && match[1] <= run.size(), kWhere,
          "pre-tokenizer regex returned an invalid range");
    encode_piece(run.substr(offset, match[1] - offset), ids);
    offset = match[1];
  }
}

void Tokenizer::Impl::encode_piece(std::string_view piece, std::vector<std::int32_t>& ids) const {
  const bool cacheable = piece.size() <= kMaxCachedPieceBytes;
  if (cacheable) {
    const std::shared_lock lock(cache_mutex);
    if (const auto cached = cache.find(piece); cached != cache.end()) {
      ids.insert(ids.end(), cached->second.begin(), cached->second.end());
      return;
    }
  }
  std::vector<std::int32_t> piece_ids = byte_pair_encode(piece);
  ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
  if (!cacheable) return;
  const std::unique_lock lock(cache_mutex);
  if (cache.size() >= kCacheCapacity) cache.clear();
  cache.emplace(piece, std::move(piece_ids));
}

std::vector<std::int32_t> Tokenizer::Impl::byte_pair_encode(std::string_view piece) const {
  // The piece as a doubly linked list of symbols, one per byte at first. A merge keeps the left
  // symbol, which becomes the merged token, and unlinks the right one.
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  struct Symbol {
    std::int32_t id;  // -1 once merged away
    std::size_t prev;
    std::size_t next;
  };
  std::vector<Symbol> symbols(piece.size());
  for (std::size_t i = 0; i < piece.size(); ++i) {
    symbols[i] = {byte_token[static_cast<unsigned char>(piece[i])], i == 0 ? kNone : i - 1,
                  i + 1 < piece.size() ? i + 1 : kNone};
  }

  // A mergeable pair as it was when found; it is stale if either symbol has changed since.
  struct Candidate {
    std::int32_t rank;
    std::size_t left;
    std::int32_t left_id;
    std::int32_t right_id;
    std::int32_t merged_id;
  };
  const auto comes_later = [](const Candidate& a, const Candidate& b) {
    return std::tie(a.rank, a.left) > std::tie(b.rank, b.left);
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(comes_later)> best_first(
      comes_later);
  std::vector<Candidate> next_round;  // pairs found during the current round
  const auto find_pair_at = [&](std::size_t left) {
    const std::size_t right = symbols[left].next;
    if (right == kNone) return;
    const auto merge = merges.find(pair_key(symbols[left].id, symbols[right].id));
    if (merge == merges.end()) return;
    next_round.push_back(
        {merge->second.rank, left, symbols[left].id, symbols[right].id, merge->second.merged_id});
  };
  for (std::size_t i = 0; i + 1 < piece.size(); ++i) find_pair_at(i);

  // A round merges every occurrence, left to right, of the best pair present when it starts.
  std::int32_t round_rank = -1;
  while (true) {
    if (best_first.empty() || best_first.top().rank != round_rank) {
      for (const Candidate& candidate : next_round) best_first.push(candidate);
      next_round.clear();
      if (best_first.empty()) break;
      round_rank = best_first.top().rank;
    }
    const Candidate pair = best_first.top();
    best_first.pop();
    // A position's token only grows (merges make longer tokens), so when both positions still
    // hold the ids recorded, the pair is still there.
    Symbol& left = symbols[pair.left];
    const std::size_t right = left.next;
    if (left.id != pair.left_id || right == kNone || symbols[right].id != pair.right_id) continue;
    left.id = pair.merged_id;
    left.next = symbols[right].next;
    if (left.next != kNone) symbols[left.next].prev = pair.left;
    symbols[right].id = -1;
    if (left.prev != kNone) find_pair_at(left.prev);
    find_pair_at(pair.left);
  }

  std::vector<std::int32_t> ids;
  for (std::size_t i = 0; i != kNone; i = symbols[i].next) ids.push_back(symbols[i].id);
  return ids;
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& dir) {
  for (const FileNames& names : kFileNames) {
    const fs::path vocabulary = fs::path(dir) / names.vocabulary;
    const fs::path merges = fs::path(dir) / names.merges;
    if (is_file(vocabulary) && is_file(merges)) {
      return Tokenizer(std::make_unique<Impl>(vocabulary, merges));
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

std::vector<std::int32_t> Tokenizer::encode(std::string_view text) const {
  const std::unique_ptr<pcre2_match_data, MatchDataDeleter> match_data(
      pcre2_match_data_create_from_pattern(impl_->pre_tokenizer.get(), nullptr));
  check(match_data != nullptr, kWhere, "out of memory for the regex match data");
  std::vector<std::int32_t> ids;
  for (std::size_t begin = 0;;) {
    const std::size_t end = std::min(text.find(kEndOfText, begin), text.size());
    impl_->encode_ordinary(text.substr(begin, end - begin), match_data.get(), ids);
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
