// Utf8Stream (tools/attnscope/cli/utf8_stream.h): holding back incomplete UTF-8 sequences.
#include "tools/attnscope/cli/utf8_stream.h"

#include <utility>

namespace attnscope::cli {

namespace {

// Length of the UTF-8 sequence that `lead` starts (1 for bytes that cannot lead one, which are
// printed as they are).
std::size_t sequence_length(unsigned char lead) {
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  return 1;
}

}  // namespace

std::string Utf8Stream::push(const std::string& bytes) {
  pending_ += bytes;
  // Look at most 3 bytes back for a lead byte whose sequence is not complete yet.
  std::size_t keep_from = pending_.size();
  for (std::size_t back = 1; back <= 3 && back <= pending_.size(); ++back) {
    const auto byte = static_cast<unsigned char>(pending_[pending_.size() - back]);
    if ((byte & 0xC0) != 0x80) {  // not a continuation byte: a lead (or ASCII)
      if (sequence_length(byte) > back) keep_from = pending_.size() - back;
      break;
    }
  }
  std::string ready = pending_.substr(0, keep_from);
  pending_.erase(0, keep_from);
  return ready;
}

std::string Utf8Stream::flush() { return std::exchange(pending_, {}); }

}  // namespace attnscope::cli
