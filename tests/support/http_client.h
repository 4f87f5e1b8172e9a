#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace egress {

// A blocking HTTP/1.1 client for integration tests, to 127.0.0.1 only.
struct TestResponse {
  int status = 0;  // 0: the request failed (see body)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string Header(const std::string& name) const;
  nlohmann::json Json() const { return nlohmann::json::parse(body, nullptr, false); }
};

TestResponse HttpCall(int port, const std::string& method, const std::string& target,
                      const std::string& body = "",
                      const std::vector<std::pair<std::string, std::string>>& headers = {});

// As HttpCall, from the loopback address `from` ("127.0.0.2", ...; empty: the system's choice),
// so that a test can be several clients.
TestResponse HttpCallFrom(const std::string& from, int port, const std::string& method,
                          const std::string& target, const std::string& body = "",
                          const std::vector<std::pair<std::string, std::string>>& headers = {});

// As HttpCall, presenting `token` (a tenant's API key or the admin token) as
// "Authorization: Bearer <token>" unless `headers` bring an Authorization or X-Admin-Token of
// their own.
TestResponse HttpCallAs(const std::string& token, int port, const std::string& method,
                        const std::string& target, const std::string& body = "",
                        std::vector<std::pair<std::string, std::string>> headers = {});

}  // namespace egress
