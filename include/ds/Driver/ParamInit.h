//===- ParamInit.h - Deterministic parameter initialization ------*- C++
//-*-===//
//
// Parameters are drawn at run time from the #dsnn.param init description and
// the model's init seed. Each parameter's values depend only on (seed, its
// name, element index), so they are identical across runs, machines, ranks
// and ZeRO shardings, and adding a parameter does not change the others.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_PARAMINIT_H
#define DS_DRIVER_PARAMINIT_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace ds::driver {

enum class InitKind { Zeros, Ones, Normal, Uniform };

/// Fills elements [first, first + count) of parameter `name`: zeros, ones,
/// normal(0, scale) or uniform(-scale, scale). Large ranges are drawn by
/// the runtime's threads (dsrt_threads_get) plus any lent to the draws,
/// with the same values.
void initParameter(llvm::StringRef name, InitKind kind, double scale,
                   uint64_t seed, int64_t first, int64_t count, float *out);

/// While alive, the draws of every thread use `threads` more: a thread that
/// only waits for them (the trainer's, once its step is compiled) lends its
/// core to them.
class DrawThreadLoan {
public:
  explicit DrawThreadLoan(int threads);
  ~DrawThreadLoan();
  DrawThreadLoan(const DrawThreadLoan &) = delete;
  DrawThreadLoan &operator=(const DrawThreadLoan &) = delete;

private:
  int threads;
};

} // namespace ds::driver

#endif // DS_DRIVER_PARAMINIT_H
