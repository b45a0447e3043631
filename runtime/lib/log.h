/* crest: logging (stderr, or --log FILE in text or json format). */
#ifndef CREST_LOG_H
#define CREST_LOG_H

#include "error.h"

enum crest_log_level
{
  CREST_LOG_ERROR,
  CREST_LOG_WARNING,
  CREST_LOG_INFO,
  CREST_LOG_DEBUG,
};

/* path NULL: stderr. json: one JSON object per line, as crun writes them. */
int
crest_log_init(const char *path, const char *format, int debug);
/* Also write every message, debug ones included, to PATH (truncated). */
int
crest_log_work_file(const char *path, crest_error_t *err);
void
crest_log(enum crest_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Progress for long work, always on stderr; callers decide when to speak. */
void
crest_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define crest_debug(...) crest_log(CREST_LOG_DEBUG, __VA_ARGS__)
#define crest_warn(...) crest_log(CREST_LOG_WARNING, __VA_ARGS__)

#endif
