//===- Rendezvous.h - where ds-launch --no_ssh nodes meet -------*- C++ -*-===//
//
// With --no_ssh every node runs its own ds-launch. Node 0's listens on the
// master port; every other node's connects, says who it is (node rank, the
// node count it was given, its rank count, its host name) and waits. Once
// all nodes are in, node 0 answers each with its first world rank, the
// world size, the job's service name and the ompi-server URI that lets the
// nodes' separate mpirun jobs join into one world (runtime/comm/mpi_join.c).
// A node rank that is taken, or a node count that differs, is refused at
// once; node 0 keeps refusing late joiners while the job runs. One line of
// text each way:
//
//   node -> 0:  ds-launch-join 1 NODE_RANK NODES LOCAL_RANKS HOST
//   0 -> node:  ok RANK_OFFSET WORLD_SIZE SERVICE URI
//               error MESSAGE
//
//===----------------------------------------------------------------------===//

#ifndef DS_TOOLS_DS_LAUNCH_RENDEZVOUS_H
#define DS_TOOLS_DS_LAUNCH_RENDEZVOUS_H

#include "llvm/Support/Error.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>

namespace ds::launch {

/// What one node says about itself.
struct NodeInfo {
  int nodeRank = 0;
  int nodes = 1;
  int localRanks = 1;
  std::string host;
};

/// What the rendezvous answers: where the node's ranks sit in the world and
/// how they find the other nodes.
struct JobPlacement {
  int rankOffset = 0;
  int worldSize = 0;
  std::string service;
  std::string serverUri;
};

/// Node 0's side: listens on construction (so a node that starts early
/// waits in the kernel's backlog, not in a refused connect).
class RendezvousServer {
public:
  static llvm::Expected<std::unique_ptr<RendezvousServer>> listen(int port);
  ~RendezvousServer();

  /// Waits up to timeoutSeconds for nodes 1 .. self.nodes - 1, answers them
  /// all and returns node 0's own placement; then refuses late joiners on a
  /// thread until destruction. serverUri and service go to every node.
  llvm::Expected<JobPlacement> gather(const NodeInfo &self,
                                      const std::string &serverUri,
                                      const std::string &service,
                                      double timeoutSeconds);

private:
  explicit RendezvousServer(int fd, int port) : fd(fd), port(port) {}
  void refuseLateJoiners(std::string formed);

  int fd;
  int port;
  std::atomic<bool> stopping{false};
  std::thread refuser;
};

/// Any other node's side: connects to addr:port (retrying until
/// timeoutSeconds: node 0 may start later), says `self` and waits for the
/// answer.
llvm::Expected<JobPlacement> joinRendezvous(const std::string &addr, int port,
                                            const NodeInfo &self,
                                            double timeoutSeconds);

} // namespace ds::launch

#endif // DS_TOOLS_DS_LAUNCH_RENDEZVOUS_H
