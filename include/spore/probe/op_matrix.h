// The op capability matrix: every registered op in every dtype on one device against a float64
// CPU reference, with the largest error per cell; chapter 5.4's table "which op runs in which
// dtype on this board", generated instead of written by hand.
#pragma once
#include <string>
#include <vector>

#include "spore/probe/probe.h"
#include "spore/probe/runner.h"

namespace spore::probe {

// Names of every op in the op list, without building the op table (the parent touches nothing).
std::vector<std::string> op_names();
// Child side: one row of the matrix (every dtype of op `name` on `ctx.device()`), recorded in
// ctx as values under "cells". Registered as probes "op:<name>".
void run_op_row(ProbeContext& ctx, const std::string& name);
// Registers "op:<name>" probes for every op (idempotent).
void register_op_probes();
// Parent side: runs one child per op and assembles the matrix report (spore.op-matrix/1),
// written to <out_dir>/op-matrix-<device>-<ts>.json unless opts.write_reports is false.
// `only`: a subset of op names (all ops when empty); an unknown name is a kValue error.
Json run_op_matrix(const RunOptions& opts, const std::vector<std::string>& command,
                   std::string* written_path = nullptr, const std::vector<std::string>& only = {});
std::string format_op_matrix(const Json& matrix);

}  // namespace spore::probe
