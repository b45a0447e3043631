/* Unit tests of the OCI config code: a config text parsed, or NULL with
   the reason as a TAP comment. */
#ifndef CREST_CONFIG_TAP_H
#define CREST_CONFIG_TAP_H

#include <stdio.h>
#include "oci-config.h"

static inline yajl_val
parse(const char *text)
{
  crest_error_t err = NULL;
  yajl_val v = NULL;
  if (crest_config_parse(text, &v, &err) < 0)
    {
      printf("# parse failed: %s\n", err->msg);
      crest_error_release(&err);
      return NULL;
    }
  return v;
}

#endif
