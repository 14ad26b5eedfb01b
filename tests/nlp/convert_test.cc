// spore convert (include/spore/nlp/convert.h) against llama.cpp's own converter: the test rebuilds
// the three tiny Hugging Face models of tools/make_convert_fixtures.py (the small files committed
// under tests/fixtures/convert/<arch>/, the weights recomputed from the same formula and written
// with Spore's safetensors writer), converts them, and compares with what convert_hf_to_gguf.py
// wrote for the same directories (tests/fixtures/convert/reference.json): every metadata key and
// value, every tensor's name, type, dims and bytes. Types llama.cpp's converter does not write
// (q4_0, q4_1, q4_k) are checked by dequantising against the source within the type's bound, and
// the tokenizer in the GGUF file encodes like tokenizer.json.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "spore/error.h"
#include "spore/format.h"
#include "spore/gguf.h"
#include "spore/half.h"
#include "spore/llm.h"
#include "spore/ops.h"
#include "spore/nlp/convert.h"
#include "spore/nlp/tokenizer.h"
#include "spore/quant.h"
#include "nlp/tokenizer/gguf_pre_table.h"
#include "test_util.h"

namespace spore {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::expect_error;

const fs::path kFixtures = fs::path(SPORE_SOURCE_DIR) / "tests/fixtures/convert";

const json& reference() {
  static const json j = [] {
    std::ifstream in(kFixtures / "reference.json");
    return json::parse(in);
  }();
  return j;
}

// tools/make_convert_fixtures.py's weight_values: the top `bits` bits of
// splitmix64(index << 32 | i), centred and scaled to [-0.5, 0.5).
std::vector<float> weight_values(uint64_t index, int64_t n, int bits) {
  std::vector<float> v((size_t)n);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = ((index << 32) | (uint64_t)i) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const double top = (double)(z >> (64 - bits));
    v[(size_t)i] = (float)((top - std::ldexp(1.0, bits - 1)) / std::ldexp(1.0, bits));
  }
  return v;
}

struct Source {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// A temporary Hugging Face directory for `arch`: the committed files plus the weights.
class HfModel {
 public:
  explicit HfModel(const std::string& arch) : arch_(arch) {
    dir_ = fs::temp_directory_path() / ("spore_convert_" + arch + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const auto& e : fs::directory_iterator(kFixtures / arch)) fs::copy_file(e.path(), dir_ / e.path().filename());
    std::map<std::string, std::vector<std::pair<std::string, Tensor>>> files;
    for (const json& t : reference()["models"][arch]["hf_tensors"]) {
      Source s;
      s.shape = t["shape"].get<std::vector<int64_t>>();
      int64_t n = 1;
      for (int64_t d : s.shape) n *= d;
      s.values = weight_values(t["index"].get<uint64_t>(), n, t["bits"].get<int>());
      Tensor x = Tensor::from_vector(s.values, Shape(s.shape));
      if (t["dtype"] == "bfloat16") x = cast(x, DType::kBFloat16);  // exact: 8-bit values
      files[t["file"].get<std::string>()].emplace_back(t["name"].get<std::string>(), x);
      sources_[t["name"].get<std::string>()] = std::move(s);
    }
    for (const auto& [file, tensors] : files) save_safetensors(dir_ / file, tensors);
  }
  ~HfModel() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const fs::path& dir() const { return dir_; }
  fs::path out(const std::string& type) const { return dir_ / (arch_ + "-" + type + ".gguf"); }
  const Source& source(const std::string& hf) const { return sources_.at(hf); }

 private:
  std::string arch_;
  fs::path dir_;
  std::map<std::string, Source> sources_;
};

// A metadata value in the reference's JSON form.
json as_json(const GgufValue& v) {
  if (auto* u = std::get_if<uint64_t>(&v.value)) return *u;
  if (auto* i = std::get_if<int64_t>(&v.value)) return *i;
  if (auto* d = std::get_if<double>(&v.value)) return *d;
  if (auto* b = std::get_if<bool>(&v.value)) return *b;
  if (auto* s = std::get_if<std::string>(&v.value)) return *s;
  json a = json::array();
  for (const GgufValue& e : std::get<std::vector<GgufValue>>(v.value)) a.push_back(as_json(e));
  return a;
}

std::string lower(std::string s) {
  for (char& c : s) c = (char)std::tolower((unsigned char)c);
  return s;
}

void expect_same_as_llama_cpp(const std::string& arch, const std::string& type) {
  SCOPED_TRACE(arch + " " + type);
  HfModel m(arch);
  nlp::ConvertOptions o;
  o.type = type;
  const nlp::ConvertReport report = nlp::convert_hf_to_gguf(m.dir(), m.out(type), o);
  const GgufFile g(m.out(type));
  const json& ref = reference()["models"][arch]["outputs"][type];
  o.type = "f32";
  nlp::convert_hf_to_gguf(m.dir(), m.out("f32"), o);
  const GgufFile f32(m.out("f32"));

  // Metadata: every key llama.cpp wrote, with its type and value; nothing else but general.name.
  std::set<std::string> ref_keys;
  for (const auto& [key, want] : ref["metadata"].items()) {
    ref_keys.insert(key);
    const GgufValue* got = g.find(key);
    if (!got) {
      ADD_FAILURE() << "missing metadata " << key;
      continue;
    }
    const std::string want_type = want["type"];
    if (want_type == "array") {
      EXPECT_TRUE(got->is_array()) << key;
      EXPECT_EQ(gguf_type_name(got->element_type), want["element"].get<std::string>()) << key;
    } else {
      EXPECT_EQ(gguf_type_name(got->type), want_type) << key;
    }
    if (want_type == "float32") {
      EXPECT_EQ((float)std::get<double>(got->value), (float)want["value"].get<double>()) << key;
    } else {
      EXPECT_EQ(as_json(*got), want["value"]) << key;
    }
  }
  for (const auto& [key, v] : g.metadata())
    if (key != "general.name") {
      EXPECT_TRUE(ref_keys.count(key)) << "extra metadata " << key;
    }

  // Tensors: names, types, dims and bytes.
  std::map<std::string, json> want;
  for (const json& t : ref["tensors"]) want[t["name"]] = t;
  EXPECT_EQ(g.tensors().size(), want.size());
  for (const GgufTensorInfo& t : g.tensors()) {
    auto it = want.find(t.name);
    if (it == want.end()) {
      ADD_FAILURE() << "extra tensor " << t.name;
      continue;
    }
    EXPECT_EQ(quant_traits(t.type).name, it->second["type"].get<std::string>()) << t.name;
    EXPECT_EQ(t.dims, it->second["dims"].get<std::vector<uint64_t>>()) << t.name;
    if (!it->second.contains("max_error")) {
      EXPECT_EQ(sha256_bytes(g.tensor_bytes(t.name)), it->second["sha256"].get<std::string>()) << t.name;
      continue;
    }
    // A quantized tensor: Spore's quantiser (include/spore/quant.h) scales by the float16 scale
    // the reader sees, llama.cpp's by the float32 one, so a few values round the other way. Both
    // are held to the same bound: the largest error against the float32 conversion (whose bytes
    // match llama.cpp's) may exceed llama.cpp's by 1% at most.
    const std::vector<float> exact = f32.tensor(t.name).to_vector<float>();
    std::vector<float> deq(exact.size());
    const auto q = *parse_quant_type(lower(quant_traits(t.type).name));
    const size_t cols = t.dims[0], row_bytes = quant_row_bytes(q, (int64_t)cols);
    for (size_t r = 0; r < exact.size() / cols; ++r)
      dequantize_row(q, g.tensor_bytes(t.name).subspan(r * row_bytes, row_bytes),
                     std::span<float>(deq.data() + r * cols, cols));
    double worst = 0;
    for (size_t i = 0; i < exact.size(); ++i) worst = std::max(worst, (double)std::fabs(deq[i] - exact[i]));
    const double ref = it->second["max_error"].get<double>();
    EXPECT_LE(worst, ref * 1.01 + 1e-9) << t.name;
    EXPECT_GT(worst, 0.5 * ref) << t.name;
  }
  EXPECT_EQ(report.tensors.size(), want.size());
  EXPECT_EQ(report.file_bytes, fs::file_size(m.out(type)));
}

TEST(Convert, LlamaMatchesLlamaCppF32) { expect_same_as_llama_cpp("llama", "f32"); }
TEST(Convert, LlamaMatchesLlamaCppF16) { expect_same_as_llama_cpp("llama", "f16"); }
TEST(Convert, LlamaMatchesLlamaCppQ8_0) { expect_same_as_llama_cpp("llama", "q8_0"); }
TEST(Convert, Qwen2MatchesLlamaCppF32) { expect_same_as_llama_cpp("qwen2", "f32"); }
TEST(Convert, Qwen2MatchesLlamaCppBF16) { expect_same_as_llama_cpp("qwen2", "bf16"); }
TEST(Convert, Qwen2MatchesLlamaCppQ8_0) { expect_same_as_llama_cpp("qwen2", "q8_0"); }
TEST(Convert, Qwen3MatchesLlamaCppF16) { expect_same_as_llama_cpp("qwen3", "f16"); }
TEST(Convert, Qwen3MatchesLlamaCppQ8_0) { expect_same_as_llama_cpp("qwen3", "q8_0"); }

// The 4-bit types: each matrix dequantises to its source within the type's bound (half a step
// of the block's scale for q4_0 / q4_1, a step of the sub-block's scale for q4_k), rows that do
// not fill the blocks fall back as documented, and the reader's matmul_q layout is what it reads.
void expect_within_bound(const std::string& arch, const std::string& type) {
  SCOPED_TRACE(arch + " " + type);
  HfModel m(arch);
  nlp::ConvertOptions o;
  o.type = type;
  const nlp::ConvertReport report = nlp::convert_hf_to_gguf(m.dir(), m.out(type), o);
  const GgufFile g(m.out(type));
  const GgmlType want = *parse_quant_type(type);
  int quantized = 0, fell_back = 0, matmul_checked = 0;
  for (const nlp::ConvertedTensor& t : report.tensors) {
    if (t.source.rfind("(", 0) == 0) continue;  // generated (rope_freqs)
    const Source& s = m.source(t.source);
    if (s.shape.size() == 1 || t.name.find("_norm") != std::string::npos) {
      EXPECT_EQ(t.type, GgmlType::kF32) << t.name;
      continue;
    }
    if (t.name.find("attn_q.") != std::string::npos || t.name.find("attn_k.") != std::string::npos) {
      if (arch == "llama") continue;  // permuted rows: compared in the llama.cpp tests
    }
    const int64_t rows = s.shape[0], cols = s.shape[1];
    const int block = quant_traits(want).block_size;
    if (cols % block != 0) {
      EXPECT_FALSE(t.fallback.empty()) << t.name;
      EXPECT_EQ(t.type, want == GgmlType::kQ4_K && cols % 32 == 0 ? GgmlType::kQ5_0 : GgmlType::kF16) << t.name;
      ++fell_back;
      continue;
    }
    EXPECT_TRUE(t.fallback.empty()) << t.name;
    ++quantized;
    const auto bytes = g.tensor_bytes(t.name);
    const size_t row_bytes = quant_row_bytes(want, cols);
    ASSERT_EQ(bytes.size(), row_bytes * (size_t)rows) << t.name;
    std::vector<float> deq((size_t)cols);
    double worst = 0;
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_row(want, bytes.subspan((size_t)r * row_bytes, row_bytes), deq);
      for (int64_t b = 0; b < cols; b += block) {
        // The bound per block: the block's range over the levels the type has.
        float lo = 0, hi = 0;
        for (int j = 0; j < block; ++j) {
          const float x = s.values[(size_t)(r * cols + b + j)];
          lo = std::min(lo, x), hi = std::max(hi, x);
        }
        const double step = (hi - lo) / 15.0;
        // q4_0 maps the largest magnitude to -8, so the other end may clamp a whole step (of
        // max|x| / 8); q4_1 rounds to half a step; q4_k's 6-bit scales round up.
        const double bound = want == GgmlType::kQ4_0   ? std::max(-lo, hi) / 8.0 + 1e-3
                             : want == GgmlType::kQ4_K ? 1.25 * step + 1e-3
                                                        : 0.5 * step + 2e-3;
        for (int j = 0; j < block; ++j) {
          const double err = std::fabs(deq[(size_t)(b + j)] - s.values[(size_t)(r * cols + b + j)]);
          worst = std::max(worst, err / bound);
          ASSERT_LE(err, bound) << t.name << " row " << r << " element " << b + j;
        }
      }
    }
    EXPECT_GT(worst, 0.05) << t.name << ": suspiciously exact";
    // The bytes are the layout matmul_q reads in place: x times the mapped weight equals x times
    // the dequantised rows (float64 reference).
    if (matmul_checked++ == 0) {
      const Tensor w = reshape(g.tensor(t.name), std::vector<int64_t>{rows, (int64_t)row_bytes});
      const std::vector<double> xv = test::random_values(2 * cols, DType::kFloat32, -1, 1, 11);
      const Tensor y = matmul_q(test::make_tensor(xv, Shape{2, cols}, DType::kFloat32), w, type);
      const std::vector<float> got = y.to_vector<float>();
      for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(want, bytes.subspan((size_t)r * row_bytes, row_bytes), deq);
        for (int i = 0; i < 2; ++i) {
          // The kernels quantise x to 8 bits per block as llama.cpp's do (|x| <= 1: an error of at
          // most 1/254 per element), far below what a misread block layout would give.
          double ref = 0, scale = 0;
          for (int64_t k = 0; k < cols; ++k) {
            ref += xv[(size_t)(i * cols + k)] * deq[(size_t)k];
            scale += std::fabs(deq[(size_t)k]);
          }
          ASSERT_NEAR(got[(size_t)(i * rows + r)], ref, scale / 254 + 1e-4) << t.name << " row " << r;
        }
      }
    }
  }
  if (arch == "llama" && want == GgmlType::kQ4_K) EXPECT_GT(fell_back, 0);  // 64- and 160-value rows
  else EXPECT_GT(quantized, 0);
}

TEST(Convert, Qwen3Q4_0WithinBound) { expect_within_bound("qwen3", "q4_0"); }
TEST(Convert, Qwen2Q4_1WithinBound) { expect_within_bound("qwen2", "q4_1"); }
TEST(Convert, Qwen3Q4_KWithinBound) { expect_within_bound("qwen3", "q4_k"); }
TEST(Convert, LlamaQ4_KFallsBackWhereRowsDoNotFill) { expect_within_bound("llama", "q4_k"); }

// Spore's quantisers (include/spore/quant.h) against llama.cpp's reference ones (gguf-py's ports of
// quantize_row_*_ref, run by tools/make_convert_fixtures.py on the same values): no larger an
// error, at most and on average.
TEST(Convert, QuantisersAreAsAccurateAsLlamaCpps) {
  for (const auto& [name, ref] : reference()["quantizers"].items()) {
    SCOPED_TRACE(name);
    const GgmlType q = *parse_quant_type(name);
    const int64_t rows = ref["rows"], cols = ref["cols"];
    const std::vector<float> x = weight_values(ref["index"].get<uint64_t>(), rows * cols, ref["bits"].get<int>());
    std::vector<uint8_t> bytes(quant_row_bytes(q, cols));
    std::vector<float> back((size_t)cols);
    double worst = 0, sum = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const std::span<const float> row(x.data() + r * cols, (size_t)cols);
      quantize_row(q, row, bytes);
      dequantize_row(q, bytes, back);
      for (int64_t k = 0; k < cols; ++k) {
        const double e = std::fabs((double)back[(size_t)k] - row[(size_t)k]);
        worst = std::max(worst, e);
        sum += e;
      }
    }
    EXPECT_LE(worst, ref["max_error"].get<double>() * 1.01);
    EXPECT_LE(sum / (double)(rows * cols), ref["mean_error"].get<double>() * 1.01);
    EXPECT_GT(worst, 0.5 * ref["max_error"].get<double>());
  }
}

// --type q4_k_m: llama.cpp's mix (the tied embedding is the head: Q6_K; Q4_K elsewhere; rows of
// 128 fall back to Q5_0), each matrix's type as convert_matrix_type says (held to llama-quantize's
// own choices in tests/nlp/quant_files_test.cc), and every matrix close to its source values.
TEST(Convert, Qwen3Q4_K_MWritesLlamaCppsMix) {
  HfModel m("qwen3");
  nlp::ConvertOptions o;
  o.type = "q4_k_m";
  const nlp::ConvertReport report = nlp::convert_hf_to_gguf(m.dir(), m.out("q4_k_m"), o);
  const GgufFile g(m.out("q4_k_m"));
  EXPECT_EQ(g.get_int("general.file_type"), 15);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  const int64_t layers = g.get_int("qwen3.block_count");
  std::set<std::string> seen;
  for (const nlp::ConvertedTensor& t : report.tensors) {
    if (t.dims.size() != 2 || t.name.find("_norm") != std::string::npos) continue;
    EXPECT_EQ(t.type, nlp::convert_matrix_type("q4_k_m", t.name, t.dims[0], layers, true)) << t.name;
    seen.insert(quant_traits(t.type).name);
    const Source& s = m.source(t.source);
    const size_t cols = t.dims[0], rows = t.dims[1], rb = quant_row_bytes(t.type, (int64_t)cols);
    std::vector<float> deq(cols);
    double err = 0, ref = 0;
    for (size_t r = 0; r < rows; ++r) {
      dequantize_row(t.type, g.tensor_bytes(t.name).subspan(r * rb, rb), deq);
      for (size_t c = 0; c < cols; ++c) {
        const double v = s.values[r * cols + c];
        err += (deq[c] - v) * (deq[c] - v);
        ref += v * v;
      }
    }
    EXPECT_LT(std::sqrt(err / ref), 0.1) << t.name << " (" << quant_traits(t.type).name << ")";
  }
  EXPECT_TRUE(seen.count("Q6_K")) << "the tied embedding / head";
  EXPECT_TRUE(seen.count("Q4_K"));
  EXPECT_TRUE(seen.count("Q5_0")) << "128-wide rows fall back as llama.cpp's";
}

// llama.cpp's dequantisers (gguf-py, run by tools/make_convert_fixtures.py on this converter's
// output) read Spore's 4-bit blocks to the same float32 values as Spore's dequantize_row.
TEST(Convert, LlamaCppReadsSporesFourBitBlocksAsSporeDoes) {
  HfModel m("qwen3");
  for (const auto& [type, tensors] : reference()["gguf_py_dequant"].items()) {
    SCOPED_TRACE(type);
    nlp::ConvertOptions o;
    o.type = type;
    nlp::convert_hf_to_gguf(m.dir(), m.out(type), o);
    const GgufFile g(m.out(type));
    for (const auto& [name, want] : tensors.items()) {
      const GgufTensorInfo& t = g.tensor_info(name);
      const auto bytes = g.tensor_bytes(name);
      ASSERT_EQ(sha256_bytes(bytes), want["bytes_sha256"].get<std::string>())
          << name << ": Spore's quantiser now writes other bytes; rerun tools/make_convert_fixtures.py";
      const GgmlType q = *parse_quant_type(lower(quant_traits(t.type).name));
      const size_t cols = t.dims[0], rows = t.dims[1], row_bytes = quant_row_bytes(q, (int64_t)cols);
      std::vector<float> deq(rows * cols);
      for (size_t r = 0; r < rows; ++r)
        dequantize_row(q, bytes.subspan(r * row_bytes, row_bytes), std::span<float>(deq.data() + r * cols, cols));
      EXPECT_EQ(sha256_bytes(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(deq.data()), deq.size() * 4)),
                want["dequant_sha256"].get<std::string>())
          << name;
    }
  }
}

TEST(Convert, TheTokenizerInTheGgufEncodesLikeTokenizerJson) {
  HfModel m("qwen2");
  nlp::convert_hf_to_gguf(m.dir(), m.out("f32"), {.type = "f32", .name = "", .progress = {}});
  const GgufFile g(m.out("f32"));
  const nlp::Tokenizer from_gguf = nlp::Tokenizer::from_gguf(g);
  const nlp::Tokenizer from_json = nlp::Tokenizer::from_file(m.dir() / "tokenizer.json");
  for (const char* text : {"Hello world! The quick brown fox.", "你好，世界。 😀🚀 café", "def main():\n    return 42\n",
                           "<|im_start|>user\nhi<|im_end|>\n", "  spaces   and\ttabs 12345"}) {
    EXPECT_EQ(from_gguf.encode(text, false), from_json.encode(text, false)) << text;
    EXPECT_EQ(from_gguf.decode(from_gguf.encode(text, false)), text);
  }
  EXPECT_EQ(from_gguf.eos_id(), std::optional<int32_t>(2));
  EXPECT_EQ(g.get_string("tokenizer.chat_template").substr(0, 23), "{% for message in messa");
}

// Every pre-tokenizer of llama.cpp's table, spelled in tokenizer.json as Split regexes (with NFC
// and ignore_merges as the row has them): spore convert names a row that runs the same regexes,
// and the GGUF's tokenizer encodes as the tokenizer.json pipeline does.
TEST(Convert, NamesEveryPreTokenizerOfLlamaCppsTable) {
  HfModel m("qwen2");
  const json original = json::parse(std::ifstream(m.dir() / "tokenizer.json"));
  int checked = 0;
  for (const nlp::detail::GgufPreTokenizer& row : nlp::detail::gguf_pre_tokenizers()) {
    json tok = original;
    json parts = json::array();
    for (const char* re : row.regexes)
      parts.push_back({{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Isolated"}, {"invert", false}});
    parts.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}});
    tok["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", parts}};
    tok["normalizer"] = row.nfc ? json{{"type", "NFC"}} : json();
    tok["model"]["ignore_merges"] = row.ignore_merges;
    std::ofstream(m.dir() / "tokenizer.json") << tok.dump();
    nlp::convert_hf_to_gguf(m.dir(), m.out("f32"), {.type = "f32", .name = "", .progress = {}});
    const GgufFile g(m.out("f32"));
    const std::string written = g.get_string("tokenizer.ggml.pre");
    const nlp::detail::GgufPreTokenizer* named = nlp::detail::find_gguf_pre_tokenizer(written);
    ASSERT_NE(named, nullptr) << written;
    EXPECT_TRUE(std::equal(named->regexes.begin(), named->regexes.end(), row.regexes.begin(), row.regexes.end(),
                           [](const char* a, const char* b) { return std::string(a) == b; }))
        << row.names[0] << " written as " << written;
    const nlp::Tokenizer from_gguf = nlp::Tokenizer::from_gguf(g);
    const nlp::Tokenizer from_json = nlp::Tokenizer::from_file(m.dir() / "tokenizer.json");
    for (const char* text : {"Hello World! The QUICK brown fox's 1234567 jumps.", "你好，世界。 😀 café ｶﾀｶﾅ",
                             "def main():\n    return 42\r\n", "  spaces   and\ttabs 12,345.67"})
      EXPECT_EQ(from_gguf.encode(text, false), from_json.encode(text, false)) << row.names[0] << ": " << text;
    ++checked;
  }
  EXPECT_GT(checked, 30);
  json tok = original;
  tok["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}};
  std::ofstream(m.dir() / "tokenizer.json") << tok.dump();
  expect_error([&] { nlp::convert_hf_to_gguf(m.dir(), m.out("f32"), {.type = "f32", .name = "", .progress = {}}); },
               ErrorCode::kUnsupported, "convert_hf_to_gguf.py");
}

TEST(Convert, NamesWhatIsWrong) {
  HfModel m("qwen2");
  const fs::path out = m.dir() / "x.gguf";
  expect_error([&] { nlp::convert_hf_to_gguf(m.dir(), out, {.type = "q3_k", .name = "", .progress = {}}); }, ErrorCode::kValue, "q3_k", "q4_k_m");
  expect_error([&] { nlp::convert_hf_to_gguf(m.dir() / "nope", out); }, ErrorCode::kIO, "config.json");
  // An index naming a tensor its shard lacks.
  {
    std::ifstream in(m.dir() / "model.safetensors.index.json");
    json idx = json::parse(in);
    idx["weight_map"]["model.extra.weight"] = "model-00001-of-00002.safetensors";
    std::ofstream(m.dir() / "model.safetensors.index.json") << idx.dump();
  }
  expect_error([&] { nlp::convert_hf_to_gguf(m.dir(), out); }, ErrorCode::kFormat, "model.extra.weight",
               "model-00001-of-00002.safetensors");
  // An architecture spore convert does not write.
  std::ofstream(m.dir() / "config.json") << R"({"architectures": ["GPT2LMHeadModel"]})";
  expect_error([&] { nlp::convert_hf_to_gguf(m.dir(), out); }, ErrorCode::kUnsupported, "GPT2LMHeadModel");
  std::ofstream(m.dir() / "config.json") << R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64})";
  expect_error([&] { nlp::convert_hf_to_gguf(m.dir(), out); }, ErrorCode::kFormat, "num_hidden_layers");
  EXPECT_FALSE(fs::exists(out));
}

TEST(Convert, RefusesAnEmbeddingThatDisagreesWithTheConfig) {
  HfModel m("qwen3");
  std::ifstream in(m.dir() / "config.json");
  json c = json::parse(in);
  c["vocab_size"] = 400;
  std::ofstream(m.dir() / "config.json") << c.dump();
  expect_error([&] { nlp::convert_hf_to_gguf(m.dir(), m.dir() / "x.gguf"); }, ErrorCode::kShape,
               "model.embed_tokens.weight", "vocab_size 400");
}

}  // namespace
}  // namespace spore
