// `spore lite run MODEL --output DIR` takes each output's file name from the model (NOTE [Safe file
// names]): a model whose outputs are named to escape DIR ("../escape", an absolute path, "a/b",
// "..", ".") or to clash once made safe writes every output inside DIR, each in a file of its own
// that the printed "name -> file" mapping finds. Each output carries a value of its own (x + k), so
// which file holds which output is read from the files' contents, not from our naming.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "../io/io_test_util.h"
#include "../ir_test_models.h"
#include "spore/data.h"
#include "spore/ir.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;

struct Run {
  int status = -1;
  std::string out;
};
Run run_command(const std::string& cmd) {
  Run r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  r.status = ::pclose(p);
  return r;
}

// Every regular file under `dir`, relative, recursively.
std::set<std::string> files_under(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (!e.is_directory()) out.insert(fs::relative(e.path(), dir).string());
  return out;
}

// The "output ... -> PATH" lines of `spore lite run`, in order: the path each output went to.
std::vector<std::string> printed_paths(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("output  ", 0) == 0)
      if (size_t at = line.find("  -> "); at != std::string::npos) out.push_back(line.substr(at + 5));
  return out;
}

// A model with input x[2], a node per distinct name making x + k (k: the name's first place in
// `names`), and a graph output per entry of `names` (a repeated name lists its value again).
std::string onnx_model_with_outputs(const std::vector<std::string>& names) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("names");
  auto* in = g->add_input();
  in->set_name("x");
  auto* t = in->mutable_type()->mutable_tensor_type();
  t->set_elem_type(::onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_value(2);
  std::set<std::string> made;
  for (size_t k = 0; k < names.size(); ++k) {
    if (!made.insert(names[k]).second) {
      g->add_output()->set_name(names[k]);
      continue;
    }
    auto* c = g->add_initializer();
    c->set_name("c" + std::to_string(k));
    c->set_data_type(::onnx::TensorProto::FLOAT);
    c->add_float_data((float)k);
    auto* n = g->add_node();
    n->set_op_type("Add");
    n->add_input("x");
    n->add_input(c->name());
    n->add_output(names[k]);
    g->add_output()->set_name(names[k]);
  }
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

// Runs the model on x = [10, 20] into `dir/out` and checks that every output went into a file of
// its own there, found by the printed mapping, holding x + offsets[k], and that nothing else was
// written.
void expect_contained_outputs(const fs::path& model, const TempDir& dir, const std::vector<float>& offsets,
                              const std::string& what) {
  const size_t n_outputs = offsets.size();
  const fs::path out = dir / "out";
  data::save_npy((dir / "x.npy").string(), Tensor::from_vector<float>({10.0f, 20.0f}, Shape{2}));
  const std::string cmd = std::string(SPORE_BINARY_DIR) + "/bin/spore lite run " + model.string() +
                          " --input x=" + (dir / "x.npy").string() + " --output " + out.string() + " --repeat 0";
  const Run r = run_command(cmd);
  ASSERT_EQ(r.status, 0) << what << "\n" << r.out;
  std::printf("%s", r.out.c_str());  // the name -> file mapping, for the test log
  const std::vector<std::string> paths = printed_paths(r.out);
  ASSERT_EQ(paths.size(), n_outputs) << r.out;
  // Only the outputs' files, directly in DIR; and nothing else appeared beside DIR.
  const std::set<std::string> files = files_under(out);
  EXPECT_EQ(files.size(), n_outputs) << r.out;
  for (const std::string& f : files) {
    EXPECT_EQ(f.find('/'), std::string::npos) << f;
    EXPECT_NE(f.front(), '.') << f;
    EXPECT_EQ(fs::path(f).extension(), ".npy") << f;
  }
  EXPECT_EQ(files_under(dir.path()).size(), n_outputs + 2) << "x.npy, the model and the outputs only";
  std::set<std::string> seen;
  for (size_t k = 0; k < n_outputs; ++k) {
    const fs::path p = paths[k];
    ASSERT_EQ(p.parent_path(), out) << "output " << k << " printed as " << paths[k];
    EXPECT_TRUE(files.count(p.filename().string())) << paths[k];
    EXPECT_TRUE(seen.insert(p.filename().string()).second) << "two outputs printed with one file: " << paths[k];
    const Tensor got = data::load_npy(p.string());
    EXPECT_EQ(got.to_vector<float>(), (std::vector<float>{10.0f + offsets[k], 20.0f + offsets[k]}))
        << "output " << k << " in " << paths[k];
  }
}

TEST(LiteOutputNames, HostileOnnxOutputNamesStayInTheOutputFolder) {
  TempDir dir;
  // Where the unsafe spellings would have written: beside DIR, and an absolute path.
  const std::string absolute = "/tmp/spore_lite_abs_" + std::to_string(::getpid());
  const fs::path escaped = dir / "escape.npy";
  fs::remove(absolute + ".npy");
  const std::vector<std::string> names = {
      "../escape", absolute, "a/b", "a_b", "a\\b", "..", ".", ".hidden", "CON", "nul.txt", std::string(300, 'L'),
      std::string(290, 'L') + "tail", "y", "Y", "y", "bell\x07", std::string("nul\0byte", 8), "output17", "%internal",
  };
  const fs::path model = dir / "names.onnx";
  {
    const std::string bytes = onnx_model_with_outputs(names);
    std::ofstream(model, std::ios::binary).write(bytes.data(), (std::streamsize)bytes.size());
  }
  std::vector<float> offsets;  // a repeated name holds its first node's value
  for (size_t k = 0; k < names.size(); ++k)
    offsets.push_back((float)(std::find(names.begin(), names.end(), names[k]) - names.begin()));
  expect_contained_outputs(model, dir, offsets, "ONNX");
  EXPECT_FALSE(fs::exists(escaped));
  EXPECT_FALSE(fs::exists(absolute + ".npy"));
  fs::remove(absolute + ".npy");  // had it escaped, leave nothing behind
  EXPECT_FALSE(fs::exists(dir / "out" / "a"));
  // An ordinary name keeps its file name: the command line's contract (DIR/<name>.npy).
  EXPECT_TRUE(fs::exists(dir / "out" / "y.npy"));
  EXPECT_TRUE(fs::exists(dir / "out" / "a_b.npy"));
  EXPECT_TRUE(fs::exists(dir / "out" / "output17.npy"));
}

// Spore IR's outputs may be unnamed: each still gets a file (output<i>), and an output really
// named "output0" keeps that file name (the unnamed output 0 moves aside).
TEST(LiteOutputNames, UnnamedIrOutputsGetFilesOfTheirOwn) {
  TempDir dir;
  ir::Model m;
  m.producer_version = "test";
  ir::Graph& g = m.graph;
  g.values.push_back(ir_input("x", DType::kFloat32, fixed_dims({2})));
  const std::vector<std::string> names = {"", "output0", "", "../output1"};
  for (size_t k = 0; k < names.size(); ++k) {
    g.values.push_back(ir_param("c" + std::to_string(k), full({2}, (double)k)));
    g.values.push_back(ir_node_value(DType::kFloat32, fixed_dims({2})));
    g.values.back().name = names[k];
    const uint32_t c = (uint32_t)g.values.size() - 2, y = (uint32_t)g.values.size() - 1;
    g.nodes.push_back({&op_def(OpId::k_add), {}, {0, c}, {y}, {}});
    g.outputs.push_back(y);
  }
  g.inputs = {0};
  const fs::path model = dir / "unnamed.spore";
  ir::write_model(model, m);
  expect_contained_outputs(model, dir, {0, 1, 2, 3}, "Spore IR");
  EXPECT_EQ(data::load_npy((dir / "out" / "output0.npy").string()).to_vector<float>(), (std::vector<float>{11.0f, 21.0f}));
}

}  // namespace
}  // namespace spore::test
