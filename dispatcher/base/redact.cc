#include "dispatcher/base/redact.h"

#include <array>

namespace egress {
namespace {

bool IsTokenByte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~' || c == '%';
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Where a URL that starts at `start` ends: at white space, a control byte, a quote or an angle
// bracket (non-ASCII bytes, as in an IRI, belong to it).
size_t UrlEnd(std::string_view text, size_t start) {
  size_t i = start;
  while (i < text.size()) {
    const auto u = static_cast<unsigned char>(text[i]);
    // "POST <url>: error", "<url>, then": punctuation before white space ends it.
    if ((text[i] == ':' || text[i] == ',') &&
        (i + 1 == text.size() || static_cast<unsigned char>(text[i + 1]) <= 0x20)) {
      break;
    }
    if (u <= 0x20 || u == 0x7f || text[i] == '"' || text[i] == '\'' || text[i] == '<' ||
        text[i] == '>' || text[i] == '`') {
      break;
    }
    ++i;
  }
  return i;
}

bool StartsWithAt(std::string_view text, size_t at, std::string_view prefix) {
  return text.size() >= at && text.substr(at).starts_with(prefix);
}

// Appends `c` as shown: 0x1f as '/', other control bytes (below 0x20, 0x7f) as \xNN, the rest as
// it is (UTF-8 text stays readable; JSON views make it valid UTF-8 themselves).
void AppendVisible(std::string& out, char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto u = static_cast<unsigned char>(c);
  if (u == 0x1f) {
    out.push_back('/');
  } else if (u < 0x20 || u == 0x7f) {
    out += "\\x";
    out.push_back(kHex[u >> 4]);
    out.push_back(kHex[u & 0xf]);
  } else {
    out.push_back(c);
  }
}

// Path segments after which everything is the secret: Slack incoming webhooks
// (hooks.slack.com/services/T/B/secret), workflow webhooks and triggers.
constexpr std::array<std::string_view, 3> kSecretPathPrefixes = {"services/", "workflows/",
                                                                 "triggers/"};

}  // namespace

bool MayNeedRedaction(std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '/' || c == '?' || c == '@' || c == '#' || c == ':') {
      return true;
    }
  }
  return false;
}

std::string RedactText(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  size_t i = 0;
  // Inside a URL (from its scheme to UrlEnd): its userinfo, query and fragment are redacted.
  size_t url_end = 0;
  size_t authority_end = 0;  // within the URL: where the host part ends (first '/', '?', '#')
  while (i < text.size()) {
    const char c = text[i];
    // A URL starts: find its extent and its userinfo.
    if (StartsWithAt(text, i, "://")) {
      url_end = UrlEnd(text, i + 3);
      size_t host = i + 3;
      authority_end = host;
      while (authority_end < url_end && text[authority_end] != '/' && text[authority_end] != '?' &&
             text[authority_end] != '#') {
        ++authority_end;
      }
      out += "://";
      const size_t at = text.substr(host, authority_end - host).rfind('@');
      if (at != std::string_view::npos) {
        out += kRedacted;
        host += at;  // from the '@'
      }
      i = host;
      continue;
    }
    const bool in_url = i < url_end;
    if (in_url && i >= authority_end && (c == '?' || c == '&' || c == ';')) {
      // A query parameter: its name stays, its value goes.
      out.push_back(c);
      ++i;
      while (i < url_end && text[i] != '=' && text[i] != '&' && text[i] != '#') {
        AppendVisible(out, text[i]);
        ++i;
      }
      if (i < url_end && text[i] == '=') {
        out.push_back('=');
        ++i;
        size_t value = i;
        while (i < url_end && text[i] != '&' && text[i] != '#') {
          ++i;
        }
        if (i > value) {
          out += kRedacted;
        }
      }
      continue;
    }
    if (in_url && i >= authority_end && c == '#') {
      out.push_back('#');
      if (i + 1 < url_end) {
        out += kRedacted;
      }
      i = url_end;
      continue;
    }
    // webhooks/<digits>/<token>: keep the id, drop the token.
    if ((i == 0 || !IsTokenByte(text[i - 1])) && StartsWithAt(text, i, "webhooks/")) {
      size_t j = i + 9;
      while (j < text.size() && IsDigit(text[j])) {
        ++j;
      }
      if (j > i + 9 && j < text.size() && text[j] == '/' && j + 1 < text.size() &&
          IsTokenByte(text[j + 1])) {
        out.append(text.substr(i, j + 1 - i));
        out += kRedacted;
        i = j + 1;
        while (i < text.size() && IsTokenByte(text[i])) {
          ++i;
        }
        continue;
      }
    }
    // /services/<...>: the rest of the path is the secret.
    if (c == '/' && i + 1 < text.size()) {
      bool matched = false;
      for (std::string_view prefix : kSecretPathPrefixes) {
        if (StartsWithAt(text, i + 1, prefix) && i + 1 + prefix.size() < text.size() &&
            IsTokenByte(text[i + 1 + prefix.size()])) {
          out.push_back('/');
          out.append(prefix);
          out += kRedacted;
          i += 1 + prefix.size();
          const size_t end = in_url ? url_end : UrlEnd(text, i);
          while (i < end && text[i] != '?' && text[i] != '#') {
            ++i;
          }
          matched = true;
          break;
        }
      }
      if (matched) {
        continue;
      }
    }
    AppendVisible(out, c);
    ++i;
  }
  return out;
}

}  // namespace egress
