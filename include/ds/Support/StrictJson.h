//===- StrictJson.h - Shared wording for strict JSON readers ------*- C++
//-*-===//
//
// ds_config.json and model specs are read the same strict way: a wrong type
// names what was found, an unknown key suggests the closest known one. One
// copy keeps the two readers' messages identical. Header-only so the config
// library stays free of MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef DS_SUPPORT_STRICTJSON_H
#define DS_SUPPORT_STRICTJSON_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

namespace ds::support {

/// How a JSON value reads in "got ..." messages.
inline std::string describeJson(const nlohmann::json &value) {
  using T = nlohmann::json::value_t;
  switch (value.type()) {
  case T::string:
    return "string " + value.dump();
  case T::boolean:
    return "boolean " + value.dump();
  case T::number_integer:
  case T::number_unsigned:
  case T::number_float:
    return "number " + value.dump();
  case T::null:
    return "null";
  case T::array:
    return "an array";
  case T::object:
    return "an object";
  default:
    return "an unsupported value";
  }
}

/// Whether `key` is close enough to `candidate` to be a misspelling of it:
/// beyond a third of the word, a "did you mean" is noise.
inline bool isLikelyTypo(llvm::StringRef key, llvm::StringRef candidate) {
  return key.edit_distance_insensitive(candidate) <=
         std::max<unsigned>(2, key.size() / 3);
}

/// The candidate closest to `key`, if it is close enough to be a typo.
template <typename Range>
std::optional<std::string> closestKey(llvm::StringRef key,
                                      const Range &candidates) {
  unsigned best = std::numeric_limits<unsigned>::max();
  std::optional<std::string> result;
  for (const auto &candidate : candidates) {
    unsigned d = key.edit_distance_insensitive(llvm::StringRef(candidate));
    if (d < best) {
      best = d;
      result = std::string(llvm::StringRef(candidate));
    }
  }
  if (result && !isLikelyTypo(key, *result))
    return std::nullopt;
  return result;
}

} // namespace ds::support

#endif // DS_SUPPORT_STRICTJSON_H
