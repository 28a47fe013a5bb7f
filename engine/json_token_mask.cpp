// JSON mode's mask over the vocabulary (json_token_mask.h).
#include "engine/json_token_mask.h"

#include <algorithm>
#include <limits>
#include <string_view>

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

JsonTokenMask::JsonTokenMask(const TokenVocabulary& vocabulary, const ModelConfig& model)
    : JsonTokenMask(drawable_bytes(vocabulary, model)) {}

std::string_view JsonTokenMask::bytes(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= order_of_id_.size()) return {};
  const std::uint32_t i = order_of_id_[static_cast<std::size_t>(id)];
  if (i == kNone) return {};
  return std::string_view(bytes_).substr(offset_[i], offset_[i + 1] - offset_[i]);
}

JsonTokenMask::JsonTokenMask(const std::vector<std::string>& token_bytes)
    : vocabulary_size_(token_bytes.size()), order_of_id_(token_bytes.size(), kNone) {
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
  states_.resize(longest_ + 1);
}

std::vector<bool> JsonTokenMask::walk(const JsonRecognizer& json) {
  std::vector<bool> allowed(vocabulary_size_, false);
  states_[0] = json;
  // The previous token's first `read` bytes were accepted (states_[read] is the state after
  // them); when it was refused, its byte at `read` was the one refused.
  std::size_t read = 0;
  for (std::size_t i = 0; i < id_.size(); ++i) {
    const std::string_view bytes(bytes_.data() + offset_[i], offset_[i + 1] - offset_[i]);
    // Sharing more than `read` bytes with the previous token means sharing its refused byte.
    if (shared_[i] > read) continue;
    read = shared_[i];
    while (read < bytes.size()) {
      states_[read + 1] = states_[read];
      if (!states_[read + 1].accept(static_cast<unsigned char>(bytes[read]))) break;
      ++read;
    }
    if (read == bytes.size()) allowed[static_cast<std::size_t>(id_[i])] = true;
  }
  return allowed;
}

std::span<const float> JsonTokenMask::restrict(const JsonRecognizer& json,
                                               std::span<const float> logits) {
  auto found = allowed_after_.find(json);
  if (found == allowed_after_.end()) {
    if (allowed_after_.size() >= kRememberedStates) allowed_after_.clear();
    found = allowed_after_.emplace(json, walk(json)).first;
  }
  const std::vector<bool>& allowed = found->second;
  restricted_.assign(logits.size(), -std::numeric_limits<float>::infinity());
  bool any = false;
  for (std::size_t id = 0; id < std::min(logits.size(), allowed.size()); ++id) {
    if (allowed[id]) {
      restricted_[id] = logits[id];
      any = true;
    }
  }
  if (!any) return {};
  return restricted_;
}

}  // namespace attnscope::engine
