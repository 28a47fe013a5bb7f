// Output files and folders (tools/attnscope/cli/output_files.h).
#include "tools/attnscope/cli/output_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "runtime/error.h"

namespace attnscope::cli {

namespace {

// ": No space left on device" after a failed stream operation; empty when errno says nothing.
std::string reason() {
  return errno != 0 ? std::string(": ") + std::strerror(errno) : std::string();
}

}  // namespace

void write_output_file(const std::filesystem::path& path,
                       const std::function<void(std::ostream&)>& write) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  check(out.good(), path.string(), "cannot open for writing" + reason());
  write(out);
  out.close();  // flushes: a full disk shows here if not before
  check(!out.fail(), path.string(), "write failed" + reason());
}

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  write_output_file(path, [&](std::ostream& out) { out << text; });
}

void create_output_directory(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  check(!error && std::filesystem::is_directory(dir), dir,
        "cannot create the output directory" + (error ? ": " + error.message() : std::string()));
}

void write_report_files(const std::filesystem::path& dir, const nlohmann::json& report,
                        const std::string& markdown,
                        const std::vector<std::pair<std::string, std::string>>& charts) {
  write_text_file(dir / "report.json", report.dump(2) + "\n");
  write_text_file(dir / "report.md", markdown);
  for (const auto& [file, svg] : charts) write_text_file(dir / file, svg);
}

void flush_standard_output() {
  errno = 0;
  std::cout.flush();
  const bool lost = !std::cout.good() || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  check(!lost, "standard output", "write failed" + reason());
}

}  // namespace attnscope::cli
