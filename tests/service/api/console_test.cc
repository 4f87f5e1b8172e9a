#include "dispatcher/service/api/console.h"

#include <regex>
#include <set>
#include <string>

#include <boost/beast/http/field.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dispatcher/service/api/console_assets.h"

namespace egress::service {
namespace {

namespace http = boost::beast::http;

std::string Header(const HttpResponse& res, std::string_view name) {
  auto it = res.find(boost::beast::string_view(name.data(), name.size()));
  return it == res.end() ? "" : std::string(it->value());
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Verifies that /ui/ is the console's index page with its content type and the security
// headers: the strict CSP (scripts and styles from the service only), nosniff, no framing.
TEST(ConsoleTest, IndexIsServedWithItsSecurityHeaders) {
  for (const char* target : {"/ui/", "/ui/index.html", "/ui/?from=bookmark"}) {
    const HttpResponse res = ConsoleResponse(http::verb::get, target);
    ASSERT_EQ(res.result_int(), 200u) << target;
    EXPECT_EQ(Header(res, "Content-Type"), "text/html; charset=utf-8");
    EXPECT_EQ(Header(res, "Content-Security-Policy"), kConsoleCsp);
    EXPECT_EQ(Header(res, "X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(Header(res, "X-Frame-Options"), "DENY");
    EXPECT_EQ(Header(res, "Referrer-Policy"), "no-referrer");
    EXPECT_NE(res.body().view().find(R"(<script type="module" src="js/main.js"></script>)"),
              std::string::npos);
  }
  EXPECT_EQ(std::string(kConsoleCsp).find("unsafe"), std::string::npos);
}

// Verifies that every embedded file is answered with the content type of its extension and
// exactly its bytes.
TEST(ConsoleTest, EveryAssetIsServedWithItsContentType) {
  ASSERT_GE(ConsoleAssets().size(), 8u);
  std::set<std::string_view> paths;
  for (const ConsoleAsset& a : ConsoleAssets()) {
    paths.insert(a.path);
    const HttpResponse res = ConsoleResponse(http::verb::get, "/ui/" + std::string(a.path));
    ASSERT_EQ(res.result_int(), 200u) << a.path;
    EXPECT_EQ(res.body().view(), a.body) << a.path;
    const std::string type = Header(res, "Content-Type");
    if (EndsWith(a.path, ".js")) {
      EXPECT_EQ(type, "text/javascript; charset=utf-8") << a.path;
    } else if (EndsWith(a.path, ".css")) {
      EXPECT_EQ(type, "text/css; charset=utf-8") << a.path;
    } else if (EndsWith(a.path, ".html")) {
      EXPECT_EQ(type, "text/html; charset=utf-8") << a.path;
    } else {
      EXPECT_EQ(type, "image/svg+xml") << a.path;
    }
    EXPECT_EQ(Header(res, "Content-Security-Policy"), kConsoleCsp) << a.path;
  }
  for (const char* needed : {"index.html", "console.css", "js/main.js", "js/api.js"}) {
    EXPECT_TRUE(paths.contains(needed)) << needed;
  }
}

// Verifies what the CSP relies on and what "no CDN" means: the page has no inline script,
// event handler attribute or style attribute, no file loads anything from another origin, and
// every module a script imports is one of the embedded files.
TEST(ConsoleTest, AssetsAreSelfContained) {
  std::set<std::string> paths;
  for (const ConsoleAsset& a : ConsoleAssets()) {
    paths.insert(std::string(a.path));
  }
  const std::regex import_re(R"(from '\./([a-z_]+\.js)')");
  const std::regex handler_re(R"(<[^>]*\son[a-z]+\s*=)", std::regex::icase);
  for (const ConsoleAsset& a : ConsoleAssets()) {
    const std::string body(a.body);
    if (EndsWith(a.path, ".svg")) {
      continue;
    }
    EXPECT_EQ(body.find("http://"), std::string::npos) << a.path;
    EXPECT_EQ(body.find("https://"), std::string::npos) << a.path;
    EXPECT_EQ(body.find("innerHTML"), std::string::npos) << a.path;
    EXPECT_EQ(body.find("eval("), std::string::npos) << a.path;
    if (EndsWith(a.path, ".html")) {
      EXPECT_FALSE(std::regex_search(body, handler_re)) << a.path;
      EXPECT_EQ(body.find(" style="), std::string::npos) << a.path;
      const std::regex script_re("<script[^>]*>");
      for (auto it = std::sregex_iterator(body.begin(), body.end(), script_re);
           it != std::sregex_iterator(); ++it) {
        EXPECT_NE(it->str().find(" src=\""), std::string::npos) << it->str();
      }
    }
    if (EndsWith(a.path, ".js")) {
      for (auto it = std::sregex_iterator(body.begin(), body.end(), import_re);
           it != std::sregex_iterator(); ++it) {
        EXPECT_TRUE(paths.contains("js/" + (*it)[1].str())) << a.path << " imports " << (*it)[1];
      }
    }
  }
}

// Verifies the answers that are not a file: /ui redirects to /ui/, an unknown or escaping path
// is a 404 envelope, and any method but GET is 405.
TEST(ConsoleTest, OtherTargetsAndMethods) {
  const HttpResponse bare = ConsoleResponse(http::verb::get, "/ui");
  EXPECT_EQ(bare.result_int(), 308u);
  EXPECT_EQ(Header(bare, "Location"), "/ui/");
  for (const char* target : {"/ui/nope.js", "/ui/../v1/stats", "/ui/%2e%2e/v1/stats", "/ui/js/",
                             "/ui//index.html", "/uix"}) {
    const HttpResponse res = ConsoleResponse(http::verb::get, target);
    EXPECT_EQ(res.result_int(), 404u) << target;
    EXPECT_EQ(nlohmann::json::parse(res.body().view())["error"], "not_found") << target;
  }
  for (http::verb m : {http::verb::post, http::verb::put, http::verb::delete_, http::verb::head}) {
    const HttpResponse res = ConsoleResponse(m, "/ui/");
    EXPECT_EQ(res.result_int(), 405u);
    EXPECT_EQ(nlohmann::json::parse(res.body().view())["error"], "method_not_allowed");
  }
}

}  // namespace
}  // namespace egress::service
