// libFuzzer harness for the tokenizer.json tokenizer, on its SentencePiece path (normalizer,
// characters with byte fallback, the Replace / ByteFallback / Fuse / Strip decoder) and its
// Unicode normalization (Qwen2's NFC normalizer before byte-level BPE).
//
// Input: any bytes, encoded as text by both tokenizers. Checked: encode neither throws nor
// crashes, it gives the same ids twice (the second time from the piece cache), decode accepts
// them, and when the text holds no added token (none of "<" or "["):
//  - llama2: decode(encode(bytes)) is the bytes with each "▁" read as a space: the normalizer
//    writes spaces as "▁", byte fallback keeps every other byte, and the decoder strips the one
//    "▁" the normalizer puts first;
//  - qwen2: decode(encode(bytes)) is NFC(bytes), and NFC obeys the standard's own laws: it is
//    idempotent, and NFD(NFC(x)) = NFD(x) (canonical equivalence).
// Any exception, crash, sanitizer report or mismatch is a bug. Cost: O(n log n) in the input size
// per run. The tokenizers: tests/fixtures/tokenizer_json/llama2 and qwen2. Seeds:
// tests/fuzz/corpus/tokenizer_json/.

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

using attnscope::tokenizer::TokenizerJson;
using attnscope::tokenizer::unicode_normalize;
using attnscope::tokenizer::UnicodeForm;

const TokenizerJson& sentencepiece() {
  static const auto loaded = TokenizerJson::load(ATTNSCOPE_TEST_FIXTURES "/tokenizer_json/llama2");
  return loaded;
}

const TokenizerJson& nfc_byte_level() {
  static const auto loaded = TokenizerJson::load(ATTNSCOPE_TEST_FIXTURES "/tokenizer_json/qwen2");
  return loaded;
}

void fail(const char* what) {
  std::fprintf(stderr, "fuzz_tokenizer_json: %s\n", what);
  std::abort();
}

// decode(encode(text)), encoding twice to check that the ids do not change.
std::string round_trip(const TokenizerJson& tokenizer, std::string_view text) {
  const std::vector<std::int32_t> ids = tokenizer.encode(text, false);
  if (tokenizer.encode(text, false) != ids) fail("a second encode gave other ids");
  return tokenizer.decode(ids);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string spaced = round_trip(sentencepiece(), text);
  const std::string composed = round_trip(nfc_byte_level(), text);
  if (text.find_first_of("<[") != std::string_view::npos) return 0;
  if (spaced != attnscope::tokenizer::replace_all(text, "\u2581", " ")) {
    fail("llama2: decode(encode(bytes)) != the bytes with \"\u2581\" as a space");
  }
  const std::string nfc = unicode_normalize(text, UnicodeForm::NFC);
  if (composed != nfc) fail("qwen2: decode(encode(bytes)) != NFC(bytes)");
  if (unicode_normalize(nfc, UnicodeForm::NFC) != nfc) fail("NFC(NFC(x)) != NFC(x)");
  if (unicode_normalize(nfc, UnicodeForm::NFD) != unicode_normalize(text, UnicodeForm::NFD)) {
    fail("NFD(NFC(x)) != NFD(x)");
  }
  return 0;
}
