// Helpers that build ONNX models in memory for the importer's tests (onnx_import_test.cc,
// onnx_carried_types_test.cc).
#pragma once
#include <onnx/onnx_pb.h>

#include <cctype>
#include <fstream>
#include <cstdint>
#include <string>
#include <vector>

#include "../io/io_test_util.h"
#include "spore/ir.h"
#include "spore/lite.h"
#include "spore/onnx.h"

namespace spore::test {

inline ::onnx::ModelProto base_model(int64_t opset = 17) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

inline void add_input(::onnx::ModelProto& m, const std::string& name, std::vector<std::string> dims, int32_t type = ::onnx::TensorProto::FLOAT) {
  auto* vi = m.mutable_graph()->add_input();
  vi->set_name(name);
  auto* t = vi->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  auto* s = t->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = s->add_dim();
    if (!d.empty() && std::isdigit((unsigned char)d[0])) dim->set_dim_value(std::stoll(d));
    else dim->set_dim_param(d);
  }
}

inline void add_output(::onnx::ModelProto& m, const std::string& name) { m.mutable_graph()->add_output()->set_name(name); }

inline ::onnx::NodeProto* add_node(::onnx::ModelProto& m, const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                            const std::string& name = "") {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : ins) n->add_input(i);
  for (auto& o : outs) n->add_output(o);
  return n;
}

inline void add_floats(::onnx::ModelProto& m, const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (auto d : dims) t->add_dims(d);
  for (float x : v) t->add_float_data(x);
}

inline std::vector<uint8_t> bytes_of(const ::onnx::ModelProto& m) {
  std::string s;
  m.SerializeToString(&s);
  return {s.begin(), s.end()};
}

inline ir::Model read(const ::onnx::ModelProto& m) { return onnx::read_onnx_bytes(bytes_of(m), "t.onnx"); }

inline void attr_ints(::onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void attr_s(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}
inline void add_ints(::onnx::ModelProto& m, const std::string& name, std::vector<int64_t> v) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::INT64);
  t->add_dims((int64_t)v.size());
  for (int64_t x : v) t->add_int64_data(x);
}
// The model written to a temporary file, built in Lite and run on `inputs`: its first output.
inline Tensor run_onnx(const ::onnx::ModelProto& m, const std::vector<Tensor>& inputs, const std::string& name) {
  TempDir dir;
  const auto b = bytes_of(m);
  std::ofstream(dir / (name + ".onnx"), std::ios::binary).write((const char*)b.data(), (std::streamsize)b.size());
  lite::Model model = lite::Model::build_from_file(dir / (name + ".onnx"));
  return model.predict(inputs)[0];
}

}  // namespace spore::test
