/* A native backtrace when a process crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT),
 * for machines without gdb (the GPU machine has none). Preload it:
 *
 *   cc -shared -fPIC -O1 -g -o /tmp/segv_backtrace.so scripts/segv_backtrace.c
 *   LD_PRELOAD=/tmp/segv_backtrace.so python3 crash.py
 *
 * Python's faulthandler (python -X faulthandler, pytest) works with it: it prints the
 * Python frames, then passes the signal on to this handler. Frames print as
 * "library(symbol+offset) [address]"; one printed as "library(+OFFSET)" (no exported
 * symbol) resolves, in a library built with -g, with
 *   addr2line -f -C -i -e LIBRARY OFFSET
 * The handler then restores the default action and re-raises, so the exit status
 * is the signal's as before. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char alt_stack[1 << 16];

static void write_str(const char* s) {
  ssize_t ignored = write(STDERR_FILENO, s, strlen(s));
  (void)ignored;
}

static void on_fatal_signal(int sig) {
  void* frames[128];
  write_str("\nsegv_backtrace: fatal signal ");
  write_str(strsignal(sig));
  write_str(", native backtrace:\n");
  const int n = backtrace(frames, 128);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  stack_t ss;
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof(alt_stack);
  ss.ss_flags = 0;
  sigaltstack(&ss, NULL);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_fatal_signal;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  const int signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); ++i) sigaction(signals[i], &sa, NULL);
}
