// The adapter files (NOTE [LoRA adapter files]). The GGUF adapter has llama.cpp's layout: the keys
// llama-adapter.cpp requires, a `.lora_a` / `.lora_b` pair per projection named after a tensor of
// the base GGUF that llama.cpp's converter wrote for the same model
// (tests/fixtures/llm/llama/model-llama-cpp.gguf), with the shapes llama-adapter.cpp checks against it; the
// q/k B rows follow the converter's row order, which the test reads off the two weight files
// themselves (each GGUF row of attn_q is some row of the Hugging Face q_proj). Training over that
// GGUF base gives the same loss as over the Hugging Face one, and its PEFT file holds Hugging
// Face's row order again.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <unistd.h>

#include "spore/format.h"
#include "spore/gguf.h"
#include "spore/nlp/finetune.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;
const fs::path kLlama = fs::path(SPORE_SOURCE_DIR) / "tests/fixtures/llm/llama";

const SafeTensors& reference() {
  static const SafeTensors r =
      load_safetensors(fs::path(SPORE_SOURCE_DIR) / "tests/fixtures/finetune/peft_reference.safetensors");
  return r;
}

std::unique_ptr<nlp::LoraModel> lora(const fs::path& base) {
  nlp::LoraConfig lc;
  lc.rank = 4;
  lc.alpha = 8;
  lc.dropout = 0;
  return nlp::LoraModel::load(base, lc);
}

// perm[g] = the Hugging Face row that GGUF row g of `gguf_name` holds, found by comparing rows.
std::vector<int64_t> row_order(const GgufFile& g, const std::string& gguf_name, const SafeTensors& hf,
                               const std::string& hf_name) {
  const std::vector<float> a = g.tensor(gguf_name).contiguous().to_vector<float>();
  const Tensor h = hf.at(hf_name);
  const std::vector<float> b = h.contiguous().to_vector<float>();
  const int64_t rows = h.size(0), cols = h.size(1);
  std::vector<int64_t> perm(static_cast<size_t>(rows), -1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t s = 0; s < rows; ++s)
      if (std::equal(a.begin() + r * cols, a.begin() + (r + 1) * cols, b.begin() + s * cols)) perm[static_cast<size_t>(r)] = s;
  return perm;
}

std::vector<float> rows_by(const std::vector<float>& v, int64_t cols, const std::vector<int64_t>& perm) {
  std::vector<float> out;
  for (int64_t src : perm) out.insert(out.end(), v.begin() + src * cols, v.begin() + (src + 1) * cols);
  return out;
}

TEST(LoraAdapterFiles, GgufAdapterHasLlamaCppsLayout) {
  auto m = lora(kLlama / "hf");
  for (Parameter p : m->parameters()) p.set_value(reference().at("init." + p.name()).clone());
  const fs::path out = fs::temp_directory_path() / ("spore_lora_gguf." + std::to_string(::getpid()) + ".gguf");
  nlp::write_gguf_adapter(*m, out);
  const GgufFile a(out);
  fs::remove(out);
  const GgufFile base(kLlama / "model-llama-cpp.gguf");
  const SafeTensors hf = load_safetensors(kLlama / "hf/model.safetensors");
  EXPECT_EQ(a.get_string("general.type"), "adapter");
  EXPECT_EQ(a.get_string("adapter.type"), "lora");
  EXPECT_EQ(a.get_string("general.architecture"), base.get_string("general.architecture"));
  EXPECT_FLOAT_EQ(a.get_float("adapter.lora.alpha"), 8.0f);
  EXPECT_EQ(a.find("adapter.lora.alpha")->type, GgufType::kFloat32);
  ASSERT_EQ(a.tensors().size(), 2 * m->adapters().size());
  const std::map<std::string, std::string> gguf_of = {{"q_proj", "attn_q"},    {"k_proj", "attn_k"},  {"v_proj", "attn_v"},
                                                      {"o_proj", "attn_output"}, {"gate_proj", "ffn_gate"},
                                                      {"up_proj", "ffn_up"},     {"down_proj", "ffn_down"}};
  for (const nlp::TrainableLora& ad : m->adapters()) {
    const std::string name = "blk." + std::to_string(ad.layer) + "." + gguf_of.at(ad.target) + ".weight";
    const GgufTensorInfo& w = base.tensor_info(name);  // the base tensor llama.cpp pairs it with
    const GgufTensorInfo& la = a.tensor_info(name + ".lora_a");
    const GgufTensorInfo& lb = a.tensor_info(name + ".lora_b");
    EXPECT_EQ(la.type, GgmlType::kF32);
    // llama-adapter.cpp: model ne[0] == a ne[0], model ne[1] == b ne[1], a ne[1] == b ne[0] (= rank).
    EXPECT_EQ(la.dims[0], w.dims[0]) << name;
    EXPECT_EQ(lb.dims[1], w.dims[1]) << name;
    EXPECT_EQ(la.dims[1], 4u) << name;
    EXPECT_EQ(lb.dims[0], 4u) << name;
    const std::vector<float> A = a.tensor(name + ".lora_a").contiguous().to_vector<float>();
    const std::vector<float> B = a.tensor(name + ".lora_b").contiguous().to_vector<float>();
    EXPECT_EQ(A, ad.a.value().contiguous().to_vector<float>()) << name;
    std::vector<float> want = ad.b.value().contiguous().to_vector<float>();
    if (ad.target == "q_proj" || ad.target == "k_proj") {
      const std::string hf_name = "model.layers." + std::to_string(ad.layer) + ".self_attn." + ad.target + ".weight";
      const std::vector<int64_t> perm = row_order(base, name, hf, hf_name);
      ASSERT_EQ(std::count(perm.begin(), perm.end(), -1), 0) << name;
      bool identity = true;
      for (size_t r = 0; r < perm.size(); ++r) identity = identity && perm[r] == static_cast<int64_t>(r);
      EXPECT_FALSE(identity) << "the fixture's " << name << " is not permuted: the check would be empty";
      want = rows_by(want, 4, perm);
    }
    EXPECT_EQ(B, want) << name;
  }
}

TEST(LoraAdapterFiles, TrainingOverTheGgufBaseMatchesAndWritesHuggingFaceOrder) {
  auto hf_model = lora(kLlama / "hf");
  auto gguf_model = lora(kLlama / "model-llama-cpp.gguf");
  ASSERT_TRUE(gguf_model->gguf_layout());
  const GgufFile base(kLlama / "model-llama-cpp.gguf");
  const SafeTensors hf = load_safetensors(kLlama / "hf/model.safetensors");
  const std::vector<Parameter> hp = hf_model->parameters(), gp = gguf_model->parameters();
  ASSERT_EQ(hp.size(), gp.size());
  for (size_t i = 0; i < hp.size(); ++i) {
    ASSERT_EQ(hp[i].name(), gp[i].name());
    Tensor v = reference().at("init." + hp[i].name()).clone();
    Parameter(hp[i]).set_value(v);
    const nlp::TrainableLora& ad = gguf_model->adapters()[i / 2];
    if (i % 2 == 1 && (ad.target == "q_proj" || ad.target == "k_proj")) {
      const std::string gname = "blk." + std::to_string(ad.layer) + (ad.target == "q_proj" ? ".attn_q" : ".attn_k") + ".weight";
      const std::string hname = "model.layers." + std::to_string(ad.layer) + ".self_attn." + ad.target + ".weight";
      v = Tensor::from_vector(rows_by(v.to_vector<float>(), 4, row_order(base, gname, hf, hname)), v.shape());
    }
    Parameter(gp[i]).set_value(v);
  }
  const nlp::TrainExample ex{{1, 17, 42, 99, 3, 250, 7, 8, 9}, {0, 1, 1, 1, 1, 1, 1, 1, 1}, 0};
  EXPECT_NEAR(gguf_model->nll_sum(ex).item<float>(), hf_model->nll_sum(ex).item<float>(), 1e-4);
  const fs::path dir = fs::temp_directory_path() / ("spore_lora_peft." + std::to_string(::getpid()));
  nlp::write_peft_adapter(*gguf_model, dir, "tiny-llama");
  const SafeTensors written = load_safetensors(dir / "adapter_model.safetensors");
  EXPECT_TRUE(fs::exists(dir / "adapter_config.json"));
  fs::remove_all(dir);
  for (const Parameter& p : hp) EXPECT_EQ(written.at(p.name()).to_vector<float>(), p.value().to_vector<float>()) << p.name();
}

}  // namespace
}  // namespace spore::test
