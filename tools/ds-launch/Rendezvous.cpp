//===- Rendezvous.cpp - the TCP meeting point of ds-launch --no_ssh -------===//

#include "Rendezvous.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

using namespace llvm;

namespace ds::launch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char *kHello = "ds-launch-join 1";

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

std::string secondsText(double seconds) {
  char text[32];
  snprintf(text, sizeof text, "%g", seconds);
  return text;
}

double secondsLeft(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

void sendLine(int fd, const std::string &line) {
  std::string text = line + "\n";
  const char *p = text.data();
  size_t left = text.size();
  while (left) {
    ssize_t n = send(fd, p, left, MSG_NOSIGNAL);
    if (n <= 0)
      return; // the peer left; nothing to tell it
    p += n;
    left -= size_t(n);
  }
}

/// Reads until a newline (returned without it), EOF or the deadline; "" and
/// `closed` set when the peer left first.
std::string readLine(int fd, Clock::time_point deadline, bool &closed) {
  std::string line;
  closed = false;
  for (;;) {
    double left = secondsLeft(deadline);
    if (left <= 0)
      return "";
    pollfd p{fd, POLLIN, 0};
    int ready = poll(&p, 1, int(std::min(left, 1.0) * 1000) + 1);
    if (ready < 0 && errno != EINTR)
      return "";
    if (ready <= 0)
      continue;
    char c;
    ssize_t n = recv(fd, &c, 1, 0);
    if (n <= 0) {
      closed = true;
      return "";
    }
    if (c == '\n')
      return line;
    line += c;
  }
}

/// "ds-launch-join 1 NODE_RANK NODES LOCAL_RANKS HOST".
std::optional<NodeInfo> parseHello(StringRef line) {
  if (!line.consume_front(kHello) || !line.consume_front(" "))
    return std::nullopt;
  SmallVector<StringRef> words;
  line.split(words, ' ', -1, false);
  NodeInfo info;
  if (words.size() != 4 || words[0].getAsInteger(10, info.nodeRank) ||
      words[1].getAsInteger(10, info.nodes) ||
      words[2].getAsInteger(10, info.localRanks) || info.localRanks < 1)
    return std::nullopt;
  info.host = words[3].str();
  return info;
}

std::string helloOf(const NodeInfo &self) {
  return std::string(kHello) + " " + std::to_string(self.nodeRank) + " " +
         std::to_string(self.nodes) + " " + std::to_string(self.localRanks) +
         " " + self.host;
}

/// Why node 0 refuses `info`, or "" to take it; `hosts[r]` is who holds node
/// rank r ("" for nobody yet).
std::string refusal(const NodeInfo &info, int nodes,
                    const std::vector<std::string> &hosts) {
  if (info.nodes != nodes)
    return "node_rank " + std::to_string(info.nodeRank) + " (" + info.host +
           ") says the job has " + std::to_string(info.nodes) +
           " node(s), node 0 says " + std::to_string(nodes) +
           "; give every node the same --num_nodes (or hostfile)";
  if (info.nodeRank < 0 || info.nodeRank >= nodes)
    return "--node_rank " + std::to_string(info.nodeRank) +
           " is out of range for " + std::to_string(nodes) +
           " node(s); use 0 to " + std::to_string(nodes - 1);
  if (!hosts[info.nodeRank].empty())
    return "node_rank " + std::to_string(info.nodeRank) +
           " already joined the job, from " + hosts[info.nodeRank] +
           "; give every node its own --node_rank, 0 to " +
           std::to_string(nodes - 1);
  return "";
}

} // namespace

Expected<std::unique_ptr<RendezvousServer>> RendezvousServer::listen(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(uint16_t(port));
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) ||
      bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) ||
      ::listen(fd, 128)) {
    int error = errno;
    if (fd >= 0)
      close(fd);
    return fail("node 0 cannot listen on port " + Twine(port) +
                " for the --no_ssh rendezvous: " + std::strerror(error) +
                "; pick a free --master_port (the same on every node)");
  }
  return std::unique_ptr<RendezvousServer>(new RendezvousServer(fd, port));
}

RendezvousServer::~RendezvousServer() {
  stopping = true;
  if (refuser.joinable())
    refuser.join();
  close(fd);
}

Expected<JobPlacement> RendezvousServer::gather(const NodeInfo &self,
                                                const std::string &serverUri,
                                                const std::string &service,
                                                double timeoutSeconds) {
  int nodes = self.nodes;
  Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeoutSeconds));
  std::vector<std::string> hosts(nodes);
  std::vector<int> localRanks(nodes, 0), fds(nodes, -1);
  hosts[0] = self.host;
  localRanks[0] = self.localRanks;
  std::map<int, std::string> pending; // connected, hello not complete yet
  int joined = 1;
  auto closeAll = [&](const std::string &message) {
    for (int &client : fds)
      if (client >= 0) {
        sendLine(client, "error " + message);
        close(client);
        client = -1;
      }
    for (auto &[client, buffer] : pending)
      close(client);
    pending.clear();
  };
  while (joined < nodes) {
    double left = secondsLeft(deadline);
    if (left <= 0) {
      std::vector<std::string> missing;
      for (int r = 0; r < nodes; ++r)
        if (hosts[r].empty())
          missing.push_back(std::to_string(r));
      std::string message =
          "only " + std::to_string(joined) + " of " + std::to_string(nodes) +
          " nodes joined the rendezvous on port " + std::to_string(port) +
          " within " + secondsText(timeoutSeconds) + " s (missing node_rank " +
          join(missing, ", ") +
          "); start ds-launch --no_ssh on those nodes, or raise "
          "--rendezvous_timeout";
      closeAll(message);
      return fail(message);
    }
    // Joined clients are watched too: one that leaves frees its node rank.
    std::vector<pollfd> watch{{fd, POLLIN, 0}};
    for (auto &[client, buffer] : pending)
      watch.push_back({client, POLLIN, 0});
    for (int client : fds)
      if (client >= 0)
        watch.push_back({client, POLLIN, 0});
    int ready =
        poll(watch.data(), watch.size(), int(std::min(left, 1.0) * 1000) + 1);
    if (ready <= 0)
      continue;
    if (watch[0].revents & POLLIN) {
      int client = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0)
        pending[client];
    }
    for (const pollfd &p : ArrayRef(watch).drop_front()) {
      if (!p.revents)
        continue;
      auto it = pending.find(p.fd);
      if (it == pending.end()) {
        // A joined node spoke or left before the job formed: either way it
        // gives its place back.
        int r = int(find(fds, p.fd) - fds.begin());
        close(p.fd);
        fds[r] = -1;
        hosts[r].clear();
        --joined;
        continue;
      }
      char buffer[512];
      ssize_t n = recv(p.fd, buffer, sizeof buffer, 0);
      if (n <= 0) {
        close(p.fd);
        pending.erase(it);
        continue;
      }
      it->second.append(buffer, size_t(n));
      size_t newline = it->second.find('\n');
      if (newline == std::string::npos) {
        if (it->second.size() > 4096) {
          close(p.fd);
          pending.erase(it);
        }
        continue;
      }
      std::optional<NodeInfo> info =
          parseHello(StringRef(it->second).take_front(newline));
      pending.erase(it);
      std::string why =
          info ? refusal(*info, nodes, hosts)
               : "this is ds-launch's --no_ssh rendezvous; connect with "
                 "ds-launch --no_ssh";
      if (!why.empty()) {
        sendLine(p.fd, "error " + why);
        close(p.fd);
        continue;
      }
      hosts[info->nodeRank] = info->host;
      localRanks[info->nodeRank] = info->localRanks;
      fds[info->nodeRank] = p.fd;
      ++joined;
    }
  }
  for (auto &[client, buffer] : pending)
    close(client);
  int worldSize = 0;
  for (int count : localRanks)
    worldSize += count;
  int offset = localRanks[0];
  for (int r = 1; r < nodes; ++r) {
    sendLine(fds[r], "ok " + std::to_string(offset) + " " +
                         std::to_string(worldSize) + " " + service + " " +
                         serverUri);
    close(fds[r]);
    offset += localRanks[r];
  }
  std::string formed;
  for (int r = 0; r < nodes; ++r)
    formed += (r ? ", " : "") + std::to_string(r) + " on " + hosts[r];
  refuser = std::thread([this, formed, hosts] {
    // Late joiners get told, not left waiting for a job that formed.
    while (!stopping) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0)
        continue;
      int client = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0)
        continue;
      bool closed;
      std::optional<NodeInfo> info = parseHello(
          readLine(client, Clock::now() + std::chrono::seconds(2), closed));
      std::string why = info ? refusal(*info, int(hosts.size()), hosts) : "";
      if (why.empty())
        why = "the job on port " + std::to_string(port) +
              " already formed (node ranks " + formed +
              "); start a new job on another --master_port";
      sendLine(client, "error " + why);
      close(client);
    }
  });
  return JobPlacement{0, worldSize, service, serverUri};
}

Expected<JobPlacement> joinRendezvous(const std::string &addr, int port,
                                      const NodeInfo &self,
                                      double timeoutSeconds) {
  std::string where = addr + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeoutSeconds));
  std::string lastError = "no attempt";
  int fd = -1;
  while (fd < 0) {
    if (secondsLeft(deadline) <= 0)
      return fail("cannot reach node 0's rendezvous at " + where + " within " +
                  secondsText(timeoutSeconds) + " s (" + lastError +
                  "); start node 0's ds-launch --no_ssh --node_rank 0, or "
                  "check --master_addr and --master_port");
    addrinfo *found = nullptr;
    int rc =
        getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (rc != 0) {
      lastError =
          std::string("cannot resolve ") + addr + ": " + gai_strerror(rc);
    } else {
      for (addrinfo *a = found; a && fd < 0; a = a->ai_next) {
        int s =
            socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                   a->ai_protocol);
        if (s < 0)
          continue;
        // Non-blocking, so an address that drops SYNs costs a second, not
        // the kernel's minutes.
        int error = 0;
        if (connect(s, a->ai_addr, a->ai_addrlen) != 0) {
          error = errno;
          if (error == EINPROGRESS) {
            pollfd p{s, POLLOUT, 0};
            socklen_t len = sizeof error;
            error = poll(&p, 1, 1000) == 1 &&
                            !getsockopt(s, SOL_SOCKET, SO_ERROR, &error, &len)
                        ? error
                        : ETIMEDOUT;
          }
        }
        if (error == 0) {
          fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK);
          fd = s;
        } else {
          lastError = std::strerror(error);
          close(s);
        }
      }
      freeaddrinfo(found);
    }
    if (fd < 0)
      usleep(200 * 1000);
  }
  sendLine(fd, helloOf(self));
  // Node 0 answers within its own timeout; twice ours covers a node 0 that
  // started as late as this one gave up waiting.
  bool closed;
  std::string answer = readLine(
      fd,
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(2 * timeoutSeconds)),
      closed);
  close(fd);
  StringRef line(answer);
  if (line.consume_front("error "))
    return fail(line);
  SmallVector<StringRef> words;
  line.split(words, ' ', 4, false);
  JobPlacement placement;
  if (words.size() != 5 || words[0] != "ok" ||
      words[1].getAsInteger(10, placement.rankOffset) ||
      words[2].getAsInteger(10, placement.worldSize))
    return fail("node 0's rendezvous at " + where +
                (closed ? " closed the connection before the job formed"
                        : " sent no usable answer") +
                "; check node 0's ds-launch output");
  placement.service = words[3].str();
  placement.serverUri = words[4].str();
  return placement;
}

} // namespace ds::launch
