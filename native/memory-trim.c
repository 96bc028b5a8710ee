/*
 * malloc_trim(3) for the service's idle spells (lib/idle-memory.ts), as a Node-API module.
 *
 * The C allocator keeps what a process frees: glibc gives memory back to the system only from the
 * top of each arena, so after start-up (V8's compiler zones, module loading, the first requests)
 * megabytes of free pages stay resident in the middle of its heaps. malloc_trim(0) gives every
 * free page of every arena back (measured: 4.4 MiB of an idle service's 83). Elsewhere than glibc
 * there is nothing to call: `trim` does nothing and answers false.
 *
 * It also drops the pages of read-only file mappings that the process has touched (the node
 * binary's code and data, shared libraries): RSS counts every one, and start-up touches about
 * 15 MiB of the node binary that serving never needs again (relocation tables, initialisation,
 * the snapshot it starts from). `dropFilePages` takes them out of the process's page tables with
 * MADV_DONTNEED: they stay in the system's page cache, shared with other processes, and a page
 * used again is mapped again from there (a minor fault), as Android does for idle apps. Only
 * private mappings that are not writable and hold no page of their own qualify: a page written
 * (copied on write: the relocated data made read-only after, RELRO) would come back from the file
 * without what was written, so a mapping with any anonymous page is left as it is. Elsewhere than
 * Linux it does nothing and answers 0.
 *
 * Node-API is a stable C ABI, and the four functions used here are declared below instead of taken
 * from Node's headers, which a machine may lack: only a C compiler is needed, as for the embedded
 * engine's extension. Node loads the module through napi_register_module_v1.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h> /* defines __GLIBC__ where it is glibc's */
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __linux__
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#endif

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status; /* 0: napi_ok */
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);

extern napi_status napi_create_function(napi_env env, const char *name, size_t length, napi_callback cb, void *data, napi_value *result);
extern napi_status napi_set_named_property(napi_env env, napi_value object, const char *name, napi_value value);
extern napi_status napi_get_boolean(napi_env env, bool value, napi_value *result);
extern napi_status napi_create_double(napi_env env, double value, napi_value *result);

/* trim(): true when memory was given back */
static napi_value trim(napi_env env, napi_callback_info info) {
  napi_value result = 0;
  bool released = false;
  (void)info;
#ifdef __GLIBC__
  released = malloc_trim(0) != 0;
#endif
  napi_get_boolean(env, released, &result);
  return result;
}

#ifdef __linux__
/* one mapping of /proc/self/smaps: its range, and whether its pages may be dropped */
struct mapping {
  unsigned long start, end;
  bool droppable;
};

static unsigned long drop(const struct mapping *m) {
  if (!m->droppable || m->end <= m->start) return 0;
  return madvise((void *)m->start, m->end - m->start, MADV_DONTNEED) == 0 ? m->end - m->start : 0;
}

/* a mapping's first line: "start-end perms offset dev inode [path]" */
static bool header(const char *line, struct mapping *m) {
  char perms[8] = "", path[8] = "";
  int fields = sscanf(line, "%lx-%lx %7s %*s %*s %*s %7s", &m->start, &m->end, perms, path);
  if (fields < 3) return false;
  /* private, not writable, a file's (a path, not [heap], [stack] or [vdso]) */
  m->droppable = fields == 4 && perms[1] != 'w' && perms[3] == 'p' && path[0] == '/';
  return true;
}
#endif

/* dropFilePages(): bytes of mappings whose pages were dropped */
static napi_value drop_file_pages(napi_env env, napi_callback_info info) {
  napi_value result = 0;
  double bytes = 0;
  (void)info;
#ifdef __linux__
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[512];
  struct mapping m = {0, 0, false}, next;
  long anonymous;
  while (f && fgets(line, sizeof line, f)) {
    /* the rest of a line longer than the buffer (a long path) is skipped */
    if (strchr(line, '\n') == 0) {
      int c;
      while ((c = fgetc(f)) != EOF && c != '\n') {}
    }
    /* a field ("Rss:", "Anonymous:", "VmFlags:") starts with a capital, a mapping with its address */
    if (line[0] >= 'A' && line[0] <= 'Z') {
      if (sscanf(line, "Anonymous: %ld kB", &anonymous) == 1 && anonymous > 0) m.droppable = false;
    } else if (header(line, &next)) {
      bytes += drop(&m);
      m = next;
    }
  }
  bytes += drop(&m);
  if (f) fclose(f);
#endif
  napi_create_double(env, bytes, &result);
  return result;
}

__attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  napi_value fn = 0;
  if (napi_create_function(env, "trim", (size_t)-1, trim, 0, &fn) != 0) return 0;
  if (napi_set_named_property(env, exports, "trim", fn) != 0) return 0;
  if (napi_create_function(env, "dropFilePages", (size_t)-1, drop_file_pages, 0, &fn) != 0) return 0;
  if (napi_set_named_property(env, exports, "dropFilePages", fn) != 0) return 0;
  return exports;
}
