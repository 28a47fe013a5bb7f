// A vocabulary sorted by bytes, with shared-prefix lengths (sorted_vocabulary.h).
#include "engine/sorted_vocabulary.h"

#include <algorithm>

namespace attnscope::engine {
namespace {

std::vector<std::string> drawable_bytes(const TokenVocabulary& vocabulary,
                                        const ModelConfig& model) {
  std::vector<std::string> token_bytes(static_cast<std::size_t>(model.vocab_size));
  for (std::size_t id = 0; id < token_bytes.size(); ++id) {
    const auto token = static_cast<std::int32_t>(id);
    const bool control =
        (vocabulary.is_control && vocabulary.is_control(token)) || model.is_eos(token);
    if (!control) token_bytes[id] = vocabulary.text(token);
  }
  return token_bytes;
}

}  // namespace

SortedVocabulary::SortedVocabulary(const TokenVocabulary& vocabulary, const ModelConfig& model)
    : SortedVocabulary(drawable_bytes(vocabulary, model)) {}

SortedVocabulary::SortedVocabulary(const std::vector<std::string>& token_bytes)
    : order_of_id_(token_bytes.size(), kNone) {
  std::vector<std::int32_t> ids;
  for (std::size_t id = 0; id < token_bytes.size(); ++id) {
    if (!token_bytes[id].empty()) ids.push_back(static_cast<std::int32_t>(id));
  }
  std::sort(ids.begin(), ids.end(), [&](std::int32_t a, std::int32_t b) {
    return token_bytes[static_cast<std::size_t>(a)] < token_bytes[static_cast<std::size_t>(b)];
  });
  std::string_view previous;
  for (const std::int32_t id : ids) {
    const std::string& bytes = token_bytes[static_cast<std::size_t>(id)];
    const auto shared = std::mismatch(previous.begin(), previous.end(), bytes.begin(), bytes.end());
    order_of_id_[static_cast<std::size_t>(id)] = static_cast<std::uint32_t>(id_.size());
    shared_.push_back(static_cast<std::uint32_t>(shared.first - previous.begin()));
    offset_.push_back(static_cast<std::uint32_t>(bytes_.size()));
    id_.push_back(id);
    bytes_ += bytes;
    longest_ = std::max(longest_, bytes.size());
    previous = bytes;
  }
  offset_.push_back(static_cast<std::uint32_t>(bytes_.size()));
}

std::string_view SortedVocabulary::bytes(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= order_of_id_.size()) return {};
  const std::uint32_t i = order_of_id_[static_cast<std::size_t>(id)];
  return i == kNone ? std::string_view() : bytes_at(i);
}

}  // namespace attnscope::engine
