#include "storage/pg_connection.h"

#include <poll.h>

#include <cerrno>
#include <cstring>
#include <regex>

#include <fmt/format.h>
#include <libpq-fe.h>

namespace egress::storage {
namespace {

// Type OIDs (pg_type.dat): fixed since PostgreSQL 7.
constexpr Oid kBytea = 17;
constexpr Oid kInt8 = 20;
constexpr Oid kInt2 = 21;
constexpr Oid kInt4 = 23;
constexpr Oid kText = 25;
constexpr Oid kByteaArray = 1001;
constexpr Oid kTextArray = 1009;
constexpr Oid kInt8Array = 1016;

void PutBe32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

void PutBe64(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

// PostgreSQL's binary array: ndim, has-null flag, element type, then per dimension its size and
// lower bound, then each element as a 32-bit length (-1: NULL) and its bytes.
template <class Fn>
std::string ArrayOf(Oid element, size_t n, bool has_null, Fn&& element_at) {
  std::string out;
  PutBe32(out, n == 0 ? 0 : 1);
  PutBe32(out, has_null ? 1 : 0);
  PutBe32(out, element);
  if (n > 0) {
    PutBe32(out, static_cast<uint32_t>(n));
    PutBe32(out, 1);
  }
  for (size_t i = 0; i < n; ++i) {
    element_at(i, out);
  }
  return out;
}

void PutElement(std::string& out, std::string_view v) {
  PutBe32(out, static_cast<uint32_t>(v.size()));
  out.append(v);
}

bool Transient(std::string_view state) {
  return state.starts_with("08") ||                                   // connection exception
         state == "57P01" || state == "57P02" || state == "57P03" ||  // shutdown, starting
         state.starts_with("53") ||                                   // insufficient resources
         state == "40001" || state == "40P01";  // serialization failure, deadlock
}

std::string Trimmed(const char* text) {
  std::string s = text == nullptr ? "" : text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) {
    s.pop_back();
  }
  return s;
}

}  // namespace

PgParams& PgParams::Add(unsigned int type, std::string bytes) {
  lengths_.push_back(static_cast<int>(bytes.size()));
  values_.push_back(std::move(bytes));
  types_.push_back(type);
  return *this;
}

PgParams& PgParams::Bytes(std::string_view v) { return Add(kBytea, std::string(v)); }
PgParams& PgParams::Text(std::string_view v) { return Add(kText, std::string(v)); }

PgParams& PgParams::Int64(int64_t v) {
  std::string out;
  PutBe64(out, static_cast<uint64_t>(v));
  return Add(kInt8, std::move(out));
}

PgParams& PgParams::Int32(int32_t v) {
  std::string out;
  PutBe32(out, static_cast<uint32_t>(v));
  return Add(kInt4, std::move(out));
}

PgParams& PgParams::BytesArray(const std::vector<std::string>& v) {
  return Add(kByteaArray, ArrayOf(kBytea, v.size(), false,
                                  [&v](size_t i, std::string& out) { PutElement(out, v[i]); }));
}

PgParams& PgParams::TextArray(const std::vector<std::string>& v) {
  return Add(kTextArray, ArrayOf(kText, v.size(), false,
                                 [&v](size_t i, std::string& out) { PutElement(out, v[i]); }));
}

PgParams& PgParams::Int64Array(const std::vector<int64_t>& v) {
  return Add(kInt8Array, ArrayOf(kInt8, v.size(), false, [&v](size_t i, std::string& out) {
               PutBe32(out, 8);
               PutBe64(out, static_cast<uint64_t>(v[i]));
             }));
}

PgParams& PgParams::NullableBytesArray(const std::vector<std::string>& v,
                                       const std::vector<bool>& null) {
  bool any = false;
  for (bool b : null) {
    any = any || b;
  }
  return Add(kByteaArray, ArrayOf(kBytea, v.size(), any, [&](size_t i, std::string& out) {
               if (i < null.size() && null[i]) {
                 PutBe32(out, 0xffffffffu);
               } else {
                 PutElement(out, v[i]);
               }
             }));
}

std::vector<const char*> PgParams::Values() const {
  std::vector<const char*> out;
  out.reserve(values_.size());
  for (const std::string& v : values_) {
    out.push_back(v.data());
  }
  return out;
}

PgResult::PgResult(pg_result* r) : r_(r) {}
PgResult::~PgResult() {
  if (r_ != nullptr) {
    PQclear(r_);
  }
}
PgResult::PgResult(PgResult&& other) noexcept : r_(other.r_) { other.r_ = nullptr; }

int PgResult::rows() const { return PQntuples(r_); }

int64_t PgResult::affected() const {
  const char* n = PQcmdTuples(r_);
  return n == nullptr || *n == '\0' ? 0 : std::strtoll(n, nullptr, 10);
}

bool PgResult::IsNull(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }

std::string_view PgResult::Bytes(int row, int col) const {
  return std::string_view(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
}

int64_t PgResult::Int(int row, int col) const {
  const std::string_view v = Bytes(row, col);
  uint64_t u = 0;
  for (unsigned char c : v) {
    u = (u << 8) | c;
  }
  // Sign-extend the narrower types.
  if (v.size() == 4) {
    return static_cast<int32_t>(static_cast<uint32_t>(u));
  }
  if (v.size() == 2) {
    return static_cast<int16_t>(static_cast<uint16_t>(u));
  }
  return static_cast<int64_t>(u);
}

Status PgResult::CheckInt(int col) const {
  if (col >= PQnfields(r_)) {
    return Status::Corruption(fmt::format("result has no column {}", col));
  }
  const Oid t = PQftype(r_, col);
  if (t != kInt8 && t != kInt4 && t != kInt2) {
    return Status::Corruption(fmt::format("column {} is of type {}, not an integer", col, t));
  }
  return Status::Ok();
}

Result<std::unique_ptr<PgConnection>> PgConnection::Connect(const std::string& conninfo,
                                                            const std::string& password) {
  // expand_dbname: `conninfo` in "dbname" is expanded as a whole connection string, and the
  // keywords after it (the password) override what it says.
  const char* keywords[] = {"dbname", password.empty() ? nullptr : "password", nullptr};
  const char* values[] = {conninfo.c_str(), password.c_str(), nullptr};
  pg_conn* conn = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (conn == nullptr) {
    return Status::Unavailable("postgres: out of memory for a connection");
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    // libpq's text names the host and port, never the password.
    Status s = Status::Unavailable("postgres: cannot connect: " + Trimmed(PQerrorMessage(conn)));
    PQfinish(conn);
    return s;
  }
  // libpq prints the server's notices and warnings (e.g. "terminating connection due to
  // unexpected postmaster exit") to stderr by default, a line no log reader expects; what
  // matters comes back as a statement's error (a Status) instead.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  std::unique_ptr<PgConnection> c(new PgConnection(conn));
  // A transaction left open by a process that stopped (SIGSTOP, a stalled VM) would hold its row
  // locks, a shard's FOR KEY SHARE among them, and keep every other node from claiming that
  // shard for as long: the server ends such a session after 3 s idle inside a transaction (our
  // transactions run their statements back to back), well inside a shard lease's 5 s.
  //
  // Statements are prepared once per connection (Exec) and planned once, at their first run, for
  // any parameters (a generic plan): planning each run took a third of the server's CPU in the
  // three-node benchmark (bench/README.md, section 13). Every statement of this store reaches
  // its rows through an index, but a plan made while a table was empty or small (a new
  // database) would scan it whole and stay in use as it grew (20 times slower at 20,000 rows):
  // with sequential scans priced out, the plan is an index's whatever the table's size.
  if (Status s = c->Run("SET synchronous_commit = on; "
                        "SET idle_in_transaction_session_timeout = '3s'; "
                        "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off");
      !s.ok()) {
    return s;
  }
  return c;
}

PgConnection::~PgConnection() { PQfinish(conn_); }

bool PgConnection::ok() const { return PQstatus(conn_) == CONNECTION_OK; }

Result<std::vector<std::string>> PgConnection::WaitForNotifications(int timeout_ms) {
  std::vector<std::string> out;
  auto take = [&] {
    while (PGnotify* n = PQnotifies(conn_)) {
      out.emplace_back(n->extra == nullptr ? "" : n->extra);
      PQfreemem(n);
    }
  };
  take();  // some may have come with the answer of a statement
  if (!out.empty()) {
    return out;
  }
  const int fd = PQsocket(conn_);
  if (fd < 0 || !ok()) {
    return Status::Unavailable("postgres: the listening connection is lost");
  }
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  const int ready = ::poll(&p, 1, timeout_ms);
  if (ready < 0 && errno != EINTR) {
    return Status::Unavailable(fmt::format("postgres: poll: {}", std::strerror(errno)));
  }
  if (ready > 0 && PQconsumeInput(conn_) == 0) {
    return Status::Unavailable("postgres: the listening connection is lost: " +
                               Trimmed(PQerrorMessage(conn_)));
  }
  take();
  return out;
}

Status PgConnection::ErrorOf(pg_result* r, std::string_view what) const {
  const std::string state = r == nullptr ? "" : Trimmed(PQresultErrorField(r, PG_DIAG_SQLSTATE));
  const std::string text =
      r == nullptr ? Trimmed(PQerrorMessage(conn_)) : Trimmed(PQresultErrorMessage(r));
  const std::string msg = fmt::format("postgres: {}: {}", what, text);
  if (!ok() || Transient(state)) {
    return Status::Unavailable(msg);
  }
  if (state == "23505") {
    return Status::AlreadyExists(msg);
  }
  if (state == "XX001" || state == "XX002") {
    return Status::Corruption(msg);
  }
  return Status::IoError(msg);
}

Result<std::string> PgConnection::Prepared(const std::string& text, const PgParams& params) {
  std::string key = text;
  for (unsigned int t : params.types()) {
    key.append(fmt::format(",{}", t));
  }
  if (auto it = prepared_.find(key); it != prepared_.end()) {
    return it->second;
  }
  if (prepared_.size() >= kMaxPrepared) {
    return std::string();
  }
  std::string name = fmt::format("egress_{}", prepared_.size());
  pg_result* r = PQprepare(conn_, name.c_str(), text.c_str(), static_cast<int>(params.size()),
                           params.types().data());
  const ExecStatusType st = r == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(r);
  if (st != PGRES_COMMAND_OK) {
    Status s = ErrorOf(r, text.substr(0, std::min<size_t>(text.find_first_of("(\n"), 40)));
    if (r != nullptr) {
      PQclear(r);
    }
    return s;
  }
  PQclear(r);
  prepared_.emplace(std::move(key), name);
  return name;
}

Result<PgResult> PgConnection::Exec(std::string_view sql, const PgParams& params) {
  const std::string text(sql);
  Result<std::string> name = Prepared(text, params);
  if (!name) {
    return name.error();
  }
  const std::vector<const char*> values = params.Values();
  const std::vector<int> formats(params.size(), 1);
  pg_result* r = name->empty()
                     ? PQexecParams(conn_, text.c_str(), static_cast<int>(params.size()),
                                    params.types().data(), values.data(), params.lengths().data(),
                                    formats.data(), 1)
                     : PQexecPrepared(conn_, name->c_str(), static_cast<int>(params.size()),
                                      values.data(), params.lengths().data(), formats.data(), 1);
  const ExecStatusType st = r == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(r);
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    // The statement's first words name it in the message; its parameters never appear.
    Status s = ErrorOf(r, text.substr(0, std::min<size_t>(text.find_first_of("(\n"), 40)));
    if (r != nullptr) {
      PQclear(r);
    }
    return s;
  }
  return PgResult(r);
}

Status PgConnection::Run(std::string_view sql) {
  const std::string text(sql);
  pg_result* r = PQexec(conn_, text.c_str());
  const ExecStatusType st = r == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(r);
  Status s;
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    s = ErrorOf(r, text.substr(0, std::min<size_t>(text.find_first_of("(\n;"), 40)));
  }
  if (r != nullptr) {
    PQclear(r);
  }
  return s;
}

std::string RedactConninfo(std::string_view conninfo) {
  std::string s(conninfo);
  // URI userinfo: scheme://user:password@host -> scheme://user@host.
  static const std::regex kUserinfo(R"(^(postgres(ql)?://[^:@/]*):[^@/]*@)");
  s = std::regex_replace(s, kUserinfo, "$1@");
  // key=value form and URI query parameters: password=... up to a space or '&'.
  static const std::regex kPassword(R"((password\s*=\s*)('[^']*'|[^\s&]*))");
  return std::regex_replace(s, kPassword, "$1*");
}

}  // namespace egress::storage
