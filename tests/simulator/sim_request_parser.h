#pragma once

#include <cstddef>
#include <cstdint>

#include <boost/beast/http/basic_parser.hpp>

#include "tests/simulator/sim_message.h"

namespace egress::sim {

// Beast's HTTP/1 request parser writing straight into a SimRequest: method, path, query,
// lower-case header names, body. It reuses the SimRequest's strings (a connection's requests
// look alike, so after the first one parsing allocates little). One parser per request, as with
// any Beast parser; `*request` must outlive it and is overwritten from the first byte on.
class SimRequestParser : public boost::beast::http::basic_parser<true> {
 public:
  explicit SimRequestParser(SimRequest& request) : request_(request) {}

  // 10 for HTTP/1.0, 11 for HTTP/1.1; valid once the request line is parsed.
  unsigned version() const { return version_; }

 private:
  using string_view = boost::beast::string_view;
  using error_code = boost::beast::error_code;

  void on_request_impl(boost::beast::http::verb method, string_view method_str, string_view target,
                       int version, error_code& ec) override;
  void on_response_impl(int code, string_view reason, int version, error_code& ec) override;
  void on_field_impl(boost::beast::http::field name, string_view name_string, string_view value,
                     error_code& ec) override;
  void on_header_impl(error_code& ec) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         error_code& ec) override;
  std::size_t on_body_impl(string_view body, error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t size, string_view extensions, error_code& ec) override;
  std::size_t on_chunk_body_impl(std::uint64_t remain, string_view body, error_code& ec) override;
  void on_finish_impl(error_code& ec) override;

  SimRequest& request_;
  std::size_t fields_ = 0;  // header fields of this request so far
  unsigned version_ = 11;
};

}  // namespace egress::sim
