/*
 * malloc_trim(3) for the service's idle spells (lib/idle-memory.ts), as a Node-API module.
 *
 * The C allocator keeps what a process frees: glibc gives memory back to the system only from the
 * top of each arena, so after start-up (V8's compiler zones, module loading, the first requests)
 * megabytes of free pages stay resident in the middle of its heaps. malloc_trim(0) gives every
 * free page of every arena back (measured: 4.4 MiB of an idle service's 83). Elsewhere than glibc
 * there is nothing to call: `trim` does nothing and answers false.
 *
 * It also drops the pages of the loaded program and libraries' read-only segments that the process
 * has touched: RSS counts every one, and start-up touches about 15 MiB of the node binary that
 * serving never needs again (relocation tables, initialisation, the snapshot it starts from).
 * `dropFilePages` takes them out of the process's page tables with MADV_DONTNEED: they stay in the
 * system's page cache, shared with other processes, and a page used again is mapped again from
 * there (a minor fault), as Android does for idle apps. A page the process has written (copied on
 * write) would come back from the file without what was written, so only these qualify:
 * - pages of a loaded object's segments that are not writable (dl_iterate_phdr, which holds the
 *   loader's lock: no library is unloaded meanwhile, so no address changes hands), and not of its
 *   RELRO range (relocated, then made read-only);
 * - and, page by page (/proc/self/pagemap), only those present and still the file's: not a copy
 *   (a debugger's or uprobe's breakpoint), and not swapped out (a copy in swap looks like nothing in
 *   the mapping's counters; the first version, which read /proc/self/smaps, dropped such a copy of
 *   a relocated page, and the next call through it crashed the process).
 * What no check can exclude is a write between a page's check and its drop by another thread into
 * a segment it made writable for the time (a library with text relocations being loaded, a
 * debugger's breakpoint): no loaded object here has text relocations, and a lost breakpoint is a
 * debugger's loss. Elsewhere than Linux with glibc it does nothing and answers 0.
 *
 * Node-API is a stable C ABI, and the four functions used here are declared below instead of taken
 * from Node's headers, which a machine may lack: only a C compiler is needed, as for the embedded
 * engine's extension. Node loads the module through napi_register_module_v1.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h> /* defines __GLIBC__ where it is glibc's */
#ifdef __GLIBC__
#include <malloc.h>
#endif
#if defined(__linux__) && defined(__GLIBC__)
#define DROP_FILE_PAGES 1
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>
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

#ifdef DROP_FILE_PAGES
#define PRESENT (1ULL << 63)
#define SWAPPED (1ULL << 62)
#define FILE_PAGE (1ULL << 61) /* the file's own page (or shared), not a private copy */
#define BATCH 512

struct drop {
  int pagemap;
  uintptr_t page;
  double bytes;
};

static void advise(struct drop *d, uintptr_t start, uintptr_t end) {
  if (end > start && madvise((void *)start, end - start, MADV_DONTNEED) == 0) d->bytes += end - start;
}

/* Drops the pages of [start, end) that are present and the file's own, in runs. */
static void drop_range(struct drop *d, uintptr_t start, uintptr_t end) {
  uint64_t entries[BATCH];
  uintptr_t run = 0; /* start of the current run of droppable pages, 0: none */
  for (uintptr_t at = start; at < end;) {
    size_t n = (end - at) / d->page < BATCH ? (end - at) / d->page : BATCH;
    ssize_t got = pread(d->pagemap, entries, n * sizeof entries[0], (off_t)(at / d->page * sizeof entries[0]));
    if (got <= 0) { /* the rest unread: nothing of it is dropped */
      if (run) advise(d, run, at);
      return;
    }
    n = (size_t)got / sizeof entries[0];
    for (size_t i = 0; i < n; i++, at += d->page) {
      uint64_t e = entries[i];
      bool droppable = (e & PRESENT) && (e & FILE_PAGE) && !(e & SWAPPED);
      if (droppable && !run) run = at;
      if (!droppable && run) advise(d, run, at), run = 0;
    }
  }
  if (run) advise(d, run, end);
}

static int each_object(struct dl_phdr_info *info, size_t size, void *data) {
  struct drop *d = data;
  uintptr_t relro_start = 0, relro_end = 0, mask = ~(uintptr_t)(d->page - 1);
  (void)size;
  /* the kernel's own page (vdso): nothing of a file's */
  if (info->dlpi_addr == (uintptr_t)getauxval(AT_SYSINFO_EHDR)) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_GNU_RELRO) continue;
    relro_start = (info->dlpi_addr + ph->p_vaddr) & mask;
    relro_end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + d->page - 1) & mask;
  }
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || ph->p_memsz == 0) continue;
    /* the pages wholly inside the segment, less any of the RELRO range */
    uintptr_t start = (info->dlpi_addr + ph->p_vaddr + d->page - 1) & mask;
    uintptr_t end = (info->dlpi_addr + ph->p_vaddr + ph->p_filesz) & mask;
    if (relro_end > start && relro_start < end) {
      if (relro_start > start) drop_range(d, start, relro_start);
      if (relro_end < end) drop_range(d, relro_end, end);
    } else {
      drop_range(d, start, end);
    }
  }
  return 0;
}
#endif

/* dropFilePages(): bytes of pages dropped */
static napi_value drop_file_pages(napi_env env, napi_callback_info info) {
  napi_value result = 0;
  double bytes = 0;
  (void)info;
#ifdef DROP_FILE_PAGES
  struct drop d = {open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), (uintptr_t)sysconf(_SC_PAGESIZE), 0};
  if (d.pagemap >= 0) {
    dl_iterate_phdr(each_object, &d);
    close(d.pagemap);
    bytes = d.bytes;
  }
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
