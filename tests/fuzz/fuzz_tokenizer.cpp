// libFuzzer harness for the GPT-2 tokenizer.
//
// Input: any bytes, encoded as text. Checked: encode neither throws nor crashes, it gives the
// same ids twice (the second time from the piece cache), and decode(encode(bytes)) == bytes.
// Any exception, crash, sanitizer report or mismatch is a bug. Cost: O(n log n) in the input
// size per run.
// The vocabulary comes from $ATTNSCOPE_TOKENIZER_DIR, else the shared fixtures' gpt2-tokenizer.
// Seeds: tests/fuzz/corpus/tokenizer/.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "models/gpt2/tokenizer.h"

namespace {

const attnscope::gpt2::Tokenizer& tokenizer() {
  static const attnscope::gpt2::Tokenizer loaded = [] {
    const char* dir = std::getenv("ATTNSCOPE_TOKENIZER_DIR");
    return attnscope::gpt2::Tokenizer::load(dir && *dir ? dir : ATTNSCOPE_TOKENIZER_DIR_DEFAULT);
  }();
  return loaded;
}

void fail(const char* what) {
  std::fprintf(stderr, "fuzz_tokenizer: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::int32_t> ids = tokenizer().encode(text);
  if (tokenizer().encode(text) != ids) fail("a second encode gave other ids");
  if (tokenizer().decode(ids) != text) fail("decode(encode(bytes)) != bytes");
  return 0;
}
