// The environment report (`spore env`): what binary ran, built how, on what machine, with which
// shared libraries actually loaded (paths, not only versions: two installed copies of a library
// are the classic false lead, chapter 5.2).
#pragma once
#include <string>
#include <vector>

#include "spore/probe/probe.h"

namespace spore::probe {

// Collects the report in this process. It touches no accelerator: devices, when a build has
// them, are probed in a child process with a timeout (NOTE [Probe isolation]).
// `command` is recorded as the report's command.
Json collect_env(const std::vector<std::string>& command);
// The parts every probe and run report repeats (versions, CPU, BLAS, CUDA, library paths).
Json env_summary(const Json& env);
// Human-readable form of collect_env's report.
std::string format_env(const Json& env);

// Spore's own build facts.
std::string spore_version();
std::string spore_git_commit();
std::string spore_build_type();

// Small shared helpers for reports.
std::string utc_now_iso8601();       // 2025-01-31T12:34:56.789Z
std::string utc_stamp_for_file();    // 20250131T123456Z
std::string sha256_file(const std::string& path);  // hex; throws kIO
std::string sha256_bytes(const void* data, size_t n);
std::vector<std::string> loaded_libraries();  // dl_iterate_phdr paths, in load order
Json command_record(const std::vector<std::string>& argv);  // argv, cwd, relevant environment

}  // namespace spore::probe
