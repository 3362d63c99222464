//===- CudaToolkit.h - The CUDA toolkit a GPU step is compiled with -*- C++
//-*-===//
//
// Compiling for a GPU needs ptxas, fatbinary and libdevice, not a GPU or a
// driver: this finds them, says which GPU architectures they build for, and
// parses the --target names ds accepts.
//
//===----------------------------------------------------------------------===//
#ifndef DS_TARGET_CUDATOOLKIT_H
#define DS_TARGET_CUDATOOLKIT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace ds::target {

struct CudaToolkit {
  std::string root;      // e.g. /usr/local/cuda
  std::string from;      // how it was found: "CUDA_HOME", "ptxas on PATH"...
  std::string ptxas;     // <root>/bin/ptxas
  std::string fatbinary; // <root>/bin/fatbinary
  std::string libdevice; // <root>/nvvm/libdevice/libdevice.10.bc
  std::string version;   // ptxas --version, e.g. "13.0.88"
  /// Real architectures ptxas assembles for ("sm_75", ..., "sm_121"), in
  /// the order ptxas lists them.
  std::vector<std::string> archs;
};

/// The toolkit at $CUDA_HOME, $CUDA_PATH or $CUDA_ROOT (the first set), else
/// the one whose ptxas is on PATH, else /usr/local/cuda. The error names the
/// missing file and the variable that fixes it.
llvm::Expected<CudaToolkit> findCudaToolkit();

/// A GPU target: "sm_90" is chip sm_90, compute capability 9.0.
struct GpuTarget {
  std::string chip;
  int major = 0;
  int minor = 0;
};

/// Parses "sm_<major><minor>" (sm_75 ... sm_121); the error shows the form.
llvm::Expected<GpuTarget> parseGpuTarget(llvm::StringRef name);

/// parseGpuTarget, then checks that `toolkit` assembles for it.
llvm::Expected<GpuTarget> resolveGpuTarget(llvm::StringRef name,
                                           const CudaToolkit &toolkit);

} // namespace ds::target

#endif // DS_TARGET_CUDATOOLKIT_H
