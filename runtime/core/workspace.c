/*===- workspace.c - the loaded step's workspace, allocated at load -------===*/
/*
 * ds-plan-buffers gives each function of a step one arena; the compiled
 * code asks for all of them at once when it is loaded (its
 * __ds_workspaces_init), so nothing of the workspace is static storage of
 * the artifact: no limit but memory, and the same call can return device
 * memory on a GPU target. Anonymous pages, not touched here: each page is
 * placed by the thread that first writes it. Blocks of 2 MiB and more are
 * aligned to 2 MiB and advised for transparent huge pages.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "core/error.h"
#include "dsrt/dsrt.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { kHugePage = 2 << 20 };

static int64_t page_rounded(int64_t bytes) {
  int64_t page = sysconf(_SC_PAGESIZE);
  return (bytes + page - 1) / page * page;
}

void *dsrt_workspace_alloc(int64_t bytes) {
  if (bytes <= 0) {
    dsrt_fail(DSRT_ERR_INVALID_ARGUMENT,
              "dsrt_workspace_alloc: %lld bytes; a workspace has at least one",
              (long long)bytes);
    return NULL;
  }
  int64_t size = page_rounded(bytes);
  int huge = size >= kHugePage;
  /* Room to move the start to a huge-page boundary. */
  int64_t mapped = huge ? size + kHugePage : size;
  char *p = mmap(NULL, (size_t)mapped, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    dsrt_fail(DSRT_ERR_OUT_OF_MEMORY,
              "cannot allocate the step's workspace of %lld bytes (%s); give "
              "the rank more memory, or shrink the step (micro-batch, "
              "activation checkpointing, ZeRO stage)",
              (long long)bytes, strerror(errno));
    return NULL;
  }
  if (!huge)
    return p;
  char *start =
      (char *)(((uintptr_t)p + kHugePage - 1) & ~(uintptr_t)(kHugePage - 1));
  if (start > p)
    munmap(p, (size_t)(start - p));
  char *end = start + size;
  if (p + mapped > end)
    munmap(end, (size_t)(p + mapped - end));
#ifdef MADV_HUGEPAGE
  /* Advice only: a kernel without THP keeps small pages. */
  madvise(start, (size_t)size, MADV_HUGEPAGE);
#endif
  return start;
}

void dsrt_workspace_free(void *workspace, int64_t bytes) {
  if (workspace && bytes > 0)
    munmap(workspace, (size_t)page_rounded(bytes));
}
