/*
 * malloc_trim(3) for the service's idle spells (lib/idle-memory.ts), as a Node-API module.
 *
 * The C allocator keeps what a process frees: glibc gives memory back to the system only from the
 * top of each arena, so after start-up (V8's compiler zones, module loading, the first requests)
 * megabytes of free pages stay resident in the middle of its heaps. malloc_trim(0) gives every
 * free page of every arena back (measured: 4.4 MiB of an idle service's 83). Elsewhere than glibc
 * there is nothing to call: `trim` does nothing and answers false.
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

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status; /* 0: napi_ok */
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);

extern napi_status napi_create_function(napi_env env, const char *name, size_t length, napi_callback cb, void *data, napi_value *result);
extern napi_status napi_set_named_property(napi_env env, napi_value object, const char *name, napi_value value);
extern napi_status napi_get_boolean(napi_env env, bool value, napi_value *result);

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

__attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  napi_value fn = 0;
  if (napi_create_function(env, "trim", (size_t)-1, trim, 0, &fn) != 0) return 0;
  if (napi_set_named_property(env, exports, "trim", fn) != 0) return 0;
  return exports;
}
