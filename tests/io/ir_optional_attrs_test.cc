// An IR file written before an op gained a trailing optional attribute (AttrSpec::optional, NOTE
// [LLM numerics]) still reads, with the attribute's zero value. The old file is made from a new
// one by shortening the node's attribute vector from 2 entries to 1 in the FlatBuffer bytes (and
// resealing the checksum): exactly one patch of a u32 "2" reads as a node whose ggml is false.
#include <gtest/gtest.h>

#include <cstring>

#include "io_test_util.h"
#include "ir_test_models.h"
#include "spore/format.h"
#include "spore/ir.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

std::vector<uint8_t> resealed(std::vector<uint8_t> bytes) {
  const size_t body = bytes.size() - 32;
  const std::string hex = sha256_bytes(std::span<const uint8_t>(bytes.data(), body));
  for (int i = 0; i < 32; ++i) bytes[body + i] = (uint8_t)std::stoi(hex.substr(2 * i, 2), nullptr, 16);
  return bytes;
}

ir::Model rms_norm_model() {
  ir::Model m;
  m.producer_version = "test";
  ir::Graph& g = m.graph;
  g.values.push_back(ir_input("x", DType::kFloat32, {{2, {}}, {4, {}}}));
  g.values.push_back(ir_param("w", full({4}, 1.5)));
  g.values.push_back(ir_node_value(DType::kFloat32, {{2, {}}, {4, {}}}));
  g.values[2].name = "y";
  g.nodes.push_back({&op_def(OpId::k_rms_norm), Attrs::of(0.25, true), {0, 1}, {2}, {}});  // ggml = true
  g.inputs = {0};
  g.outputs = {2};
  return m;
}

TEST(IrOptionalAttrs, AFileWithoutATrailingOptionalAttributeReadsWithItsZeroValue) {
  const std::vector<uint8_t> bytes = ir::model_to_bytes(rms_norm_model());
  const ir::Model whole = ir::read_model_bytes(bytes);
  ASSERT_EQ(whole.graph.nodes[0].attrs.size(), 2);
  EXPECT_TRUE(whole.graph.nodes[0].attrs.b(1));
  int readable = 0;
  for (size_t at = 0; at + 4 <= bytes.size() - 32; at += 4) {  // FlatBuffer vector lengths are aligned u32s
    uint32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    if (v != 2) continue;
    std::vector<uint8_t> patched = bytes;
    const uint32_t one = 1;
    std::memcpy(patched.data() + at, &one, 4);
    try {
      const ir::Model old = ir::read_model_bytes(resealed(std::move(patched)));
      const ir::Node& n = old.graph.nodes.at(0);
      if (n.def->id != OpId::k_rms_norm || n.inputs.size() != 2) continue;
      ASSERT_EQ(n.attrs.size(), 2);  // always filled up to the schema
      EXPECT_EQ(n.attrs.f(0), 0.25);
      // Other length-2 vectors (a value's dims, ..) may be patched and still read; only the
      // attribute vector's patch drops ggml, which then reads as its zero value.
      if (!n.attrs.b(1)) ++readable;
    } catch (const Error&) {
      // another length-2 vector (inputs, dims, ..): that patch breaks the file, as it should
    }
  }
  EXPECT_EQ(readable, 1);
}

TEST(IrOptionalAttrs, MissingRequiredAttributesAreStillRefused) {
  ir::Model m = rms_norm_model();
  const std::vector<uint8_t> bytes = ir::model_to_bytes(m);
  // Shortening the vector to 0 drops eps, which is not optional: every such patch is an error.
  for (size_t at = 0; at + 4 <= bytes.size() - 32; at += 4) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    if (v != 2) continue;
    std::vector<uint8_t> patched = bytes;
    const uint32_t zero = 0;
    std::memcpy(patched.data() + at, &zero, 4);
    try {
      const ir::Model old = ir::read_model_bytes(resealed(std::move(patched)));
      const ir::Node& n = old.graph.nodes.at(0);
      EXPECT_FALSE(n.def->id == OpId::k_rms_norm && n.inputs.size() == 2 && n.attrs.size() != 2)
          << "a node without eps was accepted";
    } catch (const Error&) {
      // refused, as it should be
    }
  }
}

}  // namespace
}  // namespace spore::test
