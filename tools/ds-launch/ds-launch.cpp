//===- ds-launch.cpp - DeepSpeed-style launcher on top of Open MPI's mpirun
//===//
//
// Reads DeepSpeed's launcher inputs (hostfile, --num_nodes, --num_procs,
// --include/--exclude, .deepspeed_env), turns them into one mpirun command and
// replaces itself with it. --dry-run prints the command instead.
//
// Every rank starts as `ds-launch --rank-shim -- PROGRAM ARGS`: the shim
// copies Open MPI's per-rank OMPI_COMM_WORLD_* variables to the names
// DeepSpeed programs read (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_SIZE) and execs
// the program. mpirun's `-x` can only give every rank the same value, so the
// per-rank names need a process on the rank's side. docs/launch.md has the
// whole story.
//
//===----------------------------------------------------------------------===//

#include "Hostfile.h"
#include "Rendezvous.h"
#include "Supervise.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char **environ;

using namespace llvm;
using namespace ds::launch;

static cl::OptionCategory category("ds-launch options");

static cl::opt<std::string>
    hostfile("hostfile", cl::cat(category), cl::value_desc("file"),
             cl::desc("(-H) hosts and their slots, one `HOST slots=N` a line "
                      "(default: /job/hostfile if it exists, else this "
                      "machine only)"));
static cl::alias hostfileShort("H", cl::aliasopt(hostfile),
                               cl::desc("alias for --hostfile"),
                               cl::cat(category));
static cl::opt<int> numNodes(
    "num_nodes", cl::init(-1), cl::cat(category),
    cl::desc("use the first N hosts of the hostfile (--no_ssh without a "
             "hostfile: the job's node count)"));
static cl::alias nnodes("nnodes", cl::aliasopt(numNodes),
                        cl::desc("alias for --num_nodes"), cl::cat(category));
static cl::opt<int> numProcs(
    "num_procs", cl::init(-1), cl::cat(category),
    cl::desc("(alias --num_gpus) processes per node, slots [0, N) of each host "
             "(default: all slots; without a hostfile: 1)"));
static cl::alias numGpus("num_gpus", cl::aliasopt(numProcs),
                         cl::desc("alias for --num_procs (DeepSpeed's name)"),
                         cl::cat(category));
static cl::alias numAccelerators("num_accelerators", cl::aliasopt(numProcs),
                                 cl::desc("alias for --num_procs"),
                                 cl::cat(category));
static cl::opt<std::string>
    include("include", cl::cat(category), cl::value_desc("spec"),
            cl::desc("(-i) use only these hosts/slots: "
                     "HOST[:SLOT[,SLOT...]][@HOST[:SLOT...]]..."));
static cl::alias includeShort("i", cl::aliasopt(include),
                              cl::desc("alias for --include"),
                              cl::cat(category));
static cl::opt<std::string>
    exclude("exclude", cl::cat(category), cl::value_desc("spec"),
            cl::desc("(-e) use every host/slot but these (same syntax as "
                     "--include)"));
static cl::alias excludeShort("e", cl::aliasopt(exclude),
                              cl::desc("alias for --exclude"),
                              cl::cat(category));
static cl::opt<std::string>
    masterAddr("master_addr", cl::cat(category),
               cl::desc("MASTER_ADDR for every rank (default: 127.0.0.1 "
                        "locally, else the first selected host)"));
static cl::opt<int>
    masterPort("master_port", cl::init(29500), cl::cat(category),
               cl::desc("MASTER_PORT for every rank; with --no_ssh, also "
                        "node 0's rendezvous port"));
static cl::opt<std::string>
    launcherArgs("launcher_args", cl::cat(category), cl::value_desc("args"),
                 cl::desc("extra mpirun (--launcher slurm: srun) arguments, "
                          "one shell-quoted string"));
static cl::opt<std::string>
    mpirunPath("mpirun", cl::cat(category), cl::value_desc("path"),
               cl::desc("mpirun to run (default: mpirun from PATH, else the "
                        "one found at build time)"));
static cl::opt<bool>
    noRankShim("no_rank_shim", cl::cat(category),
               cl::desc("run PROGRAM directly under mpirun: ranks see only "
                        "OMPI_COMM_WORLD_*, not RANK/WORLD_SIZE/LOCAL_RANK"));
static cl::opt<bool> noSsh(
    "no_ssh", cl::cat(category),
    cl::desc("start only this node's ranks (--node_rank), one ds-launch per "
             "node; node 0 gathers the others at --master_addr:--master_port "
             "and the nodes' ranks join into one world"));
static cl::opt<int>
    nodeRank("node_rank", cl::init(-1), cl::cat(category),
             cl::desc("with --no_ssh: this node's rank, 0 to nodes - 1"));
static cl::opt<double> rendezvousTimeout(
    "rendezvous_timeout", cl::init(300), cl::cat(category),
    cl::desc("with --no_ssh: seconds to wait for node 0 (on the others) or "
             "for every node (on node 0)"));
static cl::opt<std::string> launcher(
    "launcher", cl::init("openmpi"), cl::cat(category),
    cl::desc("openmpi (default): one mpirun for every host; slurm: srun "
             "starts one ds-launch --no_ssh per node of the allocation"));
static cl::opt<bool> dryRun("dry-run", cl::cat(category),
                            cl::desc("print the mpirun command and exit"));
static cl::opt<std::string> program(cl::Positional, cl::Required,
                                    cl::desc("PROGRAM"), cl::cat(category));
static cl::list<std::string> programArgs(cl::ConsumeAfter, cl::desc("ARGS..."),
                                         cl::cat(category));

namespace {

constexpr const char *kDefaultHostfile = "/job/hostfile";
constexpr const char *kLocalHost = "localhost";
/// How long mpirun may outlive its session to a host before ds-launch
/// calls the host lost: far more than mpirun needs to finish a job.
constexpr double kLostHostGraceSeconds = 5;

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// NAME=VALUE pairs in first-set order; setting a name again replaces its
/// value in place.
class Exports {
public:
  void set(StringRef name, StringRef value) {
    auto [it, inserted] = index.try_emplace(name, entries.size());
    if (inserted)
      entries.emplace_back(name.str(), value.str());
    else
      entries[it->second].second = value.str();
  }
  ArrayRef<std::pair<std::string, std::string>> all() const { return entries; }

private:
  StringMap<size_t> index;
  std::vector<std::pair<std::string, std::string>> entries;
};

/// Reads one .deepspeed_env: NAME=VALUE lines, blank lines and # comments.
Error readEnvFile(StringRef path, Exports &exports) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fail("cannot read " + path + ": " + buffer.getError().message());
  SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (auto [i, raw] : enumerate(lines)) {
    StringRef line = raw.rtrim("\r");
    if (line.trim().empty() || line.ltrim().starts_with("#"))
      continue;
    auto [name, value] = line.split('=');
    name = name.trim();
    if (!line.contains('=') || name.empty() || name.contains(' '))
      return fail(path + ":" + Twine(i + 1) + ": expected NAME=VALUE, got \"" +
                  line + "\"; fix the line or comment it out with #");
    exports.set(name, value);
  }
  return Error::success();
}

/// $HOME's then the current directory's .deepspeed_env (DS_ENV_FILE renames
/// it, as in DeepSpeed; a DS_ENV_FILE naming an existing file is read
/// alone). Later files win per variable.
Error readDeepSpeedEnv(Exports &exports) {
  const char *renamed = std::getenv("DS_ENV_FILE");
  std::string name = renamed && *renamed ? renamed : ".deepspeed_env";
  std::vector<std::string> files;
  if (sys::path::is_absolute(name)) {
    files.push_back(name);
  } else {
    if (const char *home = std::getenv("HOME")) {
      SmallString<256> path(home);
      sys::path::append(path, name);
      files.push_back(std::string(path));
    }
    files.push_back(name);
  }
  std::set<sys::fs::UniqueID> seen;
  for (const std::string &file : files) {
    sys::fs::UniqueID id;
    if (!sys::fs::is_regular_file(file) || sys::fs::getUniqueID(file, id) ||
        !seen.insert(id).second)
      continue;
    if (Error err = readEnvFile(file, exports))
      return err;
  }
  return Error::success();
}

/// DeepSpeed's runner forwards every launcher variable whose name starts
/// with one of these.
bool forwardedByDeepSpeed(StringRef name) {
  for (StringRef prefix : {"NCCL", "UCX", "PYTHON", "MV2", "MLFLOW"})
    if (name.starts_with(prefix))
      return true;
  return false;
}

/// Splits --launcher_args like a POSIX shell would (quotes, backslashes; no
/// expansion).
Expected<std::vector<std::string>> splitShellWords(StringRef text) {
  std::vector<std::string> words;
  std::string word;
  bool inWord = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (inWord)
        words.push_back(std::move(word));
      word.clear();
      inWord = false;
      continue;
    }
    inWord = true;
    if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
    } else if (c == '\'' || c == '"') {
      size_t end = text.find(c, i + 1);
      if (end == StringRef::npos)
        return fail("--launcher_args: unterminated " +
                    Twine(c == '\'' ? "'" : "\"") + " in \"" + text +
                    "\"; close the quote");
      word += text.slice(i + 1, end);
      i = end;
    } else {
      word += c;
    }
  }
  if (inWord)
    words.push_back(std::move(word));
  return words;
}

std::string shellQuote(StringRef word) {
  if (!word.empty() && all_of(word, [](char c) {
        return isAlnum(c) || StringRef("@%+=:,./_-").contains(c);
      }))
    return word.str();
  std::string quoted = "'";
  for (char c : word)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// Physical cores this process may run on: what Open MPI counts as local
/// slots when it has no hostfile.
unsigned physicalCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  std::set<std::pair<std::string, std::string>> cores;
  unsigned cpus = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set))
      continue;
    ++cpus;
    std::string dir =
        "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    auto package = MemoryBuffer::getFile(dir + "physical_package_id");
    auto core = MemoryBuffer::getFile(dir + "core_id");
    if (!package || !core)
      return cpus ? CPU_COUNT(&set) : 1;
    cores.insert({(*package)->getBuffer().trim().str(),
                  (*core)->getBuffer().trim().str()});
  }
  return cores.empty() ? 1 : cores.size();
}

std::string findMpirun() {
  if (!mpirunPath.empty())
    return sys::fs::can_execute(mpirunPath) ? mpirunPath : std::string();
  if (ErrorOr<std::string> path = sys::findProgramByName("mpirun"))
    return *path;
#ifdef DS_MPIEXEC
  if (sys::fs::can_execute(DS_MPIEXEC))
    return DS_MPIEXEC;
#endif
  return {};
}

bool isPrefixRange(ArrayRef<int64_t> slots) {
  for (auto [i, slot] : enumerate(slots))
    if (slot != static_cast<int64_t>(i))
      return false;
  return true;
}

/// Runs on each rank: OMPI_COMM_WORLD_* -> RANK, WORLD_SIZE, LOCAL_RANK,
/// LOCAL_SIZE, then exec the program.
int runRankShim(int argc, char **argv) {
  int first = 2;
  if (first < argc && StringRef(argv[first]) == "--")
    ++first;
  if (first >= argc) {
    WithColor::error(errs(), "ds-launch")
        << "--rank-shim needs a program: ds-launch --rank-shim -- PROGRAM "
           "ARGS...\n";
    return 1;
  }
  static const std::pair<const char *, const char *> kNames[] = {
      {"OMPI_COMM_WORLD_RANK", "RANK"},
      {"OMPI_COMM_WORLD_SIZE", "WORLD_SIZE"},
      {"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"},
      {"OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_SIZE"}};
  for (auto [from, to] : kNames) {
    const char *value = std::getenv(from);
    if (!value) {
      WithColor::error(errs(), "ds-launch")
          << "--rank-shim runs on a rank started by mpirun, but " << from
          << " is not set; run the program through ds-launch or mpirun\n";
      return 1;
    }
    setenv(to, value, /*overwrite=*/1);
  }
  // Under --no_ssh each node's mpirun numbers only its own ranks.
  if (const char *world = std::getenv("DSRT_MPI_JOIN_WORLD_SIZE")) {
    const char *offset = std::getenv("DSRT_MPI_JOIN_RANK_OFFSET");
    int rank =
        atoi(std::getenv("OMPI_COMM_WORLD_RANK")) + (offset ? atoi(offset) : 0);
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", world, 1);
  }
  execvp(argv[first], argv + first);
  int error = errno;
  WithColor::error(errs(), "ds-launch")
      << "cannot run '" << argv[first] << "': " << std::strerror(error)
      << "; check the program path on this host\n";
  return 127;
}

/// DeepSpeed: the filters and the counts are two ways to say the same
/// thing, and one filter direction at a time.
Error checkSlotFlags() {
  if (!include.empty() && !exclude.empty())
    return fail("--include and --exclude are mutually exclusive; keep one "
                "of them");
  if ((!include.empty() || !exclude.empty()) &&
      (numNodes >= 0 || numProcs >= 0))
    return fail("--num_nodes/--num_procs cannot be combined with "
                "--include/--exclude; choose slots one way");
  if (numNodes == 0 || numNodes < -1)
    return fail("--num_nodes must be >= 1, got " + Twine(numNodes));
  if (numProcs == 0 || numProcs < -1)
    return fail("--num_procs must be >= 1, got " + Twine(numProcs));
  return Error::success();
}

/// The first `--num_nodes` hosts of `pool` (`hostfilePath`'s), each with
/// `--num_procs` slots or all of its own.
Expected<std::vector<Resource>> countedHosts(ArrayRef<Host> pool,
                                             StringRef hostfilePath) {
  size_t nodes = numNodes > 0 ? numNodes : pool.size();
  if (nodes > pool.size())
    return fail("--num_nodes " + Twine(numNodes) + " but " + hostfilePath +
                " lists " + Twine(pool.size()) +
                " host(s); lower --num_nodes or add hosts");
  std::vector<Resource> resources;
  for (const Host &host : pool.take_front(nodes)) {
    int64_t count = numProcs > 0 ? numProcs : host.slots;
    if (count > host.slots)
      return fail("--num_procs " + Twine(numProcs) + " but host " + host.name +
                  " has slots=" + Twine(host.slots) + " (" + hostfilePath +
                  ":" + Twine(host.line) +
                  "); lower --num_procs or raise its slots");
    Resource resource{host.name, {}};
    for (int64_t slot = 0; slot < count; ++slot)
      resource.slots.push_back(slot);
    resources.push_back(std::move(resource));
  }
  return resources;
}

/// The hosts and slots to run on: the hostfile's (this machine's without
/// one, a slot per CPU: the slot ids --include names, e.g. GPU ids),
/// filtered by --include/--exclude or cut by the counts.
Expected<std::vector<Resource>> chooseResources(StringRef hostfilePath) {
  bool local = hostfilePath.empty();
  std::vector<Host> pool;
  std::string poolName;
  if (local) {
    pool.push_back(
        {kLocalHost, std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)), 0});
    poolName = "the local pool (no hostfile)";
  } else {
    Expected<std::vector<Host>> parsed = parseHostfile(hostfilePath);
    if (!parsed)
      return parsed.takeError();
    pool = std::move(*parsed);
    poolName = hostfilePath.str();
  }
  if (!include.empty() || !exclude.empty()) {
    bool isInclude = !include.empty();
    return applyFilter(pool, isInclude ? include : exclude, isInclude,
                       poolName);
  }
  if (!local)
    return countedHosts(pool, hostfilePath);
  if (numNodes > 1)
    return fail("--num_nodes " + Twine(numNodes) +
                " needs a hostfile listing that many hosts; pass -H FILE");
  Resource here{kLocalHost, {}};
  for (int slot = 0; slot < std::max(1, numProcs.getValue()); ++slot)
    here.slots.push_back(slot);
  return std::vector<Resource>{std::move(here)};
}

/// What every rank gets through -x: DeepSpeed's prefixes from this
/// environment, then .deepspeed_env, then the rendezvous address.
Expected<Exports> rankExports(bool local, ArrayRef<Resource> resources) {
  Exports exports;
  std::vector<std::string> forwarded;
  for (char **entry = environ; *entry; ++entry) {
    StringRef name = StringRef(*entry).split('=').first;
    // DS_JIT_CPU too: every rank must generate code for the same level.
    if (forwardedByDeepSpeed(name) || name == "DS_JIT_CPU")
      forwarded.push_back(*entry);
  }
  sort(forwarded);
  for (StringRef entry : forwarded) {
    auto [name, value] = entry.split('=');
    exports.set(name, value);
  }
  if (Error err = readDeepSpeedEnv(exports))
    return std::move(err);
  std::string addr = masterAddr;
  if (addr.empty())
    addr = local ? "127.0.0.1" : resources.front().host;
  exports.set("MASTER_ADDR", addr);
  exports.set("MASTER_PORT", std::to_string(masterPort));
  return exports;
}

/// Appends the `total` ranks to mpirun's `command`: their count and hosts, the
/// exports and `rankCommand`. Slots [0, k) on every host is the usual
/// case: one app context. Picked slot ids (e.g. -i host:1,3) become
/// CUDA_VISIBLE_DEVICES per host, which takes one app context per host
/// because -x is per context.
void appendRanks(std::vector<std::string> &command, bool local,
                 ArrayRef<Resource> resources, size_t total,
                 const Exports &exports, ArrayRef<std::string> rankCommand) {
  auto appendExports = [&] {
    for (const auto &[name, value] : exports.all())
      command.insert(command.end(), {"-x", name + "=" + value});
  };
  bool prefixSlots = all_of(resources, [](const Resource &resource) {
    return isPrefixRange(resource.slots);
  });
  auto deviceList = [](const Resource &resource) {
    return join(map_range(resource.slots,
                          [](int64_t slot) { return std::to_string(slot); }),
                ",");
  };
  if (local) {
    const Resource &here = resources.front();
    command.insert(command.end(), {"-n", std::to_string(total)});
    appendExports();
    if (!prefixSlots)
      command.insert(command.end(),
                     {"-x", "CUDA_VISIBLE_DEVICES=" + deviceList(here)});
    append_range(command, rankCommand);
  } else if (prefixSlots) {
    std::string hosts =
        join(map_range(resources,
                       [](const Resource &resource) {
                         return resource.host + ":" +
                                std::to_string(resource.slots.size());
                       }),
             ",");
    command.insert(command.end(), {"-H", hosts, "-n", std::to_string(total)});
    appendExports();
    append_range(command, rankCommand);
  } else {
    for (auto [i, resource] : enumerate(resources)) {
      if (i)
        command.push_back(":");
      std::string count = std::to_string(resource.slots.size());
      command.insert(command.end(),
                     {"-H", resource.host + ":" + count, "-n", count});
      appendExports();
      command.insert(command.end(),
                     {"-x", "CUDA_VISIBLE_DEVICES=" + deviceList(resource)});
      append_range(command, rankCommand);
    }
  }
}

/// Why there is no mpirun to run.
Error noMpirun() {
  std::string what = "--mpirun " + mpirunPath + " is not an executable";
  if (mpirunPath.empty()) {
    what = "mpirun is not on PATH";
#ifdef DS_MPIEXEC
    what += " and " DS_MPIEXEC " (found at build time) is gone";
#endif
  }
  return fail(what + "; install Open MPI (Debian: apt-get install "
                     "openmpi-bin) or pass --mpirun PATH");
}

/// As root, Open MPI's tools run only when told so: what they accept besides
/// mpirun's flag, set so a --launcher_args wrapper that re-runs mpirun still
/// works.
void allowRunAsRoot() {
  if (geteuid() != 0)
    return;
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
}

/// `command` as exec's NULL-terminated argv (pointing into it), with our
/// own output flushed first: what the child prints must come after it.
std::vector<char *> argvOf(std::vector<std::string> &command) {
  std::vector<char *> argv;
  for (std::string &word : command)
    argv.push_back(word.data());
  argv.push_back(nullptr);
  outs().flush();
  errs().flush();
  return argv;
}

/// Runs `command`: as mpirun's parent with remote hosts, to end a job
/// stuck on a lost host (Supervise.h); with one host, by becoming mpirun.
/// Returns only with remote hosts, mpirun's exit status, or on an error.
Expected<int> runMpirun(const std::string &mpirun,
                        std::vector<std::string> &command, bool local,
                        ArrayRef<Resource> resources) {
  allowRunAsRoot();
  std::vector<char *> execArgv = argvOf(command);
  if (!local) {
    std::vector<std::string> hosts;
    for (const Resource &resource : resources)
      hosts.push_back(resource.host);
    return ds::launch::superviseMpirun(mpirun, execArgv.data(), hosts,
                                       kLostHostGraceSeconds);
  }
  execv(mpirun.c_str(), execArgv.data());
  int error = errno;
  return fail("cannot run " + mpirun + ": " + std::strerror(error) +
              "; check the Open MPI install");
}

/// Starts Open MPI's ompi-server (the one beside `mpirun`, else PATH's)
/// and returns its pid and URI: what lets separately started mpirun jobs
/// connect. It dies with ds-launch.
Expected<std::pair<pid_t, std::string>> startOmpiServer(StringRef mpirun) {
  SmallString<256> path = sys::path::parent_path(mpirun);
  sys::path::append(path, "ompi-server");
  std::string server(path);
  if (!sys::fs::can_execute(server)) {
    ErrorOr<std::string> found = sys::findProgramByName("ompi-server");
    if (!found)
      return fail("--no_ssh needs Open MPI's ompi-server, not found beside " +
                  mpirun + " nor on PATH; install openmpi-bin");
    server = *found;
  }
  SmallString<128> uriFile;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("ds-launch-ompi-server", "uri", uriFile))
    return fail("cannot make a temporary file: " + ec.message());
  sys::fs::remove(uriFile); // ompi-server writes it when it listens
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    execl(server.c_str(), server.c_str(), "--no-daemonize", "--report-uri",
          uriFile.c_str(), static_cast<char *>(nullptr));
    _exit(127);
  }
  if (pid < 0)
    return fail("cannot start " + server + ": " + std::strerror(errno));
  for (int tries = 0; tries < 200; ++tries) {
    auto text = MemoryBuffer::getFile(uriFile, /*IsText=*/true);
    if (text && (*text)->getBuffer().ends_with("\n")) {
      std::string uri = (*text)->getBuffer().trim().str();
      sys::fs::remove(uriFile);
      return std::make_pair(pid, uri);
    }
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid)
      return fail(server + " exited before reporting its address; run it "
                           "by hand to see why");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return fail(server + " reported no address within 10 s; run it by hand "
                       "to see why");
}

/// Under Slurm (an srun step, one task per node) what --no_ssh needs but
/// was not given: the node rank and, without a hostfile (null here), the
/// node count and node 0's host.
void slurmDefaults(int &rank, int *nodes, std::string *addr) {
  auto env = [](const char *name) -> StringRef {
    const char *value = std::getenv(name);
    return value ? value : "";
  };
  int value;
  if (rank < 0 && !env("SLURM_NODEID").getAsInteger(10, value))
    rank = value;
  if (nodes && *nodes < 0 &&
      (!env("SLURM_STEP_NUM_NODES").getAsInteger(10, value) ||
       !env("SLURM_NNODES").getAsInteger(10, value)))
    *nodes = value;
  if (addr && addr->empty()) {
    StringRef list = env("SLURM_STEP_NODELIST");
    *addr = firstSlurmHost(list.empty() ? env("SLURM_JOB_NODELIST") : list);
  }
}

/// ds-launch --no_ssh: this node's ranks only, after the rendezvous.
Expected<int> runNoSsh(StringRef hostfilePath, const char *argv0) {
  int me = nodeRank, nodes = numNodes;
  std::string addr = masterAddr;
  bool fromFile = !hostfilePath.empty();
  slurmDefaults(me, fromFile ? nullptr : &nodes, fromFile ? nullptr : &addr);
  if (me < 0)
    return fail("--no_ssh needs --node_rank R, this node's place in the job "
                "(0 to nodes - 1; node 0 runs the rendezvous)");
  if (dryRun)
    return fail("--dry-run cannot show a --no_ssh command: it depends on the "
                "rendezvous with the other nodes; drop --dry-run");
  // The job's nodes: the hostfile's selection, else --num_nodes; this
  // node's slots: its hostfile entry's, else --num_procs.
  Resource mine{kLocalHost, {}};
  if (!hostfilePath.empty()) {
    Expected<std::vector<Resource>> resources = chooseResources(hostfilePath);
    if (!resources)
      return resources.takeError();
    nodes = int(resources->size());
    if (me < nodes)
      mine.slots = (*resources)[me].slots;
    if (addr.empty())
      addr = resources->front().host;
  } else {
    nodes = std::max(1, nodes);
    for (int slot = 0; slot < std::max(1, numProcs.getValue()); ++slot)
      mine.slots.push_back(slot);
  }
  if (me >= nodes)
    return fail("--node_rank " + Twine(me) +
                " is out of range: the job "
                "has " +
                Twine(nodes) +
                " node(s) (--num_nodes or the "
                "hostfile), so node ranks are 0 to " +
                Twine(nodes - 1) + "; fix --node_rank or --num_nodes");
  if (addr.empty())
    return fail("--no_ssh needs --master_addr: node 0's address, which every "
                "node can reach (or a hostfile, whose first host is node 0)");
  std::string mpirun = findMpirun();
  if (mpirun.empty())
    return noMpirun();
  allowRunAsRoot(); // ompi-server's too
  Expected<Exports> exports =
      rankExports(/*local=*/false, Resource{addr, mine.slots});
  if (!exports)
    return exports.takeError();
  Expected<std::vector<std::string>> extra = splitShellWords(launcherArgs);
  if (!extra)
    return extra.takeError();

  char host[256] = "";
  gethostname(host, sizeof host - 1);
  NodeInfo self{me, nodes, int(mine.slots.size()), host};
  std::unique_ptr<RendezvousServer> server;
  pid_t ompiServer = 0;
  JobPlacement placement{0, self.localRanks, "", ""};
  if (nodes > 1 && me == 0) {
    // Listening first: a port in use fails before anything starts.
    auto listening = RendezvousServer::listen(masterPort);
    if (!listening)
      return listening.takeError();
    server = std::move(*listening);
    auto started = startOmpiServer(mpirun);
    if (!started)
      return started.takeError();
    ompiServer = started->first;
    std::random_device random;
    std::string service = "ds-launch-" + std::to_string(masterPort) + "-" +
                          utohexstr(random(), /*LowerCase=*/true);
    auto gathered =
        server->gather(self, started->second, service, rendezvousTimeout);
    if (!gathered) {
      kill(ompiServer, SIGTERM);
      waitpid(ompiServer, nullptr, 0);
      return gathered.takeError();
    }
    placement = *gathered;
  } else if (nodes > 1) {
    auto joined = joinRendezvous(addr, masterPort, self, rendezvousTimeout);
    if (!joined)
      return joined.takeError();
    placement = *joined;
  }
  if (nodes > 1) {
    exports->set("DSRT_MPI_JOIN_NODE", std::to_string(me));
    exports->set("DSRT_MPI_JOIN_NODES", std::to_string(nodes));
    exports->set("DSRT_MPI_JOIN_SERVICE", placement.service);
    exports->set("DSRT_MPI_JOIN_RANK_OFFSET",
                 std::to_string(placement.rankOffset));
    exports->set("DSRT_MPI_JOIN_WORLD_SIZE",
                 std::to_string(placement.worldSize));
    exports->set(
        "DSRT_MPI_JOIN_TIMEOUT_S",
        formatv("{0}", format("%g", rendezvousTimeout.getValue())).str());
  }

  std::vector<std::string> command{mpirun};
  if (geteuid() == 0)
    command.push_back("--allow-run-as-root");
  command.insert(command.end(), {"--bind-to", "none"});
  if (mine.slots.size() > physicalCores())
    command.push_back("--oversubscribe");
  if (nodes > 1)
    command.insert(command.end(), {"--ompi-server", placement.serverUri});
  append_range(command, *extra);
  std::vector<std::string> rankCommand;
  if (!noRankShim) {
    std::string self = sys::fs::getMainExecutable(
        argv0, reinterpret_cast<void *>(&physicalCores));
    rankCommand.insert(rankCommand.end(), {self, "--rank-shim", "--"});
  }
  rankCommand.push_back(program);
  append_range(rankCommand, programArgs);
  appendRanks(command, /*local=*/true, mine, mine.slots.size(), *exports,
              rankCommand);
  // Node 0 outlives its ranks: its ompi-server and rendezvous serve the
  // job until they end. The others become mpirun.
  Expected<int> status = runMpirun(mpirun, command, /*local=*/!server, {});
  if (ompiServer) {
    kill(ompiServer, SIGTERM);
    waitpid(ompiServer, nullptr, 0);
  }
  return status;
}

/// --launcher slurm: srun runs `ds-launch --no_ssh` once per node of the
/// allocation; each finds its node rank, the node count and node 0 in the
/// step's SLURM_* variables (slurmDefaults).
Expected<int> runSlurm(bool hasHostfile, const char *argv0) {
  if (hasHostfile || !include.empty() || !exclude.empty())
    return fail("--launcher slurm runs on the nodes of the Slurm allocation; "
                "drop --hostfile/--include/--exclude (srun's own options go "
                "in --launcher_args)");
  if (noSsh || nodeRank >= 0)
    return fail("--launcher slurm starts every node's ds-launch --no_ssh "
                "itself; drop --no_ssh/--node_rank");
  Expected<std::vector<std::string>> extra = splitShellWords(launcherArgs);
  if (!extra)
    return extra.takeError();
  ErrorOr<std::string> srun = sys::findProgramByName("srun");
  std::vector<std::string> command{srun ? *srun : "srun",
                                   "--ntasks-per-node=1"};
  if (numNodes > 0)
    command.push_back("--nodes=" + std::to_string(numNodes));
  append_range(command, *extra);
  command.insert(
      command.end(),
      {sys::fs::getMainExecutable(argv0,
                                  reinterpret_cast<void *>(&physicalCores)),
       "--no_ssh", "--master_port", std::to_string(masterPort),
       "--rendezvous_timeout",
       formatv("{0}", format("%g", rendezvousTimeout.getValue())).str()});
  if (numProcs > 0)
    command.insert(command.end(), {"--num_procs", std::to_string(numProcs)});
  if (!masterAddr.empty())
    command.insert(command.end(), {"--master_addr", masterAddr});
  if (!mpirunPath.empty())
    command.insert(command.end(), {"--mpirun", mpirunPath});
  if (noRankShim)
    command.push_back("--no_rank_shim");
  command.insert(command.end(), {"--", program});
  append_range(command, programArgs);
  if (dryRun) {
    outs() << join(map_range(command, shellQuote), " ") << "\n";
    return 0;
  }
  if (!srun)
    return fail("--launcher slurm needs Slurm's srun on PATH; run inside an "
                "allocation (salloc, sbatch)");
  execv(srun->c_str(), argvOf(command).data());
  return fail("cannot run " + *srun + ": " + std::strerror(errno));
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && StringRef(argv[1]) == "--rank-shim")
    return runRankShim(argc, argv);

  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "ds-launch: DeepSpeed-style launcher; builds and runs the mpirun "
      "command\n\n"
      "  ds-launch [options] -- PROGRAM ARGS...\n");
  auto check = [](Error err) {
    if (!err)
      return;
    WithColor::error(errs(), "ds-launch") << toString(std::move(err)) << "\n";
    std::exit(1);
  };

  check(checkSlotFlags());
  std::string hostfilePath = hostfile;
  if (hostfilePath.empty() && sys::fs::is_regular_file(kDefaultHostfile))
    hostfilePath = kDefaultHostfile;
  StringRef launcherName = launcher;
  if (launcherName.equals_insensitive("slurm")) {
    Expected<int> status = runSlurm(!hostfilePath.empty(), argv[0]);
    if (!status)
      check(status.takeError());
    return *status;
  }
  if (!launcherName.equals_insensitive("openmpi"))
    check(fail("--launcher " + launcher +
               " is not one ds-launch has; use "
               "openmpi (the default) or slurm"));
  if (noSsh) {
    Expected<int> status = runNoSsh(hostfilePath, argv[0]);
    if (!status)
      check(status.takeError());
    return *status;
  }
  bool local = hostfilePath.empty();
  Expected<std::vector<Resource>> resources = chooseResources(hostfilePath);
  if (!resources)
    check(resources.takeError());
  size_t total = 0;
  for (const Resource &resource : *resources)
    total += resource.slots.size();
  Expected<Exports> exports = rankExports(local, *resources);
  if (!exports)
    check(exports.takeError());
  Expected<std::vector<std::string>> extra = splitShellWords(launcherArgs);
  if (!extra)
    check(extra.takeError());

  std::string mpirun = findMpirun();
  std::vector<std::string> command{mpirun.empty() ? "mpirun" : mpirun};
  if (geteuid() == 0)
    command.push_back("--allow-run-as-root");
  // Ranks run threaded kernels; Open MPI would pin each to one core.
  command.insert(command.end(), {"--bind-to", "none"});
  if (local && total > physicalCores())
    command.push_back("--oversubscribe");
  append_range(command, *extra);
  std::vector<std::string> rankCommand;
  if (!noRankShim) {
    std::string self = sys::fs::getMainExecutable(
        argv[0], reinterpret_cast<void *>(&physicalCores));
    rankCommand.insert(rankCommand.end(), {self, "--rank-shim", "--"});
  }
  rankCommand.push_back(program);
  append_range(rankCommand, programArgs);
  appendRanks(command, local, *resources, total, *exports, rankCommand);

  if (dryRun) {
    outs() << join(map_range(command, shellQuote), " ") << "\n";
    return 0;
  }
  if (mpirun.empty())
    check(noMpirun());
  Expected<int> status = runMpirun(mpirun, command, local, *resources);
  if (!status)
    check(status.takeError());
  return *status;
}
