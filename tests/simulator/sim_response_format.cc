#include "tests/simulator/sim_response_format.h"

#include <charconv>
#include <ostream>  // boost::string_view needs it
#include <string_view>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/container/small_vector.hpp>

namespace egress::sim {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;

beast::string_view Beast(std::string_view s) { return {s.data(), s.size()}; }

struct Field {
  std::string_view name;
  std::string_view value;
};

// Header fields in Beast's order: set() drops every field of the same name (any case) and
// appends; values lose surrounding spaces and tabs.
class FieldList {
 public:
  void Set(std::string_view name, std::string_view value) {
    std::size_t kept = 0;
    for (const Field& f : fields_) {
      if (!beast::iequals(Beast(f.name), Beast(name))) {
        fields_[kept++] = f;
      }
    }
    fields_.resize(kept);
    fields_.push_back({name, Trim(value)});
  }

  const Field* Find(std::string_view name) const {
    for (const Field& f : fields_) {
      if (beast::iequals(Beast(f.name), Beast(name))) {
        return &f;
      }
    }
    return nullptr;
  }

  const auto& fields() const { return fields_; }

 private:
  static std::string_view Trim(std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) {
      v.remove_prefix(1);
    }
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) {
      v.remove_suffix(1);
    }
    return v;
  }

  boost::container::small_vector<Field, 8> fields_;
};

// Beast's header::keep_alive() for the final fields.
bool KeepsAlive(const FieldList& fields, unsigned version) {
  const Field* connection = fields.Find("Connection");
  if (version < 11) {
    return connection != nullptr && http::token_list(Beast(connection->value)).exists("keep-alive");
  }
  return connection == nullptr || !http::token_list(Beast(connection->value)).exists("close");
}

}  // namespace

bool AppendHttpResponse(const SimResponse& response, unsigned version, bool keep_alive,
                        std::string& out) {
  FieldList fields;
  // What keep_alive(bool) leaves on a fresh message (no Connection field yet).
  if (version < 11 && keep_alive) {
    fields.Set("Connection", "keep-alive");
  } else if (version >= 11 && !keep_alive) {
    fields.Set("Connection", "close");
  }
  for (const auto& [name, value] : response.headers) {
    fields.Set(name, value);
  }
  if (!response.body.empty() || response.status != 204) {
    fields.Set("Content-Type", response.content_type);
  }
  char length[24];
  auto [end, ec] = std::to_chars(length, length + sizeof(length), response.body.size());
  fields.Set("Content-Length", std::string_view(length, static_cast<std::size_t>(end - length)));

  const auto code = static_cast<unsigned>(response.status);
  char status_line[] = "HTTP/1.1 200 ";  // as Beast writes it: digits, not a number
  status_line[5] = static_cast<char>('0' + version / 10);
  status_line[7] = static_cast<char>('0' + version % 10);
  status_line[9] = static_cast<char>('0' + code / 100);
  status_line[10] = static_cast<char>('0' + (code / 10) % 10);
  status_line[11] = static_cast<char>('0' + code % 10);
  out.append(status_line, sizeof(status_line) - 1);
  beast::string_view reason = http::obsolete_reason(static_cast<http::status>(code));
  out.append(reason.data(), reason.size()).append("\r\n");
  for (const Field& f : fields.fields()) {
    out.append(f.name).append(": ").append(f.value).append("\r\n");
  }
  out.append("\r\n").append(response.body);
  return KeepsAlive(fields, version);
}

}  // namespace egress::sim
