#include "models/tokenizer/character_class.h"

// pcre2.h declares the functions of one code unit width, chosen by this definition.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

#include "models/tokenizer/utf8.h"
#include "runtime/error.h"

namespace attnscope::tokenizer {
namespace {

// The start of the code point that ends text (text not empty): back over continuation bytes.
std::size_t last_code_point_start(std::string_view text) {
  std::size_t pos = text.size() - 1;
  while (pos > 0 && text.size() - pos < 4 &&
         (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) {
    --pos;
  }
  return pos;
}

}  // namespace

struct CharacterClass::Compiled {
  struct CodeDeleter {
    void operator()(pcre2_code* compiled) const { pcre2_code_free(compiled); }
  };
  std::unique_ptr<pcre2_code, CodeDeleter> code;
};

CharacterClass::CharacterClass(std::string_view pattern) : compiled_(std::make_unique<Compiled>()) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  compiled_->code.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                      PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &error_code,
                                      &error_offset, nullptr));
  check(compiled_->code != nullptr, "tokenizer",
        "cannot compile the character class " + std::string(pattern));
}

CharacterClass::CharacterClass(CharacterClass&&) noexcept = default;
CharacterClass& CharacterClass::operator=(CharacterClass&&) noexcept = default;
CharacterClass::~CharacterClass() = default;

bool CharacterClass::contains(char32_t value) const {
  const std::string text = encode_utf8(value);
  pcre2_match_data* match_data = pcre2_match_data_create(1, nullptr);
  check(match_data != nullptr, "tokenizer", "out of memory for the regex match data");
  const int result = pcre2_match(compiled_->code.get(), reinterpret_cast<PCRE2_SPTR>(text.data()),
                                 text.size(), 0, 0, match_data, nullptr);
  pcre2_match_data_free(match_data);
  return result > 0;
}

bool CharacterClass::contains_last_of(std::string_view text) const {
  if (text.empty()) return false;
  const std::size_t start = last_code_point_start(text);
  const CodePoint last = decode_utf8(text, start);
  return last.length == text.size() - start && contains(last.value);
}

std::size_t CharacterClass::prefix_length(std::string_view text) const {
  std::size_t length = 0;
  while (length < text.size()) {
    const CodePoint next = decode_utf8(text, length);
    if (next.length == 0 || !contains(next.value)) break;
    length += next.length;
  }
  return length;
}

std::size_t CharacterClass::suffix_length(std::string_view text) const {
  std::size_t length = 0;
  while (contains_last_of(text.substr(0, text.size() - length))) {
    length = text.size() - last_code_point_start(text.substr(0, text.size() - length));
  }
  return length;
}

const CharacterClass& white_space() {
  static const CharacterClass characters(R"([\p{White_Space}])");
  return characters;
}

const CharacterClass& word_character() {
  static const CharacterClass characters(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}])");
  return characters;
}

}  // namespace attnscope::tokenizer
