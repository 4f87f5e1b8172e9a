#include "adapters/header_list.h"

#include "adapters/header_number.h"
#include "adapters/http_header.h"

namespace egress::adapters {
namespace {

// The next piece of `text` up to `sep` outside double quotes; advances `text` past `sep`.
std::string_view NextPiece(std::string_view& text, char sep) {
  bool quoted = false;
  size_t i = 0;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (quoted && c == '\\') {
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && c == sep) {
      break;
    }
  }
  std::string_view piece = text.substr(0, std::min(i, text.size()));
  text.remove_prefix(std::min(i + 1, text.size()));
  return piece;
}

// The contents of a complete "..." string, or nullopt.
std::optional<std::string_view> Unquote(std::string_view text) {
  if (text.size() < 2 || text.front() != '"' || text.back() != '"') {
    return std::nullopt;
  }
  std::string_view inner = text.substr(1, text.size() - 2);
  for (size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] == '\\') {
      ++i;
      if (i == inner.size()) {
        return std::nullopt;  // The closing quote was escaped.
      }
    } else if (inner[i] == '"') {
      return std::nullopt;
    }
  }
  return inner;
}

// Fills name/value/number from the part before the first ';'. False if unusable.
bool ReadHead(std::string_view head, HeaderListMember& member) {
  head = TrimOws(head);
  if (head.empty() || head.front() == '(') {
    return false;
  }
  if (head.front() == '"') {
    std::optional<std::string_view> inner = Unquote(head);
    member.name = inner.value_or("");
    return inner.has_value();
  }
  if (std::optional<double> n = ParseHeaderNumber(head)) {
    member.number = n;
    return true;
  }
  size_t eq = head.find('=');
  member.name = TrimOws(head.substr(0, eq));
  if (eq != std::string_view::npos) {
    member.value = TrimOws(head.substr(eq + 1));
  }
  return !member.name.empty();
}

}  // namespace

std::optional<std::string_view> HeaderListMember::Param(std::string_view key) const {
  for (const auto& [k, v] : params) {
    if (EqualsIgnoreCase(k, key)) {
      return v;
    }
  }
  return std::nullopt;
}

std::vector<HeaderListMember> ParseHeaderList(std::string_view text) {
  std::vector<HeaderListMember> members;
  while (!text.empty() && members.size() < kMaxHeaderListMembers) {
    std::string_view piece = NextPiece(text, ',');
    HeaderListMember member;
    if (!ReadHead(NextPiece(piece, ';'), member)) {
      continue;
    }
    while (!piece.empty()) {
      std::string_view param = NextPiece(piece, ';');
      size_t eq = param.find('=');
      std::string_view key = TrimOws(param.substr(0, eq));
      std::string_view value = eq == std::string_view::npos ? "" : TrimOws(param.substr(eq + 1));
      if (!key.empty()) {
        member.params.emplace_back(key, value);
      }
    }
    members.push_back(std::move(member));
  }
  return members;
}

}  // namespace egress::adapters
