/*===- error.c - status codes, last error, version
 * -------------------------===*/
#include "core/error.h"
#include "dsrt/dsrt.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[512];

int dsrt_fail(int status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(last_error, sizeof(last_error), fmt, args);
  va_end(args);
  return status;
}

const char *dsrt_last_error(void) { return last_error; }

void dsrt_error_clear(void) { last_error[0] = '\0'; }

const char *dsrt_status_string(int status) {
  switch (status) {
  case DSRT_OK:
    return "DSRT_OK";
  case DSRT_ERR_INVALID_ARGUMENT:
    return "DSRT_ERR_INVALID_ARGUMENT";
  case DSRT_ERR_OUT_OF_MEMORY:
    return "DSRT_ERR_OUT_OF_MEMORY";
  case DSRT_ERR_UNSUPPORTED:
    return "DSRT_ERR_UNSUPPORTED";
  case DSRT_ERR_INTERNAL:
    return "DSRT_ERR_INTERNAL";
  case DSRT_ERR_IO:
    return "DSRT_ERR_IO";
  default:
    return "DSRT_ERR_UNKNOWN";
  }
}

#define DSRT_STR2(x) #x
#define DSRT_STR(x) DSRT_STR2(x)

const char *dsrt_version_string(void) {
  return DSRT_STR(DSRT_VERSION_MAJOR) "." DSRT_STR(DSRT_VERSION_MINOR) "." DSRT_STR(
      DSRT_VERSION_PATCH) " (abi " DSRT_STR(DSRT_ABI_VERSION) ", "
                                                              "blas:"
                                                              " " DSRT_BLAS_NAME
                                                              ")";
}

int dsrt_abi_version(void) { return DSRT_ABI_VERSION; }
