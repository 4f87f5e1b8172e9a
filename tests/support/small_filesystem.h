#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dispatcher/base/status.h"
#include "tests/support/temp_dir.h"

namespace egress {

// A small tmpfs of its own, mounted on a fresh temporary directory, for tests of a full disk:
// the test fills it with a file of its own (Fill), watches what the code under test does, and
// frees the space again (Free). Mounting needs root (CAP_SYS_ADMIN): without it mounted() is
// false and skip_reason() says why, for GTEST_SKIP. Unmounted by the destructor (lazily, so a
// process still holding files there does not keep it), also when the test failed.
class SmallFilesystem {
 public:
  explicit SmallFilesystem(size_t bytes);
  ~SmallFilesystem();
  SmallFilesystem(const SmallFilesystem&) = delete;
  SmallFilesystem& operator=(const SmallFilesystem&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& skip_reason() const { return skip_reason_; }
  // The mount point.
  const std::string& path() const { return dir_.path(); }
  std::string Sub(const std::string& name) const { return dir_.Sub(name); }

  // Appends to <path>/filler until a write fails for want of space; Ok when it did.
  Status Fill();
  // Deletes the filler.
  Status Free();
  // Bytes free for an unprivileged writer.
  uint64_t FreeBytes() const;

 private:
  TempDir dir_;
  bool mounted_ = false;
  std::string skip_reason_;
};

}  // namespace egress
