//===- Metrics.cpp - Per-step metrics
//--------------------------------------===//
#include "ds/Driver/Metrics.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sys/resource.h>
#include <unistd.h>

using namespace ds::driver;

int64_t ds::driver::peakRssBytes() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024; // Linux reports KiB
}

int64_t ds::driver::currentRssBytes() {
  std::FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f)
    return 0;
  long long size = 0, resident = 0;
  int read = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return read == 2 ? resident * sysconf(_SC_PAGESIZE) : 0;
}

llvm::Expected<MetricsWriter> MetricsWriter::open(llvm::StringRef path) {
  MetricsWriter writer;
  writer.path = path.str();
  if (path.empty())
    return writer;
  writer.out = std::make_unique<std::ofstream>(writer.path, std::ios::trunc);
  if (!*writer.out)
    return llvm::createStringError("%s: cannot open the metrics file for "
                                   "writing",
                                   writer.path.c_str());
  return writer;
}

void MetricsWriter::write(
    const std::vector<std::pair<std::string, Value>> &fields) {
  std::vector<std::pair<std::string, Value>> more = std::move(extra);
  extra.clear();
  if (!out)
    return;
  nlohmann::ordered_json line = nlohmann::ordered_json::object();
  for (auto &[key, value] : fields)
    std::visit([&](auto &&v) { line[key] = v; }, value);
  for (auto &[key, value] : more)
    std::visit([&](auto &&v) { line[key] = v; }, value);
  *out << line.dump() << '\n';
  out->flush();
}
