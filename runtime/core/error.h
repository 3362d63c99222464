/*===- error.h - runtime-internal error reporting --------------------------===*
 *
 * Not part of the ABI: every runtime .c file reports failures through
 * dsrt_fail so dsrt_last_error() always says what went wrong.
 *
 *===-----------------------------------------------------------------------===*/
#ifndef DSRT_CORE_ERROR_H
#define DSRT_CORE_ERROR_H

#if defined(__GNUC__)
#define DSRT_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define DSRT_PRINTF(fmt, args)
#endif

/* Records the message for dsrt_last_error() and returns `status`. */
int dsrt_fail(int status, const char *fmt, ...) DSRT_PRINTF(2, 3);

#endif /* DSRT_CORE_ERROR_H */
