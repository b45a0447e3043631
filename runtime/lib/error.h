/* crest: error reporting shared by the front end and the engine.
 *
 * A function that can fail takes a crest_error_t *err, returns a negative
 * value and fills *err with an errno and a message. Callers add context with
 * crest_error_wrap() and pass it up. A verb returns it to main(), which
 * prints the final line once with crest_error_report(): on stderr, and in
 * the --log file in the --log-format asked for. */
#ifndef CREST_ERROR_H
#define CREST_ERROR_H

#include <stdarg.h>
#include <stdbool.h>

typedef struct crest_error_s
{
  int status; /* errno, or 0 when none applies */
  char *msg;  /* heap allocated, NULL when no error */
  bool sys;   /* STATUS is the errno of a call that failed (crest_error_errno) */
} * crest_error_t;

/* Fill *err (which must be empty) and return -1. errno_ may be 0. */
int
crest_error_make(crest_error_t *err, int errno_, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, taking errno as the reason: a call that failed. */
#define crest_error_errno(err, ...) crest_error_sys((err), errno, __VA_ARGS__)
int
crest_error_sys(crest_error_t *err, int errno_, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefix the message of an existing error with more context: "CONTEXT: old". */
int
crest_error_wrap(crest_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print "crest: MESSAGE[: strerror]" on stderr (and the log), release it. */
void
crest_error_report(crest_error_t *err);
/* Release without printing. */
void
crest_error_release(crest_error_t *err);
/* The message with its errno text, newly allocated. A refusal (ENOTSUP,
   or EAGAIN for a passing state, given to crest_error_make: crest will not
   do it, no call failed) has none: its message says why. A call's failure
   is made with crest_error_errno or crest_error_sys. */
char *
crest_error_text(const crest_error_t err);

#endif
