// libFuzzer harness for the tokenizer.json tokenizer, on its SentencePiece path (normalizer,
// characters with byte fallback, the Replace / ByteFallback / Fuse / Strip decoder).
//
// Input: any bytes, encoded as text. Checked: encode neither throws nor crashes, it gives the
// same ids twice (the second time from the piece cache), decode accepts them, and when the text
// holds no added token (none of "<" or "["), decode(encode(bytes)) is the bytes with each "▁"
// read as a space: the normalizer writes spaces as "▁", byte fallback keeps every other byte, and
// the decoder strips the one "▁" the normalizer puts first. Any exception, crash, sanitizer report
// or mismatch is a bug. Cost: O(n log n) in the input size per run.
// The tokenizer: tests/fixtures/tokenizer_json/llama2. Seeds: tests/fuzz/corpus/tokenizer_json/.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "models/tokenizer/normalizer.h"
#include "models/tokenizer/tokenizer_json.h"

namespace {

const attnscope::tokenizer::TokenizerJson& tokenizer() {
  static const auto loaded =
      attnscope::tokenizer::TokenizerJson::load(ATTNSCOPE_TEST_FIXTURES "/tokenizer_json/llama2");
  return loaded;
}

void fail(const char* what) {
  std::fprintf(stderr, "fuzz_tokenizer_json: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::int32_t> ids = tokenizer().encode(text, false);
  if (tokenizer().encode(text, false) != ids) fail("a second encode gave other ids");
  const std::string decoded = tokenizer().decode(ids);
  if (text.find_first_of("<[") != std::string_view::npos) return 0;
  if (decoded != attnscope::tokenizer::replace_all(text, "\u2581", " ")) {
    fail("decode(encode(bytes)) != the bytes with \"\u2581\" as a space");
  }
  return 0;
}
