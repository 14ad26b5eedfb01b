// Token ids on the command line (`--ids 1,2,3`, `--prompt-ids 1,2,3`): one parser for every
// subcommand that takes them, so they all accept and refuse the same spellings.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace spore::cli {

// Comma-separated non-negative integers that fit int32. kValue naming `flag` and the bad item
// otherwise; an empty `text` is an empty list when `allow_empty`, else an error.
std::vector<int32_t> parse_id_list(const std::string& text, const std::string& flag, bool allow_empty = false);

}  // namespace spore::cli
