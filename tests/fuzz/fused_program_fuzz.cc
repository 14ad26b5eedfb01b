// libFuzzer target: fused_elementwise programs (src/ops/fused_program.cc), the text the IR reader
// will hand the registry. Byte 0 picks the inputs' dtype and count; the rest is the program. A
// program either parses, types and runs on small broadcasting inputs, or throws spore::Error;
// one that parses prints back to a program that parses to the same instructions.
#include "fuzz_util.h"
#include "ops/fused_program.h"
#include "spore/error.h"
#include "spore/ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  if (size == 0 || size > 4096) return 0;
  static const DType kTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                 DType::kFloat64, DType::kInt32,   DType::kBool};
  const DType t = kTypes[data[0] % 6];
  const int num_inputs = 1 + (data[0] / 6) % 3;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    ops::FusedProgram p = ops::parse_fused_program(text);
    const ops::FusedProgram again = ops::parse_fused_program(ops::format_fused_program(p));
    fuzz::require(again.instrs.size() == p.instrs.size() && again.num_inputs == p.num_inputs,
                  "a formatted program parses to the same instructions");
    if (p.num_inputs > 3) return 0;
    const std::vector<int64_t> shapes[] = {{2, 3}, {3}, {}};
    std::vector<Tensor> inputs;
    for (int i = 0; i < num_inputs; ++i) inputs.push_back(full(shapes[i], 0.5 + i, t));
    Tensor out = dispatch1(OpId::k_fused_elementwise, inputs, Attrs::of(text));
    fuzz::require(out.shape() == Shape({2, 3}), "the output has the inputs' broadcast shape");
  } catch (const Error&) {
  }
  return 0;
}
