//===- ParamMap.h - Names of --init-from weights per parameter --*- C++ -*-===//
//
// A weights file written by other code names (and lays out) parameters its
// own way: --param-map says, per model parameter, which tensor of the file
// holds it and whether it is stored transposed. A JSON file gives the
// entries; the built-in "gpt2" map reads Hugging Face GPT-2 checkpoints
// (transformer.h.N..., Conv1D weights stored [in, out]) into a GPT spec.
// Without a map, a model exported inside a wrapper module still reads its
// own checkpoint: the wrapper's leading path is dropped (stripWrapperPrefix).
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_PARAMMAP_H
#define DS_DRIVER_PARAMMAP_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace ds::driver {

/// Where one parameter's values are in the file.
struct ParamSource {
  std::string name;
  /// The file holds the 2-D parameter's transpose.
  bool transpose = false;
};

class ParamMap {
public:
  /// The identity: every parameter under its own name.
  ParamMap() = default;
  /// `spec`: a built-in map's name ("gpt2") or a JSON file
  /// {"ds name": "file name" | {"name": "file name", "transpose": true}}.
  static llvm::Expected<ParamMap> load(llvm::StringRef spec);

  /// Where parameter `param` is, given the names the file holds.
  ParamSource sourceOf(llvm::StringRef param,
                       llvm::function_ref<bool(llvm::StringRef)> inFile) const;
  /// Every entry of a JSON map must name one of `params`: a typo there
  /// would leave the parameter under its own name.
  llvm::Error checkParams(llvm::ArrayRef<std::string> params) const;
  /// A model exported inside a wrapper (a module whose forward returns the
  /// loss, holding a Hugging Face model as `model`) names its parameters
  /// "model.model.layers.0...", where the model's own checkpoint says
  /// "model.layers.0...". For the identity map, when the file lacks some
  /// parameter's own name, finds the shortest leading path of that name
  /// whose removal puts every parameter in the file, and reads them so;
  /// nothing changes when no path does. Returns the path, or "".
  std::string stripWrapperPrefix(llvm::ArrayRef<std::string> params,
                                 llvm::function_ref<bool(llvm::StringRef)> inFile);
  bool isIdentity() const { return !gpt2 && entries.empty(); }
  /// "--param-map SPEC", for messages; empty for the identity.
  const std::string &origin() const { return what; }

private:
  std::string what;
  bool gpt2 = false;
  std::string wrapperPrefix;
  std::map<std::string, ParamSource> entries;
};

} // namespace ds::driver

#endif // DS_DRIVER_PARAMMAP_H
