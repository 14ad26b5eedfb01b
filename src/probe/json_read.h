// Checked reads of JSON that came from outside (NOTE [Hostile JSON] in docs/design.md).
//
// nlohmann-json's const operator[] on a missing key is undefined behaviour, and get<T>() on the
// wrong type throws an exception that is not a spore::Error. Report readers go through these
// helpers instead: a missing member, a member of a non-object, or a list that is not an array
// reads as null / empty, so a table prints "-" where a malformed report lacks a fact.
#pragma once
#include <string>

#include "spore/probe/probe.h"

namespace spore::probe::detail {

// A shared null value, for lookups that find nothing.
const Json& null_json();
// Member `key` of `j`; null when `j` is not an object or has no such member.
const Json& field(const Json& j, const char* key);
const Json& field(const Json& j, const std::string& key);
// Nested members: field(r, "environment", "git_commit").
template <class... Keys>
const Json& field(const Json& j, const char* key, const char* next, Keys... rest) {
  return field(field(j, key), next, rest...);
}
// `j` when it is an array, else an empty array: for loops over lists a report may lack.
const Json& elements(const Json& j);
// `j` when it is an object, else an empty object: for loops over members.
const Json& members(const Json& j);
// The string, or `fallback` when `j` is not a string.
std::string string_or(const Json& j, const std::string& fallback = "");
// The number, or `fallback` when `j` is not a number.
double number_or(const Json& j, double fallback);
// True only for the boolean true.
bool is_true(const Json& j);

}  // namespace spore::probe::detail
