// libFuzzer target: checkpoints through load_checkpoint (src/io/checkpoint.cc) and the loading
// of its tensors into a small network (load_param_into_net, strict and not).
#include "fuzz_util.h"
#include "spore/error.h"
#include "spore/io.h"
#include "spore/nn/dense.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  const std::string path = fuzz::scratch_file(data, size, ".ckpt.safetensors");
  try {
    Checkpoint ckpt = load_checkpoint(path);
    fuzz::require(ckpt.is_spore_checkpoint() || ckpt.format_version() == 0,
                  "a format version on a file that is not a spore checkpoint");
    nn::Dense net(2, 3);
    for (bool strict : {false, true}) {
      try {
        (void)load_param_into_net(net, ckpt, strict);
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
