// spore pull REPO --revision REV: a pinned download from a Hugging Face-compatible hub
// (include/spore/hub.h, NOTE [Model hub]). Progress on stderr; one summary line on stdout.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "spore/hub.h"

namespace spore::cli {

void add_pull_command(CLI::App& app, Handlers& h) {
  auto* cmd = add_command(app, "pull",
                          "Download a model from a Hugging Face-compatible hub at a pinned commit, verify it, write spore.lock.json",
                          "spore pull HuggingFaceTB/SmolLM2-135M-Instruct --revision <40-hex commit> --out models/smollm2");
  auto o = std::make_shared<hub::PullOptions>();
  cmd->add_option("REPO", o->repo, "Repository id (owner/name)")->required();
  cmd->add_option("--revision", o->revision, "A 40-hex commit id (a branch or tag needs --allow-mutable)")->required();
  cmd->add_option("--endpoint", o->endpoint, "Hub URL (default: $HF_ENDPOINT, else https://huggingface.co)");
  cmd->add_option("--out", o->out, "Directory to fill (default: ./<name>)");
  cmd->add_flag("--allow-mutable", o->allow_mutable,
                "Accept a branch or tag: resolve it to its current commit and lock that");
  cmd->add_option("--max-undeclared-size", o->max_undeclared_bytes,
                  "Most bytes taken for a file whose size the hub does not declare (a file served past it is refused)")
      ->capture_default_str();
  cmd->callback([&h, o] {
    h.action = [o] {
      hub::PullOptions opts = *o;
      opts.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
      const hub::PullResult r = hub::pull(opts);
      uint64_t total = 0;
      size_t reused = 0;
      for (const auto& f : r.files) total += f.bytes, reused += f.reused;
      std::printf("pulled %s @ %s: %zu files, %.1f MB (%.1f MB downloaded, %zu already present) into %s; lock %s\n",
                  r.repo.c_str(), r.commit.c_str(), r.files.size(), (double)total / 1e6,
                  (double)r.downloaded_bytes / 1e6, reused, r.dir.c_str(), r.lock_path.c_str());
      return 0;
    };
  });
}

}  // namespace spore::cli
