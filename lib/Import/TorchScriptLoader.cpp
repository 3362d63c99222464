//===- TorchScriptLoader.cpp - Load and evaluate a TorchScript forward ----===//
//
// The only file that includes LibTorch (its headers cost ~27 s per file).
// It inlines `forward` and runs it once, node by node, on zero-filled inputs
// of the batch shape, recording each value's runtime shape. A value that
// depends on no parameter and no input is folded to its computed payload;
// the nodes computing the others are what the MLIR side maps to dsnn.
//
//===----------------------------------------------------------------------===//
#include "TorchGraph.h"

#include <torch/csrc/jit/frontend/source_range.h>
#include <torch/csrc/jit/ir/scope.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>
#include <torch/serialize.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <iterator>
#include <unordered_map>
#include <unordered_set>

using namespace mlir::ds::importer;
using ts::DType;

namespace {

DType toDType(c10::ScalarType t) {
  switch (t) {
  case c10::kFloat:
    return DType::F32;
  case c10::kDouble:
    return DType::F64;
  case c10::kHalf:
    return DType::F16;
  case c10::kBFloat16:
    return DType::BF16;
  case c10::kLong:
    return DType::I64;
  case c10::kInt:
    return DType::I32;
  case c10::kBool:
    return DType::Bool;
  default:
    return DType::Other;
  }
}

c10::ScalarType toScalarType(DType t) {
  switch (t) {
  case DType::F64:
    return c10::kDouble;
  case DType::F16:
    return c10::kHalf;
  case DType::BF16:
    return c10::kBFloat16;
  case DType::I64:
    return c10::kLong;
  case DType::I32:
    return c10::kInt;
  case DType::Bool:
    return c10::kBool;
  default:
    return c10::kFloat;
  }
}

std::optional<DType> parseDType(const std::string &name) {
  static const std::pair<const char *, DType> names[] = {
      {"float32", DType::F32},   {"float", DType::F32},
      {"float64", DType::F64},   {"double", DType::F64},
      {"float16", DType::F16},   {"half", DType::F16},
      {"bfloat16", DType::BF16}, {"int64", DType::I64},
      {"long", DType::I64},      {"int32", DType::I32},
      {"int", DType::I32},       {"bool", DType::Bool}};
  for (auto &[n, t] : names)
    if (name == n)
      return t;
  return std::nullopt;
}

llvm::Error error(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The first non-blank line of a LibTorch exception: some (an unknown
/// builtin op in a file from a newer PyTorch) start with a newline.
std::string firstLine(const std::string &what) {
  size_t begin = what.find_first_not_of(" \n");
  if (begin == std::string::npos)
    return what;
  return what.substr(begin, what.find('\n', begin) - begin);
}

/// LibTorch's message for an op it does not know is a page (the op, names
/// it suggests instead, the serialized code around the call); the op comes
/// from a newer PyTorch (scaled_dot_product_attention, 2.0, in Debian's
/// LibTorch 1.13). One line names the op and the fix; nullopt for other
/// messages.
std::optional<std::string> unknownOpMessage(const std::string &what) {
  static const std::string marker = "Unknown builtin op: ";
  size_t at = what.find(marker);
  if (at == std::string::npos)
    return std::nullopt;
  size_t begin = at + marker.size();
  std::string op = what.substr(begin, what.find_first_of(" \n", begin) - begin);
  while (!op.empty() && op.back() == '.')
    op.pop_back();
  return op + " is not an op of LibTorch " TORCH_VERSION
              ", which ds was built with: the file was saved by a "
              "newer PyTorch. Build ds against that PyTorch's LibTorch "
              "(cmake -DDS_TORCH_DIR=<its torch.utils.cmake_prefix_path>, "
              "docs/models.md) or save the model with torch.export (.pt2)";
}

/// Ops whose non-tensor results depend only on shapes, which are static
/// here: their results are constants even when their operands are not.
bool isShapeQuery(c10::Symbol kind) {
  static const char *names[] = {"aten::size", "aten::dim",    "aten::numel",
                                "aten::len",  "prim::device", "prim::dtype",
                                "prim::shape"};
  for (const char *n : names)
    if (kind.toQualString() == std::string(n))
      return true;
  return false;
}

bool isLibraryFile(const std::string &file) {
  return file.find("/torch/") != std::string::npos || file.empty() ||
         file == "<string>";
}

class Evaluator {
public:
  explicit Evaluator(torch::jit::Module &module) : module(module) {}

  llvm::Error run(std::vector<ts::InputType> inputTypes);
  ts::Graph graph;

private:
  int define(const torch::jit::Value *v, c10::IValue value, bool dynamic);
  void fillPayload(int id);
  llvm::Error runBlock(torch::jit::Block *block);
  llvm::Error runNode(torch::jit::Node *node);
  void locate(torch::jit::Node *node, ts::Node &out);
  bool isDynamic(const torch::jit::Value *v) const {
    return graph.values[ids.at(v)].dynamic;
  }

  torch::jit::Module &module;
  std::unordered_map<const torch::jit::Value *, int> ids;
  std::vector<c10::IValue> runtime;
  /// Module paths of object values ("" for self, "h.0" ...).
  std::unordered_map<int, std::string> paths;
  std::unordered_map<const c10::TensorImpl *, int> paramByTensor;
  /// Submodule paths by class type; types shared by several submodules are
  /// left out (their instance name is used instead).
  std::unordered_map<const c10::ClassType *, std::string> pathByType;
};

int Evaluator::define(const torch::jit::Value *v, c10::IValue value,
                      bool dynamic) {
  int id = static_cast<int>(graph.values.size());
  ts::Value out;
  out.dynamic = dynamic;
  using K = ts::Value::Kind;
  if (value.isTensor()) {
    out.kind = K::Tensor;
    const at::Tensor &t = value.toTensor();
    out.shape.assign(t.sizes().begin(), t.sizes().end());
    out.dtype = toDType(t.scalar_type());
  } else if (value.isTensorList() ||
             (value.isList() && value.type()->containedType(0)->kind() ==
                                    c10::TypeKind::TensorType)) {
    out.kind = K::TensorList;
  } else if (value.isBool()) {
    out.kind = K::Bool;
  } else if (value.isInt()) {
    out.kind = K::Int;
  } else if (value.isDouble()) {
    out.kind = K::Float;
  } else if (value.isIntList()) {
    out.kind = K::IntList;
  } else if (value.isDoubleList()) {
    out.kind = K::FloatList;
  } else if (value.isNone()) {
    out.kind = K::None;
  } else if (value.isString()) {
    out.kind = K::String;
  }
  graph.values.push_back(std::move(out));
  runtime.push_back(std::move(value));
  if (v)
    ids[v] = id;
  return id;
}

void Evaluator::fillPayload(int id) {
  ts::Value &out = graph.values[id];
  const c10::IValue &value = runtime[id];
  using K = ts::Value::Kind;
  switch (out.kind) {
  case K::Tensor: {
    if (!out.floats.empty() || !out.ints.empty())
      return;
    at::Tensor t = value.toTensor().contiguous();
    if (at::isFloatingType(t.scalar_type())) {
      at::Tensor d = t.to(c10::kDouble).contiguous();
      out.floats.assign(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
    } else {
      at::Tensor d = t.to(c10::kLong).contiguous();
      out.ints.assign(d.data_ptr<int64_t>(), d.data_ptr<int64_t>() + d.numel());
    }
    return;
  }
  case K::Bool:
    out.i = value.toBool();
    return;
  case K::Int:
    out.i = value.toInt();
    return;
  case K::Float:
    out.f = value.toDouble();
    return;
  case K::IntList: {
    auto list = value.toIntVector();
    out.ints.assign(list.begin(), list.end());
    return;
  }
  case K::FloatList: {
    auto list = value.toDoubleVector();
    out.floats.assign(list.begin(), list.end());
    return;
  }
  case K::String:
    out.s = value.toStringRef();
    return;
  default:
    return;
  }
}

void Evaluator::locate(torch::jit::Node *node, ts::Node &out) {
  // The node's own range is often inside torch.nn.functional; the user's
  // line is the innermost call site outside the torch package.
  std::vector<torch::jit::SourceRange> ranges{node->sourceRange()};
  std::optional<torch::jit::InlinedCallStackPtr> stack;
  if (auto cs = node->callstack())
    stack = *cs;
  std::vector<torch::jit::InlinedCallStackEntry> entries;
  if (stack)
    entries = (*stack)->vec();
  for (auto it = entries.rbegin(); it != entries.rend(); ++it)
    ranges.push_back(std::get<1>(*it));
  for (const auto &serialized : ranges) {
    // A loaded module's ranges point into its serialized code; the debug
    // info maps them back to the Python that produced them.
    auto original = serialized.findSourceRangeThatGenerated();
    const torch::jit::SourceRange &range = original ? *original : serialized;
    auto flc = range.file_line_col();
    if (!flc)
      continue;
    const std::string &file = std::get<0>(*flc);
    if (out.file.empty() || (isLibraryFile(out.file) && !isLibraryFile(file))) {
      out.file = file;
      out.line = static_cast<int64_t>(std::get<1>(*flc));
      if (!isLibraryFile(file))
        break;
    }
  }
  // The outermost submodule call names the layer the node belongs to.
  for (const auto &entry : entries) {
    const auto &info = std::get<2>(entry);
    if (!info)
      continue;
    std::string name = info->instance_name();
    if (name.empty() || name == "self" || !info->class_type())
      continue;
    // The instance name of a ModuleList member is only its index; the
    // module's type (unique per instance in practice) gives the full path.
    auto it = pathByType.find(info->class_type().get());
    out.module = it != pathByType.end() ? it->second : name;
    out.moduleType = info->class_type()->name()->name();
    break;
  }
}

llvm::Error Evaluator::runNode(torch::jit::Node *node) {
  using namespace torch::jit;
  c10::Symbol kind = node->kind();
  if (kind == prim::Constant) {
    // Constants without a value (functions) only feed ops that are
    // never recorded.
    auto value = toIValue(node->output());
    define(node->output(), value ? *value : c10::IValue(), false);
    return llvm::Error::success();
  }
  if (kind == prim::GetAttr) {
    int objectId = ids.at(node->input());
    const c10::IValue &object = runtime[objectId];
    if (!object.isObject())
      return error("prim::GetAttr on a non-object");
    const std::string &name = node->s(attr::name);
    auto obj = object.toObject();
    c10::IValue value = obj->getAttr(name);
    std::string path =
        paths[objectId].empty() ? name : paths[objectId] + "." + name;
    if (value.isTensor()) {
      auto it = paramByTensor.find(value.toTensor().unsafeGetTensorImpl());
      if (it != paramByTensor.end()) {
        // One value per parameter tensor, however many GetAttr chains reach
        // it (a tied LM head reads the embedding's tensor).
        ts::Param &param = graph.params[it->second];
        if (param.value < 0) {
          param.value = define(node->output(), value, true);
        } else {
          ids[node->output()] = param.value;
        }
        return llvm::Error::success();
      }
    }
    int id = define(node->output(), value, false);
    paths[id] = path;
    return llvm::Error::success();
  }
  if (kind == prim::If) {
    if (isDynamic(node->input()))
      return error("data-dependent control flow (prim::If on a computed "
                   "tensor) cannot be imported");
    bool taken = runtime[ids.at(node->input())].toBool();
    Block *block = node->blocks()[taken ? 0 : 1];
    if (auto err = runBlock(block))
      return err;
    for (size_t i = 0; i < node->outputs().size(); ++i)
      ids[node->outputs()[i]] = ids.at(block->outputs()[i]);
    return llvm::Error::success();
  }

  bool dynamic = false;
  for (Value *in : node->inputs())
    dynamic |= isDynamic(in);
  bool record = dynamic && !isShapeQuery(kind);

  Stack stack;
  for (Value *in : node->inputs())
    stack.push_back(runtime[ids.at(in)]);
  try {
    // The interpreter runs these as instructions, not operators.
    if (kind == prim::ListConstruct) {
      c10::impl::GenericList list(
          node->output()->type()->expectRef<c10::ListType>().getElementType());
      for (c10::IValue &v : stack)
        list.push_back(std::move(v));
      stack = {c10::IValue(std::move(list))};
    } else if (kind == prim::TupleConstruct) {
      stack = {c10::ivalue::Tuple::create(std::move(stack))};
    } else if (kind == prim::ListUnpack) {
      std::vector<c10::IValue> elements = stack.back().toList().vec();
      stack = std::move(elements);
    } else if (kind == prim::TupleUnpack) {
      std::vector<c10::IValue> elements =
          stack.back().toTupleRef().elements().vec();
      stack = std::move(elements);
    } else if (node->maybeOperator()) {
      node->getOperation()(stack);
    } else {
      return error("cannot evaluate " + std::string(kind.toQualString()));
    }
  } catch (const std::exception &e) {
    std::string what = e.what();
    return error("evaluating " + std::string(kind.toQualString()) +
                 " failed: " + firstLine(what));
  }
  if (stack.size() != node->outputs().size())
    return error("evaluating " + std::string(kind.toQualString()) +
                 " gave the wrong number of results");

  ts::Node recorded;
  if (record) {
    recorded.kind = kind.toQualString();
    locate(node, recorded);
    for (Value *in : node->inputs()) {
      int id = ids.at(in);
      recorded.inputs.push_back(id);
      if (!graph.values[id].dynamic)
        fillPayload(id);
    }
  }
  for (size_t i = 0; i < node->outputs().size(); ++i) {
    int id = define(node->outputs()[i], stack[i], record);
    if (record)
      recorded.outputs.push_back(id);
  }
  // A list built from tensors knows its elements, so that ListUnpack and
  // cat can be mapped element-wise.
  if (record && kind == prim::ListConstruct)
    graph.values[recorded.outputs[0]].elements = recorded.inputs;
  if (record)
    graph.nodes.push_back(std::move(recorded));
  return llvm::Error::success();
}

llvm::Error Evaluator::runBlock(torch::jit::Block *block) {
  for (torch::jit::Node *node : block->nodes())
    if (auto err = runNode(node))
      return err;
  return llvm::Error::success();
}

llvm::Error Evaluator::run(std::vector<ts::InputType> inputTypes) {
  // Parameters in named_parameters() order, each tensor once.
  for (const auto &named : module.named_parameters(/*recurse=*/true)) {
    const c10::TensorImpl *impl = named.value.unsafeGetTensorImpl();
    auto it = paramByTensor.find(impl);
    if (it != paramByTensor.end()) {
      graph.params[it->second].aliases.push_back(named.name);
      continue;
    }
    ts::Param param;
    param.name = named.name;
    at::Tensor t = named.value.detach();
    param.shape.assign(t.sizes().begin(), t.sizes().end());
    param.dtype = toDType(t.scalar_type());
    at::Tensor d = t.to(c10::kDouble);
    param.allZeros = t.numel() > 0 && d.eq(0).all().item<bool>();
    param.allOnes = t.numel() > 0 && d.eq(1).all().item<bool>();
    if (t.numel() > 0) {
      param.mean = d.mean().item<double>();
      param.std = t.numel() > 1 ? d.std(/*unbiased=*/false).item<double>() : 0;
    }
    paramByTensor[impl] = static_cast<int>(graph.params.size());
    graph.params.push_back(std::move(param));
  }

  std::unordered_map<const c10::ClassType *, int> typeCount;
  for (const auto &named : module.named_modules()) {
    const c10::ClassType *type = named.value.type().get();
    if (typeCount[type]++ == 0)
      pathByType[type] = named.name;
    else
      pathByType.erase(type);
  }

  auto function = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*function);
  auto inputs = function->inputs();
  if (inputs.size() - 1 != inputTypes.size())
    return error("forward takes " + std::to_string(inputs.size() - 1) +
                 " inputs but " + std::to_string(inputTypes.size()) +
                 " input types are given");
  define(inputs[0], module._ivalue(), false);
  paths[0] = "";
  for (size_t i = 1; i < inputs.size(); ++i) {
    const ts::InputType &type = inputTypes[i - 1];
    at::Tensor zeros = at::zeros(
        type.shape, at::TensorOptions().dtype(toScalarType(type.dtype)));
    int id = define(inputs[i], zeros, true);
    std::string name = inputs[i]->debugName();
    // Debug names carry a ".N" uniquing suffix.
    if (auto dot = name.rfind('.');
        dot != std::string::npos &&
        name.find_first_not_of("0123456789", dot + 1) == std::string::npos)
      name = name.substr(0, dot);
    graph.inputs.push_back({name, id});
  }
  if (auto err = runBlock(function->block()))
    return err;
  graph.output = ids.at(function->outputs()[0]);
  return llvm::Error::success();
}

} // namespace

bool ts::haveLibTorch() { return true; }

llvm::Expected<ts::Graph>
ts::loadTorchScript(const std::string &path, std::vector<InputType> inputTypes,
                    std::optional<int64_t> microBatch) {
  try {
    torch::jit::ExtraFilesMap extra{{"ds_inputs.json", ""}};
    torch::jit::Module module = torch::jit::load(path, c10::nullopt, extra);
    if (inputTypes.empty()) {
      const std::string &recorded = extra["ds_inputs.json"];
      if (recorded.empty())
        return error("the batch input types are unknown: pass --inputs "
                     "(e.g. --inputs=4x64xi64,4x64xi64) or save the module "
                     "with _extra_files={\"ds_inputs.json\": ...} (see "
                     "docs/models.md)");
      nlohmann::json list = nlohmann::json::parse(recorded, nullptr, false);
      if (!list.is_array())
        return error("ds_inputs.json in the file is not a JSON array");
      for (const auto &entry : list) {
        InputType type;
        if (!entry.is_object() || !entry.contains("shape") ||
            !entry["shape"].is_array() || !entry.contains("dtype") ||
            !entry["dtype"].is_string())
          return error("ds_inputs.json entries must be {\"shape\": [...], "
                       "\"dtype\": \"...\"}");
        for (const auto &d : entry["shape"])
          type.shape.push_back(d.get<int64_t>());
        auto dtype = parseDType(entry["dtype"].get<std::string>());
        if (!dtype)
          return error("ds_inputs.json: unknown dtype " +
                       entry["dtype"].dump());
        type.dtype = *dtype;
        if (microBatch && !type.shape.empty())
          type.shape[0] = *microBatch;
        inputTypes.push_back(std::move(type));
      }
    }
    Evaluator evaluator(module);
    if (auto err = evaluator.run(std::move(inputTypes)))
      return std::move(err);
    return std::move(evaluator.graph);
  } catch (const std::exception &e) {
    std::string what = e.what();
    return error(unknownOpMessage(what).value_or(firstLine(what)));
  }
}

namespace {

ts::Weights toWeights(const std::string &name, const at::Tensor &tensor) {
  at::Tensor t = tensor.detach().to(c10::kFloat).contiguous();
  ts::Weights w;
  w.name = name;
  w.shape.assign(t.sizes().begin(), t.sizes().end());
  w.values.assign(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  return w;
}

/// A torch.save'd state_dict: {name: tensor}.
llvm::Expected<std::vector<ts::Weights>>
loadStateDict(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  c10::IValue value = torch::pickle_load(bytes);
  if (!value.isGenericDict())
    return error("neither a TorchScript module nor a state_dict (a dict of "
                 "tensors saved with torch.save)");
  std::vector<ts::Weights> out;
  for (const auto &entry : value.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor())
      continue;
    const at::Tensor &t = entry.value().toTensor();
    if (at::isFloatingType(t.scalar_type()))
      out.push_back(toWeights(entry.key().toStringRef(), t));
  }
  return out;
}

} // namespace

llvm::Expected<std::vector<ts::Weights>>
ts::loadTorchWeights(const std::string &path) {
  std::optional<torch::jit::Module> module;
  try {
    module = torch::jit::load(path);
  } catch (const std::exception &e) {
    // Not a TorchScript archive: a state_dict, or no weights file at all;
    // unless it is a TorchScript file from a newer PyTorch.
    if (auto message = unknownOpMessage(e.what()))
      return error(*message);
  }
  try {
    if (!module)
      return loadStateDict(path);
    std::vector<ts::Weights> out;
    std::unordered_set<const c10::TensorImpl *> seen;
    for (const auto &named : module->named_parameters(/*recurse=*/true))
      if (seen.insert(named.value.unsafeGetTensorImpl()).second)
        out.push_back(toWeights(named.name, named.value));
    return out;
  } catch (const std::exception &e) {
    std::string what = e.what();
    return error("neither a TorchScript module nor a state_dict saved with "
                 "torch.save (" +
                 firstLine(what) + ")");
  }
}
