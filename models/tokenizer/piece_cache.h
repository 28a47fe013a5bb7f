// A bounded, thread-safe memo of piece -> token ids. Real text repeats its pieces (words with their
// leading space, numbers, punctuation), so most pieces skip byte-pair encoding.
//
// At most kCapacity pieces (when full it starts over) of at most kMaxPieceBytes bytes (longer
// pieces rarely repeat), which bounds its memory whatever the input. A lookup costs one hash of
// the piece and no allocation; readers share a lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attnscope::tokenizer {

class PieceCache {
 public:
  static constexpr std::size_t kCapacity = std::size_t{1} << 16;
  static constexpr std::size_t kMaxPieceBytes = 256;

  // Appends the cached ids of `piece` to `ids` and returns true, or returns false.
  bool append_cached(std::string_view piece, std::vector<std::int32_t>& ids) const;
  // Remembers the ids of `piece` (ignored when the piece is too long to cache).
  void store(std::string_view piece, std::vector<std::int32_t> piece_ids) const;

 private:
  // Heterogeneous lookup, so that a hit costs no string allocation.
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const {
      return std::hash<std::string_view>{}(text);
    }
  };
  mutable std::shared_mutex mutex_;
  mutable std::unordered_map<std::string, std::vector<std::int32_t>, StringHash, std::equal_to<>>
      ids_of_piece_;
};

}  // namespace attnscope::tokenizer
