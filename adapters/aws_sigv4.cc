#include "adapters/aws_sigv4.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "dispatcher/base/hex.h"

namespace egress::adapters {
namespace {

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return HexEncode(std::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

// The URL's host (with a port other than the scheme's default), path and query.
struct UrlParts {
  std::string host;
  std::string path = "/";
  std::string query;
};

UrlParts SplitUrl(std::string_view url) {
  UrlParts parts;
  const size_t scheme = url.find("://");
  const std::string_view rest = scheme == std::string_view::npos ? url : url.substr(scheme + 3);
  const size_t slash = rest.find_first_of("/?");
  parts.host = std::string(rest.substr(0, slash));
  if (slash == std::string_view::npos) {
    return parts;
  }
  std::string_view target = rest.substr(slash);
  const size_t question = target.find('?');
  if (question != std::string_view::npos) {
    parts.query = std::string(target.substr(question + 1));
    target = target.substr(0, question);
  }
  if (!target.empty()) {
    parts.path = std::string(target);
  }
  const std::string_view default_port = url.starts_with("https://") ? ":443" : ":80";
  if (parts.host.ends_with(default_port)) {
    parts.host.resize(parts.host.size() - default_port.size());
  }
  return parts;
}

// The query's pairs sorted by name, then value (a pair without '=' has an empty value).
std::string CanonicalQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (!pair.empty()) {
      const size_t eq = pair.find('=');
      pairs.emplace_back(std::string(pair.substr(0, eq)),
                         eq == std::string_view::npos ? "" : std::string(pair.substr(eq + 1)));
    }
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
  }
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [name, value] : pairs) {
    out += out.empty() ? "" : "&";
    out += name + "=" + value;
  }
  return out;
}

// A header value with its leading and trailing spaces removed and inner runs of spaces folded.
std::string TrimValue(std::string_view value) {
  std::string out;
  bool space = false;
  for (char c : TrimOws(value)) {
    if (c == ' ' || c == '\t') {
      space = true;
      continue;
    }
    if (space && !out.empty()) {
      out += ' ';
    }
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string AwsSigningKey(std::string_view secret, std::string_view date, std::string_view region,
                          std::string_view service) {
  const std::string k_date = Hmac("AWS4" + std::string(secret), date);
  const std::string k_region = Hmac(k_date, region);
  const std::string k_service = Hmac(k_region, service);
  return Hmac(k_service, "aws4_request");
}

void SignAwsRequest(HttpRequest& request, const AwsCredentials& credentials,
                    std::string_view region, std::string_view service, WallTime when) {
  const std::time_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(when.time_since_epoch()).count();
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &utc);
  const std::string amz_date = stamp;
  const std::string date = amz_date.substr(0, 8);
  request.headers.push_back({"X-Amz-Date", amz_date});
  if (!credentials.session_token.empty()) {
    request.headers.push_back({"X-Amz-Security-Token", credentials.session_token});
  }
  const UrlParts url = SplitUrl(request.url);
  std::vector<std::pair<std::string, std::string>> headers;
  headers.emplace_back("host", url.host);
  for (const HttpHeader& header : request.headers) {
    headers.emplace_back(ToLowerAscii(header.name), TrimValue(header.value));
  }
  std::sort(headers.begin(), headers.end());
  std::string canonical_headers;
  std::string signed_headers;
  for (size_t i = 0; i < headers.size(); ++i) {
    // A repeated name is one line, its values joined by commas.
    if (i > 0 && headers[i].first == headers[i - 1].first) {
      canonical_headers.pop_back();
      canonical_headers += "," + headers[i].second + "\n";
      continue;
    }
    canonical_headers += headers[i].first + ":" + headers[i].second + "\n";
    signed_headers += (signed_headers.empty() ? "" : ";") + headers[i].first;
  }
  const std::string canonical_request =
      fmt::format("{}\n{}\n{}\n{}\n{}\n{}", request.method, url.path, CanonicalQuery(url.query),
                  canonical_headers, signed_headers, Sha256Hex(request.body));
  const std::string scope = fmt::format("{}/{}/{}/aws4_request", date, region, service);
  const std::string to_sign =
      fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", amz_date, scope, Sha256Hex(canonical_request));
  const std::string signature =
      HexEncode(Hmac(AwsSigningKey(credentials.secret_access_key, date, region, service), to_sign));
  request.headers.push_back(
      {"Authorization",
       fmt::format("AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={}, Signature={}",
                   credentials.access_key_id, scope, signed_headers, signature)});
}

}  // namespace egress::adapters
