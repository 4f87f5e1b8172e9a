#include "storage/rocks_info_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <string>

#include <fmt/format.h>
#include <rocksdb/system_clock.h>

namespace egress::storage {
namespace {

// Longest line kept; RocksDB's longest (a statistics dump) is a few KiB.
constexpr size_t kMaxLine = 64 * 1024;
// Lines wait in memory until this many bytes are held, RocksDB flushes the log, or a line comes
// this long after the last write, as with RocksDB's own logger.
constexpr size_t kBufferBytes = 64 * 1024;
constexpr uint64_t kWriteEveryMicros = 5'000'000;

class StoreInfoLog final : public rocksdb::Logger {
 public:
  explicit StoreInfoLog(int fd) : fd_(fd) {}
  ~StoreInfoLog() override { CloseFile(); }

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    const uint64_t now = rocksdb::SystemClock::Default()->NowMicros();
    std::string line = Stamp(now);
    const size_t prefix = line.size();
    line.resize(prefix + 512);
    va_list copy;
    va_copy(copy, ap);
    const int n = std::vsnprintf(line.data() + prefix, 512, format, copy);
    va_end(copy);
    if (n < 0) {
      return;
    }
    const size_t len = std::min<size_t>(static_cast<size_t>(n), kMaxLine);
    if (len >= 512) {
      line.resize(prefix + len + 1);
      std::vsnprintf(line.data() + prefix, len + 1, format, ap);
    }
    line.resize(prefix + len);
    if (line.back() != '\n') {
      line.push_back('\n');
    }
    std::lock_guard<std::mutex> lock(mu_);
    buffer_ += line;
    if (buffer_.size() >= kBufferBytes || now - last_write_micros_ >= kWriteEveryMicros) {
      WriteLocked(now);
    }
  }

  void Flush() override {
    std::lock_guard<std::mutex> lock(mu_);
    WriteLocked(rocksdb::SystemClock::Default()->NowMicros());
  }

 protected:
  rocksdb::Status CloseImpl() override {
    CloseFile();
    return rocksdb::Status::OK();
  }

 private:
  // "2026/01/02-03:04:05.123456 " in UTC.
  static std::string Stamp(uint64_t micros) {
    const auto seconds = static_cast<time_t>(micros / 1'000'000);
    struct tm t;
    gmtime_r(&seconds, &t);
    return fmt::format("{:04}/{:02}/{:02}-{:02}:{:02}:{:02}.{:06} ", t.tm_year + 1900, t.tm_mon + 1,
                       t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, micros % 1'000'000);
  }

  // Writes what is held, or drops it when the disk takes none of it (full or failing): lines
  // are lost, nothing else is.
  void WriteLocked(uint64_t now) {
    last_write_micros_ = now;
    size_t done = 0;
    while (fd_ >= 0 && done < buffer_.size()) {
      const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        break;
      }
      done += static_cast<size_t>(n);
    }
    buffer_.clear();
  }

  void CloseFile() {
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ >= 0) {
      WriteLocked(0);
      ::close(fd_);
      fd_ = -1;
    }
  }

  std::mutex mu_;
  int fd_;              // -1 once closed
  std::string buffer_;  // lines not written yet
  uint64_t last_write_micros_ = 0;
};

}  // namespace

Result<std::shared_ptr<rocksdb::Logger>> OpenStoreInfoLog(const std::string& dir, int64_t now_ms) {
  namespace fs = std::filesystem;
  const fs::path log = fs::path(dir) / "LOG";
  std::error_code ec;
  if (fs::exists(log, ec)) {
    // A failed rename only means the old lines stay above the new ones.
    fs::rename(log, fs::path(dir) / fmt::format("LOG.old.{}", now_ms * 1000), ec);
  }
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IoError(
        fmt::format("cannot open the store's LOG in {}: {}", dir, std::strerror(errno)));
  }
  return std::shared_ptr<rocksdb::Logger>(std::make_shared<StoreInfoLog>(fd));
}

}  // namespace egress::storage
