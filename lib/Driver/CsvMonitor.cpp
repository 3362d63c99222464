//===- CsvMonitor.cpp - DeepSpeed's csv_monitor files ---------------------===//
#include "ds/Driver/CsvMonitor.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

using namespace ::ds::driver;
using llvm::createStringError;

std::string ds::driver::pythonFloat(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  // The shortest round-trip digits, then Python's layout of them: positional
  // for exponents in [-4, 16), else d.ddde+XX, and ".0" on an integer.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value,
                           std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  size_t e = sci.find('e');
  int exp = std::atoi(sci.c_str() + e + 1);
  std::string sign = sci[0] == '-' ? "-" : "";
  std::string digits;
  for (char c : sci.substr(sign.size(), e - sign.size()))
    if (c != '.')
      digits += c;
  if (exp < -4 || exp >= 16) {
    std::string mantissa = digits.substr(0, 1);
    if (digits.size() > 1)
      mantissa += "." + digits.substr(1);
    char expText[8];
    std::snprintf(expText, sizeof expText, "e%c%02d", exp < 0 ? '-' : '+',
                  std::abs(exp));
    return sign + mantissa + expText;
  }
  std::string whole, fraction;
  if (exp < 0) {
    whole = "0";
    fraction = std::string(-exp - 1, '0') + digits;
  } else if (size_t(exp) + 1 >= digits.size()) {
    whole = digits + std::string(exp + 1 - digits.size(), '0');
  } else {
    whole = digits.substr(0, exp + 1);
    fraction = digits.substr(exp + 1);
  }
  return sign + whole + "." + (fraction.empty() ? "0" : fraction);
}

llvm::Expected<CsvMonitor>
CsvMonitor::open(const ::ds::config::CsvMonitorConfig &config, int rank) {
  CsvMonitor monitor;
  if (!config.enabled || rank != 0)
    return monitor;
  llvm::SmallString<256> dir(config.outputPath);
  llvm::sys::path::append(dir, config.jobName);
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return createStringError("csv_monitor: cannot create %s: %s; set "
                             "csv_monitor.output_path to a writable folder",
                             dir.c_str(), ec.message().c_str());
  monitor.dir = dir.str().str();
  return monitor;
}

llvm::Error
CsvMonitor::write(int64_t samples,
                  const std::vector<std::pair<std::string, double>> &events) {
  if (!enabled())
    return llvm::Error::success();
  for (const auto &[name, value] : events) {
    std::string file = name;
    for (char &c : file)
      if (c == '/' || c == ' ')
        c = '_';
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, file + ".csv");
    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_Append);
    if (ec)
      return createStringError("csv_monitor: cannot write %s: %s", path.c_str(),
                               ec.message().c_str());
    // Python's csv module ends rows with \r\n.
    llvm::StringRef header(name);
    if (header.contains('/'))
      header = header.rsplit('/').second;
    if (started.insert(file).second)
      out << "step," << header << "\r\n";
    out << samples << "," << pythonFloat(value) << "\r\n";
  }
  return llvm::Error::success();
}
