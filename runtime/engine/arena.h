/* crest: memory handed out in large mapped chunks and given back all at
 * once. The restore uses its kinds to decide what each task inherits when
 * it starts as a fork of crest (restore-task.c): a fork copies the page
 * table entries of private memory, the task takes copy-on-write faults in
 * what it writes and unmaps all of it again, for every task of the tree. */
#ifndef CREST_ARENA_H
#define CREST_ARENA_H

#include <stddef.h>

enum arena_kind
{
  ARENA_PRIVATE,  /* ordinary private memory */
  ARENA_SHARED,   /* shared anonymous memory: a fork copies no page table
                     entry of it, a task faults in only the pages it reads;
                     sealed read-only (arena_seal) once written */
  ARENA_DONTFORK, /* private, and absent from every fork (MADV_DONTFORK):
                     for what only crest's own process reads */
  ARENA_FILE,     /* written through a shared mapping of a memfd, then
                     (arena_seal) mapped privately and read-only: a fork
                     copies no page table entry of it and a task faults in
                     only the pages it reads, as with ARENA_SHARED, while a
                     process that writes it after arena_unseal writes its
                     own copy, as in private memory. Without memfd_create
                     (an old kernel, a seccomp filter) it is private
                     anonymous memory, sealed by mprotect alone. */
};

struct arena
{
  struct arena_chunk *head;
  enum arena_kind kind;
};

/* SIZE bytes, 16-aligned, zeroed; NULL (errno set) when out of memory. */
void *
arena_alloc(struct arena *a, size_t size);
/* Every chunk read-only from now on (ARENA_SHARED after its last write:
   a stray write by any process is a fault, not a change the others see).
   -1 (errno set) if a chunk could not be: ARENA_FILE's may still be shared. */
int
arena_seal(struct arena *a);
/* ARENA_FILE: writable again, in this process only. */
void
arena_unseal(struct arena *a);
void
arena_free(struct arena *a);

#endif
