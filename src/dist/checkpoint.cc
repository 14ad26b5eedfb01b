// Checkpoints in a data-parallel job: rank 0 writes, every rank learns whether it worked.
#include "spore/checkpoint.h"

#include <cstring>

#include "spore/dist.h"

namespace spore::dist {

void save_checkpoint(ProcessGroup& group, const nn::Cell& net, const std::filesystem::path& path,
                     std::map<std::string, std::string> extra_metadata) {
  // The parameters are the same on every rank, so one writer suffices, and the file is the one a
  // single process would write (plus the world size, for the record): any world size reads it.
  extra_metadata["world_size"] = std::to_string(group.size());
  std::string error;
  if (group.rank() == 0) {
    try {
      spore::save_checkpoint(net, path, extra_metadata);  // atomic: temporary file, then rename
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "unknown error";
    }
  }
  // Rank 0's outcome to everyone: the length of its error message, then the message.
  std::vector<int64_t> len{(int64_t)error.size()};
  Tensor n = group.broadcast(Tensor::from_vector(len, Shape{1}), 0);
  const int64_t size = n.data<int64_t>()[0];
  if (size == 0) return;
  Tensor text = Tensor::empty(Shape{size}, DType::kUInt8, Device::cpu());
  if (group.rank() == 0) std::memcpy(text.data_ptr(), error.data(), (size_t)size);
  text = group.broadcast(text, 0);
  const std::string message((const char*)text.data_ptr(), (size_t)size);
  throw Error(ErrorCode::kIO,
              "dist::save_checkpoint: rank 0 could not write " + path.string() + ": " + message);
}

}  // namespace spore::dist
