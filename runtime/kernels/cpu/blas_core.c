/*===- blas_core.c - which OpenBLAS kernels ("core") this process runs -----===*
 *
 * OpenBLAS built with DYNAMIC_ARCH (Debian's) holds every x86-64 kernel set
 * and picks one in its load-time constructor: OPENBLAS_CORETYPE if set, else
 * a table of CPU models. 0.3.21's table sends Intel family-6 models it does
 * not list (newer Xeons) to the generic SSE3 kernels, Prescott, through a
 * missing `return` (fixed upstream in 0.3.25): matmuls run 5x below what
 * the CPU's AVX-512 allows. The choice is made before main runs and cannot be
 * redone in-process, so dsrt_blas_core_select re-executes the program once
 * with OPENBLAS_CORETYPE set. docs/blas.md has the whole story.
 *
 *===-----------------------------------------------------------------------===*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "core/error.h"
#include "dsrt/dsrt.h"

#include <cblas.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Set next to OPENBLAS_CORETYPE by the re-execution: what OpenBLAS detected,
 * and the mark that ds, not the user, chose the core. */
#define DETECTED_VAR "DSRT_BLAS_CORE_DETECTED"
/* Test hook: ds treats OpenBLAS's detection as this core. */
#define FAKE_VAR "DSRT_BLAS_FAKE_DETECTED"

/* Kernel sets of OpenBLAS 0.3.21's x86-64 DYNAMIC_ARCH build by the
 * instruction set they need. The level-0 ones are the generic fallbacks
 * (SSE2/SSE3). OPENBLAS_CORETYPE accepts every name here except Cooperlake
 * (0.3.21 only parses the first 24 names; its sgemm is SkylakeX's anyway). */
static const struct {
  const char *name;
  int level; /* 0 SSE, 1 AVX, 2 AVX2+FMA, 3 AVX-512F/BW/DQ/VL */
} cores[] = {
    {"Katmai", 0},       {"Coppermine", 0},  {"Northwood", 0},
    {"Prescott", 0},     {"Banias", 0},      {"Atom", 0},
    {"Core2", 0},        {"Penryn", 0},      {"Dunnington", 0},
    {"Nehalem", 0},      {"Athlon", 0},      {"Opteron", 0},
    {"Opteron_SSE3", 0}, {"Barcelona", 0},   {"Nano", 0},
    {"Bobcat", 0},       {"Sandybridge", 1}, {"Bulldozer", 1},
    {"Piledriver", 1},   {"Steamroller", 1}, {"Excavator", 1},
    {"Haswell", 2},      {"Zen", 2},         {"SkylakeX", 3},
    {"Cooperlake", 3},
};

/* -1 for names this table does not know ("Unknown", other architectures). */
static int core_level(const char *name) {
  for (size_t i = 0; i < sizeof(cores) / sizeof(cores[0]); ++i)
    if (name && !strcasecmp(name, cores[i].name))
      return cores[i].level;
  return -1;
}

/* Whole-word match in a space-separated list. */
static int has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; p && (p = strstr(p, word)); p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
      return 1;
  return 0;
}

static int features_level(const char *features) {
  if (has_word(features, "avx512f") && has_word(features, "avx512bw") &&
      has_word(features, "avx512dq") && has_word(features, "avx512vl"))
    return 3;
  if (has_word(features, "avx2") && has_word(features, "fma"))
    return 2;
  return has_word(features, "avx") ? 1 : 0;
}

static const char *best_core(const char *features, int amd) {
  switch (features_level(features)) {
  case 3:
    return "SkylakeX";
  case 2:
    /* Same AVX2 kernels; Zen's blocking is tuned for AMD's caches. */
    return amd ? "Zen" : "Haswell";
  case 1:
    return "Sandybridge";
  default:
    return "Prescott";
  }
}

const char *dsrt_blas_core_choose(const char *detected, const char *features,
                                  int amd) {
  if (core_level(detected) > 0)
    return NULL; /* OpenBLAS knew the CPU; its table is more specific */
  const char *best = best_core(features, amd);
  return core_level(best) > 0 ? best : NULL;
}

/* The features best_core rests on, with /proc/cpuinfo's names. The compiler's
 * checks include the OS's (XCR0) consent to save the wider registers. */
static const char *cpu_features(void) {
  static char text[64];
  if (text[0])
    return text;
#if defined(__x86_64__)
  __builtin_cpu_init();
  snprintf(text, sizeof text, "%s%s%s%s%s%s%s",
           __builtin_cpu_supports("avx") ? "avx " : "",
           __builtin_cpu_supports("avx2") ? "avx2 " : "",
           __builtin_cpu_supports("fma") ? "fma " : "",
           __builtin_cpu_supports("avx512f") ? "avx512f " : "",
           __builtin_cpu_supports("avx512bw") ? "avx512bw " : "",
           __builtin_cpu_supports("avx512dq") ? "avx512dq " : "",
           __builtin_cpu_supports("avx512vl") ? "avx512vl " : "");
  size_t n = strlen(text);
  if (n)
    text[n - 1] = '\0';
  else
    strcpy(text, "sse only");
#else
  strcpy(text, "not x86-64");
#endif
  return text;
}

static int cpu_is_amd(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_is("amd");
#else
  return 0;
#endif
}

int dsrt_blas_info_get(dsrt_blas_info *out) {
  if (!out)
    return dsrt_fail(DSRT_ERR_INVALID_ARGUMENT, "dsrt_blas_info_get: out is "
                                                "NULL");
  static char library[PATH_MAX];
  static char version[32];
  memset(out, 0, sizeof *out);
  out->config = openblas_get_config();
  out->core = openblas_get_corename();
  out->dynamic = strstr(out->config, "DYNAMIC_ARCH") != NULL;
  if (sscanf(out->config, "OpenBLAS %31s", version) != 1)
    strcpy(version, "unknown");
  out->version = version;
  Dl_info where;
  if (!library[0] && dladdr((void *)&openblas_get_corename, &where) &&
      where.dli_fname && !realpath(where.dli_fname, library))
    snprintf(library, sizeof library, "%s", where.dli_fname);
  out->library = library;
  out->features = cpu_features();
  out->best = best_core(out->features, cpu_is_amd());

  const char *forced = getenv("OPENBLAS_CORETYPE");
  const char *fake = getenv(FAKE_VAR);
  if (forced && *forced) {
    const char *detected = getenv(DETECTED_VAR);
    out->source = detected ? DSRT_BLAS_CORE_CHOSEN : DSRT_BLAS_CORE_USER;
    out->detected = detected ? detected : "";
  } else {
    out->source = DSRT_BLAS_CORE_DETECTED;
    out->detected = fake && *fake ? fake : out->core;
  }
  int level = core_level(out->core), best = core_level(out->best);
  out->generic = level == 0 && best > 0;
  out->unsupported = level > best;
  return DSRT_OK;
}

int dsrt_blas_core_select(char **argv) {
  dsrt_blas_info info;
  dsrt_blas_info_get(&info);
  if (info.source != DSRT_BLAS_CORE_DETECTED || !info.dynamic)
    return DSRT_OK; /* the user's choice, or one kernel set to run */
  const char *choice =
      dsrt_blas_core_choose(info.detected, info.features, cpu_is_amd());
  if (!choice)
    return DSRT_OK;
  setenv("OPENBLAS_CORETYPE", choice, 1);
  setenv(DETECTED_VAR, info.detected, 1);
  if (argv && argv[0])
    execv("/proc/self/exe", argv);
  int err = errno;
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv(DETECTED_VAR);
  fprintf(stderr,
          "ds: warning: OpenBLAS runs its generic %s kernels on a CPU with "
          "%s; re-running with OPENBLAS_CORETYPE=%s failed (%s); set "
          "OPENBLAS_CORETYPE=%s yourself\n",
          info.detected, info.features, choice,
          argv && argv[0] ? strerror(err) : "no argv", choice);
  return dsrt_fail(DSRT_ERR_UNSUPPORTED,
                   "dsrt_blas_core_select: execv /proc/self/exe: %s",
                   strerror(err));
}
