/* crest: logging to stderr or to --log FILE, as text or as crun-style JSON. */
#include <config.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "log.h"
#include "util.h"

static FILE *log_file;
static int log_json;
static int log_debug;
/* --work-path's dump.log or restore.log: every message, debug included, as
   CRIU's logs there hold everything an engine shows a user after a failure. */
static FILE *work_file;

int
crest_log_work_file(const char *path, crest_error_t *err)
{
  if (work_file)
    fclose(work_file);
  work_file = fopen(path, "we");
  if (work_file == NULL)
    return crest_error_errno(err, "open the log `%s`", path);
  return 0;
}

static void
work_log(const char *level, const char *msg)
{
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  fprintf(work_file, "(%5ld.%06ld) %s: %s\n", (long)now.tv_sec, now.tv_nsec / 1000, level, msg);
  fflush(work_file);
}

int
crest_log_init(const char *path, const char *format, int debug)
{
  log_debug = debug;
  if (format && strcmp(format, "json") == 0)
    log_json = 1;
  else if (format && strcmp(format, "text") != 0)
    {
      fprintf(stderr, "crest: unknown log format `%s` (expected text or json)\n", format);
      return -1;
    }
  if (path)
    {
      log_file = fopen(path, "ae");
      if (log_file == NULL)
        {
          fprintf(stderr, "crest: open log file `%s`: %s\n", path, strerror(errno));
          return -1;
        }
    }
  return 0;
}

static void
json_escape(FILE *f, const char *s)
{
  for (; *s; s++)
    {
      unsigned char c = (unsigned char)*s;
      if (c == '"' || c == '\\')
        fprintf(f, "\\%c", c);
      else if (c < 0x20)
        fprintf(f, "\\u%04x", c);
      else
        fputc(c, f);
    }
}

void
crest_log(enum crest_log_level level, const char *fmt, ...)
{
  static const char *const names[] = { "error", "warning", "info", "debug" };
  cleanup_free char *msg = NULL;
  va_list ap;

  if (level == CREST_LOG_DEBUG && !log_debug && !work_file)
    return;
  va_start(ap, fmt);
  if (vasprintf(&msg, fmt, ap) < 0)
    msg = NULL;
  va_end(ap);
  if (msg == NULL)
    return;
  if (work_file)
    work_log(names[level], msg);
  if (level == CREST_LOG_DEBUG && !log_debug)
    return;

  if (log_file)
    {
      if (log_json)
        {
          char ts[64];
          struct timespec now;
          struct tm tm;
          clock_gettime(CLOCK_REALTIME, &now);
          gmtime_r(&now.tv_sec, &tm);
          /* crun's shape: seconds with nanoseconds, UTC. */
          strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
          snprintf(ts + strlen(ts), sizeof ts - strlen(ts), ".%09ldZ", (long)now.tv_nsec);
          fprintf(log_file, "{\"msg\":\"");
          json_escape(log_file, msg);
          fprintf(log_file, "\",\"level\":\"%s\",\"time\":\"%s\"}\n", names[level], ts);
        }
      else
        fprintf(log_file, "%s: %s\n", names[level], msg);
      fflush(log_file);
    }
  /* Errors always reach the terminal too: a user who passed --log still
     needs the one line that says what failed. */
  if (log_file == NULL || level == CREST_LOG_ERROR)
    {
      if (level == CREST_LOG_ERROR)
        fprintf(stderr, "crest: %s\n", msg);
      else
        fprintf(stderr, "crest: %s: %s\n", names[level], msg);
    }
}

void
crest_progress(const char *fmt, ...)
{
  va_list ap;
  fputs("crest: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}
