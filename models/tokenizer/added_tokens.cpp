#include "models/tokenizer/added_tokens.h"

#include <algorithm>

#include "models/tokenizer/character_class.h"
#include "models/tokenizer/utf8.h"

namespace attnscope::tokenizer {

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].content.empty()) continue;
    tokens_by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  }
  for (std::vector<std::size_t>& candidates : tokens_by_first_byte_) {
    std::ranges::stable_sort(candidates, [&](std::size_t a, std::size_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& segments) const {
  std::size_t covered = 0;  // the end of the last segment
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto& candidates = tokens_by_first_byte_[static_cast<unsigned char>(text[pos])];
    const auto found = std::ranges::find_if(candidates, [&](std::size_t i) {
      return text.substr(pos).starts_with(tokens_[i].content);
    });
    if (found == candidates.end()) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[*found];
    std::size_t start = pos;
    std::size_t stop = pos + token.content.size();
    pos = stop;
    if (token.single_word && (word_character().contains_last_of(text.substr(0, start)) ||
                              word_character().prefix_length(text.substr(stop)) > 0)) {
      continue;
    }
    if (token.lstrip) {
      start = std::max(start - white_space().suffix_length(text.substr(0, start)), covered);
    }
    if (token.rstrip) stop += white_space().prefix_length(text.substr(stop));
    if (start > covered) segments.push_back({text.substr(covered, start - covered), -1});
    segments.push_back({text.substr(start, stop - start), token.id});
    covered = pos = stop;
  }
  if (covered < text.size()) segments.push_back({text.substr(covered), -1});
}

}  // namespace attnscope::tokenizer
