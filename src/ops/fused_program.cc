// fused_elementwise programs: text form and typing (fused_program.h, NOTE [Elementwise fusion]).
#include "ops/fused_program.h"

#include <algorithm>
#include <charconv>

#include "spore/error.h"

namespace spore::ops {

namespace {

// NOTE [Op facts]: which ops the fused kernel runs, and how it types them, is the op's row.
Fusion kind_of(OpId op) {
  const Fusion f = op_def(op).facts.fusion;
  return f == Fusion::kUndeclared ? Fusion::kNone : f;
}

[[noreturn]] void program_error(ErrorCode code, const std::string& what) {
  throw Error(code, "fused_elementwise: " + what);
}

DType parse_dtype_name(std::string_view name) {
  for (DType t : kAllDTypes)
    if (name == dtype_name(t)) return t;
  program_error(ErrorCode::kValue,
                "unknown dtype '" + std::string(name) + "' in a cast instruction");
}

}  // namespace

std::optional<DType> fused_result_dtype(OpId op, std::span<const DType> args, DType cast_to,
                                        DType& compute) {
  const Fusion k = kind_of(op);
  if (k == Fusion::kNone || (int)args.size() != fusion_arity(k)) return std::nullopt;
  const DType d = args[0];
  switch (k) {
    case Fusion::kArith:
      if (args[1] != d) return std::nullopt;
      if (d == DType::kBool && (op == OpId::k_sub || op == OpId::k_pow)) return std::nullopt;
      if (op == OpId::k_div && !is_floating(d)) return std::nullopt;  // integer division promotes
      compute = d;
      return d;
    case Fusion::kCompare:
      if (args[1] != d) return std::nullopt;
      compute = d;
      return DType::kBool;
    case Fusion::kLogical:
      if (d != DType::kBool || args[1] != DType::kBool) return std::nullopt;
      compute = DType::kBool;
      return DType::kBool;
    case Fusion::kUnaryFloat:
      if (!is_floating(d)) return std::nullopt;
      compute = d;
      return d;
    case Fusion::kUnaryKeep:
      if (d == DType::kBool && op != OpId::k_abs) return std::nullopt;
      compute = d;
      return d;
    case Fusion::kLogicalNot:
      compute = d;
      return DType::kBool;
    case Fusion::kWhere:
      if (d != DType::kBool || args[1] != args[2]) return std::nullopt;
      compute = args[1];
      return args[1];
    case Fusion::kCast:
      compute = d;
      return cast_to;
    case Fusion::kNone:
    case Fusion::kUndeclared:
      break;
  }
  return std::nullopt;
}

FusedProgram parse_fused_program(std::string_view text) {
  FusedProgram p;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(';', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view stmt = text.substr(pos, end - pos);
    pos = end + 1;
    std::vector<std::string_view> tokens;
    for (size_t i = 0; i < stmt.size();) {
      while (i < stmt.size() && stmt[i] == ' ') ++i;
      size_t j = i;
      while (j < stmt.size() && stmt[j] != ' ') ++j;
      if (j > i) tokens.push_back(stmt.substr(i, j - i));
      i = j;
    }
    if (tokens.empty()) continue;
    FusedInstr ins;
    std::string_view name = tokens[0];
    if (name.starts_with("cast:")) {
      ins.cast_to = parse_dtype_name(name.substr(5));
      name = "cast";
    }
    const OpDef* def = find_op(name);
    if (!def || kind_of(def->id) == Fusion::kNone)
      program_error(ErrorCode::kValue,
                    "instruction " + std::to_string(p.instrs.size()) + ": '" + std::string(name) +
                        "' is not an op fused_elementwise runs (elementwise arithmetic, "
                        "comparisons, logical ops, activations, where, cast)");
    ins.op = def->id;
    ins.num_args = (int)tokens.size() - 1;
    if (ins.num_args != fusion_arity(kind_of(ins.op)))
      program_error(ErrorCode::kValue, "instruction " + std::to_string(p.instrs.size()) + ": " +
                                           def->name + " takes " +
                                           std::to_string(fusion_arity(kind_of(ins.op))) +
                                           " operands, got " + std::to_string(ins.num_args));
    for (int a = 0; a < ins.num_args; ++a) {
      std::string_view t = tokens[a + 1];
      int value = -1;
      if (t.size() < 2 || (t[0] != '%' && t[0] != '$') ||
          std::from_chars(t.data() + 1, t.data() + t.size(), value).ec != std::errc() ||
          value < 0 || value > 1 << 20)
        program_error(ErrorCode::kValue, "instruction " + std::to_string(p.instrs.size()) +
                                             ": operand '" + std::string(t) +
                                             "' is neither %<input> nor $<instruction>");
      if (t[0] == '$' && value >= (int)p.instrs.size())
        program_error(ErrorCode::kValue, "instruction " + std::to_string(p.instrs.size()) +
                                             " reads $" + std::to_string(value) +
                                             ", which is not an earlier instruction");
      ins.args[a] = t[0] == '%' ? value : fused_temp_ref(value);
      if (t[0] == '%') p.num_inputs = std::max(p.num_inputs, value + 1);
    }
    p.instrs.push_back(ins);
  }
  if (p.instrs.empty()) program_error(ErrorCode::kValue, "the program has no instructions");
  return p;
}

std::string format_fused_program(const FusedProgram& program) {
  std::string s;
  for (const FusedInstr& ins : program.instrs) {
    if (!s.empty()) s += "; ";
    s += op_def(ins.op).name;
    if (ins.op == OpId::k_cast) s += std::string(":") + dtype_name(ins.cast_to);
    for (int a = 0; a < ins.num_args; ++a)
      s += ins.args[a] >= 0 ? " %" + std::to_string(ins.args[a])
                            : " $" + std::to_string(fused_temp_index(ins.args[a]));
  }
  return s;
}

void type_fused_program(FusedProgram& program, std::span<const DType> input_dtypes) {
  if ((int)input_dtypes.size() < program.num_inputs)
    program_error(ErrorCode::kValue,
                  "the program reads input %" + std::to_string(program.num_inputs - 1) +
                      " but the node has " + std::to_string(input_dtypes.size()) + " inputs");
  for (size_t i = 0; i < program.instrs.size(); ++i) {
    FusedInstr& ins = program.instrs[i];
    DType args[3];
    for (int a = 0; a < ins.num_args; ++a)
      args[a] = ins.args[a] >= 0 ? input_dtypes[ins.args[a]]
                                 : program.instrs[fused_temp_index(ins.args[a])].result;
    std::optional<DType> r = fused_result_dtype(ins.op, std::span<const DType>(args, ins.num_args),
                                                ins.cast_to, ins.compute);
    if (!r) {
      std::string got;
      for (int a = 0; a < ins.num_args; ++a)
        got += (a ? ", " : "") + std::string(dtype_name(args[a]));
      program_error(ErrorCode::kDType,
                    "instruction " + std::to_string(i) + " (" + op_def(ins.op).name +
                        ") cannot run on operands " + got +
                        " without a promotion; insert casts so its operands share the dtype "
                        "its kernel computes in");
    }
    ins.result = *r;
  }
}

}  // namespace spore::ops
