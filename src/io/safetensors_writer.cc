// safetensors writing (NOTE [safetensors]): header first, then each tensor's bytes streamed one at
// a time, so saving needs memory for one tensor at a time, not for the whole file.
#include <algorithm>
#include <cstring>
#include <set>

#include "io/safetensors_format.h"
#include "spore/error.h"
#include "spore/format.h"

namespace spore {
namespace {

using Named = std::vector<std::pair<std::string, Tensor>>;

struct Plan {
  std::vector<SafeTensorInfo> entries;  // data order, offsets filled in
  std::vector<const Tensor*> tensors;   // same order
  std::string header;
};

Plan plan(const Named& tensors, const std::map<std::string, std::string>& metadata) {
  std::set<std::string_view> seen;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__")
      throw Error(ErrorCode::kValue,
                  "save_safetensors: '__metadata__' is reserved for the "
                  "metadata and cannot name a tensor");
    if (!seen.insert(name).second)
      throw Error(ErrorCode::kValue,
                  "save_safetensors: the tensor name '" + name + "' is given twice");
    if (!t.defined())
      throw Error(ErrorCode::kValue, "save_safetensors: tensor '" + name + "' is undefined");
  }
  std::vector<size_t> order(tensors.size());
  std::vector<SafeTensorInfo> infos(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    order[i] = i;
    infos[i].name = tensors[i].first;
    infos[i].dtype = tensors[i].second.dtype();
    infos[i].shape = tensors[i].second.shape();
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return io::safetensors_data_order(infos[a], infos[b]); });
  Plan p;
  uint64_t offset = 0;
  for (size_t i : order) {
    SafeTensorInfo e = infos[i];
    e.begin = offset;
    e.end = offset += tensors[i].second.nbytes();
    p.entries.push_back(std::move(e));
    p.tensors.push_back(&tensors[i].second);
  }
  p.header = io::build_safetensors_header(p.entries, metadata);
  return p;
}

template <typename Sink>
void emit(const Plan& p, Sink&& write) {
  uint64_t n = p.header.size();
  uint8_t len[8];
  std::memcpy(len, &n, 8);  // little-endian host (static_assert in safetensors_format.cc)
  write(len, 8);
  write(p.header.data(), p.header.size());
  for (const Tensor* t : p.tensors) {
    std::vector<uint8_t> bytes = t->to_bytes();
    write(bytes.data(), bytes.size());
  }
}

}  // namespace

void save_safetensors(const std::filesystem::path& path, const Named& tensors,
                      const std::map<std::string, std::string>& metadata) {
  Plan p = plan(tensors, metadata);
  atomic_write_file(path, [&](FileSink& sink) {
    emit(p, [&](const void* data, size_t n) { sink.write(data, n); });
  });
}

std::vector<uint8_t> safetensors_to_bytes(const Named& tensors,
                                          const std::map<std::string, std::string>& metadata) {
  Plan p = plan(tensors, metadata);
  uint64_t total = 8 + p.header.size() + (p.entries.empty() ? 0 : p.entries.back().end);
  std::vector<uint8_t> out((size_t)total);
  size_t at = 0;
  emit(p, [&](const void* data, size_t n) {
    if (n > out.size() - at)
      throw Error(ErrorCode::kInternal, "safetensors_to_bytes: a tensor changed size while saved");
    if (n) std::memcpy(out.data() + at, data, n);
    at += n;
  });
  return out;
}

}  // namespace spore
