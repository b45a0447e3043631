/* crest: a minimal TAP producer for the C unit tests. */
#ifndef CREST_TAP_H
#define CREST_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

#define tap_ok(cond, ...)                                                                          \
  do                                                                                               \
    {                                                                                              \
      int tap_c_ = !!(cond);                                                                       \
      printf("%sok %d - ", tap_c_ ? "" : "not ", ++tap_n);                                         \
      printf(__VA_ARGS__);                                                                         \
      printf("\n");                                                                                \
      if (!tap_c_)                                                                                 \
        {                                                                                          \
          tap_failed++;                                                                            \
          printf("#   failed at %s:%d\n", __FILE__, __LINE__);                                     \
        }                                                                                          \
      fflush(stdout);                                                                              \
    }                                                                                              \
  while (0)

#define tap_is_str(got, want, ...)                                                                 \
  do                                                                                               \
    {                                                                                              \
      const char *tap_g_ = (got), *tap_w_ = (want);                                                \
      int tap_e_ = (tap_g_ && tap_w_) ? strcmp(tap_g_, tap_w_) == 0 : tap_g_ == tap_w_;            \
      tap_ok(tap_e_, __VA_ARGS__);                                                                 \
      if (!tap_e_)                                                                                 \
        printf("#   got: %s\n#   want: %s\n", tap_g_ ? tap_g_ : "(null)",                          \
               tap_w_ ? tap_w_ : "(null)");                                                        \
    }                                                                                              \
  while (0)

/* A test that cannot run here, counted as a skip with its reason. */
#define tap_skip(...)                                                                              \
  do                                                                                               \
    {                                                                                              \
      printf("ok %d # SKIP ", ++tap_n);                                                            \
      printf(__VA_ARGS__);                                                                         \
      printf("\n");                                                                                \
      fflush(stdout);                                                                              \
    }                                                                                              \
  while (0)

static inline int
tap_done(void)
{
  printf("1..%d\n", tap_n);
  return tap_failed ? 1 : 0;
}

#endif
