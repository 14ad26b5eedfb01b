// llama.cpp's pre-tokenizers by `tokenizer.ggml.pre` name (NOTE [GGUF pre-tokenizers]). Where
// llama.cpp rewrites a tokenizer.json regex for its own regex engine (case-insensitive groups
// spelled out as classes, lookaheads for \p{Lu}...), the row keeps the tokenizer.json original:
// PCRE2 runs it as written, and Hugging Face's ids, which the vocabulary tests' .out files hold,
// come from it.
#include "nlp/tokenizer/gguf_pre_table.h"

namespace spore::nlp::detail {

namespace {

// GPT-2's regex (Hugging Face's ByteLevel use_regex), the base of many rows.
#define GPT2_RE "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
// Llama 3's, which chatglm, dbrx and smaug share.
#define LLAMA3_RE                                                                                 \
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" \
  "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
// Qwen2's: digits one by one.
#define QWEN2_RE                                                                                  \
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"     \
  "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
// GPT-4o's (o200k): upper-case runs and lower-case runs apart, contractions attached.
#define GPT4O_RE                                                                                              \
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|" \
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|" \
  "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
// DeepSeek V3's word rule (also Hunyuan dense, JoyAI, HY v4).
#define DEEPSEEK3_WORDS_RE                                                                        \
  "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+"
#define CJK_KANA_RE "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+"
#define FINNISH_RE " ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+"

std::vector<GgufPreTokenizer> make_table() {
  std::vector<GgufPreTokenizer> t;
  // No tokenizer.ggml.pre, or "default": llama.cpp's own fallback list.
  t.push_back({{"default"},
               {"[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2_RE, "\\p{N}+", "[0-9][0-9][0-9]"}});
  t.push_back({{"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
               {LLAMA3_RE}, false, true, true});
  t.push_back({{"dbrx", "smaug-bpe"}, {LLAMA3_RE}});
  t.push_back({{"chatglm-bpe"}, {LLAMA3_RE}});
  t.push_back({{"glm4", "glm5"}, {LLAMA3_RE}, false, true});
  t.push_back({{"jais-2"},
               {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                "\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|"
                "\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"}});
  t.push_back({{"deepseek-llm"},
               {"[\r\n]",
                "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF\U0001E900-\U0001E943]+",
                "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+", "\\s+$", "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+", "\\p{N}+"}});
  t.push_back({{"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"},
               {"\\p{N}{1,3}", CJK_KANA_RE, DEEPSEEK3_WORDS_RE "[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}});
  t.push_back({{"spark2_5"},
               {"\\p{N}{1,3}", CJK_KANA_RE, DEEPSEEK3_WORDS_RE "|[\r\n]|\\s+(?!\\S)|\\s+", "\\p{N}"}});
  t.push_back({{"youtu"},
               {"[\uAC00-\uD7A3\u3131-\u318E]+|[\uFF01\u2026\u201C\u201D\u2018\u2019\u2014\uFF1A\uFF1B\uFF0C\u3001-\u303F\uFE30-\uFE4F]+|[\u3105-\u312F]+|[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+",
                "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
                "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
                "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
               false, true});
  t.push_back({{"deepseek-coder"},
               {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+", "\\p{N}"}});
  t.push_back({{"falcon"},
               {"[\\p{P}\\$\\+<=>\\^~\\|`]+", GPT2_RE, "[0-9][0-9][0-9]"}});
  t.push_back({{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"},
               {"\\p{N}", GPT2_RE}});
  t.push_back({{"gpt-2", "gpt2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
                "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe", "exaone4", "mpt", "olmo", "jais", "trillion",
                "granite-docling"},
               {GPT2_RE}});
  // Qwen's tokenizer.json normalises to NFC before splitting.
  t.push_back({{"qwen2", "deepseek-r1-qwen"}, {QWEN2_RE}, true});
  t.push_back({{"kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open", "grok-2"}, {QWEN2_RE}});
  // No NFC here: qwen35's vocabulary test keeps decomposed accents as two tokens.
  t.push_back({{"qwen35"},
               {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|"
                "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}});
  t.push_back({{"poro-chat", "bloom", "gpt3-finnish"}, {FINNISH_RE}});
  t.push_back({{"viking"}, {FINNISH_RE, "\\p{N}"}});
  t.push_back({{"tekken"},
               {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
                "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|"
                "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
               false, true, true});
  t.push_back({{"chameleon"},
               {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
                "[\\p{P}!-/:-@\\[-`{-~]", GPT2_RE},
               false, false, true});
  t.push_back({{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {GPT4O_RE}});
  t.push_back({{"granite-embed-multi-97m"},
               {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
                "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
                "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
               false, true});
  t.push_back({{"tiny_aya", "cohere2moe"}, {"\\d{1,3}(?=(?:\\d{3})*\\b)", GPT4O_RE}});
  t.push_back({{"superbpe"}, {"\\p{N}+", "(?=(\\d{3})+(?!\\d))"}});
  // Bailing's tokenizer.json uses possessive quantifiers, which PCRE2 runs as written.
  t.push_back({{"bailingmoe", "bailingmoe2", "llada-moe"},
               {"'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|"
                "\\s+(?!\\S)|\\s+"}});
  t.push_back({{"seed-coder"},
               {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\r\n]+|\\s*[\r\n]+|"
                "\\s+(?!\\S)|\\s+"}});
  t.push_back({{"ufakzeka"},
               {"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}});
  t.push_back({{"laguna"}, {"[^\\n]+|[\\n]+", QWEN2_RE}});
  t.push_back({{"exaone-moe"},
               {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}|"
                " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}});
  // Kimi K2's tiktoken pattern (tokenization_kimi.py): GPT-4o's with Han characters taken out of
  // the letter classes (class intersections, [X&&[^\p{Han}]], which PCRE2 lacks: written as a
  // lookahead per character) and runs of Han a piece of their own. llama.cpp runs a hand-written
  // approximation that keeps upper- and lower-case runs together ("XMLHttpRequest" one piece);
  // this is the model's own split.
  t.push_back({{"kimi-k2"},
               {"[\\p{Han}]+|"
                "[^\\r\\n\\p{L}\\p{N}]?(?:(?!\\p{Han})[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}])*"
                "(?:(?!\\p{Han})[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}])+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
                "[^\\r\\n\\p{L}\\p{N}]?(?:(?!\\p{Han})[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}])+"
                "(?:(?!\\p{Han})[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}])*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
                "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}});
  // AFMoE: digit runs in threes from the right ("1234567": 1, 234, 567; llama.cpp's splitter also
  // glues the text before a run to its first group, which the regex does not), CJK and other Asian
  // scripts (the ranges as llama.cpp lists them, U+8C48 where U+F900 was likely meant), then
  // DeepSeek V3's word rule.
  t.push_back({{"afmoe"},
               {"\\p{N}{1,3}(?=(?:\\p{N}{3})*(?!\\p{N}))",
                "[\u4E00-\u9FFF\u3400-\u4DBF\u8C48-\uFAFF\u3040-\u309F\u30A0-\u30FF\uFF65-\uFF9F\u2F00-\u2FDF"
                "\u0E40-\u0E7F\u0E80-\u0EFF\u1780-\u17FF\u1000-\u109F\uAA60-\uAA7F\uA9E0-\uA9FF\uAC00-\uD7AF"
                "\u1100-\u11FF]+",
                DEEPSEEK3_WORDS_RE "[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}});
  t.push_back({{"minicpm5"},
               {"\\p{N}{1,3}",
                "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
               false, true});
  return t;
}

}  // namespace

const std::vector<GgufPreTokenizer>& gguf_pre_tokenizers() {
  static const std::vector<GgufPreTokenizer> table = make_table();
  return table;
}

const GgufPreTokenizer* find_gguf_pre_tokenizer(std::string_view pre) {
  for (const GgufPreTokenizer& row : gguf_pre_tokenizers())
    for (const char* name : row.names)
      if (pre == name) return &row;
  return nullptr;
}

std::string gguf_pre_tokenizer_names() {
  std::string out;
  for (const GgufPreTokenizer& row : gguf_pre_tokenizers())
    for (const char* name : row.names) {
      if (!out.empty()) out += ", ";
      out += name;
    }
  return out;
}

}  // namespace spore::nlp::detail
