//===- Hostfile.cpp - DeepSpeed's hostfile and --include/--exclude --------===//
#include "Hostfile.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;
using namespace ds::launch;

static Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

Expected<std::vector<Host>> ds::launch::parseHostfile(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fail("cannot read hostfile " + path + ": " +
                buffer.getError().message() + "; check the -H/--hostfile path");
  return parseHostfileText((*buffer)->getBuffer(), path);
}

Expected<std::vector<Host>> ds::launch::parseHostfileText(StringRef text,
                                                          StringRef path) {
  std::vector<Host> hosts;
  SmallVector<StringRef> lines;
  text.split(lines, '\n');
  for (auto [i, raw] : enumerate(lines)) {
    unsigned lineNo = i + 1;
    StringRef line = raw.split('#').first.trim();
    if (line.empty())
      continue;
    SmallVector<StringRef> words;
    line.split(words, ' ', -1, /*KeepEmpty=*/false);
    int64_t slots = 0;
    bool ok = words.size() == 2 && words[1].consume_front("slots=") &&
              !words[1].getAsInteger(10, slots) && slots > 0;
    if (line.contains('\t'))
      ok = false;
    if (!ok)
      return fail(path + ":" + Twine(lineNo) +
                  ": expected \"HOST slots=N\" with N >= 1, got \"" + line +
                  "\"; fix the line or comment it out with #");
    // Slots become one list entry each: a typo must not allocate terabytes.
    if (slots > kMaxSlots)
      return fail(path + ":" + Twine(lineNo) + ": slots=" + Twine(slots) +
                  " is more than the " + Twine(kMaxSlots) +
                  " a host may have; give the host's accelerator or core "
                  "count");
    for (const Host &earlier : hosts)
      if (earlier.name == words[0])
        return fail(path + ":" + Twine(lineNo) + ": host " + words[0] +
                    " is already listed on line " + Twine(earlier.line) +
                    "; list each host once");
    hosts.push_back({words[0].str(), slots, lineNo});
  }
  if (hosts.empty())
    return fail("hostfile " + path +
                " lists no hosts; add lines \"HOST slots=N\"");
  return hosts;
}

namespace {
/// One host's chosen slots: membership as a bit per slot and the order in
/// which --include named them, so a spec naming a host of 65536 slots many
/// times costs linear time, not quadratic.
struct SlotSelection {
  BitVector in;
  std::vector<int64_t> order;
};
} // namespace

/// Parses "HOST[:SLOT[,SLOT...]]" against `pool`; no slot list means every
/// slot of the host (`allSlots`).
static Expected<const Host *> parseNode(ArrayRef<Host> pool, StringRef node,
                                        StringRef flag, StringRef poolName,
                                        std::vector<int64_t> &slots,
                                        bool &allSlots) {
  auto [name, slotList] = node.split(':');
  allSlots = !node.contains(':');
  const Host *host = nullptr;
  for (const Host &candidate : pool)
    if (candidate.name == name)
      host = &candidate;
  if (!host) {
    std::string names;
    for (const Host &candidate : pool)
      names += (names.empty() ? "" : ", ") + candidate.name;
    return fail(flag + ": host '" + name + "' is not in " + poolName +
                " (hosts: " + names + "); use one of those names");
  }
  slots.clear();
  if (allSlots)
    return host;
  SmallVector<StringRef> items;
  slotList.split(items, ',');
  for (StringRef item : items) {
    int64_t slot = 0;
    if (item.trim().getAsInteger(10, slot))
      return fail(flag + ": '" + item + "' in '" + node +
                  "' is not a slot number; write HOST:SLOT[,SLOT...]");
    if (slot < 0 || slot >= host->slots)
      return fail(flag + ": host " + host->name + " has slots 0.." +
                  Twine(host->slots - 1) + " (slots=" + Twine(host->slots) +
                  " in " + poolName + "), no slot " + Twine(slot) +
                  "; pick a slot in that range");
    slots.push_back(slot);
  }
  return host;
}

Expected<std::vector<Resource>> ds::launch::applyFilter(ArrayRef<Host> pool,
                                                        StringRef spec,
                                                        bool isInclude,
                                                        StringRef poolName) {
  StringRef flag = isInclude ? "--include" : "--exclude";
  StringMap<SlotSelection> chosen;
  if (!isInclude)
    for (const Host &host : pool)
      chosen[host.name].in.resize(host.slots, /*t=*/true);

  SmallVector<StringRef> nodes;
  spec.split(nodes, '@');
  std::vector<int64_t> slots;
  for (StringRef node : nodes) {
    bool allSlots = false;
    auto host = parseNode(pool, node, flag, poolName, slots, allSlots);
    if (!host)
      return host.takeError();
    SlotSelection &sel = chosen[(*host)->name];
    sel.in.resize((*host)->slots);
    if (!isInclude) {
      if (allSlots)
        sel.in.reset();
      for (int64_t slot : slots)
        sel.in.reset(slot);
      continue;
    }
    if (allSlots && sel.in.all())
      continue;
    auto add = [&](int64_t slot) {
      if (!sel.in.test(slot)) {
        sel.in.set(slot);
        sel.order.push_back(slot);
      }
    };
    if (allSlots)
      for (int64_t slot = 0; slot < (*host)->slots; ++slot)
        add(slot);
    for (int64_t slot : slots)
      add(slot);
  }
  // --exclude keeps what is left in slot order.
  if (!isInclude)
    for (auto &entry : chosen)
      for (int slot : entry.second.in.set_bits())
        entry.second.order.push_back(slot);

  // Hostfile order decides rank order, whatever order the filter named hosts.
  std::vector<Resource> result;
  for (const Host &host : pool) {
    auto it = chosen.find(host.name);
    if (it != chosen.end() && !it->second.order.empty())
      result.push_back({host.name, it->second.order});
  }
  if (result.empty())
    return fail(flag + " '" + spec + "' leaves no slots to run on; keep at " +
                "least one");
  return result;
}

std::string ds::launch::firstSlurmHost(StringRef list) {
  std::string host;
  bool inBracket = false, pastFirst = false;
  for (char c : list) {
    if (inBracket) {
      if (c == ']')
        inBracket = false;
      else if (c == ',' || c == '-')
        pastFirst = true;
      else if (!pastFirst)
        host += c;
      continue;
    }
    if (c == ',')
      break;
    if (c == '[') {
      inBracket = true;
      pastFirst = false;
      continue;
    }
    host += c;
  }
  return host;
}
