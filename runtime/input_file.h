// Opening the files attnscope reads for its user: one opener for every input file.
//
// A path a user passes may name anything: a FIFO or /dev/stdin (a blocking open or read waits
// forever for a writer), a directory, a device, a file of gigabytes where kilobytes are
// expected, or a symlink that leads out of the model folder. So every input file is opened here:
//
//   - open with O_NONBLOCK (opening a FIFO for reading then returns at once instead of waiting
//     for a writer), fstat, and refuse anything but a regular file before a byte is read;
//   - read whole only under a size cap the caller names (JSON, tokenizer and text files), from
//     the size fstat gave, so a hostile file never grows a buffer past the cap;
//   - the files of a model folder follow one symlink policy (model_folder_file below).
//
// Cost: an open and an fstat per file, plus the read itself.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace attnscope {

// An open regular file, read-only. Moves; closes its descriptor when destroyed.
class InputFile {
 public:
  // Opens `path`. Throws Error "<path>: no such file", "<path>: not a regular file" (a FIFO,
  // a directory, a device), without ever blocking.
  static InputFile open(const std::filesystem::path& path);

  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  int descriptor() const { return descriptor_; }

  // The whole file. Throws Error "<path>: file is N bytes, over the <cap> limit for <what>"
  // when it is larger than `max_bytes`, or when reading fails.
  std::string read_all(std::uint64_t max_bytes, std::string_view what) const;

 private:
  InputFile(std::string path, int descriptor, std::uint64_t size)
      : path_(std::move(path)), descriptor_(descriptor), size_(size) {}

  std::string path_;
  int descriptor_ = -1;
  std::uint64_t size_ = 0;
};

// InputFile::open(path).read_all(max_bytes, what).
std::string read_input_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                            std::string_view what);

// Caps for the files attnscope reads whole: JSON configs and indexes, and tokenizer files
// (GPT-2's vocab.json is 1 MB, Llama 3's tokenizer.json 9 MB).
constexpr std::uint64_t kMaxConfigBytes = std::uint64_t{16} << 20;
constexpr std::uint64_t kMaxTokenizerBytes = std::uint64_t{256} << 20;
// ... and texts to score (perplexity: WikiText-103's whole training split is 540 MB).
constexpr std::uint64_t kMaxTextBytes = std::uint64_t{1} << 30;

// The symlink policy of a model folder. `name` (a file name in `folder`, e.g. "config.json") is
// resolved, following symlinks, and must lie inside `folder` itself or, when `folder` is a
// snapshot of a Hugging Face cache (".../models--org--name/snapshots/<revision>"), inside that
// cache entry's blob store (".../models--org--name/blobs"), where the hub client's symlinks point.
// Anything else is refused: a checkpoint cannot make attnscope read /etc/passwd or another
// user's files by a symlink. Returns `folder / name` as given (messages name what the user named).
// Throws Error "<folder>/<name>: is a symlink to <target>, outside the model folder".
std::filesystem::path model_folder_file(const std::filesystem::path& folder,
                                        const std::string& name);

}  // namespace attnscope
