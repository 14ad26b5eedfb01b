// spore verify PATH: checks an artifact against its lock (NOTE [Artifact locks]).
#include <cstdio>
#include <memory>

#include "commands.h"
#include "spore/artifact_lock.h"

namespace spore::cli {

void add_verify_command(CLI::App& app, Handlers& h) {
  auto* cmd = add_command(app, "verify", "Check a model or artifact's files against its lock (sizes and SHA-256)",
                          "spore verify models/smollm2-135m-instruct");
  auto path = std::make_shared<std::string>();
  cmd->add_option("PATH", *path, "Artifact directory, or its lock file (spore.lock.json / <dir>.lock.json)")->required();
  cmd->callback([&h, path] {
    h.action = [path] {
      const VerifyResult r = verify_artifact(*path);
      std::printf("lock      %s\nsource    %s @ %s\n", r.lock_path.c_str(), r.lock.source.c_str(), r.lock.revision.c_str());
      int bad = 0;
      for (const auto& f : r.files) {
        std::printf("%-16s %12llu  %.16s...  %s\n", file_check_name(f.check), (unsigned long long)f.expected.bytes,
                    f.expected.sha256.c_str(), f.expected.name.c_str());
        bad += f.check != FileCheck::kOk;
      }
      if (bad == 0) {
        std::printf("verified: %zu file(s) match the lock\n", r.files.size());
        return 0;
      }
      std::fprintf(stderr, "spore verify: %d of %zu file(s) do not match the lock; re-download the artifact "
                           "(`spore pull` or scripts/fetch-model.sh)\n", bad, r.files.size());
      return 1;
    };
  });
}

}  // namespace spore::cli
