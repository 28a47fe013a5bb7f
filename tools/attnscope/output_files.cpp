#include "tools/attnscope/output_files.h"

#include "runtime/error.h"

namespace attnscope::cli {

std::ofstream open_output(const std::filesystem::path& path) {
  std::ofstream out(path);
  check(out.good(), path.string(), "cannot open for writing");
  return out;
}

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  open_output(path) << text;
}

}  // namespace attnscope::cli
