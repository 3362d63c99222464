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
#include <stdexcept>
#include <string>
#include <vector>

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

/// `value` as the integer type T, for readers of files ds wrote (checkpoint
/// and artifact manifests). nlohmann's get<T>() converts a float or an
/// out-of-range integer with a plain cast, undefined behaviour for a value
/// like 3e25, so the type and range are checked first; `what` names the
/// field in the std::runtime_error thrown otherwise.
template <typename T>
T jsonIntegerValue(const nlohmann::json &value, const std::string &what) {
  static_assert(std::is_integral_v<T>);
  bool fits = false;
  if (value.is_number_unsigned()) {
    fits = value.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max());
  } else if (value.is_number_integer()) {
    // Negative when parsed, but a json built in code may hold any int64.
    int64_t v = value.get<int64_t>();
    fits = v < 0 ? std::is_signed_v<T> &&
                       v >= int64_t(std::numeric_limits<T>::min())
                 : uint64_t(v) <= uint64_t(std::numeric_limits<T>::max());
  }
  if (!fits)
    throw std::runtime_error(what + ": expected an integer in [" +
                             std::to_string(std::numeric_limits<T>::min()) +
                             ", " +
                             std::to_string(std::numeric_limits<T>::max()) +
                             "], got " + describeJson(value));
  return value.get<T>();
}

/// obj[key] as T (see jsonIntegerValue); `fallback` when the key is absent.
template <typename T>
T jsonInteger(const nlohmann::json &obj, const char *key,
              std::optional<T> fallback = std::nullopt) {
  if (fallback && !obj.contains(key))
    return *fallback;
  return jsonIntegerValue<T>(obj.at(key), std::string("\"") + key + "\"");
}

/// obj[key], an array of int64 (a shape, a list of ranks).
inline std::vector<int64_t> jsonIntegers(const nlohmann::json &obj,
                                         const char *key) {
  const nlohmann::json &list = obj.at(key);
  if (!list.is_array())
    throw std::runtime_error(std::string("\"") + key +
                             "\": expected an array of integers, got " +
                             describeJson(list));
  std::vector<int64_t> values;
  for (const nlohmann::json &v : list)
    values.push_back(
        jsonIntegerValue<int64_t>(v, std::string("\"") + key + "\" entry"));
  return values;
}

} // namespace ds::support

#endif // DS_SUPPORT_STRICTJSON_H
