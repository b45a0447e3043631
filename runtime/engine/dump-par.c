/* crest: the tree's injected calls, several processes at once.
 *
 * Each injected call waits twice for its thread to stop (ptrace.c), and
 * the tracer is idle meanwhile: on a host with a second CPU, the tasks
 * could run their calls while the tracer starts or reads another's. The
 * tracer must be the thread that seized them, so the processes take turns
 * in it: each runs inject_open and inject_own (dump-inject.c), unchanged,
 * on a stack of its own (a coroutine), and where it would wait for its
 * thread (pt_wait_stop) it hands the thread back to the loop here
 * (par_yield), which runs the process whose thread has stopped, or takes a
 * new one, and waits for SIGCHLD only when none can go on. The calls that
 * read or fill the tree's shared records (its shared memory, its IPC
 * namespace: inject_shared) and the sessions' ends run one process after
 * the other afterwards, the root's whole session before all.
 *
 * A coroutine is only a stack and its saved registers: par_switch below
 * saves the callee-saved registers and the stack pointer, and takes the
 * other's (swapcontext would also set the signal mask, a system call at
 * each switch, two a stop).
 */
#include <config.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dump-int.h"
#include "util.h"

/* AddressSanitizer is told of each switch (its own record of the stack in
   use); a build without it has nothing to tell. */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/common_interface_defs.h>
#define FIBER_START(save, bottom, size) __sanitizer_start_switch_fiber(save, bottom, size)
#define FIBER_FINISH(save, bottom, size) __sanitizer_finish_switch_fiber(save, bottom, size)
#else
#define FIBER_START(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#define FIBER_FINISH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#endif

#define PAR_WAYS 4             /* processes at once */
#define PAR_STACK (512u << 10) /* each one's stack, below a guard page */

/* Save the callee-saved registers on this stack and its pointer in *FROM;
   take TO's (the System V ABI for x86-64 leaves every other register to
   the caller). */
void
crest_par_switch(void **from, void *to);
__asm__(".text\n"
        ".p2align 4\n"
        ".globl crest_par_switch\n"
        ".hidden crest_par_switch\n"
        ".type crest_par_switch, @function\n"
        "crest_par_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size crest_par_switch, .-crest_par_switch\n");

struct par_slot
{
  void *sp;       /* its saved stack pointer while it waits */
  char *stack;    /* the top of its stack */
  struct dctx *c; /* the dump, and the process it runs now (busy) */
  struct dproc *p;
  size_t idx;
  crest_error_t err;
  int rc;
  bool busy, done;
  bool drop;  /* pt_drop_stop_signals for its process */
  pid_t wait; /* the thread it waits for */
  void *fake; /* AddressSanitizer's record of its stack while it waits */
};

static void *par_home;           /* the loop's stack pointer while a coroutine runs */
static struct par_slot *par_cur; /* the coroutine running, or NULL */
/* AddressSanitizer's: the loop's record while a coroutine runs, and where
   the loop's stack lies. */
static void *par_home_fake;
static const void *par_home_bottom;
static size_t par_home_size;

bool
par_yield(pid_t tid)
{
  struct par_slot *s = par_cur;
  if (!s)
    return false;
  s->wait = tid;
  FIBER_START(&s->fake, par_home_bottom, par_home_size);
  crest_par_switch(&s->sp, par_home);
  FIBER_FINISH(s->fake, &par_home_bottom, &par_home_size);
  return true;
}

static void __attribute__((noreturn)) par_start(void)
{
  struct par_slot *s = par_cur;
  FIBER_FINISH(NULL, &par_home_bottom, &par_home_size);
  s->rc = inject_open(s->c, s->p, &s->err);
  if (s->rc == 0)
    s->rc = inject_own(s->c, s->p, &s->err);
  s->done = true;
  FIBER_START(NULL, par_home_bottom, par_home_size); /* this stack is done with */
  crest_par_switch(&s->sp, par_home);
  abort(); /* never resumed once done */
}

/* Run S until it waits or is done. */
static void
par_resume(struct par_slot *s)
{
  pt_drop_stop_signals(s->drop);
  par_cur = s;
  s->wait = 0;
  FIBER_START(&par_home_fake, s->stack - PAR_STACK, PAR_STACK);
  crest_par_switch(&par_home, s->sp);
  FIBER_FINISH(par_home_fake, NULL, NULL);
  par_cur = NULL;
  s->drop = pt_drop_stop_signals(false);
}

/* S begins process I: a fresh stack, whose first switch returns into
   par_start as if called (the stack 16-byte aligned at the call). */
static void
par_begin(struct par_slot *s, struct dctx *c, size_t i)
{
  uint64_t *top = (uint64_t *)(void *)s->stack;
  top -= 2;
  top[1] = 0;                              /* par_start's return address: none */
  top[0] = (uint64_t)(uintptr_t)par_start; /* crest_par_switch's ret */
  top -= 6;                                /* rbp, rbx, r12-r15 */
  memset(top, 0, 6 * sizeof *top);
  s->sp = top;
  s->c = c, s->p = &c->p[i], s->idx = i;
  s->busy = true, s->done = false, s->drop = false, s->rc = 0;
  par_resume(s);
}

/* S is done: its result kept if it is the first failure by process order. */
static void
par_end(struct par_slot *s, crest_error_t *bad, size_t *bad_idx)
{
  s->busy = false;
  if (s->rc == 0)
    return;
  if (!*bad || s->idx < *bad_idx)
    {
      crest_error_release(bad);
      *bad = s->err, *bad_idx = s->idx;
      s->err = NULL;
    }
  crest_error_release(&s->err);
}

static void
par_step(struct par_slot *s, crest_error_t *bad, size_t *bad_idx)
{
  par_resume(s);
  if (s->done)
    par_end(s, bad, bad_idx);
}

/* Run inject_open and inject_own of processes 1 .. np-1, PAR_WAYS at once,
   in SLOTS. -1 with the first failure (by process order). */
static int
par_run(struct dctx *c, struct par_slot *slots, crest_error_t *err)
{
  crest_error_t bad = NULL;
  size_t next = 1, bad_idx = SIZE_MAX;

  for (;;)
    {
      siginfo_t si;
      int active = 0;
      for (size_t k = 0; k < PAR_WAYS; k++)
        {
          while (!slots[k].busy && !bad && next < c->np)
            {
              if (c->p[next].zombie)
                {
                  next++;
                  continue;
                }
              if (interrupted(&bad) < 0)
                {
                  bad_idx = 0;
                  break;
                }
              par_begin(&slots[k], c, next++);
              if (slots[k].done)
                par_end(&slots[k], &bad, &bad_idx);
            }
          active += slots[k].busy;
        }
      if (!active)
        break;
      /* Whose thread has news? Asked without taking it (WNOWAIT): the
         coroutine waiting for it takes it. News for no one waiting (the
         exit of another thread of a traced process) is for every one to
         look at: each collects its own thread's siblings. */
      memset(&si, 0, sizeof si);
      if (waitid(P_ALL, 0, &si, WEXITED | WSTOPPED | WNOHANG | WNOWAIT | __WALL) == 0 && si.si_pid)
        {
          struct par_slot *s = NULL;
          for (size_t k = 0; k < PAR_WAYS && !s; k++)
            if (slots[k].busy && slots[k].wait == si.si_pid)
              s = &slots[k];
          if (s)
            {
              par_step(s, &bad, &bad_idx);
              continue;
            }
          for (size_t k = 0; k < PAR_WAYS; k++)
            if (slots[k].busy)
              par_step(&slots[k], &bad, &bad_idx);
        }
      pt_wait_event();
    }
  if (!bad)
    return 0;
  *err = bad;
  return -1;
}

/* The sessions of processes 1 .. np-1 opened by par_run: their shared
   records' calls (while nothing failed) and their ends, one after the
   other. */
static int
par_finish(struct dctx *c, int rc, crest_error_t *err)
{
  for (size_t i = 1; i < c->np; i++)
    {
      struct dproc *p = &c->p[i];
      crest_error_t e2 = NULL;
      if (!p->inj)
        continue;
      pt_wait_lone(p->nth == 1);
      if (rc == 0 && (inject_shared(c, p, err) < 0 || interrupted(err) < 0))
        rc = -1;
      if (inject_close(p, rc == 0 ? err : &e2) < 0)
        rc = -1;
      pt_wait_lone(false);
      crest_error_release(&e2);
    }
  return rc;
}

int
inject_tree(struct dctx *c, crest_error_t *err)
{
  struct par_slot slots[PAR_WAYS];
  size_t len = PAR_WAYS * ((size_t)PAR_STACK + PAGE);
  char *mem;
  int rc = 0;

  /* The root alone first: its IPC namespace's objects, which the other
     processes' calls read (ipc_pending). */
  if (c->np && !c->p[0].zombie)
    {
      pt_wait_lone(c->p[0].nth == 1);
      rc = inject_state(c, &c->p[0], err);
      pt_wait_lone(false);
      if (rc < 0 || interrupted(err) < 0)
        return -1;
    }
  memset(slots, 0, sizeof slots);
  mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    {
      /* One after the other, as inject_state. */
      for (size_t i = 1; i < c->np && rc == 0; i++)
        if (!c->p[i].zombie
            && (inject_open(c, &c->p[i], err) < 0 || inject_own(c, &c->p[i], err) < 0))
          rc = -1;
      return par_finish(c, rc, err);
    }
  for (size_t k = 0; k < PAR_WAYS; k++)
    {
      char *base = mem + k * ((size_t)PAR_STACK + PAGE);
      mprotect(base, PAGE, PROT_NONE); /* a guard page below */
      slots[k].stack = base + PAGE + PAR_STACK;
    }
  rc = par_run(c, slots, err);
  munmap(mem, len);
  return par_finish(c, rc, err);
}
