// The served models' names (src/serve/model_catalog.cc, NOTE [Many models]): what --models DIR
// finds and calls each model, and the start-up refusals (two of one name, an empty or missing
// folder, a name a request could not carry).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "serve/model_catalog.h"
#include "spore/error.h"
#include "spore/gguf_writer.h"

namespace spore::serve {
namespace {

namespace fs = std::filesystem;

class ModelCatalog : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("spore_catalog_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const fs::path& rel) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << "x";
  }
  // The error's code and text of `fn`, which must throw spore::Error.
  template <class F>
  std::pair<ErrorCode, std::string> error_of(F fn) {
    try {
      fn();
    } catch (const Error& e) {
      return {e.code(), e.what()};
    }
    ADD_FAILURE() << "no error";
    return {ErrorCode::kInternal, ""};
  }
  fs::path dir_;
};

TEST_F(ModelCatalog, FilesByStemDirectoriesByName) {
  touch("zeta.gguf");
  touch("alpha/config.json");
  touch("alpha/model.safetensors");
  touch("beta/weights-q8.gguf");
  touch(".hidden.gguf");             // hidden: skipped
  touch("notes.txt");                // not a model
  touch("empty/README.md");          // a folder with no model in it
  touch("adapter.bin");
  const auto models = models_in_directory(dir_);
  ASSERT_EQ(models.size(), 3u);
  EXPECT_EQ(models[0].name, "alpha");
  EXPECT_EQ(models[0].path, dir_ / "alpha");
  EXPECT_EQ(models[1].name, "beta");  // the directory's name, not its file's
  EXPECT_EQ(models[1].path, dir_ / "beta");
  EXPECT_EQ(models[2].name, "zeta");
  EXPECT_EQ(models[2].path, dir_ / "zeta.gguf");
}

// llama.cpp's LoRA adapter files are for --lora, not models of their own; a model GGUF (its
// general.type "model") and an unreadable one (its load will say why) are listed.
TEST_F(ModelCatalog, AdapterGgufsAreNotModels) {
  for (const char* type : {"adapter", "model"}) {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("general.type", type);
    w.write(dir_ / (std::string(type) + ".gguf"));
  }
  touch("garbage.gguf");
  const auto models = models_in_directory(dir_);
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0].name, "garbage");
  EXPECT_EQ(models[1].name, "model");
}

TEST_F(ModelCatalog, TwoModelsOfOneNameAreRefusedNamingBoth) {
  touch("same.gguf");
  touch("same/config.json");
  const auto [code, text] = error_of([&] { models_in_directory(dir_); });
  EXPECT_EQ(code, ErrorCode::kValue);
  EXPECT_NE(text.find((dir_ / "same.gguf").string()), std::string::npos) << text;
  EXPECT_NE(text.find((dir_ / "same").string() + " "), std::string::npos) << text;
  // Across --model and --models too.
  touch("other/one.gguf");
  fs::remove_all(dir_ / "same");
  const auto [code2, text2] = error_of([&] { model_catalog({(dir_ / "other/one.gguf").string(), (dir_ / "x/one.gguf").string()}, {}); });
  EXPECT_EQ(code2, ErrorCode::kValue);
  EXPECT_NE(text2.find("'one'"), std::string::npos) << text2;
}

TEST_F(ModelCatalog, EmptyOrMissingFoldersAreRefused) {
  touch("notes.txt");
  EXPECT_EQ(error_of([&] { models_in_directory(dir_); }).first, ErrorCode::kValue);
  const auto [code, text] = error_of([&] { models_in_directory(dir_ / "nowhere"); });
  EXPECT_EQ(code, ErrorCode::kIO);
  EXPECT_NE(text.find("nowhere"), std::string::npos) << text;
}

TEST_F(ModelCatalog, NamesARequestCouldNotCarryAreRefused) {
  touch("bad\nname.gguf");
  const auto [code, text] = error_of([&] { models_in_directory(dir_); });
  EXPECT_EQ(code, ErrorCode::kValue);
  EXPECT_NE(text.find("not a usable model name"), std::string::npos) << text;
}

TEST_F(ModelCatalog, ModelPathNames) {
  touch("one/model-q4.gguf");
  touch("two/a.gguf");
  touch("two/b.gguf");
  touch("hf/config.json");
  EXPECT_EQ(model_name_for_path(dir_ / "m.Q4_1.gguf"), "m.Q4_1");
  EXPECT_EQ(model_name_for_path(dir_ / "one"), "model-q4");  // as the server always named it
  EXPECT_EQ(model_name_for_path((dir_ / "one").string() + "/"), "model-q4");
  EXPECT_EQ(model_name_for_path(dir_ / "two"), "two");  // two .gguf files: the folder's name
  EXPECT_EQ(model_name_for_path(dir_ / "hf"), "hf");
  touch("hf/model.gguf");  // a Hugging Face folder with a GGUF beside: still the folder's name
  EXPECT_EQ(model_name_for_path(dir_ / "hf"), "hf");
  const auto c = model_catalog({(dir_ / "one").string()}, {(dir_ / "two").string()});
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].name, "model-q4");
  EXPECT_EQ(c[1].name, "a");
  EXPECT_EQ(c[2].name, "b");
}

}  // namespace
}  // namespace spore::serve
