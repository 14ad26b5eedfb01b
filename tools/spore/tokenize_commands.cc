// spore tokenize / spore detokenize: the tokenizers (include/spore/nlp/tokenizer.h) for scripts
// and tests. The forms are contracts (issue 11):
//   spore tokenize PATH --text TEXT [--add-special-tokens]         -> [1,2,3]
//   spore tokenize PATH --batch FILE.json [--add-special-tokens]   -> [[1,2],[3]]
//   spore detokenize PATH --ids 1,2,3                              -> the text, nothing else
// PATH: a tokenizer.json, a model directory or a GGUF file.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "id_list.h"
#include "spore/error.h"
#include "spore/nlp/tokenizer.h"

namespace spore::cli {

namespace {

std::vector<std::string> read_batch(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIO, "--batch: cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_array())
    throw Error(ErrorCode::kValue, "--batch: '" + path + "' must hold a JSON array of strings");
  std::vector<std::string> texts;
  for (size_t k = 0; k < j.size(); ++k) {
    if (!j[k].is_string())
      throw Error(ErrorCode::kValue, "--batch: element " + std::to_string(k) + " of '" + path +
                                         "' is " + j[k].type_name() + ", not a string");
    texts.push_back(j[k].get<std::string>());
  }
  return texts;
}

}  // namespace

void add_tokenize_commands(CLI::App& app, Handlers& h, const std::vector<std::string>&) {
  auto* tok = add_command(app, "tokenize", "Encode text to token ids (printed as a JSON array)",
                          "spore tokenize models/qwen3 --text 'Hello world' --add-special-tokens");
  auto path = std::make_shared<std::string>();
  auto text = std::make_shared<std::string>();
  auto batch = std::make_shared<std::string>();
  auto special = std::make_shared<bool>(false);
  tok->add_option("path", *path, "tokenizer.json, model directory or GGUF file")->required();
  auto* text_opt = tok->add_option("--text", *text, "The text to encode");
  auto* batch_opt = tok->add_option("--batch", *batch, "A JSON file holding an array of strings");
  text_opt->excludes(batch_opt);
  tok->add_flag("--add-special-tokens", *special, "Add the post-processor's special tokens (BOS...)");
  tok->callback([&h, path, text, batch, special, text_opt, batch_opt] {
    const bool has_text = text_opt->count() > 0, has_batch = batch_opt->count() > 0;
    h.action = [=] {
      if (!has_text && !has_batch)
        throw Error(ErrorCode::kValue, "spore tokenize: give --text TEXT or --batch FILE.json");
      const nlp::Tokenizer t = nlp::Tokenizer::from_file(*path);
      nlohmann::json out;
      if (has_text) {
        out = t.encode(*text, *special);
      } else {
        out = nlohmann::json::array();
        for (const std::string& s : read_batch(*batch)) out.push_back(t.encode(s, *special));
      }
      std::fputs((out.dump() + "\n").c_str(), stdout);
      return 0;
    };
  });

  auto* detok = add_command(app, "detokenize", "Decode token ids to text (printed as it is)",
                            "spore detokenize models/qwen3 --ids 9707,1879");
  auto dpath = std::make_shared<std::string>();
  auto ids = std::make_shared<std::string>();
  detok->add_option("path", *dpath, "tokenizer.json, model directory or GGUF file")->required();
  detok->add_option("--ids", *ids, "Comma-separated token ids")->required();
  detok->callback([&h, dpath, ids] {
    h.action = [dpath, ids] {
      const std::vector<int32_t> list = parse_id_list(*ids, "--ids", /*allow_empty=*/true);
      const nlp::Tokenizer t = nlp::Tokenizer::from_file(*dpath);
      const std::string s = t.decode(list);
      std::fwrite(s.data(), 1, s.size(), stdout);
      return 0;
    };
  });
}

}  // namespace spore::cli
