// One opener for every input file (runtime/input_file.h).
#include "runtime/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/error.h"

namespace attnscope {
namespace {

std::string mebibytes(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// `inner` lies inside `outer` (both canonical).
bool is_inside(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  const auto mismatch = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return mismatch.first == outer.end();
}

}  // namespace

InputFile InputFile::open(const std::filesystem::path& path) {
  const std::string label = path.string();
  const int descriptor = ::open(label.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (descriptor < 0) {
    throw Error(label, errno == ENOENT ? std::string("no such file") : std::strerror(errno));
  }
  InputFile file(label, descriptor, 0);
  struct stat status {};
  check(::fstat(descriptor, &status) == 0, label, std::strerror(errno));
  check(S_ISREG(status.st_mode), label, "not a regular file");
  // Reads of a regular file never block; clearing the flag keeps later reads ordinary anyway.
  check(::fcntl(descriptor, F_SETFL, 0) == 0, label, std::strerror(errno));
  file.size_ = static_cast<std::uint64_t>(status.st_size);
  return file;
}

InputFile::InputFile(InputFile&& other) noexcept
    : path_(std::move(other.path_)), descriptor_(other.descriptor_), size_(other.size_) {
  other.descriptor_ = -1;
}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (descriptor_ >= 0) ::close(descriptor_);
    path_ = std::move(other.path_);
    descriptor_ = other.descriptor_;
    size_ = other.size_;
    other.descriptor_ = -1;
  }
  return *this;
}

InputFile::~InputFile() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

std::string InputFile::read_all(std::uint64_t max_bytes, std::string_view what) const {
  check(size_ <= max_bytes, path_, [&] {
    return "file is " + std::to_string(size_) + " bytes, over the " + mebibytes(max_bytes) +
           " limit for " + std::string(what);
  });
  std::string bytes(size_, '\0');
  std::uint64_t done = 0;
  while (done < size_) {
    const ssize_t got =
        ::pread(descriptor_, bytes.data() + done, size_ - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    check(got > 0, path_, got < 0 ? std::strerror(errno) : "the file shrank while being read");
    done += static_cast<std::uint64_t>(got);
  }
  return bytes;
}

std::string read_input_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                            std::string_view what) {
  return InputFile::open(path).read_all(max_bytes, what);
}

std::filesystem::path model_folder_file(const std::filesystem::path& folder,
                                        const std::string& name) {
  const std::filesystem::path file = folder / name;
  std::error_code error;
  const std::filesystem::path target = std::filesystem::canonical(file, error);
  if (error) return file;  // missing: the opener says so
  const std::filesystem::path home = std::filesystem::canonical(folder, error);
  if (error) return file;
  if (is_inside(target, home)) return file;
  // A Hugging Face cache: <entry>/snapshots/<revision>/<name> -> <entry>/blobs/<hash>.
  const std::filesystem::path snapshots = home.parent_path();
  if (snapshots.filename() == "snapshots" &&
      snapshots.parent_path().filename().string().starts_with("models--") &&
      is_inside(target, snapshots.parent_path() / "blobs")) {
    return file;
  }
  throw Error(file.string(), "is a symlink to " + target.string() +
                                 ", outside the model folder (attnscope follows links only "
                                 "within it or into a Hugging Face cache's blobs)");
}

}  // namespace attnscope
