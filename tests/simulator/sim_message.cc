#include "tests/simulator/sim_message.h"

namespace egress::sim {

std::string_view ProtocolName(SimProtocol protocol) {
  switch (protocol) {
    case SimProtocol::kHttp1:
      return "http/1.1";
    case SimProtocol::kHttp1Tls:
      return "https/1.1";
    case SimProtocol::kHttp2Tls:
      return "h2";
  }
  return "unknown";
}

std::string_view SimRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) {
      return value;
    }
  }
  return {};
}

bool SimRequest::QueryHas(std::string_view key, std::string_view value) const {
  std::string_view rest = query;
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == key && pair.substr(eq + 1) == value) {
      return true;
    }
    if (amp == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(amp + 1);
  }
  return false;
}

void SimResponse::SetHeader(std::string name, std::string value) {
  for (auto& [key, old] : headers) {
    if (key == name) {
      old = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
}

SimResponse JsonResponse(int status, std::string body) {
  SimResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

}  // namespace egress::sim
