#pragma once

#include <cstddef>

namespace egress {

// What the process holds and gives back: the allocator's free memory and core dumps.

// Gives the allocator's free memory back to the system: tcmalloc's ReleaseFreeMemory when the
// binary is linked with it (found at run time, so a sanitizer build, which brings its own
// allocator, still links), else glibc's malloc_trim(0). Walks the allocator's free lists: call
// it now and then (HttpServerOptions::release_free_memory: at most once a second), not per
// request. Any thread.
void ReleaseFreeMemory();

// Caps what tcmalloc's per-thread caches hold together, freed memory kept for reuse without a
// lock (gperftools' tcmalloc.max_total_thread_cache_bytes, 32 MiB by default), when the binary is
// linked with it; false otherwise. Call once at start.
bool LimitThreadCaches(size_t bytes);

// Turns core dumps off for this process (RLIMIT_CORE 0, and PR_SET_DUMPABLE 0, which also keeps
// other processes of the same user from reading its memory through ptrace or /proc/<pid>/mem):
// a dump would hold the admin token, API keys and unsealed credentials in plain text. False when
// either call failed.
bool DisableCoreDumps();

}  // namespace egress
