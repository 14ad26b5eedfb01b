// Uses an installed Spore: a real op whose value is checked, so a link that resolves but runs
// the wrong code fails too.
#include <spore/ops.h>
#include <spore/tensor.h>

#include <cstdio>
#include <vector>

int main() {
  using namespace spore;
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
  std::vector<float> got = matmul(add(a, a), a).to_vector<float>();  // 2 * [[7, 10], [15, 22]]
  const std::vector<float> want = {14, 20, 30, 44};
  if (got != want) {
    std::printf("matmul wrong: %g %g %g %g\n", got[0], got[1], got[2], got[3]);
    return 1;
  }
  std::printf("matmul ok: [[%g, %g], [%g, %g]]\n", got[0], got[1], got[2], got[3]);
  return 0;
}
