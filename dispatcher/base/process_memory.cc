#include "dispatcher/base/process_memory.h"

#include <dlfcn.h>
#include <malloc.h>

#include <sys/prctl.h>
#include <sys/resource.h>

namespace egress {

void ReleaseFreeMemory() {
  using Release = void (*)();
  // gperftools' C entry point (malloc_extension_c.h); looked up once.
  static const Release tcmalloc_release =
      reinterpret_cast<Release>(dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory"));
  if (tcmalloc_release != nullptr) {
    tcmalloc_release();
    return;
  }
  malloc_trim(0);
}

bool LimitThreadCaches(size_t bytes) {
  using Set = int (*)(const char*, size_t);
  const Set set = reinterpret_cast<Set>(dlsym(RTLD_DEFAULT, "MallocExtension_SetNumericProperty"));
  return set != nullptr && set("tcmalloc.max_total_thread_cache_bytes", bytes) != 0;
}

bool DisableCoreDumps() {
  const rlimit none{0, 0};
  const bool limited = setrlimit(RLIMIT_CORE, &none) == 0;
  const bool undumpable = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0;
  return limited && undumpable;
}

}  // namespace egress
