#include "tests/simulator/sim_request_parser.h"

#include <string>
#include <string_view>

#include <boost/beast/http/error.hpp>

namespace egress::sim {
namespace {

// A body buffer kept for the next request only up to this size.
constexpr std::size_t kKeptBodyCapacity = 64 * 1024;

void AssignLower(std::string& out, std::string_view in) {
  out.resize(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    char ch = in[i];
    out[i] = (ch >= 'A' && ch <= 'Z') ? static_cast<char>(ch - 'A' + 'a') : ch;
  }
}

}  // namespace

void SimRequestParser::on_request_impl(boost::beast::http::verb /*method*/, string_view method_str,
                                       string_view target, int version, error_code& /*ec*/) {
  version_ = static_cast<unsigned>(version);
  request_.method.assign(method_str.data(), method_str.size());
  std::string_view t(target.data(), target.size());
  std::size_t q = t.find('?');
  request_.path.assign(t.substr(0, q));
  if (q == std::string_view::npos) {
    request_.query.clear();
  } else {
    request_.query.assign(t.substr(q + 1));
  }
  fields_ = 0;
  if (request_.body.capacity() > kKeptBodyCapacity) {
    std::string().swap(request_.body);
  }
  request_.body.clear();
}

void SimRequestParser::on_response_impl(int /*code*/, string_view /*reason*/, int /*version*/,
                                        error_code& ec) {
  ec = boost::beast::http::error::bad_version;  // never called: this parses requests
}

void SimRequestParser::on_field_impl(boost::beast::http::field /*name*/, string_view name_string,
                                     string_view value, error_code& /*ec*/) {
  auto& headers = request_.headers;
  if (fields_ == headers.size()) {
    headers.emplace_back();
  }
  auto& [name, text] = headers[fields_++];
  AssignLower(name, std::string_view(name_string.data(), name_string.size()));
  text.assign(value.data(), value.size());
}

void SimRequestParser::on_header_impl(error_code& /*ec*/) {
  // Drops what is left of a previous request with more fields.
  request_.headers.resize(fields_);
}

void SimRequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                                         error_code& ec) {
  if (content_length) {
    if (*content_length > request_.body.max_size()) {
      ec = boost::beast::http::error::buffer_overflow;
      return;
    }
    request_.body.reserve(static_cast<std::size_t>(*content_length));
  }
}

std::size_t SimRequestParser::on_body_impl(string_view body, error_code& /*ec*/) {
  request_.body.append(body.data(), body.size());
  return body.size();
}

void SimRequestParser::on_chunk_header_impl(std::uint64_t /*size*/, string_view /*extensions*/,
                                            error_code& /*ec*/) {}

std::size_t SimRequestParser::on_chunk_body_impl(std::uint64_t /*remain*/, string_view body,
                                                 error_code& /*ec*/) {
  request_.body.append(body.data(), body.size());
  return body.size();
}

void SimRequestParser::on_finish_impl(error_code& /*ec*/) {}

}  // namespace egress::sim
