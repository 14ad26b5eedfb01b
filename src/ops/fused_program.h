// The program of a fused_elementwise node (NOTE [Elementwise fusion] in docs/design.md): parsing
// its text, typing it, and the typing rule of each fusable op, which the fusion pass uses too so
// that it only fuses what the fused kernel computes exactly as the standalone kernels do.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spore/op_registry.h"

namespace spore::ops {

// One instruction: an op applied to operands that are either inputs of the fused node
// (arg >= 0: input index) or results of earlier instructions (arg < 0: instruction -arg - 1).
struct FusedInstr {
  OpId op = OpId::kCount;
  DType cast_to = DType::kFloat32;  // cast only
  int num_args = 0;
  int32_t args[3] = {};
  // Filled by type_fused_program:
  DType result = DType::kFloat32;   // the dtype it makes
  DType compute = DType::kFloat32;  // the dtype its standalone loop is keyed by (cast: the source)
};

struct FusedProgram {
  std::vector<FusedInstr> instrs;
  int num_inputs = 0;  // one more than the largest input index read
};

inline int32_t fused_temp_ref(int instr) {
  return -instr - 1;
}
inline int fused_temp_index(int32_t arg) {
  return -arg - 1;
}

// Parses "mul %0 %1; add $0 %2; gelu $1; cast:float16 $2" (ops by registry name; %i an input,
// $k the result of instruction k; the last instruction's result is the node's output). Throws
// kValue naming the bad token.
FusedProgram parse_fused_program(std::string_view text);
std::string format_fused_program(const FusedProgram& program);

// The result dtype of `op` applied to operands of `args` dtypes when the standalone kernel runs
// it with no promotion cast (every operand already in the dtype its loop computes in), and that
// loop dtype in `compute`; nullopt when the op is not fusable or needs a promotion.
std::optional<DType> fused_result_dtype(OpId op, std::span<const DType> args, DType cast_to,
                                        DType& compute);

// Fills each instruction's result and compute dtypes from the inputs' dtypes; throws kDType or
// kValue naming the instruction that cannot be fused as written.
void type_fused_program(FusedProgram& program, std::span<const DType> input_dtypes);

}  // namespace spore::ops
