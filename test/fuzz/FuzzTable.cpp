//===- FuzzTable.cpp - Every fuzz target by name --------------------------===//
#include "FuzzTargets.h"

using namespace ds::fuzz;

llvm::ArrayRef<Target> ds::fuzz::targets() {
  static const Target all[] = {
      {"config", fuzzConfig},
      {"model-spec", fuzzModelSpec},
      {"mlir", fuzzMlir},
      {"safetensors", fuzzSafeTensors},
      {"checkpoint", fuzzCheckpoint},
      {"npy", fuzzNpy},
      {"hostfile", fuzzHostfile},
      {"tokens", fuzzTokens},
      {"pt2", fuzzPt2},
  };
  return all;
}
