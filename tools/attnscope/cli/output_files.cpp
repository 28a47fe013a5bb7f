// Output files and folders (tools/attnscope/cli/output_files.h).
#include "tools/attnscope/cli/output_files.h"

#include "runtime/error.h"

namespace attnscope::cli {

std::ofstream open_output(const std::filesystem::path& path) {
  std::ofstream out(path);
  check(out.good(), path.string(), "cannot open for writing");
  return out;
}

void create_output_directory(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  check(!error && std::filesystem::is_directory(dir), dir,
        "cannot create the output directory" + (error ? ": " + error.message() : std::string()));
}

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  open_output(path) << text;
}

void write_report_files(const std::filesystem::path& dir, const nlohmann::json& report,
                        const std::string& markdown,
                        const std::vector<std::pair<std::string, std::string>>& charts) {
  write_text_file(dir / "report.json", report.dump(2) + "\n");
  write_text_file(dir / "report.md", markdown);
  for (const auto& [file, svg] : charts) write_text_file(dir / file, svg);
}

}  // namespace attnscope::cli
