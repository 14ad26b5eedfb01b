// fused_elementwise program text (src/ops/fused_program.cc) under hostile input: the seeds of the
// fused_program fuzz target and deterministic mutations of them either run on small
// broadcasting inputs or throw spore::Error; never a crash or another exception. (The libFuzzer
// target tests/fuzz/fused_program_fuzz.cc explores further; this runs in every test pass.)
#include "ops/fused_program.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "spore/error.h"
#include "spore/ops.h"

namespace spore {
namespace {

const std::vector<std::string> kSeeds = {
    "mul %0 %1; add $0 %2",
    "mul %0 %1; add $0 %2; gelu $1",
    "gt %0 %1; where $0 %0 %1; cast:float32 $1; relu6 $2",
    "logical_and %0 %1; logical_not $0",
    "exp %0; mul $0 $0; sqrt $1",
    "add %0 %1; abs $0",
};

std::string mutate(std::string s, std::mt19937& gen) {
  static const std::vector<std::string> kPieces = {
      "%",     "$",    ";",  " ",  "9",    "-1", "cast:", "bool", "%99999999999",
      "where", "gelu", "$0", "%2", "\xff", ":",  "  ;;  "};
  const int edits = 1 + (int)(gen() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t pos = s.empty() ? 0 : gen() % (s.size() + 1);
    switch (gen() % 3) {
      case 0:
        s.insert(pos, kPieces[gen() % kPieces.size()]);
        break;
      case 1:
        if (!s.empty()) s.erase(std::min(pos, s.size() - 1), 1 + gen() % 3);
        break;
      default:
        if (!s.empty()) s[std::min(pos, s.size() - 1)] = (char)(gen() % 256);
    }
  }
  return s;
}

TEST(FusedProgram, HostileTextRunsOrThrowsTypedErrors) {
  std::mt19937 gen(2026);
  const DType types[] = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kInt32,
                         DType::kBool};
  const std::vector<int64_t> shapes[] = {{2, 3}, {3}, {}};
  int ran = 0, rejected = 0;
  for (int k = 0; k < 3000; ++k) {
    const std::string text =
        k < (int)kSeeds.size() ? kSeeds[k] : mutate(kSeeds[gen() % kSeeds.size()], gen);
    const DType t = types[gen() % 5];
    std::vector<Tensor> inputs;
    for (int i = 0; i < 3; ++i) inputs.push_back(full(shapes[i], 0.5 + i, t));
    try {
      ops::FusedProgram p = ops::parse_fused_program(text);
      ops::FusedProgram again = ops::parse_fused_program(ops::format_fused_program(p));
      ASSERT_EQ(again.instrs.size(), p.instrs.size()) << text;
      if (p.num_inputs < 1 || p.num_inputs > 3) continue;
      inputs.resize(p.num_inputs);
      Tensor out = dispatch1(OpId::k_fused_elementwise, inputs, Attrs::of(text));
      EXPECT_EQ(out.shape(), (Shape{2, 3})) << text;
      ++ran;
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(ran, 20);  // the mutations reach the kernel, not only the parser
  EXPECT_GT(rejected, 500);
}

}  // namespace
}  // namespace spore
