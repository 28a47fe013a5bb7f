// Opening the files and folders the commands write (traces, reports, charts): one clear error
// line when a path cannot be written.
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace attnscope::cli {

// An output stream on `path`; throws Error("PATH: cannot open for writing") when it fails.
std::ofstream open_output(const std::filesystem::path& path);
// Creates `dir` and its parents when missing; throws Error when it cannot.
void create_output_directory(const std::string& dir);
// Writes `text` to `path` (replacing it).
void write_text_file(const std::filesystem::path& path, const std::string& text);
// A timed report's files in `dir` (compare, study): report.json (`report`, indented by 2),
// report.md (`markdown`) and each chart, a (file name, SVG text) pair.
void write_report_files(const std::filesystem::path& dir, const nlohmann::json& report,
                        const std::string& markdown,
                        const std::vector<std::pair<std::string, std::string>>& charts);

}  // namespace attnscope::cli
