/* crest: error reporting. */
#include <config.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "util.h"
#include "log.h"

static char *
vformat(const char *fmt, va_list ap)
{
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    abort();
  return s;
}

static int
error_vmake(crest_error_t *err, int errno_, bool sys, const char *fmt, va_list ap)
{
  if (err == NULL)
    return -1;
  if (*err != NULL)
    crest_error_release(err);
  *err = xzalloc(sizeof(**err));
  (*err)->status = errno_;
  (*err)->sys = sys;
  (*err)->msg = vformat(fmt, ap);
  return -1;
}

int
crest_error_make(crest_error_t *err, int errno_, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  error_vmake(err, errno_, false, fmt, ap);
  va_end(ap);
  return -1;
}

int
crest_error_sys(crest_error_t *err, int errno_, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  error_vmake(err, errno_, true, fmt, ap);
  va_end(ap);
  return -1;
}

int
crest_error_wrap(crest_error_t *err, const char *fmt, ...)
{
  va_list ap;
  char *ctx, *joined;
  if (err == NULL || *err == NULL)
    return -1;
  va_start(ap, fmt);
  ctx = vformat(fmt, ap);
  va_end(ap);
  joined = xasprintf("%s: %s", ctx, (*err)->msg);
  free(ctx);
  free((*err)->msg);
  (*err)->msg = joined;
  return -1;
}

char *
crest_error_text(const crest_error_t err)
{
  if (err == NULL)
    return xstrdup("unknown error");
  if (err->status && ((err->status != ENOTSUP && err->status != EAGAIN) || err->sys))
    return xasprintf("%s: %s", err->msg, strerror(err->status));
  return xstrdup(err->msg);
}

void
crest_error_release(crest_error_t *err)
{
  if (err == NULL || *err == NULL)
    return;
  free((*err)->msg);
  free(*err);
  *err = NULL;
}

void
crest_error_report(crest_error_t *err)
{
  char *text;
  if (err == NULL || *err == NULL)
    return;
  text = crest_error_text(*err);
  crest_log(CREST_LOG_ERROR, "%s", text);
  free(text);
  crest_error_release(err);
}
