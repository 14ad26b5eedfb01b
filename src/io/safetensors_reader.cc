// safetensors reading: whole files, bytes in memory, and the lazy SafeTensorsFile.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "io/posix_file.h"
#include "io/safetensors_format.h"
#include "spore/error.h"
#include "spore/format.h"

namespace spore {

namespace {

const SafeTensorInfo* find_info(const std::vector<SafeTensorInfo>& infos, std::string_view name) {
  auto it =
      std::lower_bound(infos.begin(), infos.end(), name,
                       [](const SafeTensorInfo& a, std::string_view n) { return a.name < n; });
  return it != infos.end() && it->name == name ? &*it : nullptr;
}

template <typename Names>
[[noreturn]] void throw_missing(std::string_view source, std::string_view name,
                                const Names& names) {
  std::string msg = "safetensors file '" + std::string(source) + "' has no tensor '" +
                    std::string(name) + "'; it has " + std::to_string(names.size()) + " tensors";
  int shown = 0;
  for (const auto& n : names) {
    msg += (shown ? ", '" : ": '") + n + "'";
    if (++shown == 8) {
      if (names.size() > 8) msg += ", ...";
      break;
    }
  }
  throw Error(ErrorCode::kIndex, msg);
}

}  // namespace

const Tensor& SafeTensors::at(std::string_view name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) {
    std::vector<std::string> names;
    for (const auto& [n, t] : tensors) names.push_back(n);
    throw_missing("<loaded>", name, names);
  }
  return it->second;
}

// ---- SafeTensorsFile ----------------------------------------------------------------------------
struct SafeTensorsFile::Impl {
  std::filesystem::path path;
  std::string source;  // path as text, for messages
  io::UniqueFd fd;
  uint64_t file_size = 0;
  io::SafeTensorsHeader header;
};

SafeTensorsFile::SafeTensorsFile(const std::filesystem::path& path) {
  auto impl = std::make_shared<Impl>();
  impl->path = path;
  impl->source = path.string();
  impl->fd = io::open_for_read(path);
  struct stat st;
  if (::fstat(impl->fd.get(), &st) != 0) io::throw_io("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode))
    throw Error(ErrorCode::kIO, "safetensors file '" + impl->source + "' is not a regular file");
  impl->file_size = (uint64_t)st.st_size;
  if (impl->file_size < 8)
    throw Error(ErrorCode::kFormat, "safetensors file '" + impl->source + "': only " +
                                        std::to_string(impl->file_size) +
                                        " bytes, shorter than the 8-byte header length");
  uint8_t prefix[8];
  if (io::pread_full(impl->fd.get(), prefix, 8, 0, path) != 8)
    throw Error(ErrorCode::kIO, "safetensors file '" + impl->source + "' shrank while being read");
  uint64_t n = io::safetensors_header_length(prefix, impl->file_size, impl->source);
  std::string text((size_t)n, '\0');
  if (io::pread_full(impl->fd.get(), text.data(), text.size(), 8, path) != text.size())
    throw Error(ErrorCode::kIO, "safetensors file '" + impl->source + "' shrank while being read");
  impl->header = io::parse_safetensors_header(text, n, impl->file_size - 8 - n, impl->source);
  impl_ = std::move(impl);
}

const std::filesystem::path& SafeTensorsFile::path() const {
  return impl_->path;
}
const std::vector<SafeTensorInfo>& SafeTensorsFile::tensors() const {
  return impl_->header.tensors;
}
const std::map<std::string, std::string>& SafeTensorsFile::metadata() const {
  return impl_->header.metadata;
}
uint64_t SafeTensorsFile::data_offset() const {
  return impl_->header.data_offset();
}
uint64_t SafeTensorsFile::file_size() const {
  return impl_->file_size;
}

bool SafeTensorsFile::contains(std::string_view name) const {
  return find_info(impl_->header.tensors, name) != nullptr;
}

const SafeTensorInfo& SafeTensorsFile::info(std::string_view name) const {
  const SafeTensorInfo* info = find_info(impl_->header.tensors, name);
  if (!info) {
    std::vector<std::string> names;
    for (const auto& t : impl_->header.tensors) names.push_back(t.name);
    throw_missing(impl_->source, name, names);
  }
  return *info;
}

Tensor SafeTensorsFile::load(std::string_view name, Device device) const {
  const SafeTensorInfo& ti = info(name);
  // Read straight into the tensor's memory: one copy, however big the tensor.
  Tensor t = Tensor::empty(ti.shape, ti.dtype, Device::cpu());
  size_t n = (size_t)ti.nbytes();
  if (n) {
    uint64_t at = impl_->header.data_offset() + ti.begin;
    if (io::pread_full(impl_->fd.get(), t.data_ptr(), n, at, impl_->path) != n)
      throw Error(ErrorCode::kIO, "safetensors file '" + impl_->source + "': tensor '" + ti.name +
                                      "' could not be read in full: the file shrank after it "
                                      "was opened");
    if (ti.dtype == DType::kBool)
      io::check_bool_bytes(static_cast<const uint8_t*>(t.data_ptr()), n, ti, impl_->source);
  }
  return device == Device::cpu() ? t : t.to(device);
}

// ---- whole files --------------------------------------------------------------------------------
SafeTensors load_safetensors(const std::filesystem::path& path, Device device) {
  SafeTensorsFile file(path);
  SafeTensors out;
  out.metadata = file.metadata();
  for (const SafeTensorInfo& ti : file.tensors())
    out.tensors.emplace(ti.name, file.load(ti.name, device));
  return out;
}

SafeTensors load_safetensors_bytes(std::span<const uint8_t> bytes, std::string_view source,
                                   Device device) {
  io::SafeTensorsHeader h = io::parse_safetensors_bytes(bytes.data(), bytes.size(), source);
  SafeTensors out;
  out.metadata = std::move(h.metadata);
  const uint8_t* buffer = bytes.data() + h.data_offset();
  for (const SafeTensorInfo& ti : h.tensors) {
    if (ti.dtype == DType::kBool) io::check_bool_bytes(buffer + ti.begin, ti.nbytes(), ti, source);
    out.tensors.emplace(ti.name, Tensor::from_bytes(buffer + ti.begin, ti.shape, ti.dtype, device));
  }
  return out;
}

}  // namespace spore
