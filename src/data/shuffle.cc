// shuffle: a buffer of rows, each output drawn uniformly from it and refilled from upstream.
// The random numbers come from our own generator and bounded draw, not <random>'s
// distributions, whose results differ between standard libraries (NOTE [Pipeline determinism]).
#include "data/node.h"
#include "data/stages.h"

namespace spore::data::detail {
namespace {

// splitmix64: small state, good enough statistics for picking buffer slots.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    s_ += 0x9e3779b97f4a7c15ull;
    uint64_t z = s_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), unbiased (Lemire's multiply-and-reject).
  uint64_t below(uint64_t n) {
    unsigned __int128 m = (unsigned __int128)next() * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
      const uint64_t threshold = -n % n;
      while (low < threshold) {
        m = (unsigned __int128)next() * n;
        low = (uint64_t)m;
      }
    }
    return (uint64_t)(m >> 64);
  }

 private:
  uint64_t s_;
};

class ShuffleNode final : public Node {
 public:
  ShuffleNode(NodePtr child, int64_t buffer, uint64_t seed)
      : Node("shuffle", child, child->columns()), buffer_(buffer), seed_(seed) {}

  int64_t size() const override { return child()->size(); }

  std::unique_ptr<RowStream> open(uint64_t epoch_key) const override {
    // Epoch 0 uses the seed as given; later epochs mix in the epoch key.
    uint64_t seed = epoch_key == 0 ? seed_ : mix64(seed_ ^ mix64(epoch_key));
    return std::make_unique<Stream>(buffer_, seed, child()->open(epoch_key));
  }

 private:
  class Stream final : public RowStream {
   public:
    Stream(int64_t buffer, uint64_t seed, std::unique_ptr<RowStream> child)
        : capacity_((size_t)buffer), rng_(mix64(seed)), child_(std::move(child)) {}

    std::optional<Row> next() override {
      while (!upstream_done_ && buffer_.size() < capacity_) {
        std::optional<Row> row = child_->next();
        if (!row) {
          upstream_done_ = true;
          break;
        }
        buffer_.push_back(std::move(*row));
      }
      if (buffer_.empty()) return std::nullopt;
      size_t j = (size_t)rng_.below(buffer_.size());
      Row out = std::move(buffer_[j]);
      if (j + 1 != buffer_.size()) buffer_[j] = std::move(buffer_.back());
      buffer_.pop_back();
      return out;
    }

   private:
    size_t capacity_;
    Rng rng_;
    std::unique_ptr<RowStream> child_;
    std::vector<Row> buffer_;
    bool upstream_done_ = false;
  };

  int64_t buffer_;
  uint64_t seed_;
};

}  // namespace

NodePtr make_shuffle_node(NodePtr child, int64_t buffer_size, uint64_t seed) {
  constexpr int64_t kMaxBuffer = int64_t{1} << 28;
  if (buffer_size < 1 || buffer_size > kMaxBuffer)
    throw Error(ErrorCode::kValue, stage_label(child.get(), "shuffle") + ": buffer_size is " +
                                       std::to_string(buffer_size) + "; it must be in [1, " +
                                       std::to_string(kMaxBuffer) + "] (1 keeps the order)");
  return std::make_shared<ShuffleNode>(std::move(child), buffer_size, seed);
}

}  // namespace spore::data::detail
