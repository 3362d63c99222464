//===- SymExpr.h - torch.export's symbolic size expressions -----*- C++ -*-===//
//
// A program exported with dynamic_shapes has sizes that are sympy
// expressions of its input symbols. torch.export.save writes them with
// sympy's srepr ("Mul(Integer(32), Symbol('s13', positive=True,
// integer=True))"); older releases wrote str() ("32*s13", "(s0//2)"). Both
// are read here and evaluated exactly (rationals), once the symbols have
// values.
//
//===----------------------------------------------------------------------===//
#ifndef DS_LIB_IMPORT_SYMEXPR_H
#define DS_LIB_IMPORT_SYMEXPR_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::ds::importer::pt2 {

/// The integer value of `expr` with the symbols bound in `symbols`: integer
/// arithmetic (+ - * / // % **, Add, Mul, Pow, FloorDiv, CeilDiv, Mod,
/// PythonMod, ModularIndexing, Min, Max, ...) and comparisons and logic
/// (Eq, Lt, And, ... as 1 or 0). The error says what is wrong, without the
/// expression (the caller names it).
llvm::Expected<int64_t>
evaluateSymExpr(llvm::StringRef expr, const llvm::StringMap<int64_t> &symbols);

/// The names of the symbols `expr` reads, each once, in order of first use.
std::vector<std::string> symbolsOf(llvm::StringRef expr);

/// The symbol's name if `expr` is one symbol alone ("Symbol('s13', ...)" or
/// "s13"), else nullopt.
std::optional<std::string> bareSymbol(llvm::StringRef expr);

} // namespace mlir::ds::importer::pt2

#endif // DS_LIB_IMPORT_SYMEXPR_H
