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
 *   SELECT bp_set_deadline(ms)   -- ms > 0: now + ms; ms <= 0: no deadline (stops the repeats);
 *                                   ms < 0 also releases the connection's memory (below)
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
 *   serves short-lived allocations, which the C allocator serves about as fast;
 * - plans that do not depend on bound values (SQLITE_DBCONFIG_ENABLE_QPSG). Without it, a parameter
 *   the planner reads (a bound LIMIT or OFFSET, which every read of the passthrough has) marks its
 *   statement expired whenever it is bound, and better-sqlite3 binds at every run: each read parsed
 *   and planned its statement again (about 20 us of a 200 us read).
 * It must be loaded before the connection runs any statement (the lookaside cannot change while
 * in use).
 *
 * And it gives back what an open connection can do without until its next statement, for files
 * kept open but not in use (sqlite-open-files.ts), with SELECT bp_set_deadline(-1):
 * - the page cache (sqlite3_db_release_memory): with it goes the cache's first allocation of 20
 *   pages (about 86 KiB), made and touched at the first read; the next statement reads its pages
 *   again from the operating system's cache;
 * - the process's mapping of the WAL index (32 KiB, the -shm file) but its first page: Linux maps
 *   every page of it at the first read (fault-around), and it stays counted in the process's
 *   resident memory. The pages are dropped from the mapping (MADV_DONTNEED), not from the file:
 *   they stay in the system's page cache, and the next access maps them again with their current
 *   content, from this connection or any other of the process (SQLite maps a file's index once per
 *   process). The first page holds the index's header, which every transaction reads; a reader of a
 *   WAL whose frames are all copied into the database reads nothing else of it (it reads the
 *   database file), so once the WAL is checkpointed a released file is read without a fault.
 * - and when the WAL holds frames not yet copied into the database, it queues the file for a
 *   checkpoint by a thread of this library (below).
 *
 * A small project's WAL stays below SQLite's own checkpoint (1000 pages) for as long as the project
 * lives, and every read of a released file would look its pages up in the rest of the index, which
 * the release dropped and the read faults in again (about 70 us a read, 1,000 projects read at
 * random). So the checkpoint thread copies the WAL of each file queued into its database (it never
 * waits for a lock), on a connection of its own, opened for it and closed after, and drops the
 * index pages the copy read. That connection's file descriptor stays open until the engine's last
 * connection to the file closes (SQLite keeps it while another connection of the process holds a
 * lock on the file): one more per open project (sqlite-open-limit.ts). With synchronous =
 * NORMAL a checkpoint is where the WAL and the database are synced (two fsyncs): on no thread that
 * serves requests, and on no JavaScript worker (each costs about 16 MiB). A file is queued once
 * however often it is found, in the order found, at most CHECKPOINT_QUEUE_MAX at a time (the rest
 * are found again at their next release). And:
 *   SELECT bp_checkpoints_forget(prefix) -- see checkpoints_forget
 *   SELECT bp_checkpoints_pending()      -- files queued or being checkpointed (tests)
 *   SELECT bp_reprepares()               -- the connection's statements prepared again (tests)
 */
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1
#include <pthread.h>
#include <time.h>
#ifndef _WIN32
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#define REPEAT_NS 10000000 /* 10 ms */
#define WAL_INDEX_REGION 32768 /* SQLite maps the WAL index in regions of this size */
/* In the index's first region (https://www.sqlite.org/walformat.html): the last valid frame
   (mxFrame, in the first copy of the header) and the frames copied into the database (nBackfill,
   first field of the checkpoint information after the header's two copies); both u32. */
#define WAL_MX_FRAME 16
#define WAL_N_BACKFILL 96

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

static void release(sqlite3 *db);

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
  /* through the statement each connection keeps prepared for its deadline: a function of its own
     (SELECT bp_release_memory(), until 2026-11-28) was parsed and planned at every release, which
     a thousand projects read at random run once a request (about 7 us of its 270) */
  if (ms < 0) release(c->db);
  sqlite3_result_null(ctx);
}

#ifndef _WIN32
/* Drops the resident pages of the WAL index's mapping, but the first one; returns 1 when the WAL
   holds frames not yet copied into the database. Only once the WAL is open (the journal pointer is
   then the WAL file, an open one): the index is mapped by then, and asking for a region of a file
   whose index is not open would open it. The engine never uses exclusive locking mode, where the
   index would be in the heap. The header is read without the lock SQLite reads it under: a
   hint, which a concurrent writer can make stale at once. */
static int unmap_wal_index(sqlite3 *db) {
  sqlite3_file *file = 0, *wal = 0;
  long page = sysconf(_SC_PAGESIZE);
  int region, backlog = 0;
  if (page <= 0 || page > WAL_INDEX_REGION) page = WAL_INDEX_REGION;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal) != SQLITE_OK || wal == 0 || wal->pMethods == 0) return 0;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || file == 0 || file->pMethods == 0 || file->pMethods->iVersion < 2) return 0;
  /* the index's regions: with bExtend 0 the file is not grown and p is 0 past its last region (one
     not mapped yet is mapped now: address space, none of it resident) */
  for (region = 0;; region++) {
    void volatile *p = 0;
    long keep = region == 0 ? page : 0;
    if (file->pMethods->xShmMap(file, region, WAL_INDEX_REGION, 0, &p) != SQLITE_OK || p == 0) break;
    if (region == 0) {
      volatile unsigned char *hdr = (volatile unsigned char *)p;
      backlog = *(volatile unsigned int *)(hdr + WAL_MX_FRAME) != *(volatile unsigned int *)(hdr + WAL_N_BACKFILL);
    }
    madvise((char *)p + keep, WAL_INDEX_REGION - keep, MADV_DONTNEED);
  }
  return backlog;
}

/* ---- the checkpoint thread */
#define CHECKPOINT_QUEUE_MAX 4096
typedef struct Due {
  struct Due *next;
  char path[1]; /* the database file's, NUL-terminated */
} Due;

static pthread_mutex_t due_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t due_wake = PTHREAD_COND_INITIALIZER;
static pthread_once_t checkpointer_started = PTHREAD_ONCE_INIT;
static int checkpointer_failed = 0;
static Due *due_first = 0, *due_last = 0;
static int due_count = 0; /* queued, plus the one being checkpointed */
static const char *due_running = 0; /* the path being checkpointed, or 0 */

/* Copies the WAL of `path` into its database, on a connection of its own with the engine's
   settings (the WAL and index stay, closing does not checkpoint again), and empties the WAL when
   nothing holds it (TRUNCATE; with no busy handler it waits for no lock, and only copies what it
   can when another connection writes or reads an older snapshot): a WAL left full would be copied
   again after each recovery of the index, which sets it back to nothing copied (the file closed by
   every connection, or the service restarted). The engine forgets a file before it deletes or
   closes it (bp_checkpoints_forget); one queued again meanwhile by a worker that had it open may
   find it deleted: opening then fails, or, in the moment between the deletion of the database and
   of its WAL, this connection may create the WAL and index anew, removed again after. */
static void checkpoint_file(const char *path) {
  sqlite3 *db = 0;
  int persist_wal = 1;
  struct stat st;
  char *sidecar;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, 0) == SQLITE_OK) {
    sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist_wal);
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
    /* a connection opens the WAL at its first transaction; this one reads no schema */
    if (sqlite3_exec(db, "PRAGMA schema_version", 0, 0, 0) == SQLITE_OK) sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_TRUNCATE, 0, 0);
    unmap_wal_index(db);
  }
  sqlite3_close(db);
  if (stat(path, &st) == 0 || errno != ENOENT) return;
  if ((sidecar = sqlite3_mprintf("%s-wal", path)) != 0) unlink(sidecar);
  sqlite3_free(sidecar);
  if ((sidecar = sqlite3_mprintf("%s-shm", path)) != 0) unlink(sidecar);
  sqlite3_free(sidecar);
}

static void *checkpointer(void *arg) {
  (void)arg;
  pthread_mutex_lock(&due_lock);
  for (;;) {
    Due *d;
    while (due_first == 0) pthread_cond_wait(&due_wake, &due_lock);
    d = due_first;
    due_first = d->next;
    if (due_first == 0) due_last = 0;
    due_running = d->path;
    pthread_mutex_unlock(&due_lock);
    checkpoint_file(d->path);
    pthread_mutex_lock(&due_lock);
    due_running = 0;
    free(d);
    due_count--;
  }
  return 0;
}

static void start_checkpointer(void) {
  pthread_t thread;
  if (pthread_create(&thread, 0, checkpointer, 0) != 0) checkpointer_failed = 1;
  else pthread_detach(thread);
}

static void queue_checkpoint(const char *path) {
  size_t n;
  Due *d;
  if (path == 0 || *path == 0) return;
  pthread_once(&checkpointer_started, start_checkpointer);
  if (checkpointer_failed) return; /* no checkpoints: SQLite's own still run */
  n = strlen(path);
  pthread_mutex_lock(&due_lock);
  for (d = due_first; d; d = d->next)
    if (strcmp(d->path, path) == 0) break;
  if (d == 0 && due_count < CHECKPOINT_QUEUE_MAX && (d = malloc(sizeof *d + n)) != 0) {
    memcpy(d->path, path, n + 1);
    d->next = 0;
    if (due_last) due_last->next = d;
    else due_first = d;
    due_last = d;
    due_count++;
    pthread_cond_signal(&due_wake);
  }
  pthread_mutex_unlock(&due_lock);
}

static void checkpoints_pending(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  int n;
  (void)argc;
  (void)argv;
  pthread_mutex_lock(&due_lock);
  n = due_count;
  pthread_mutex_unlock(&due_lock);
  sqlite3_result_int(ctx, n);
}

/* bp_reprepares(): how often the connection's live statements were prepared again since their
   first preparation (tests: a statement run again must not be parsed and planned again). */
static void reprepares(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  sqlite3_stmt *st = 0;
  sqlite3_int64 n = 0;
  (void)argc;
  (void)argv;
  while ((st = sqlite3_next_stmt(db, st)) != 0) n += sqlite3_stmt_status(st, SQLITE_STMTSTATUS_REPREPARE, 0);
  sqlite3_result_int64(ctx, n);
}

/* bp_checkpoints_forget(prefix): drops the files queued whose path starts with `prefix` (a project
   file being deleted or closed, or a data directory being closed); returns 1 while the file being
   checkpointed starts with it (the caller waits until 0), else 0. */
static void checkpoints_forget(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *prefix = (const char *)sqlite3_value_text(argv[0]);
  size_t n;
  Due **at, *d;
  int running;
  (void)argc;
  if (prefix == 0 || *prefix == 0) {
    sqlite3_result_error(ctx, "bp_checkpoints_forget: a path is needed", -1);
    return;
  }
  n = strlen(prefix);
  pthread_mutex_lock(&due_lock);
  due_last = 0;
  for (at = &due_first; (d = *at) != 0;) {
    if (strncmp(d->path, prefix, n) == 0) {
      *at = d->next;
      free(d);
      due_count--;
    } else {
      due_last = d;
      at = &d->next;
    }
  }
  running = due_running != 0 && strncmp(due_running, prefix, n) == 0;
  pthread_mutex_unlock(&due_lock);
  sqlite3_result_int(ctx, running);
}
#endif

static void release(sqlite3 *db) {
  sqlite3_db_release_memory(db);
#ifndef _WIN32
  if (unmap_wal_index(db)) queue_checkpoint(sqlite3_db_filename(db, "main"));
#endif
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
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_QPSG, 1, (int *)0);
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
#ifndef _WIN32
  if (sqlite3_create_function(db, "bp_checkpoints_pending", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, 0, checkpoints_pending, 0, 0) != SQLITE_OK) return SQLITE_ERROR;
  if (sqlite3_create_function(db, "bp_checkpoints_forget", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, 0, checkpoints_forget, 0, 0) != SQLITE_OK) return SQLITE_ERROR;
#endif
  return sqlite3_create_function(db, "bp_reprepares", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, 0, reprepares, 0, 0);
}
