//===- ParamMap.cpp - Names of --init-from weights per parameter ----------===//
#include "ds/Driver/ParamMap.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <nlohmann/json.hpp>

using namespace ::ds::driver;
using llvm::createStringError;

namespace {

/// A GPT spec's parameter in a Hugging Face GPT2LMHeadModel state dict:
/// under "transformer.", its Conv1D weights stored [in, out].
ParamSource gpt2Source(llvm::StringRef param) {
  if (param == "lm_head.weight")
    return {param.str(), false};
  bool conv1d =
      param.starts_with("h.") &&
      llvm::any_of(std::initializer_list<llvm::StringRef>{".attn.c_attn.weight",
                                                          ".attn.c_proj.weight",
                                                          ".mlp.c_fc.weight",
                                                          ".mlp.c_proj.weight"},
                   [&](llvm::StringRef s) { return param.ends_with(s); });
  return {"transformer." + param.str(), conv1d};
}

llvm::Expected<ParamSource> entryOf(const std::string &param,
                                    const nlohmann::json &value,
                                    llvm::StringRef path) {
  if (value.is_string())
    return ParamSource{value.get<std::string>(), false};
  auto bad = [&] {
    return createStringError(
        "--param-map %s: the entry for \"%s\" must be a tensor name or "
        "{\"name\": NAME, \"transpose\": true|false}",
        path.str().c_str(), param.c_str());
  };
  if (!value.is_object() || !value.contains("name") ||
      !value["name"].is_string())
    return bad();
  ParamSource source{value["name"].get<std::string>(), false};
  for (auto &[key, v] : value.items()) {
    if (key == "transpose" && v.is_boolean())
      source.transpose = v.get<bool>();
    else if (key != "name")
      return bad();
  }
  return source;
}

} // namespace

llvm::Expected<ParamMap> ParamMap::load(llvm::StringRef spec) {
  ParamMap map;
  map.what = ("--param-map " + spec).str();
  if (spec == "gpt2") {
    map.gpt2 = true;
    return map;
  }
  if (!llvm::sys::fs::exists(spec))
    return createStringError("--param-map %s: no such file, and not a "
                             "built-in map (built-in: gpt2)",
                             spec.str().c_str());
  auto buf = llvm::MemoryBuffer::getFile(spec);
  if (!buf)
    return createStringError("--param-map %s: cannot read: %s",
                             spec.str().c_str(),
                             buf.getError().message().c_str());
  nlohmann::json json = nlohmann::json::parse(
      (*buf)->getBuffer().begin(), (*buf)->getBuffer().end(), nullptr, false);
  if (json.is_discarded() || !json.is_object())
    return createStringError("--param-map %s: not a JSON object {\"ds name\": "
                             "\"file name\", ...}",
                             spec.str().c_str());
  for (auto &[param, value] : json.items()) {
    auto entry = entryOf(param, value, spec);
    if (!entry)
      return entry.takeError();
    map.entries[param] = std::move(*entry);
  }
  return map;
}

ParamSource
ParamMap::sourceOf(llvm::StringRef param,
                   llvm::function_ref<bool(llvm::StringRef)> inFile) const {
  auto it = entries.find(param.str());
  if (it != entries.end())
    return it->second;
  if (!wrapperPrefix.empty() && param.starts_with(wrapperPrefix) &&
      !inFile(param))
    return {param.drop_front(wrapperPrefix.size()).str(), false};
  if (!gpt2)
    return {param.str(), false};
  ParamSource source = gpt2Source(param);
  // A GPT2Model (no LM head) is saved without the "transformer." prefix,
  // and save_pretrained drops the head GPT-2 ties to wte.
  if (!inFile(source.name) && param != "lm_head.weight" && inFile(param))
    source.name = param.str();
  if (!inFile(source.name) && param == "lm_head.weight")
    source.name = inFile("transformer.wte.weight") ? "transformer.wte.weight"
                                                   : "wte.weight";
  return source;
}

std::string ParamMap::stripWrapperPrefix(
    llvm::ArrayRef<std::string> params,
    llvm::function_ref<bool(llvm::StringRef)> inFile) {
  wrapperPrefix.clear();
  if (!isIdentity())
    return "";
  auto missing = llvm::find_if(
      params, [&](const std::string &p) { return !inFile(p); });
  if (missing == params.end())
    return "";
  llvm::StringRef name = *missing;
  for (size_t dot = name.find('.'); dot != llvm::StringRef::npos;
       dot = name.find('.', dot + 1)) {
    llvm::StringRef prefix = name.take_front(dot + 1);
    if (llvm::all_of(params, [&](llvm::StringRef p) {
          return inFile(p) ||
                 (p.starts_with(prefix) && inFile(p.drop_front(prefix.size())));
        })) {
      wrapperPrefix = prefix.str();
      return wrapperPrefix;
    }
  }
  return "";
}

llvm::Error ParamMap::checkParams(llvm::ArrayRef<std::string> params) const {
  for (const auto &[param, source] : entries)
    if (!llvm::is_contained(params, param))
      return createStringError("%s: \"%s\" is not a parameter of the model "
                               "(its parameters: %s, ...)",
                               what.c_str(), param.c_str(),
                               params.empty() ? "none" : params[0].c_str());
  return llvm::Error::success();
}
