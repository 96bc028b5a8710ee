/*
 * A statement deadline for SQLite connections, loaded as a run-time extension.
 *
 * better-sqlite3 exposes neither sqlite3_interrupt() nor a progress handler (its SQLite is built
 * with SQLITE_OMIT_PROGRESS_CALLBACK), and a worker thread cannot be terminated while it is inside
 * a native sqlite3_step(). So a watchdog thread of this library calls sqlite3_interrupt(), which
 * SQLite allows from any thread, on every connection whose deadline has passed; the statement then
 * fails with SQLITE_INTERRUPT at its next loop step. SQLite forgets an interrupt when a statement
 * starts on an idle connection, so a deadline that passed just before the statement's first step
 * would be lost: the watchdog repeats the interrupt every REPEAT_NS until the deadline is cleared.
 * Setting a deadline wakes the watchdog only when it sleeps without one: otherwise it wakes at least
 * every REPEAT_NS anyway, so a deadline is enforced at most REPEAT_NS late, and a busy connection
 * pays two uncontended mutex operations per statement, not a thread wake-up.
 * Set from SQL, per connection:
 *   SELECT bp_set_deadline(ms)   -- ms > 0: now + ms; ms <= 0: no deadline (stops the repeats)
 * Build with -Wl,-z,nodelete: SQLite unloads an extension when the connection that loaded it
 * closes, and the watchdog thread must never lose its code.
 *
 * Loading it also sets what only this C API can set, for an engine that keeps hundreds of project
 * files open and closes and reopens them beyond its open-file limit:
 * - the connection's WAL file and shared-memory index stay on disk when the last connection to the
 *   file closes (SQLITE_FCNTL_PERSIST_WAL): creating the two files anew was most of a reopen's cost;
 * - closing does not checkpoint (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE): a file closed for the limit,
 *   or at shutdown, keeps its WAL for the next open (SQLite checkpoints on its own as the WAL
 *   grows), so a close is cheap and writes nothing, and a thousand open files close at once;
 * - no lookaside: SQLite's default reserves and touches 48 KiB per connection, and even a small one
 *   (64 slots of 128 bytes) costs 8 KiB per open file. Measured on this engine's statements, run and
 *   prepared, turning it off made no difference to speed that the noise would show; the lookaside
 *   serves short-lived allocations, which the C allocator serves about as fast.
 * It must be loaded before the connection runs any statement (the lookaside cannot change while
 * in use).
 *
 * And it gives back what an open connection can do without until its next statement, for files
 * kept open but not in use (sqlite-open-files.ts):
 *   SELECT bp_release_memory()
 * - the page cache (sqlite3_db_release_memory): with it goes the cache's first allocation of 20
 *   pages (about 86 KiB), made and touched at the first read; the next statement reads its pages
 *   again from the operating system's cache;
 * - the process's mapping of the WAL index (32 KiB, the -shm file): Linux maps every page of it at
 *   the first read (fault-around), and it stays counted in the process's resident memory. The
 *   pages are dropped from the mapping (MADV_DONTNEED), not from the file: they stay in the
 *   system's page cache, and the next access maps them again with their current content, from
 *   this connection or any other of the process (SQLite maps a file's index once per process).
 */
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1
#include <pthread.h>
#include <time.h>
#ifndef _WIN32
#include <sys/mman.h>
#endif

#define REPEAT_NS 10000000 /* 10 ms */
#define WAL_INDEX_REGION 32768 /* SQLite maps the WAL index in regions of this size */

typedef struct Conn {
  sqlite3 *db;
  sqlite3_int64 deadline_ns; /* 0: none; once passed, the time of the next repeat */
  struct Conn *prev, *next;  /* in `armed` while it has a deadline */
} Conn;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static pthread_once_t started = PTHREAD_ONCE_INIT;
static int start_failed = 0;
/* Only the connections with a deadline: the watchdog walks this list under the lock, and a process
   keeps a thousand project files open (walking them all, 100 times a second, took 4-6% of the
   service's CPU under load and held the lock the statements take meanwhile). */
static Conn *armed = 0;
static int sleeping_unbounded = 0; /* the watchdog waits for a first deadline, not for a time */

static sqlite3_int64 now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (sqlite3_int64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Interrupts overdue connections (again every REPEAT_NS while the deadline stays set); sleeps until
   the earliest deadline or repeat, or until a new deadline is set. */
static void *watchdog(void *arg) {
  (void)arg;
  pthread_mutex_lock(&lock);
  for (;;) {
    sqlite3_int64 now = now_ns(), next = 0;
    Conn *c;
    for (c = armed; c; c = c->next) {
      if (now >= c->deadline_ns) {
        sqlite3_interrupt(c->db);
        c->deadline_ns = now + REPEAT_NS;
      }
      if (next == 0 || c->deadline_ns < next) next = c->deadline_ns;
    }
    if (next == 0) {
      sleeping_unbounded = 1;
      pthread_cond_wait(&wake, &lock);
      sleeping_unbounded = 0;
    } else {
      /* no longer than REPEAT_NS: a deadline set meanwhile sends no signal */
      struct timespec until;
      if (next > now + REPEAT_NS) next = now + REPEAT_NS;
      until.tv_sec = (time_t)(next / 1000000000);
      until.tv_nsec = (long)(next % 1000000000);
      pthread_cond_timedwait(&wake, &lock, &until);
    }
  }
  return 0;
}

static void start_watchdog(void) {
  pthread_condattr_t attr;
  pthread_t thread;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&wake, &attr);
  pthread_condattr_destroy(&attr);
  if (pthread_create(&thread, 0, watchdog, 0) != 0) start_failed = 1;
  else pthread_detach(thread);
}

/* Under the lock. */
static void arm(Conn *c) {
  c->prev = 0;
  c->next = armed;
  if (armed) armed->prev = c;
  armed = c;
}

/* Under the lock. */
static void disarm(Conn *c) {
  if (c->prev) c->prev->next = c->next;
  else armed = c->next;
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = 0;
  c->deadline_ns = 0;
}

/* Read as a double: a fraction of a millisecond is a deadline too (as an integer it would be 0, no
   deadline); at most MAX_MS, so that the nanoseconds cannot overflow. */
#define MAX_MS 1e12
static void set_deadline(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  Conn *c = sqlite3_user_data(ctx);
  double ms = sqlite3_value_double(argv[0]);
  (void)argc;
  pthread_mutex_lock(&lock);
  if (ms > 0) {
    if (c->deadline_ns == 0) arm(c);
    c->deadline_ns = now_ns() + 1 + (sqlite3_int64)((ms < MAX_MS ? ms : MAX_MS) * 1e6);
    if (sleeping_unbounded) pthread_cond_signal(&wake);
  } else if (c->deadline_ns != 0) {
    disarm(c);
  }
  pthread_mutex_unlock(&lock);
  sqlite3_result_null(ctx);
}

#ifndef _WIN32
/* Drops the resident pages of the WAL index's mapping. Only once the WAL is open (the journal
   pointer is then the WAL file, an open one): the index is mapped by then, and asking for a region
   of a file whose index is not open would open it. The engine never uses exclusive locking mode,
   where the index would be in the heap. */
static void unmap_wal_index(sqlite3 *db) {
  sqlite3_file *file = 0, *wal = 0;
  int region;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal) != SQLITE_OK || wal == 0 || wal->pMethods == 0) return;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || file == 0 || file->pMethods == 0 || file->pMethods->iVersion < 2) return;
  /* the regions mapped so far: with bExtend 0 none is added, and p is 0 past the last one */
  for (region = 0;; region++) {
    void volatile *p = 0;
    if (file->pMethods->xShmMap(file, region, WAL_INDEX_REGION, 0, &p) != SQLITE_OK || p == 0) break;
    madvise((void *)p, WAL_INDEX_REGION, MADV_DONTNEED);
  }
}
#endif

static void release_memory(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  (void)argc;
  (void)argv;
  sqlite3_db_release_memory(db);
#ifndef _WIN32
  unmap_wal_index(db);
#endif
  sqlite3_result_null(ctx);
}

/* Runs when the connection closes: after this the watchdog never touches the connection again. */
static void forget(void *arg) {
  Conn *c = arg;
  pthread_mutex_lock(&lock);
  if (c->deadline_ns != 0) disarm(c);
  pthread_mutex_unlock(&lock);
  sqlite3_free(c);
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_sqlitedeadline_init(sqlite3 *db, char **err, const sqlite3_api_routines *api) {
  Conn *c;
  int persist_wal = 1;
  SQLITE_EXTENSION_INIT2(api);
  /* a hint: a VFS without it (none here) deletes the files as before */
  sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist_wal);
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
  /* no lookaside (a size of 0); SQLITE_BUSY if a statement already ran: the default then stays,
     nothing else changes */
  sqlite3_db_config(db, SQLITE_DBCONFIG_LOOKASIDE, (void *)0, 0, 0);
  pthread_once(&started, start_watchdog);
  if (start_failed) {
    *err = sqlite3_mprintf("bp_set_deadline: cannot start the watchdog thread");
    return SQLITE_ERROR;
  }
  c = sqlite3_malloc(sizeof *c);
  if (c == 0) return SQLITE_NOMEM;
  c->db = db;
  c->deadline_ns = 0;
  c->prev = c->next = 0;
  /* DIRECTONLY: callable from top-level SQL only, never from a trigger or view in a project file.
     On failure SQLite calls forget(c) itself. */
  if (sqlite3_create_function_v2(db, "bp_set_deadline", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, c, set_deadline, 0, 0, forget) != SQLITE_OK) return SQLITE_ERROR;
  return sqlite3_create_function(db, "bp_release_memory", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, 0, release_memory, 0, 0);
}
