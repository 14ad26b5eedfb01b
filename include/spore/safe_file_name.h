// File names that come from data (NOTE [Safe file names] in docs/design.md): a model's output names,
// a hub's file list, tensor, adapter and checkpoint names. Every writer that puts such a name on
// disk passes it through safe_file_name (or, for several at once, unique_safe_file_names), so a
// name can never leave the folder the user named, hide itself, or fail for its length. Part of the
// format library (core only).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace spore {

// Longest name safe_file_name returns, in bytes: a suffix such as ".npy" or ".part" still fits
// NAME_MAX (255 on Linux and macOS) with room to spare.
inline constexpr size_t kMaxSafeFileNameBytes = 128;

// One path component that stands for `name`, the same bytes when `name` is already safe:
//  - '/', '\', NUL, control characters (C0, DEL, C1), the characters Windows forbids (< > : " | ? *)
//    and bytes that are not UTF-8 become '_';
//  - leading dots become '_' (so ".", ".." and hidden files cannot arise), as do a trailing dot or
//    space (Windows drops them, which would merge two names);
//  - a name whose stem is a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9, any case, with
//    or without an extension) gets a '_' in front;
//  - an empty name becomes `fallback` (made safe the same way, "_" when that is empty too);
//  - a name longer than kMaxSafeFileNameBytes keeps its start (cut at a UTF-8 boundary) and ends
//    with '~' and 16 hex digits of its SHA-256, so two long names that share a start stay apart.
// Deterministic: the same name always maps to the same file name.
std::string safe_file_name(std::string_view name, std::string_view fallback = "_");

// True when `name` is non-empty and safe_file_name leaves it unchanged.
bool is_safe_file_name(std::string_view name);

// safe_file_name for each of `names`, then made distinct ignoring ASCII case (so the files are
// distinct on case-insensitive file systems too): names that were already safe are placed first
// and keep their exact spelling; the others, in order, get "~2", "~3", ... before any clash. An
// empty name i stands for `unnamed_prefix` + i ("output3"), or "_" when the prefix is empty, and
// is placed with the others, so a real name wins its spelling over a made-up one. The result has
// one entry per input, in the input's order.
std::vector<std::string> unique_safe_file_names(const std::vector<std::string>& names,
                                                std::string_view unnamed_prefix = "");

}  // namespace spore
