#include "models/tokenizer/regex_splitter.h"

// pcre2.h declares the functions of one code unit width, chosen by this definition.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>

#include "models/tokenizer/utf8.h"
#include "runtime/error.h"

namespace attnscope::tokenizer {
namespace {

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

// `pattern` with each \s written \p{White_Space} and each \S written \P{White_Space}; other
// escapes (\\s included) are copied as they are.
std::string with_unicode_white_space(std::string_view pattern) {
  std::string rewritten;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) {
      rewritten += pattern[i];
      continue;
    }
    const char escaped = pattern[++i];
    if (escaped == 's') {
      rewritten += R"(\p{White_Space})";
    } else if (escaped == 'S') {
      rewritten += R"(\P{White_Space})";
    } else {
      rewritten += '\\';
      rewritten += escaped;
    }
  }
  return rewritten;
}

}  // namespace

struct RegexSplitter::Compiled {
  std::unique_ptr<pcre2_code, RegexCodeDeleter> code;
  std::string where;
};

RegexSplitter::RegexSplitter(std::string_view pattern, const std::string& where)
    : compiled_(std::make_unique<Compiled>()) {
  const std::string rewritten = with_unicode_white_space(pattern);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  compiled_->code.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()),
                                      rewritten.size(), PCRE2_UTF | PCRE2_UCP, &error_code,
                                      &error_offset, nullptr));
  check(compiled_->code != nullptr, where,
        "cannot compile the split regex: " + pcre2_message(error_code));
  // JIT matches several times faster. Where it is unavailable this call fails and pcre2_match
  // interprets the same compiled pattern instead, with identical results.
  pcre2_jit_compile(compiled_->code.get(), PCRE2_JIT_COMPLETE);
  compiled_->where = where;
}

RegexSplitter::RegexSplitter(RegexSplitter&&) noexcept = default;
RegexSplitter& RegexSplitter::operator=(RegexSplitter&&) noexcept = default;
RegexSplitter::~RegexSplitter() = default;

void RegexSplitter::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  const std::unique_ptr<pcre2_match_data, MatchDataDeleter> match_data(
      pcre2_match_data_create_from_pattern(compiled_->code.get(), nullptr));
  check(match_data != nullptr, compiled_->where, "out of memory for the regex match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  // The first call checks the UTF-8 of the whole text; the later calls skip that check, which
  // would otherwise make the loop quadratic.
  std::uint32_t options = 0;
  std::size_t piece_begin = 0;  // the end of the last match
  for (std::size_t offset = 0; offset < text.size(); options = PCRE2_NO_UTF_CHECK) {
    const int result = pcre2_match(compiled_->code.get(), subject, text.size(), offset, options,
                                   match_data.get(), nullptr);
    if (result == PCRE2_ERROR_NOMATCH) break;
    if (result <= 0) {
      throw Error(compiled_->where, "split regex failed: " + pcre2_message(result));
    }
    const PCRE2_SIZE* match = pcre2_get_ovector_pointer(match_data.get());
    check(match[0] >= offset && match[1] >= match[0] && match[1] <= text.size(), compiled_->where,
          "split regex returned an invalid range");
    if (match[1] == match[0]) {
      // An empty match makes no piece; search again one character on.
      if (match[0] == text.size()) break;
      offset = match[0] + decode_utf8(text, match[0]).length;
      continue;
    }
    if (match[0] > piece_begin) pieces.push_back(text.substr(piece_begin, match[0] - piece_begin));
    pieces.push_back(text.substr(match[0], match[1] - match[0]));
    piece_begin = offset = match[1];
  }
  if (piece_begin < text.size()) pieces.push_back(text.substr(piece_begin));
}

}  // namespace attnscope::tokenizer
