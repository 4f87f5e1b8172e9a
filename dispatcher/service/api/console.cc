#include "dispatcher/service/api/console.h"

#include <algorithm>
#include <string>

#include <boost/beast/http/field.hpp>

#include "dispatcher/service/api/console_assets.h"
#include "dispatcher/service/api/http.h"

namespace egress::service {
namespace {

namespace http = boost::beast::http;

void SetSecurityHeaders(HttpResponse& res) {
  res.set("Content-Security-Policy", std::string(kConsoleCsp));
  res.set("X-Content-Type-Options", "nosniff");
  res.set("X-Frame-Options", "DENY");
  res.set("Referrer-Policy", "no-referrer");
  res.set(http::field::cache_control, "no-cache");
}

const ConsoleAsset* Find(std::string_view path) {
  const auto assets = ConsoleAssets();
  auto it = std::lower_bound(assets.begin(), assets.end(), path,
                             [](const ConsoleAsset& a, std::string_view p) { return a.path < p; });
  return it != assets.end() && it->path == path ? &*it : nullptr;
}

}  // namespace

HttpResponse ConsoleResponse(http::verb method, std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  if (method != http::verb::get) {
    HttpResponse res =
        ErrorResponse({405, "method_not_allowed", "method not allowed on this endpoint"});
    res.set(http::field::allow, "GET");
    return res;
  }
  if (path == "/ui") {
    HttpResponse res = TextResponse(308, "", "text/plain; charset=utf-8");
    res.set(http::field::location, "/ui/");
    SetSecurityHeaders(res);
    return res;
  }
  std::string_view file = path.substr(std::min(path.size(), std::string_view("/ui/").size()));
  if (path.substr(0, 4) != "/ui/") {
    file = {};
  } else if (file.empty()) {
    file = "index.html";
  }
  const ConsoleAsset* asset = file.empty() ? nullptr : Find(file);
  if (asset == nullptr) {
    return ErrorResponse({404, "not_found", "no such console file"});
  }
  HttpResponse res = TextResponse(200, std::string(asset->body), asset->content_type);
  SetSecurityHeaders(res);
  return res;
}

}  // namespace egress::service
