// NOTE [Core hooks]: src/core/ is below the op layer and never calls into it; Tensor's methods
// that need ops reach them through TensorOpHooks. A source-level check, so that a new include
// of an op header in the core fails here rather than in review.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

TEST(Layering, CoreIncludesNoOpHeaders) {
  namespace fs = std::filesystem;
  const fs::path core = fs::path(SPORE_SOURCE_DIR) / "src" / "core";
  ASSERT_TRUE(fs::is_directory(core));
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(core)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cc" && ext != ".h") continue;
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.rfind("#include", 0) != 0) continue;
      for (const char* up : {"spore/ops.h", "spore/op_registry.h", "spore/dispatch_plan.h", "spore/node.h",
                             "spore/autograd.h", "../ops/", "ops/"})
        EXPECT_EQ(line.find(up), std::string::npos) << entry.path() << ":" << n << " includes " << up;
    }
  }
  EXPECT_GT(files, 5);
}

}  // namespace
