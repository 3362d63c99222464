//===- Supervise.cpp - run mpirun and end it when a host is lost ----------===//

#include "Supervise.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

using namespace llvm;

namespace ds::launch {
namespace {

pid_t child = 0;

void forwardSignal(int sig) {
  if (child > 0)
    kill(child, sig);
}

/// The whole of a /proc file; "" once the process is gone. (/proc files
/// report size 0, and a stream's read of a vanished one throws.)
std::string readProcFile(const std::string &path) {
  std::string text;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0)
    text.append(buffer, size_t(n));
  close(fd);
  return text;
}

struct Process {
  pid_t pid;
  std::vector<std::string> argv;
};

/// The processes whose parent is `parent`, from /proc.
std::vector<Process> childrenOf(pid_t parent) {
  std::vector<Process> result;
  DIR *proc = opendir("/proc");
  if (!proc)
    return result;
  while (dirent *entry = readdir(proc)) {
    pid_t pid = atoi(entry->d_name);
    if (pid <= 0)
      continue;
    std::string dir = "/proc/" + std::string(entry->d_name);
    std::string stat = readProcFile(dir + "/stat");
    // "pid (comm) state ppid ...": comm may hold spaces, so split after ')'.
    SmallVector<StringRef> fields;
    StringRef(stat).rsplit(')').second.split(fields, ' ', -1, false);
    if (fields.size() < 2 || atoi(fields[1].str().c_str()) != parent)
      continue;
    std::string cmdline = readProcFile(dir + "/cmdline");
    Process process{pid, {}};
    SmallVector<StringRef> words;
    StringRef(cmdline).split(words, '\0', -1, false);
    for (StringRef word : words)
      process.argv.push_back(word.str());
    result.push_back(std::move(process));
  }
  closedir(proc);
  return result;
}

/// The host a remote-shell session starts orted on, or "" for any other
/// child (a local rank).
std::string sessionHost(const Process &process, ArrayRef<std::string> hosts) {
  bool orted = false;
  std::string host;
  for (const std::string &word : process.argv) {
    orted |= StringRef(word).contains("orted");
    for (const std::string &name : hosts)
      if (word == name)
        host = name;
  }
  return orted ? host : "";
}

void endJob(pid_t mpirun) {
  for (const Process &process : childrenOf(mpirun))
    kill(process.pid, SIGKILL);
  kill(mpirun, SIGKILL);
}

} // namespace

int superviseMpirun(const std::string &mpirun, char **argv,
                    ArrayRef<std::string> hosts, double graceSeconds) {
  child = fork();
  if (child < 0) {
    WithColor::error(errs(), "ds-launch") << "cannot start " << mpirun << "\n";
    return 1;
  }
  if (child == 0) {
    execv(mpirun.c_str(), argv);
    _exit(127);
  }
  // The terminal's Ctrl-C reaches mpirun directly (same process group);
  // a TERM or HUP sent to ds-launch alone is passed on.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, forwardSignal);
  signal(SIGHUP, forwardSignal);

  using Clock = std::chrono::steady_clock;
  std::map<pid_t, std::string> sessions; // live remote-shell sessions
  std::string lostHost;
  Clock::time_point lostAt;
  for (;;) {
    int status = 0;
    pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::map<pid_t, std::string> now;
    for (const Process &process : childrenOf(child))
      if (std::string host = sessionHost(process, hosts); !host.empty())
        now[process.pid] = host;
    for (const auto &[pid, host] : sessions)
      if (!now.count(pid) && lostHost.empty()) {
        lostHost = host;
        lostAt = Clock::now();
      }
    sessions = std::move(now);
    if (!lostHost.empty() &&
        std::chrono::duration<double>(Clock::now() - lostAt).count() >
            graceSeconds) {
      WithColor::error(errs(), "ds-launch")
          << "the connection to host " << lostHost
          << " ended and mpirun is still waiting for it "
          << format("%g", graceSeconds) << " s later: " << lostHost
          << " is unreachable or down; ending the job (check the host and "
             "the network, then relaunch with --load to resume)\n";
      endJob(child);
      waitpid(child, &status, 0);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

} // namespace ds::launch
