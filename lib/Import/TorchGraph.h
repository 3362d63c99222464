//===- TorchGraph.h - A TorchScript forward, evaluated ----------*- C++ -*-===//
//
// What the LibTorch side of the TorchScript importer hands the MLIR side:
// the inlined forward graph after one evaluation on placeholder inputs of the
// batch shape. That evaluation gives every value its static shape and folds
// everything that depends on neither a parameter nor an input (sizes, masks,
// position ids) to a constant, so the MLIR side only maps the ops that carry
// data. Plain C++ on purpose: only TorchScriptLoader.cpp includes LibTorch.
//
//===----------------------------------------------------------------------===//
#ifndef DS_LIB_IMPORT_TORCHGRAPH_H
#define DS_LIB_IMPORT_TORCHGRAPH_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::ds::importer::ts {

enum class DType { F32, F64, F16, BF16, I64, I32, Bool, Other };

/// One graph value. Constant values carry their payload; dynamic ones (those
/// computed from parameters or inputs) only their type.
struct Value {
  enum class Kind {
    Tensor,
    TensorList,
    Int,
    Float,
    Bool,
    IntList,
    FloatList,
    None,
    String,
    Other
  };
  Kind kind = Kind::Other;
  bool dynamic = false;
  /// Tensors: shape and element type (dynamic or not).
  std::vector<int64_t> shape;
  DType dtype = DType::Other;
  /// Constant payload: `i` for Int/Bool, `f` for Float, `s` for String,
  /// `ints`/`floats` for lists, and row-major tensor data in `floats`
  /// (floating tensors) or `ints` (integer and bool tensors).
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  /// TensorList: the ids of its elements, when known.
  std::vector<int> elements;
};

/// A node that computes a dynamic value, in program order.
struct Node {
  std::string kind; // "aten::linear"
  std::vector<int> inputs, outputs;
  /// "file:line" of the node's Python source, or empty.
  std::string file;
  int64_t line = 0;
  /// The module path (h.0) and class name (Block) of the outermost submodule
  /// whose forward the node came from; empty for the top module's own ops.
  std::string module, moduleType;
};

struct Param {
  /// First qualified name in named_parameters() order.
  std::string name;
  /// Other names of the same tensor (a tied LM head).
  std::vector<std::string> aliases;
  int value = -1; // id of its Value, or -1 if forward never reads it
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  /// What the stored values look like: all zeros, all ones, or otherwise
  /// their mean and standard deviation.
  bool allZeros = false, allOnes = false;
  double mean = 0, std = 0;
};

struct Input {
  std::string name;
  int value = -1;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Param> params;
  std::vector<Input> inputs;
  std::vector<Node> nodes;
  int output = -1;
};

/// A batch argument's type, from --inputs or the file.
struct InputType {
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
};

/// False when ds was built without LibTorch: the loaders below then fail.
bool haveLibTorch();

/// Loads `path`, inlines `forward` and evaluates it on zero-filled inputs of
/// `inputTypes` (if empty, those recorded in the file's ds_inputs.json with
/// dim 0 replaced by `microBatch` when given).
llvm::Expected<Graph> loadTorchScript(const std::string &path,
                                      std::vector<InputType> inputTypes,
                                      std::optional<int64_t> microBatch);

/// One floating tensor of a weights file, as f32.
struct Weights {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

/// The parameters of a TorchScript module, or the floating tensors of a
/// state_dict saved with torch.save, in file order.
llvm::Expected<std::vector<Weights>> loadTorchWeights(const std::string &path);

} // namespace mlir::ds::importer::ts

#endif // DS_LIB_IMPORT_TORCHGRAPH_H
