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

// Where a URL that starts at `start` ends in free text: at white space, a control byte, a double
// quote, an angle bracket or a backtick, the delimiters RFC 3986 (appendix C) names for URLs in
// text; none of them may appear in a URL (intake refuses destinations with them). A single quote
// is a sub-delimiter that may (RFC 3986, 2.2), so it does not end one. Non-ASCII bytes, as in an
// IRI, belong to it.
size_t UrlEnd(std::string_view text, size_t start) {
  size_t i = start;
  while (i < text.size()) {
    const auto u = static_cast<unsigned char>(text[i]);
    // "POST <url>: error", "<url>, then": punctuation before white space ends it.
    if ((text[i] == ':' || text[i] == ',') &&
        (i + 1 == text.size() || static_cast<unsigned char>(text[i + 1]) <= 0x20)) {
      break;
    }
    if (u <= 0x20 || u == 0x7f || text[i] == '"' || text[i] == '<' || text[i] == '>' ||
        text[i] == '`') {
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

// The secret parts of paths, declared per platform (docs/security.md, "Redaction", with sources):
//   - the rest of the path after a segment of kSecretRestSegments that has one after it: Slack
//     incoming webhooks (hooks.slack.com/services/T/B/<secret>), workflow webhooks and triggers
//     (/workflows/..., /triggers/..., also Power Automate's workflows), Microsoft Teams connector
//     webhooks (<tenant>.webhook.office.com/webhookb2/<ids>/IncomingWebhook/<hash>/<id>, and the
//     older outlook.office.com/webhook/<ids>/IncomingWebhook/...);
//   - Discord webhook tokens: webhooks/<id>/<token>, the id kept;
//   - Telegram bot tokens, a segment bot<digits>:<secret> (api.telegram.org/bot<token>/<method>);
//   - Mattermost incoming webhooks, hooks/<26 lowercase letters and digits> as the last segment,
//     and Rocket.Chat's, hooks/<id>/<token>: the rest of the path after hooks/.
constexpr std::array<std::string_view, 5> kSecretRestSegments = {
    "services", "workflows", "triggers", "webhookb2", "IncomingWebhook"};

// Where the path segment starting at `at` ends: at '/', '?', '#' or `end`.
size_t SegmentEnd(std::string_view text, size_t at, size_t end) {
  while (at < end && text[at] != '/' && text[at] != '?' && text[at] != '#') {
    ++at;
  }
  return at;
}

// Where the path from `at` ends: at '?', '#' or `end`.
size_t PathEnd(std::string_view text, size_t at, size_t end) {
  while (at < end && text[at] != '?' && text[at] != '#') {
    ++at;
  }
  return at;
}

bool AllOf(std::string_view s, bool (*pred)(char)) {
  for (char c : s) {
    if (!pred(c)) {
      return false;
    }
  }
  return !s.empty();
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || IsDigit(c); }

// A secret path part whose segment starts at `at` (the segment runs to SegmentEnd, the path to
// PathEnd, never past `end`): appends what is shown of it to `out` and returns where the text
// goes on; `at` when nothing there is secret.
size_t RedactSecretPath(std::string_view text, size_t at, size_t end, std::string& out) {
  const size_t seg_end = SegmentEnd(text, at, end);
  const std::string_view seg = text.substr(at, seg_end - at);
  // The segment after this one, when there is one and it is not empty.
  const bool has_next =
      seg_end + 1 < end && text[seg_end] == '/' && SegmentEnd(text, seg_end + 1, end) > seg_end + 1;
  for (std::string_view name : kSecretRestSegments) {
    if (seg == name && has_next) {
      out.append(seg);
      out.push_back('/');
      out += kRedacted;
      return PathEnd(text, seg_end, end);
    }
  }
  if (seg == "webhooks" && has_next) {
    const size_t id_end = SegmentEnd(text, seg_end + 1, end);
    const std::string_view id = text.substr(seg_end + 1, id_end - seg_end - 1);
    if (AllOf(id, IsDigit) && id_end + 1 < end && text[id_end] == '/' &&
        SegmentEnd(text, id_end + 1, end) > id_end + 1) {
      out.append(text.substr(at, id_end + 1 - at));
      out += kRedacted;
      return SegmentEnd(text, id_end + 1, end);
    }
  }
  if (seg == "hooks" && has_next) {
    const size_t next_end = SegmentEnd(text, seg_end + 1, end);
    const std::string_view next = text.substr(seg_end + 1, next_end - seg_end - 1);
    const bool rocket = next_end + 1 < end && text[next_end] == '/' &&
                        SegmentEnd(text, next_end + 1, end) > next_end + 1;
    const bool mattermost = next.size() == 26 && AllOf(next, IsLowerAlnum) &&
                            PathEnd(text, seg_end + 1, end) == next_end;
    if (rocket || mattermost) {
      out += "hooks/";
      out += kRedacted;
      return PathEnd(text, seg_end, end);
    }
  }
  if (seg.starts_with("bot")) {
    size_t j = 3;
    while (j < seg.size() && IsDigit(seg[j])) {
      ++j;
    }
    if (j > 3 && j < seg.size() && seg[j] == ':') {
      out += "bot";
      out += kRedacted;
      return seg_end;
    }
  }
  return at;
}

// RedactText, or with `whole_url` the text as one URL when it starts with one (a destination:
// it ends where the text does, whatever bytes it holds).
std::string Redact(std::string_view text, bool whole_url) {
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
      url_end = whole_url ? text.size() : UrlEnd(text, i + 3);
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
    // A path segment starts (after a '/' in a URL's path; in other text after a '/' or any byte
    // that cannot be part of a name, as in "webhooks/1/<token>" or a destination key's 0x1f).
    const bool segment_start =
        in_url ? i > authority_end && text[i - 1] == '/' : i == 0 || !IsTokenByte(text[i - 1]);
    if (segment_start && (in_url || c != '/')) {
      const size_t next = RedactSecretPath(text, i, in_url ? url_end : UrlEnd(text, i), out);
      if (next != i) {
        i = next;
        continue;
      }
    }
    AppendVisible(out, c);
    ++i;
  }
  return out;
}

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

std::string RedactText(std::string_view text) { return Redact(text, false); }

std::string RedactDestination(std::string_view destination) {
  const size_t scheme = destination.find("://");
  const bool url = scheme != std::string_view::npos && scheme > 0 &&
                   destination.substr(0, scheme).find_first_of("/?#@") == std::string_view::npos;
  return Redact(destination, url);
}

std::string DestinationKeyText(std::string_view key) {
  size_t pos = 0;
  for (int part = 0; part < 3; ++part) {
    pos = key.find('\x1f', pos);
    if (pos == std::string_view::npos) {
      return RedactDestination(key);  // a destination alone
    }
    ++pos;
  }
  return RedactText(key.substr(0, pos)) + RedactDestination(key.substr(pos));
}

}  // namespace egress
