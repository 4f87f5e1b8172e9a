#include "dispatcher/base/redact.h"

#include <algorithm>
#include <array>

#include "dispatcher/base/hex.h"

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
//     (/workflows/..., /triggers/..., also Power Automate's workflows), Microsoft 365 connector
//     webhooks (<tenant>.webhook.office.com/webhookb2/<ids>/IncomingWebhook/<hash>/<id>, and the
//     older outlook.office.com/webhook/<ids>/IncomingWebhook/...);
//   - Discord webhook tokens: webhooks/<id>/<token>, the id kept;
//   - bot tokens in a path, a segment bot<digits>:<secret> (a Bot API's /bot<token>/<method>);
//   - Mattermost incoming webhooks, hooks/<26 lowercase letters and digits> as the last segment,
//     and Rocket.Chat's, hooks/<id>/<token>: the rest of the path after hooks/.
//
// Names are compared as a receiver may read them: percent-escapes decoded, ASCII case folded, a
// ";params" suffix dropped, empty segments ("//") passed over.
constexpr std::array<std::string_view, 5> kSecretRestSegments = {
    "services", "workflows", "triggers", "webhookb2", "incomingwebhook"};

// The longest segment name read (the names above, and "bot" with a bot id and ':').
constexpr size_t kMaxName = 40;

bool IsSegmentEnd(char c) { return c == '/' || c == '?' || c == '#'; }

// Where the path segment starting at `at` ends: at '/', '?', '#' or `end`.
size_t SegmentEnd(std::string_view text, size_t at, size_t end) {
  while (at < end && !IsSegmentEnd(text[at])) {
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

// The first non-empty segment from `at` (past any '/'), or `end` when the path ends first.
size_t NextSegment(std::string_view text, size_t at, size_t end) {
  while (at < end && text[at] == '/') {
    ++at;
  }
  return at < end && !IsSegmentEnd(text[at]) ? at : end;
}

// A segment's name as compared: percent-escapes decoded, lowercase, up to ';', at most kMaxName
// bytes (`whole`: the segment's name was read to its end). O(kMaxName).
struct Name {
  std::string text;
  bool whole = false;
};
Name ReadName(std::string_view text, size_t at, size_t end) {
  Name name;
  while (at < end && !IsSegmentEnd(text[at]) && text[at] != ';') {
    if (name.text.size() == kMaxName) {
      return name;
    }
    char c = text[at];
    if (c == '%' && at + 2 < end && HexDigitValue(text[at + 1]) >= 0 &&
        HexDigitValue(text[at + 2]) >= 0) {
      c = static_cast<char>(HexDigitValue(text[at + 1]) * 16 + HexDigitValue(text[at + 2]));
      at += 2;
    }
    name.text.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    ++at;
  }
  name.whole = true;
  return name;
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

// "bot<digits>:" starts the name (a Bot API's token in its path).
bool IsBotToken(std::string_view name) {
  if (!name.starts_with("bot")) {
    return false;
  }
  size_t j = 3;
  while (j < name.size() && IsDigit(name[j])) {
    ++j;
  }
  return j > 3 && j < name.size() && name[j] == ':';
}

void AppendVisibleText(std::string& out, std::string_view text);

// A secret path part whose segment starts at `at` (never read past `end`; `in_url`: in a URL's
// path rather than other text): appends what is shown
// of it to `out` and returns where the text goes on; `at` when nothing there is secret. Reads
// O(kMaxName) unless a name matches, and then no more than it passes over (or the segments
// after it, which the caller reads next in any case): linear in all.
size_t RedactSecretPath(std::string_view text, size_t at, size_t end, bool in_url,
                        std::string& out) {
  const Name name = ReadName(text, at, end);
  if (IsBotToken(name.text)) {
    out += "bot";
    out += kRedacted;
    return SegmentEnd(text, at, end);
  }
  if (!name.whole) {
    return at;
  }
  const size_t seg_end = SegmentEnd(text, at, end);
  const size_t next = NextSegment(text, seg_end, end);
  if (next == end) {
    return at;  // no segment after it
  }
  auto redact_rest = [&] {
    AppendVisibleText(out, text.substr(at, next - at));
    out += kRedacted;
    return PathEnd(text, next, end);
  };
  for (std::string_view rest : kSecretRestSegments) {
    if (name.text == rest) {
      return redact_rest();
    }
  }
  const size_t next_end = SegmentEnd(text, next, end);
  const size_t after_next = NextSegment(text, next_end, end);
  if (name.text == "webhooks") {
    const Name id = ReadName(text, next, end);
    if (id.whole && AllOf(id.text, IsDigit) && after_next != end) {
      AppendVisibleText(out, text.substr(at, after_next - at));
      out += kRedacted;
      return SegmentEnd(text, after_next, end);
    }
  }
  // In a URL's path only: "hooks" is a common name for a credential, and a destination key as
  // shown ("webhook/acme/hooks/https://...") is not a path.
  if (name.text == "hooks" && in_url) {
    const Name id = ReadName(text, next, end);
    const bool mattermost = id.whole && id.text.size() == 26 && AllOf(id.text, IsLowerAlnum);
    if (after_next != end || mattermost) {  // Rocket.Chat: <id>/<token>
      return redact_rest();
    }
  }
  return at;
}

// RedactText, or with `whole_url` the text as one URL when it starts with one (a destination:
// it ends where the text does, whatever bytes it holds). Linear in the text: every scan ahead
// (a URL's extent, its authority, a run of text) is made once and kept while the text is read.
std::string Redact(std::string_view text, bool whole_url) {
  std::string out;
  out.reserve(text.size() + 8);
  size_t i = 0;
  // Inside a URL (from its scheme to UrlEnd): its userinfo, query and fragment are redacted.
  size_t url_end = 0;
  size_t authority_end = 0;  // within the URL: where the host part ends (first '/', '?', '#')
  // The next '/', '?' or '#' at or after delim_from (the URL's end, delim_bound, if none), and
  // the last '@' between them (npos if none): kept while URLs nested in one
  // ("https://https://u@x") are read.
  size_t delim_from = 0;
  size_t delim_at = 0;
  size_t delim_bound = 0;
  size_t last_at = std::string_view::npos;
  bool delim_known = false;
  size_t run_end = 0;  // outside URLs: where the current run of text ends (UrlEnd)
  while (i < text.size()) {
    const char c = text[i];
    // A URL starts: find its extent and its userinfo.
    if (StartsWithAt(text, i, "://")) {
      if (whole_url) {
        url_end = text.size();
      } else if (i >= url_end) {
        url_end = UrlEnd(text, i + 3);
      }  // else nested in the URL being read: it ends where that one does
      size_t host = i + 3;
      if (!delim_known || host < delim_from || host > delim_at || delim_bound != url_end) {
        delim_from = host;
        delim_at = host;
        delim_bound = url_end;
        last_at = std::string_view::npos;
        while (delim_at < url_end && !IsSegmentEnd(text[delim_at])) {
          if (text[delim_at] == '@') {
            last_at = delim_at;
          }
          ++delim_at;
        }
        delim_known = true;
      }
      authority_end = delim_at;
      out += "://";
      if (last_at != std::string_view::npos && last_at >= host && last_at < authority_end) {
        out += kRedacted;
        host = last_at;  // from the '@'
      }
      i = host;
      continue;
    }
    const bool in_url = i < url_end;
    if (in_url && i >= authority_end && (c == '?' || c == '&' || c == ';')) {
      // A query parameter: its name stays, its value goes; an item without '=' goes whole (it
      // may be the secret itself: "?<token>").
      out.push_back(c);
      ++i;
      const size_t name = i;
      while (i < url_end && text[i] != '=' && text[i] != '&' && text[i] != '#') {
        ++i;
      }
      if (i < url_end && text[i] == '=') {
        AppendVisibleText(out, text.substr(name, i - name));
        out.push_back('=');
        ++i;
        size_t value = i;
        while (i < url_end && text[i] != '&' && text[i] != '#') {
          ++i;
        }
        if (i > value) {
          out += kRedacted;
        }
      } else if (i > name) {
        out += kRedacted;
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
    // A path segment starts: after a '/' in a URL's path; in other text at its start or after a
    // byte that cannot be part of a name ('/', a destination key's 0x1f, white space, a quote):
    // "webhooks/1/<token>".
    const bool segment_start = in_url ? i > authority_end && text[i - 1] == '/'
                                      : c != '/' && (i == 0 || !IsTokenByte(text[i - 1]));
    if (segment_start) {
      size_t end = url_end;
      if (!in_url) {
        if (run_end <= i) {
          run_end = std::max(UrlEnd(text, i), i + 1);
        }
        end = run_end;
      }
      const size_t next = RedactSecretPath(text, i, end, in_url, out);
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

void AppendVisibleText(std::string& out, std::string_view text) {
  for (char c : text) {
    AppendVisible(out, c);
  }
}

}  // namespace

bool MayNeedRedaction(std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '/' || c == '?' || c == '@' || c == '#' || c == ':' ||
        c == '%') {
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
