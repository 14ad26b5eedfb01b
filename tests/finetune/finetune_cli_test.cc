// `spore finetune` end to end on a tiny random Llama with a real byte-level BPE tokenizer and a
// ChatML template (tests/fixtures/convert/llama): it reads chat and prompt/completion records,
// reports over-long ones, prints progress lines with loss, tokens/s and ETA, evaluates a held-out
// split, learns (the loss of a memorisable data set falls), writes the adapter files, the loss
// curve and a checkpoint, and names the line of bad data and the checkpoint of a mismatched resume.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "nlp/spore_cli_run.h"
#include "spore/format.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;
const fs::path kTok = fs::path(SPORE_SOURCE_DIR) / "tests/fixtures/convert/llama";

struct Workspace {
  fs::path root = fs::temp_directory_path() / ("spore_finetune_cli." + std::to_string(::getpid()));
  Workspace() {
    fs::remove_all(root);
    fs::create_directories(root / "model");
    for (const char* f : {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"})
      fs::copy_file(kTok / f, root / "model" / f);
    // Random float32 weights of the config's shapes (hidden 64, 4 heads of 16, 2 kv heads, ffn 160).
    const int64_t H = 64, F = 160, V = 320, KV = 32;
    std::vector<std::pair<std::string, Tensor>> w;
    uint64_t seed = 1;
    auto mat = [&](const std::string& n, int64_t r, int64_t c) { w.emplace_back(n, random_normal({r, c}, ++seed, 0, 0.05)); };
    mat("model.embed_tokens.weight", V, H);
    mat("lm_head.weight", V, H);
    w.emplace_back("model.norm.weight", full({H}, 1.0));
    for (int l = 0; l < 2; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      w.emplace_back(p + "input_layernorm.weight", full({H}, 1.0));
      w.emplace_back(p + "post_attention_layernorm.weight", full({H}, 1.0));
      mat(p + "self_attn.q_proj.weight", H, H);
      mat(p + "self_attn.k_proj.weight", KV, H);
      mat(p + "self_attn.v_proj.weight", KV, H);
      mat(p + "self_attn.o_proj.weight", H, H);
      mat(p + "mlp.gate_proj.weight", F, H);
      mat(p + "mlp.up_proj.weight", F, H);
      mat(p + "mlp.down_proj.weight", H, F);
    }
    save_safetensors(root / "model/model.safetensors", w);
  }
  ~Workspace() { fs::remove_all(root); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(root / name, std::ios::binary) << text;
    return (root / name).string();
  }
};

std::string chat(const std::string& q, const std::string& a) {
  return nlohmann::json{{"messages", {{{"role", "user"}, {"content", q}}, {{"role", "assistant"}, {"content", a}}}}}.dump();
}

CliRun run(const std::string& args) { return run_spore(args, "", "spore_finetune_cli"); }

std::vector<double> column(const fs::path& csv, size_t col) {
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  std::vector<double> out;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string cell;
    for (size_t c = 0; c <= col && std::getline(ss, cell, ','); ++c)
      if (c == col && !cell.empty()) out.push_back(std::stod(cell));
  }
  return out;
}

TEST(FinetuneCli, TrainsWritesAndReports) {
  ASSERT_TRUE(fs::exists(spore_binary())) << "build spore_cli first";
  Workspace ws;
  std::string data;
  for (int i = 0; i < 10; ++i) data += chat("say it " + std::to_string(i), "{\"ok\": true}") + "\n";
  data += R"({"prompt": "one two", "completion": " three"})" "\n";
  data += chat(std::string(400, 'x'), "long") + "\n";  // longer than --max-tokens
  const std::string file = ws.write("data.jsonl", data);
  const std::string out = (ws.root / "run").string();
  const std::string common = "finetune --model " + (ws.root / "model").string() + " --data " + file + " --out " + out;
  const std::string args = common + " --lora-rank 4 --epochs 4 --lr 1e-2 --batch-tokens 64 --eval-split 0.2 --max-tokens 48"
                           " --skip-long --threads 1 --seed 3";
  const CliRun r = run(args);
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("12 records -> 11 examples"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 skipped as longer than 48 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tokens/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ETA"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("eval_loss"), std::string::npos) << r.out;
  for (const char* f : {"adapter_config.json", "adapter_model.safetensors", "adapter.gguf", "loss.csv", "loss.svg",
                        "checkpoint.safetensors"})
    EXPECT_TRUE(fs::exists(fs::path(out) / f)) << f;
  const auto cfg = nlohmann::json::parse(std::ifstream(fs::path(out) / "adapter_config.json"));
  EXPECT_EQ(cfg.at("r"), 4);
  EXPECT_EQ(cfg.at("lora_alpha"), 8.0);
  EXPECT_EQ(cfg.at("peft_type"), "LORA");
  const std::vector<double> loss = column(fs::path(out) / "loss.csv", 1), eval = column(fs::path(out) / "loss.csv", 2);
  ASSERT_GE(loss.size(), 4u);
  // The repeated answer is learned: the last epoch's mean loss is well under the first step's.
  ASSERT_EQ(loss.size(), 32u);
  double last_epoch = 0;
  for (size_t i = 24; i < 32; ++i) last_epoch += loss[i] / 8;
  EXPECT_LT(last_epoch, 0.65 * loss.front());
  EXPECT_EQ(eval.size(), 4u);  // one evaluation per epoch
  EXPECT_LT(eval.back(), eval.front());

  // Resuming with another rank is refused, naming the checkpoint.
  const CliRun other = run(common + " --lora-rank 2 --epochs 4 --lr 1e-2 --batch-tokens 64 --eval-split 0.2 "
                                    "--max-tokens 48 --skip-long --threads 1 --seed 3 --resume");
  EXPECT_NE(other.status, 0);
  EXPECT_NE(other.err.find("checkpoint.safetensors"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("rank 4"), std::string::npos) << other.err;
  // Resuming the finished run does no step and keeps the curve.
  const CliRun again = run(args + " --resume");
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find("resuming"), std::string::npos) << again.out;
  EXPECT_EQ(column(fs::path(out) / "loss.csv", 1), loss);

  // --bf16 (NOTE [bf16 LoRA training]) learns the same answer: its curve is not float32's (the
  // products are rounded) but falls as far.
  const std::string out16 = (ws.root / "run_bf16").string();
  const CliRun b = run("finetune --model " + (ws.root / "model").string() + " --data " + file + " --out " + out16 +
                       " --lora-rank 4 --epochs 4 --lr 1e-2 --batch-tokens 64 --eval-split 0.2 --max-tokens 48"
                       " --skip-long --threads 1 --seed 3 --bf16");
  ASSERT_EQ(b.status, 0) << b.err << b.out;
  const std::vector<double> loss16 = column(fs::path(out16) / "loss.csv", 1);
  ASSERT_EQ(loss16.size(), 32u);
  EXPECT_NE(loss16, loss);
  double last16 = 0;
  for (size_t i = 24; i < 32; ++i) last16 += loss16[i] / 8;
  EXPECT_LT(last16, 0.65 * loss16.front());
  EXPECT_TRUE(fs::exists(fs::path(out16) / "adapter.gguf"));
}

TEST(FinetuneCli, BadDataNamesTheLine) {
  ASSERT_TRUE(fs::exists(spore_binary())) << "build spore_cli first";
  Workspace ws;
  const std::string model = (ws.root / "model").string(), out = (ws.root / "run").string();
  auto attempt = [&](const std::string& data) {
    return run("finetune --model " + model + " --data " + ws.write("bad.jsonl", data) + " --out " + out);
  };
  CliRun r = attempt(chat("a", "b") + "\n{not json}\n");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("bad.jsonl:2:"), std::string::npos) << r.err;
  r = attempt(R"({"messages": [{"role": "user", "content": "only a question"}]})");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("bad.jsonl:1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("assistant"), std::string::npos) << r.err;
  r = attempt("{\"prompt\": \"\xff\", \"completion\": \"x\"}");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("not UTF-8"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(fs::path(out) / "adapter_model.safetensors"));
  r = run("finetune --model " + model + " --data /nonexistent/d.jsonl --out " + out);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("/nonexistent/d.jsonl"), std::string::npos) << r.err;
  r = run("finetune --model " + model + " --data x --out " + out + " --lora-targets q_proj,bogus");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("'bogus'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace spore::test
