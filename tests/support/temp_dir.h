#pragma once

#include <string>

namespace egress {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Every byte of every regular file under `dir` (recursively), concatenated: what a test searches
// for a secret that must not be at rest.
std::string AllFileBytes(const std::string& dir);

}  // namespace egress
