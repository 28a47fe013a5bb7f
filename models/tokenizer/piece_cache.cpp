#include "models/tokenizer/piece_cache.h"

#include <mutex>

namespace attnscope::tokenizer {

bool PieceCache::append_cached(std::string_view piece, std::vector<std::int32_t>& ids) const {
  if (piece.size() > kMaxPieceBytes) return false;
  const std::shared_lock lock(mutex_);
  const auto cached = ids_of_piece_.find(piece);
  if (cached == ids_of_piece_.end()) return false;
  ids.insert(ids.end(), cached->second.begin(), cached->second.end());
  return true;
}

void PieceCache::store(std::string_view piece, std::vector<std::int32_t> piece_ids) const {
  if (piece.size() > kMaxPieceBytes) return;
  const std::unique_lock lock(mutex_);
  if (ids_of_piece_.size() >= kCapacity) ids_of_piece_.clear();
  ids_of_piece_.emplace(piece, std::move(piece_ids));
}

}  // namespace attnscope::tokenizer
