# CREST_TRY_CFLAG(FLAG, ACTION-IF-OK)
# Compile an empty program with FLAG (and -Werror, so that an ignored
# flag counts as unsupported) and run ACTION-IF-OK when it works.
AC_DEFUN([CREST_TRY_CFLAG], [
  AC_MSG_CHECKING([whether $CC accepts $1])
  crest_save_CFLAGS="$CFLAGS"
  CFLAGS="$CFLAGS -Werror $1"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
    [AC_MSG_RESULT([yes]); $2],
    [AC_MSG_RESULT([no])])
  CFLAGS="$crest_save_CFLAGS"
])

# CREST_TRY_LDFLAG(FLAG, ACTION-IF-OK)
# Link an empty program with FLAG and run ACTION-IF-OK when it works.
AC_DEFUN([CREST_TRY_LDFLAG], [
  AC_MSG_CHECKING([whether the linker accepts $1])
  crest_save_LDFLAGS="$LDFLAGS"
  LDFLAGS="$LDFLAGS $1"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
    [AC_MSG_RESULT([yes]); $2],
    [AC_MSG_RESULT([no])])
  LDFLAGS="$crest_save_LDFLAGS"
])
