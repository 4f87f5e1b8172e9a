#include "tests/support/small_filesystem.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

namespace egress {

SmallFilesystem::SmallFilesystem(size_t bytes) {
  if (::geteuid() != 0) {
    skip_reason_ = "mounting a small tmpfs for the full-disk test needs root";
    return;
  }
  const std::string options = fmt::format("size={}", bytes);
  if (::mount("tmpfs", dir_.path().c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    skip_reason_ =
        fmt::format("cannot mount a tmpfs for the full-disk test: {}", std::strerror(errno));
    return;
  }
  mounted_ = true;
}

SmallFilesystem::~SmallFilesystem() {
  if (mounted_) {
    ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
}

Status SmallFilesystem::Fill() {
  const std::string path = dir_.Sub("filler");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IoError(fmt::format("open {}: {}", path, std::strerror(errno)));
  }
  std::vector<char> block(64 * 1024, 'f');
  // Big blocks first, then smaller ones down to a byte, so nothing is left.
  for (size_t size = block.size(); size > 0; size /= 2) {
    while (true) {
      const ssize_t n = ::write(fd, block.data(), size);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && errno == ENOSPC) {
        break;
      }
      if (n <= 0) {
        const int error = errno;
        ::close(fd);
        return Status::IoError(fmt::format("write {}: {}", path, std::strerror(error)));
      }
      if (static_cast<size_t>(n) < size) {
        break;  // a short write: the space ran out within it
      }
    }
  }
  ::close(fd);
  return Status::Ok();
}

Status SmallFilesystem::Free() {
  const std::string path = dir_.Sub("filler");
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status::IoError(fmt::format("unlink {}: {}", path, std::strerror(errno)));
  }
  return Status::Ok();
}

uint64_t SmallFilesystem::FreeBytes() const {
  struct statvfs st;
  if (::statvfs(dir_.path().c_str(), &st) != 0) {
    return 0;
  }
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

}  // namespace egress
