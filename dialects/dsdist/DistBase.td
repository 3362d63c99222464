//===- DistBase.td - dsdist dialect definition -------------*- tablegen -*-===//
#ifndef DSDIST_BASE
#define DSDIST_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Dist_Dialect : Dialect {
  let name = "dsdist";
  let cppNamespace = "::mlir::ds::dist";
  let summary = "Distribution: device grid, collectives, p2p, pipeline schedule, MoE";
  let description = [{
    `dsdist` is the level of the *SPMD contract*: one program per pipeline
    stage, run by every rank of the device grid, with every communication
    explicit. The module carries the grid as a `dsdist.grid` attribute:

      module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4>} { ... }

    A process group is a list of grid axes (`["dp"]`, `["dp", "ep"]`): the
    ranks that differ only along those axes. Each collective names its group
    and is verified against the grid of its nearest enclosing op that has a
    `dsdist.grid` attribute. Collectives exist in a synchronous form and as
    `*_start` returning a `!dsdist.handle`, completed by `dsdist.wait`, so
    communication can be overlapped with compute.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The module attribute that holds the device grid.
    static constexpr ::llvm::StringLiteral kGridAttrName = "dsdist.grid";
    /// The function-argument attribute that says how it is sharded.
    static constexpr ::llvm::StringLiteral kShardingAttrName =
        "dsdist.sharding";
    /// The function-argument attribute of an expert parameter that expert
    /// parallelism cut along its leading (expert) dim: a
    /// `#dsdist.sharding<axes = ["ep"], shape = [whole]>` whose group rank r
    /// holds rows [r * E / G, (r + 1) * E / G), in the whole tensor's shape.
    static constexpr ::llvm::StringLiteral kExpertsAttrName =
        "dsdist.experts";
    /// The function-argument attribute of a parameter that tensor
    /// parallelism cut: a `#dsdist.tensor_shard<...>`.
    static constexpr ::llvm::StringLiteral kTensorParallelAttrName =
        "dsdist.tensor_parallel";
    /// The module attribute of one pipeline stage's program:
    /// `{stage = s, stages = p, shared = {name = array<i64: a, b>}}`.
    static constexpr ::llvm::StringLiteral kPipelineAttrName =
        "dsdist.pipeline";
    /// Argument attributes of a stage: the i-th value received from the
    /// previous stage, and the cotangent of the i-th value sent on.
    static constexpr ::llvm::StringLiteral kPipeInputAttrName =
        "dsdist.pipe_input";
    static constexpr ::llvm::StringLiteral kPipeGradAttrName =
        "dsdist.pipe_grad";
    /// Result attribute of a stage: the i-th value sent to the next stage.
    static constexpr ::llvm::StringLiteral kPipeOutputAttrName =
        "dsdist.pipe_output";
  }];
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

class Dist_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Dist_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

class Dist_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Dist_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

#endif // DSDIST_BASE
