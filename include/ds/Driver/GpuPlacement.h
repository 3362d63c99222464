//===- GpuPlacement.h - Where a GPU step's tensors live ---------*- C++ -*-===//
//
// A step compiled for a GPU (StepManifest::target "sm_90") reads and writes
// its arguments from device code: before any of them is allocated the
// process needs a GPU that runs the code, and its tensors must come from
// memory both the host (initialization, data, checkpoints) and the device
// address. Managed memory is both, so nothing is staged or copied per step.
//
//===----------------------------------------------------------------------===//
#ifndef DS_DRIVER_GPUPLACEMENT_H
#define DS_DRIVER_GPUPLACEMENT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace ds::driver {

/// For `target` "cpu" nothing. For a GPU chip ("sm_90"): an error naming
/// the missing piece (driver, device, or a GPU of another architecture)
/// unless GPU 0 runs its code; otherwise every tensor allocated from now on
/// is managed memory on GPU 0.
llvm::Error placeTensorsFor(llvm::StringRef target);

} // namespace ds::driver

#endif // DS_DRIVER_GPUPLACEMENT_H
