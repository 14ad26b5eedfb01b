// Token ids on the command line (id_list.h).
#include "id_list.h"

#include <climits>
#include <exception>

#include "spore/error.h"

namespace spore::cli {

std::vector<int32_t> parse_id_list(const std::string& text, const std::string& flag, bool allow_empty) {
  std::vector<int32_t> ids;
  if (text.empty() && allow_empty) return ids;
  size_t pos = 0;
  while (true) {
    const size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t used = 0;
    long long v = -1;
    try {
      if (!item.empty()) v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < 0 || v > INT32_MAX)
      throw Error(ErrorCode::kValue, flag + ": '" + item + "' is not a token id (a non-negative integer); write ids as 1,2,3");
    ids.push_back(static_cast<int32_t>(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return ids;
}

}  // namespace spore::cli
