#include "models/tokenizer/tokenizer_json.h"

#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>

#include "models/tokenizer/added_tokens.h"
#include "models/tokenizer/byte_alphabet.h"
#include "models/tokenizer/byte_pair_encoder.h"
#include "models/tokenizer/decoder.h"
#include "models/tokenizer/json_file.h"
#include "models/tokenizer/normalizer.h"
#include "models/tokenizer/pre_tokenizer.h"
#include "models/tokenizer/symbol_alphabet.h"
#include "models/tokenizer/utf8.h"
#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/strict_json.h"

namespace attnscope::tokenizer {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr std::string_view kFileName = "tokenizer.json";

// spec[key] as a bool: `absent` when missing or null; throws unless it is a bool.
bool flag(const Json& spec, const char* key, bool absent, const std::string& where,
          std::string_view part) {
  if (!spec.contains(key) || spec[key].is_null()) return absent;
  check(spec[key].is_boolean(), where,
        std::string(part) + ": \"" + key + "\" is not true or false");
  return spec[key].get<bool>();
}

// The type of a component ("model", "decoder", ...), or "" when it is null.
std::string type_of(const Json& spec, std::string_view part, const std::string& where) {
  return spec.is_null() ? "" : component_type(spec, part, where);
}

// A token's id: below 2^24, as a config's vocab_size (tables are sized by the largest id, so a
// stray 10^9 would ask for gigabytes).
std::int32_t token_id_of(const Json& value, const std::string& where, const std::string& what) {
  constexpr std::uint64_t kIdLimit = std::uint64_t{1} << 24;
  check(value.is_number_unsigned() && value.get<std::uint64_t>() < kIdLimit, where,
        what + ": id " + json_excerpt(value) + " is not an integer in [0, 2^24)");
  return static_cast<std::int32_t>(value.get<std::uint64_t>());
}

// The checks of the BPE model that do not concern its vocabulary.
void check_bpe_options(const Json& model, const std::string& where) {
  const std::string type = type_of(model, "model", where);
  check(!type.empty(), where, "no \"model\" (the vocabulary and merges of a BPE)");
  check(type == "BPE", where, "model " + json_literal(type) + " is not supported (only BPE)");
  check(!model.contains("dropout") || model["dropout"].is_null(), where,
        "model BPE: dropout is not supported (encoding would be random)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const bool none = !model.contains(key) || model[key].is_null() ||
                      (model[key].is_string() && model[key].get<std::string>().empty());
    check(none, where, std::string("model BPE: ") + key + " is not supported");
  }
  check(model.contains("vocab") && model["vocab"].is_object(), where,
        "model BPE: expected \"vocab\", an object mapping each token to its id");
  check(model.contains("merges") && model["merges"].is_array(), where,
        "model BPE: expected \"merges\", a list");
}

// One entry of "merges": "left right" or ["left", "right"].
std::pair<std::string, std::string> merge_pair(const Json& entry, std::size_t index,
                                               const std::string& where) {
  const std::string what = "model BPE: merge " + std::to_string(index);
  if (entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_string()) {
    return {entry[0].get<std::string>(), entry[1].get<std::string>()};
  }
  check(entry.is_string(), where, what + ": expected \"left right\" or [left, right]");
  const std::string line = entry.get<std::string>();
  const std::size_t space = line.find(' ');
  const bool two_tokens = space != std::string::npos && space > 0 && space + 1 < line.size() &&
                          line.find(' ', space + 1) == std::string::npos;
  check(two_tokens, where,
        what + ": expected two tokens separated by one space, found " + json_literal(line));
  return {line.substr(0, space), line.substr(space + 1)};
}

}  // namespace

struct TokenizerJson::Impl {
  explicit Impl(const fs::path& file);

  void encode_text(std::string_view text, bool starts_input, std::vector<std::int32_t>& ids) const;
  SymbolAlphabet read_alphabet(const Json& model) const;
  void read_post_processor(const Json& spec);

  std::string where;
  std::vector<std::string> token_bytes;  // id -> bytes
  std::vector<bool> has_token;           // id -> whether some token has it
  std::vector<bool> special;             // id -> an added token marked special (<|im_end|>, <s>)
  std::unordered_map<std::string, std::int32_t> id_of_content;  // as the file writes tokens
  std::unordered_map<std::string, std::int32_t> id_of_piece;    // ignore_merges: piece -> id
  bool ignore_merges = false;
  std::unique_ptr<BytePairEncoder> byte_pair_encoder;
  std::unique_ptr<AddedTokenMatcher> unnormalized_tokens;  // matched first, in the raw text
  std::unique_ptr<Normalizer> normalizer;                  // then the text between normalized
  std::unique_ptr<AddedTokenMatcher> normalized_tokens;    // and these matched in it
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Decoder> decoder;
  std::vector<std::int32_t> prefix;  // the post-processor's tokens before the text's
  std::vector<std::int32_t> suffix;  // and after
};

TokenizerJson::Impl::Impl(const fs::path& file) : where(file.string()) {
  const Json json = read_json_file(file);
  check(json.is_object(), where, "expected a JSON object");
  check(json.value("truncation", Json()).is_null(), where,
        "truncation is not supported (only null)");
  normalizer = std::make_unique<Normalizer>(json.value("normalizer", Json()), where);
  pre_tokenizer = std::make_unique<PreTokenizer>(json.value("pre_tokenizer", Json()), where);
  decoder = std::make_unique<Decoder>(json.value("decoder", Json()), where);
  check(decoder->byte_level() == pre_tokenizer->byte_level(), where,
        pre_tokenizer->byte_level()
            ? "the pre-tokenizer is ByteLevel but the decoder is not: not supported"
            : "the decoder is ByteLevel but the pre-tokenizer is not: not supported");

  // The vocabulary, then the added tokens, which may reuse a vocabulary id or add new ones.
  const Json& model = json.value("model", Json());
  check_bpe_options(model, where);
  ignore_merges = flag(model, "ignore_merges", false, where, "model BPE");
  std::vector<std::pair<std::int32_t, std::string>> tokens;  // id, content
  for (const auto& entry : model["vocab"].items()) {
    tokens.emplace_back(token_id_of(entry.value(), where, "token " + json_literal(entry.key())),
                        entry.key());
  }
  struct Added {
    AddedToken token;
    bool normalized;
    bool special;
  };
  std::vector<Added> added;
  const Json& added_tokens = json.value("added_tokens", Json::array());
  check(added_tokens.is_array(), where, "added_tokens: expected a list");
  for (const Json& entry : added_tokens) {
    check(entry.is_object() && entry.contains("content") && entry["content"].is_string() &&
              !entry["content"].get<std::string>().empty() && entry.contains("id"),
          where, "added_tokens: expected objects with an \"id\" and a non-empty \"content\"");
    const std::string content = entry["content"].get<std::string>();
    const std::string what = "added token " + json_literal(content);
    AddedToken token{token_id_of(entry["id"], where, what), content,
                     flag(entry, "single_word", false, where, what),
                     flag(entry, "lstrip", false, where, what),
                     flag(entry, "rstrip", false, where, what)};
    added.push_back({token, flag(entry, "normalized", true, where, what),
                     flag(entry, "special", false, where, what)});
  }

  std::size_t size = 0;
  for (const auto& [id, content] : tokens) size = std::max<std::size_t>(size, id + 1);
  for (const Added& entry : added) size = std::max<std::size_t>(size, entry.token.id + 1);
  token_bytes.resize(size);
  has_token.resize(size, false);
  std::vector<std::string> content_of_id(size);
  for (const auto& [id, content] : tokens) {
    check(!has_token[id], where,
          "token " + json_literal(content) + ": id " + std::to_string(id) +
              " is used by another token too");
    has_token[id] = true;
    content_of_id[id] = content;
    id_of_content.emplace(content, id);
    if (!pre_tokenizer->byte_level()) {
      id_of_piece.emplace(content, id);
    } else if (std::optional<std::string> bytes = ByteAlphabet::bytes_of_token(content)) {
      id_of_piece.emplace(*bytes, id);
    }
  }
  const SymbolAlphabet alphabet = read_alphabet(model);
  // An added token overrides the vocabulary's entry of its id, as the library's decoding does. A
  // normalized one is looked for in the normalized text as the normalizer writes its content.
  std::vector<AddedToken> unnormalized;
  std::vector<AddedToken> normalized;
  special.resize(size, false);
  for (Added& entry : added) {
    has_token[entry.token.id] = true;
    special[entry.token.id] = entry.special;
    content_of_id[entry.token.id] = entry.token.content;
    id_of_content[entry.token.content] = entry.token.id;
    if (entry.normalized) {
      entry.token.content = normalizer->normalize(entry.token.content);
      normalized.push_back(std::move(entry.token));
    } else {
      unnormalized.push_back(std::move(entry.token));
    }
  }
  unnormalized_tokens = std::make_unique<AddedTokenMatcher>(std::move(unnormalized));
  normalized_tokens = std::make_unique<AddedTokenMatcher>(std::move(normalized));
  for (std::size_t id = 0; id < size; ++id) {
    token_bytes[id] = decoder->token_bytes(content_of_id[id]);
  }

  MergeTable merges;
  const Json& merge_list = model["merges"];
  for (std::size_t rank = 0; rank < merge_list.size(); ++rank) {
    const auto [left, right] = merge_pair(merge_list[rank], rank, where);
    const std::string what = "model BPE: merge " + std::to_string(rank) + ": ";
    const auto id_of = [&](const std::string& token) {
      const auto found = id_of_content.find(token);
      check(found != id_of_content.end(), where,
            what + json_literal(token) + " is not in the vocabulary");
      return found->second;
    };
    const std::int32_t left_id = id_of(left);
    const std::int32_t right_id = id_of(right);
    const Merge merge{static_cast<std::int32_t>(rank), id_of(left + right)};
    check(merges.emplace(pair_key(left_id, right_id), merge).second, where,
          what + "duplicate merge " + json_literal(left + " " + right));
  }
  byte_pair_encoder =
      std::make_unique<BytePairEncoder>(alphabet, std::move(merges), MergeOrder::best_pair_first);
  read_post_processor(json.value("post_processor", Json()));
}

// BPE's first symbols: a byte-level vocabulary's token of each byte, or the vocabulary's
// characters with the model's byte_fallback, unk_token and fuse_unk.
SymbolAlphabet TokenizerJson::Impl::read_alphabet(const Json& model) const {
  const auto id_in_vocabulary = [&](const std::string& content) -> std::optional<std::int32_t> {
    const auto found = model["vocab"].find(content);
    if (found == model["vocab"].end()) return std::nullopt;
    return found->get<std::int32_t>();
  };
  if (pre_tokenizer->byte_level()) {
    std::array<std::int32_t, 256> byte_token{};
    for (int byte = 0; byte < 256; ++byte) {
      const std::string& token = ByteAlphabet::character_of_byte(static_cast<unsigned char>(byte));
      const std::optional<std::int32_t> id = id_in_vocabulary(token);
      check(id.has_value(), where,
            "model BPE: no token for byte " + hex_byte(byte) + " (" + json_literal(token) +
                "): not a byte-level vocabulary");
      byte_token[byte] = *id;
    }
    return SymbolAlphabet::bytes(byte_token);
  }
  SymbolAlphabet::Characters characters;
  for (const auto& entry : model["vocab"].items()) {
    const std::string& content = entry.key();
    if (!content.empty() && decode_utf8(content, 0).length == content.size()) {
      characters.token_of_character.emplace(content, entry.value().get<std::int32_t>());
    }
  }
  if (flag(model, "byte_fallback", false, where, "model BPE")) {
    std::array<std::int32_t, 256> fallback{};
    for (int byte = 0; byte < 256; ++byte) {
      const std::string token = std::string("<").append(hex_byte(byte)).append(">");
      const std::optional<std::int32_t> id = id_in_vocabulary(token);
      check(id.has_value(), where,
            "model BPE: byte_fallback is set but the vocabulary has no " + json_literal(token));
      fallback[byte] = *id;
    }
    characters.fallback_token = fallback;
  }
  const Json& unknown = model.value("unk_token", Json());
  if (!unknown.is_null()) {
    check(unknown.is_string(), where, "model BPE: unk_token is not a string");
    characters.unknown_token = id_in_vocabulary(unknown.get<std::string>());
    check(characters.unknown_token.has_value(), where,
          "model BPE: unk_token " + json_literal(unknown.get<std::string>()) +
              " is not in the vocabulary");
  }
  characters.fuse_unknown = flag(model, "fuse_unk", false, where, "model BPE");
  return SymbolAlphabet::characters(std::move(characters));
}

void TokenizerJson::Impl::read_post_processor(const Json& spec) {
  const std::string type = type_of(spec, "post_processor", where);
  if (type.empty() || type == "ByteLevel") return;  // ByteLevel adjusts offsets only
  if (type == "Sequence") {
    const Json& processors = spec.value("processors", Json());
    check(processors.is_array(), where, "post_processor Sequence: expected \"processors\"");
    for (const Json& processor : processors) read_post_processor(processor);
    return;
  }
  check(type == "TemplateProcessing", where,
        "post_processor " + json_literal(type) +
            " is not supported (only TemplateProcessing, ByteLevel and Sequence)");
  const std::string what = "post_processor TemplateProcessing: ";
  const Json& single = spec.value("single", Json());
  const Json& special_tokens = spec.value("special_tokens", Json::object());
  check(single.is_array(), where, what + "expected a \"single\" template");
  bool text_seen = false;
  for (const Json& item : single) {
    if (item.contains("Sequence")) {
      check(!text_seen, where, what + "the text appears twice in the single template");
      text_seen = true;
      continue;
    }
    check(item.contains("SpecialToken") && item["SpecialToken"].contains("id"), where,
          what + "expected SpecialToken or Sequence items, found " + item.dump());
    const Json& name = item["SpecialToken"]["id"];
    check(name.is_string() && special_tokens.contains(name.get<std::string>()), where,
          what + "special token " + name.dump() + " is not in \"special_tokens\"");
    const Json& token_ids = special_tokens[name.get<std::string>()].value("ids", Json());
    check(token_ids.is_array(), where, what + name.dump() + " has no \"ids\"");
    for (const Json& id_value : token_ids) {
      const std::int32_t id = token_id_of(id_value, where, what + name.dump());
      check(static_cast<std::size_t>(id) < has_token.size() && has_token[id], where,
            what + name.dump() + ": id " + std::to_string(id) + " names no token");
      (text_seen ? suffix : prefix).push_back(id);
    }
  }
  check(text_seen, where, what + "the single template has no Sequence (the text)");
}

void TokenizerJson::Impl::encode_text(std::string_view text, bool starts_input,
                                      std::vector<std::int32_t>& ids) const {
  for (const Utf8Run& run : utf8_runs(text)) {
    if (!run.valid) {
      byte_pair_encoder->encode(run.text, ids);
      continue;
    }
    const bool at_start = starts_input && run.text.data() == text.data();
    for (const std::string& piece : pre_tokenizer->split(run.text, at_start)) {
      if (ignore_merges) {
        if (const auto whole = id_of_piece.find(piece); whole != id_of_piece.end()) {
          ids.push_back(whole->second);
          continue;
        }
      }
      byte_pair_encoder->encode(piece, ids);
    }
  }
}

TokenizerJson::TokenizerJson(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TokenizerJson::TokenizerJson(TokenizerJson&&) noexcept = default;
TokenizerJson& TokenizerJson::operator=(TokenizerJson&&) noexcept = default;
TokenizerJson::~TokenizerJson() = default;

TokenizerJson TokenizerJson::load(const std::string& path) {
  std::error_code error;
  // A folder's tokenizer.json follows the folder's link policy; a file named itself is read as is.
  const fs::path file = fs::is_directory(path, error)
                            ? model_folder_file(path, std::string(kFileName))
                            : fs::path(path);
  check(fs::exists(file, error), file.string(), "missing (expected a tokenizer.json)");
  return TokenizerJson(std::make_unique<Impl>(file));
}

bool TokenizerJson::present_in(const std::string& dir) {
  std::error_code error;
  return fs::exists(fs::path(dir) / kFileName, error);  // a FIFO there is refused by the reader
}

std::vector<std::int32_t> TokenizerJson::encode(std::string_view text,
                                                bool add_special_tokens) const {
  std::vector<std::int32_t> ids;
  if (add_special_tokens) ids = impl_->prefix;
  std::vector<Segment> segments;
  std::vector<Segment> inner;
  impl_->unnormalized_tokens->split(text, segments);
  for (const Segment& segment : segments) {
    if (segment.token_id >= 0) {
      ids.push_back(segment.token_id);
      continue;
    }
    const std::string normalized = impl_->normalizer->normalize(segment.text);
    inner.clear();
    impl_->normalized_tokens->split(normalized, inner);
    for (const Segment& part : inner) {
      if (part.token_id >= 0) {
        ids.push_back(part.token_id);
      } else {
        const bool starts_input =
            segment.text.data() == text.data() && part.text.data() == normalized.data();
        impl_->encode_text(part.text, starts_input, ids);
      }
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), impl_->suffix.begin(), impl_->suffix.end());
  return ids;
}

std::string TokenizerJson::decode(std::span<const std::int32_t> ids) const {
  std::string text;
  for (const std::int32_t id : ids) text += token_bytes(id);
  impl_->decoder->finish(text);
  return text;
}

bool TokenizerJson::has_token(std::int32_t id) const {
  return id >= 0 && static_cast<std::size_t>(id) < impl_->has_token.size() && impl_->has_token[id];
}

bool TokenizerJson::is_special(std::int32_t id) const {
  return has_token(id) && impl_->special[static_cast<std::size_t>(id)];
}

const std::string& TokenizerJson::token_bytes(std::int32_t id) const {
  const std::size_t size = impl_->token_bytes.size();
  if (!has_token(id)) {
    throw Error(impl_->where, "token id " + std::to_string(id) +
                                  " names no token (ids are in [0, " + std::to_string(size) + "))");
  }
  return impl_->token_bytes[id];
}

std::optional<std::int32_t> TokenizerJson::token_id(std::string_view content) const {
  const auto found = impl_->id_of_content.find(std::string(content));
  if (found == impl_->id_of_content.end()) return std::nullopt;
  return found->second;
}

std::size_t TokenizerJson::vocab_size() const { return impl_->token_bytes.size(); }

}  // namespace attnscope::tokenizer
