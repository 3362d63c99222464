//===- Supervise.h - run mpirun and end it when a host is lost --*- C++ -*-===//
//
// Open MPI 4's mpirun, once it is ending a job, waits for every remote
// daemon to confirm, and a daemon behind a cut link never does: mpirun then
// hangs until TCP gives up (minutes), although every rank has exited. With
// remote hosts, ds-launch therefore stays mpirun's parent instead of
// becoming it, and watches mpirun's remote-shell sessions (the ssh, or other
// rsh agent, running `orted` on each host): when one has ended and mpirun
// is still running a grace period later, the host is lost; ds-launch says
// which, ends mpirun and what it started here, and exits non-zero.
//
//===----------------------------------------------------------------------===//

#ifndef DS_TOOLS_DS_LAUNCH_SUPERVISE_H
#define DS_TOOLS_DS_LAUNCH_SUPERVISE_H

#include "llvm/ADT/ArrayRef.h"

#include <string>

namespace ds::launch {

/// Runs mpirun with argv (NULL-terminated) as a child and returns the exit
/// status to report: mpirun's, 128 + signal if it died of one, or 1 when a
/// lost host made ds-launch end it. hosts are the names mpirun was given.
int superviseMpirun(const std::string &mpirun, char **argv,
                    llvm::ArrayRef<std::string> hosts, double graceSeconds);

} // namespace ds::launch

#endif // DS_TOOLS_DS_LAUNCH_SUPERVISE_H
