// Sharded safetensors checkpoints (runtime/safetensors_index.h): the index is read and checked,
// then each shard it names is mapped once and every tensor is matched against the index.
//
// Cost: one parse of the index, one SafetensorsFile::open per shard (header only; the data
// stays mapped), and a sort of all entries, O(n log n) in the number of tensors.
#include "runtime/safetensors_index.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>

#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/strict_json.h"

namespace attnscope {
namespace {

using json = nlohmann::json;

constexpr std::uintmax_t kMaxIndexBytes = std::uintmax_t{64} << 20;

// A shard must be a file beside the index: no folders, so an index cannot reach elsewhere, and
// no control characters (a NUL would end the path the system opens early, at another file).
void check_shard_name(const std::string& shard, const std::string& tensor,
                      const std::string& label) {
  const bool control = std::any_of(shard.begin(), shard.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  check(!shard.empty() && !control && shard.find('/') == std::string::npos && shard != "." &&
            shard != "..",
        label,
        "weight_map: tensor " + single_quoted(tensor) + " names shard " + single_quoted(shard) +
            ", not a file name in the index's folder");
}

}  // namespace

SafetensorsCheckpoint SafetensorsCheckpoint::open(const std::string& path) {
  if (path.ends_with(".index.json")) {
    const std::string folder = std::filesystem::path(path).parent_path().string();
    return open_index(read_input_file(path, kMaxIndexBytes, "an index"), folder, path);
  }
  SafetensorsCheckpoint checkpoint;
  checkpoint.label_ = path;
  checkpoint.shards_.push_back(SafetensorsFile::open(path));
  checkpoint.entries_ = checkpoint.shards_.front().entries();
  checkpoint.shard_of_entry_.assign(checkpoint.entries_.size(), 0);
  return checkpoint;
}

SafetensorsCheckpoint SafetensorsCheckpoint::open_index(std::string_view index_text,
                                                        const std::string& folder,
                                                        const std::string& label) {
  const json index = parse_json_refusing_duplicates(index_text, label, "index");
  check(index.is_object(), label, "index is not a JSON object");
  const auto weight_map = index.find("weight_map");
  check(weight_map != index.end() && weight_map->is_object(), label,
        "index has no \"weight_map\" object");
  check(!weight_map->empty(), label, "weight_map is empty");

  // Shards in order of first mention; each tensor's listed shard.
  std::vector<std::string> shard_names;
  std::map<std::string, std::size_t, std::less<>> shard_number;  // position in shard_names
  std::map<std::string, std::size_t, std::less<>> listed_shard;
  for (const auto& item : weight_map->items()) {
    check(item.value().is_string(), label,
          "weight_map: the shard of " + single_quoted(item.key()) + " is not a string");
    const std::string& shard = item.value().get_ref<const std::string&>();
    check_shard_name(shard, item.key(), label);
    const auto known = shard_number.try_emplace(shard, shard_names.size()).first;
    if (known->second == shard_names.size()) shard_names.push_back(shard);
    listed_shard[item.key()] = known->second;
  }

  SafetensorsCheckpoint checkpoint;
  checkpoint.label_ = label;
  for (std::size_t s = 0; s < shard_names.size(); ++s) {
    const std::string path = model_folder_file(folder, shard_names[s]).string();
    check(std::filesystem::exists(path), label,
          "shard " + single_quoted(shard_names[s]) + " is missing from " + folder);
    checkpoint.shards_.push_back(SafetensorsFile::open(path));
    for (const SafetensorsEntry& entry : checkpoint.shards_.back().entries()) {
      const auto listed = listed_shard.find(entry.name);
      check(listed != listed_shard.end(), path,
            "tensor " + single_quoted(entry.name) + " is not listed in the index");
      check(listed->second == s, path,
            "tensor " + single_quoted(entry.name) + " is listed in the index under shard " +
                single_quoted(shard_names[listed->second]));
      checkpoint.entries_.push_back(entry);
      checkpoint.shard_of_entry_.push_back(s);
    }
  }
  // Every listed tensor was found in its shard: a shard holds each name once, and every name
  // found is listed, so equal counts mean none is missing.
  if (checkpoint.entries_.size() != listed_shard.size()) {
    for (const auto& [name, shard] : listed_shard) {
      check(checkpoint.shards_[shard].find(name) != nullptr, label,
            "tensor " + single_quoted(name) + " is listed in shard " +
                single_quoted(shard_names[shard]) + ", which does not hold it");
    }
  }

  // Sort the entries by name, keeping each one's shard beside it.
  std::vector<std::size_t> order(checkpoint.entries_.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return checkpoint.entries_[a].name < checkpoint.entries_[b].name;
  });
  std::vector<SafetensorsEntry> entries;
  std::vector<std::size_t> shard_of_entry;
  for (std::size_t i : order) {
    entries.push_back(checkpoint.entries_[i]);
    shard_of_entry.push_back(checkpoint.shard_of_entry_[i]);
  }
  checkpoint.entries_ = std::move(entries);
  checkpoint.shard_of_entry_ = std::move(shard_of_entry);
  return checkpoint;
}

const SafetensorsEntry* SafetensorsCheckpoint::find(std::string_view name) const {
  return find_entry(entries_, name);
}

Tensor SafetensorsCheckpoint::tensor(std::string_view name) const {
  const SafetensorsEntry* entry = find(name);
  check(entry != nullptr, label_, "no tensor named " + single_quoted(name));
  const auto index = static_cast<std::size_t>(entry - entries_.data());
  return shards_[shard_of_entry_[index]].tensor(name);
}

}  // namespace attnscope
