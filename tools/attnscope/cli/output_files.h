// Writing the files and folders the commands produce (traces, reports, charts) and standard
// output: every write is checked, so a full disk or /dev/full is one clear error line naming the
// path and a non-zero exit, never a silent success with a truncated file.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace attnscope::cli {

// Creates (or replaces) `path`, lets `write` fill it, then flushes and closes it. Throws
// Error("PATH: cannot open for writing: REASON") or Error("PATH: write failed: REASON") when any
// step fails.
void write_output_file(const std::filesystem::path& path,
                       const std::function<void(std::ostream&)>& write);
// Writes `text` to `path` (replacing it), as write_output_file.
void write_text_file(const std::filesystem::path& path, const std::string& text);
// Creates `dir` and its parents when missing; throws Error when it cannot.
void create_output_directory(const std::string& dir);
// A timed report's files in `dir` (compare, study): report.json (`report`, indented by 2),
// report.md (`markdown`) and each chart, a (file name, SVG text) pair.
void write_report_files(const std::filesystem::path& dir, const nlohmann::json& report,
                        const std::string& markdown,
                        const std::vector<std::pair<std::string, std::string>>& charts);
// Flushes std::cout and the C stdout under it; throws Error("standard output: write failed:
// REASON") when anything written to it was lost (stdout redirected to a full disk, /dev/full, a
// closed pipe). main() calls it after every command.
void flush_standard_output();

}  // namespace attnscope::cli
