// Read-only memory-mapped files as tensors (map_file, view_bytes in include/spore/format.h):
// model weights used in place, through a Storage that does not own its memory
// (NOTE [External storage] in include/spore/tensor.h).
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <memory>
#include <string>

#include "io/posix_file.h"
#include "spore/format.h"

namespace spore {

Tensor map_file(const std::filesystem::path& path) {
  io::UniqueFd fd = io::open_for_read(path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) io::throw_io("cannot stat", path, errno);
  const size_t bytes = (size_t)st.st_size;
  const Shape shape{(int64_t)bytes};
  if (bytes == 0)  // mmap refuses length 0; an empty file is an empty tensor over no memory
    return Tensor::from_external(nullptr, shape, DType::kUInt8, nullptr, false);
  // MAP_PRIVATE + PROT_READ: a write through a stray pointer faults instead of changing the file;
  // writes through ops are refused at dispatch, which checks every input an op declares it
  // writes (Storage::require_writable, src/ops/dispatch.cc).
  void* addr = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (addr == MAP_FAILED) io::throw_io("cannot map", path, errno);
  // The keep-alive unmaps with the last tensor; the descriptor closes when `fd` goes, at return.
  std::shared_ptr<const void> mapping(addr, [bytes](const void* p) {
    ::munmap(const_cast<void*>(p), bytes);
  });
  return Tensor::from_external(addr, shape, DType::kUInt8, std::move(mapping), false);
}

Tensor view_bytes(const Tensor& bytes, uint64_t byte_offset, const Shape& shape, DType dtype) {
  if (bytes.dtype() != DType::kUInt8 || bytes.ndim() != 1 || !bytes.is_contiguous())
    throw Error(ErrorCode::kDType, std::string("view_bytes: expected a contiguous 1-D uint8 tensor "
                                               "(as map_file returns), got ") +
                                       dtype_name(bytes.dtype()) + " " + bytes.shape().str());
  const uint64_t item = dtype_size(dtype);
  const uint64_t start = (uint64_t)bytes.offset() + byte_offset;  // uint8: elements are bytes
  if (start % item != 0)
    throw Error(ErrorCode::kValue, "view_bytes: byte offset " + std::to_string(byte_offset) +
                                       " is not a multiple of " + dtype_name(dtype) + "'s size " +
                                       std::to_string(item) + "; copy the bytes instead");
  const uint64_t need = (uint64_t)shape.numel() * item;
  if (byte_offset > (uint64_t)bytes.numel() || need > (uint64_t)bytes.numel() - byte_offset)
    throw Error(ErrorCode::kIndex, "view_bytes: " + std::string(dtype_name(dtype)) + " " + shape.str() +
                                       " at byte " + std::to_string(byte_offset) + " needs " +
                                       std::to_string(need) + " bytes; only " +
                                       std::to_string(bytes.numel()) + " exist");
  return Tensor::view_of(bytes.storage(), (int64_t)(start / item), shape, contiguous_strides(shape),
                         dtype);
}

}  // namespace spore
