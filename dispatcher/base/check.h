#pragma once

#include <cstdio>
#include <cstdlib>

// Aborts when an invariant of our own code is broken. Never for what the network, disk or
// config can cause: those are Status values.
#define EGRESS_CHECK(cond)                                                                 \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "%s:%d: EGRESS_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (false)
