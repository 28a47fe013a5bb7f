// Opening the files and folders the commands write (traces, reports, charts): one clear error
// line when a path cannot be written.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace attnscope::cli {

// An output stream on `path`; throws Error("PATH: cannot open for writing") when it fails.
std::ofstream open_output(const std::filesystem::path& path);
// Creates `dir` and its parents when missing; throws Error when it cannot.
void create_output_directory(const std::string& dir);
// Writes `text` to `path` (replacing it).
void write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace attnscope::cli
