// libFuzzer harness for the safetensors reader.
//
// Input: the bytes of a whole safetensors file, parsed in memory with SafetensorsFile::parse.
// Checked: parsing either succeeds or throws attnscope::Error; any other exception, crash or
// sanitizer report is a bug. On success every entry is looked up, and every tensor() view that
// is served is read end to end, so AddressSanitizer sees a view reaching past the input.
// Cost: linear in the input size per run. Seeds: tests/fuzz/corpus/safetensors/.

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "runtime/error.h"
#include "runtime/safetensors.h"

namespace {

// Reads every byte of the view; the sum only keeps the reads from being optimised away.
unsigned read_all_bytes(const attnscope::Tensor& view) {
  const auto* bytes = static_cast<const unsigned char*>(view.raw_data());
  unsigned sum = 0;
  for (std::size_t i = 0; i < view.nbytes(); ++i) sum += bytes[i];
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const attnscope::SafetensorsFile file =
        attnscope::SafetensorsFile::parse(nullptr, data, size, "fuzz.safetensors");
    volatile unsigned sink = 0;
    for (const attnscope::SafetensorsEntry& entry : file.entries()) {
      if (file.find(entry.name) != &entry) std::abort();
      try {
        sink = sink + read_all_bytes(file.tensor(entry.name));
      } catch (const attnscope::Error&) {
        // Dtypes attnscope does not compute with, or unaligned data: refused views.
      }
    }
  } catch (const attnscope::Error&) {
    // Malformed input, refused as it should be.
  }
  return 0;
}
