#include "adapters/profile_template.h"

#include <array>
#include <utility>

namespace egress::adapters {
namespace {

constexpr std::array<std::pair<std::string_view, ProfileTemplate::Field>, 6> kFields = {{
    {"base_url", ProfileTemplate::Field::kBaseUrl},
    {"destination", ProfileTemplate::Field::kDestination},
    {"delivery_id", ProfileTemplate::Field::kDeliveryId},
    {"credential.token", ProfileTemplate::Field::kCredentialToken},
    {"credential.client_id", ProfileTemplate::Field::kCredentialClient},
    {"access_token", ProfileTemplate::Field::kAccessToken},
}};

bool Unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

bool KeptInSegment(unsigned char c) {
  return Unreserved(c) ||
         std::string_view("!$&'()*+,;=:@").find(static_cast<char>(c)) != std::string_view::npos;
}

// `text` with every byte `keep` refuses as %XX.
std::string PercentEncode(std::string_view text, bool (*keep)(unsigned char)) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (keep(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace

std::string PercentEncodeSegment(std::string_view text) {
  return PercentEncode(text, &KeptInSegment);
}

std::string PercentEncodeForm(std::string_view text) { return PercentEncode(text, &Unreserved); }

Result<ProfileTemplate> ProfileTemplate::Parse(std::string_view text) {
  ProfileTemplate out;
  out.text_ = std::string(text);
  std::string literal;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '}') {
      if (i + 1 < text.size() && text[i + 1] == '}') {
        literal.push_back('}');
        ++i;
        continue;
      }
      return Status::InvalidArgument("a '}' without its '{' (write '}}' for a brace)");
    }
    if (c != '{') {
      literal.push_back(c);
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {
      literal.push_back('{');
      ++i;
      continue;
    }
    const size_t close = text.find('}', i + 1);
    if (close == std::string_view::npos) {
      return Status::InvalidArgument("a '{' without its '}' (write '{{' for a brace)");
    }
    const std::string_view name = text.substr(i + 1, close - i - 1);
    Field field = Field::kText;
    for (const auto& [known, f] : kFields) {
      if (known == name) {
        field = f;
      }
    }
    if (field == Field::kText) {
      return Status::InvalidArgument(
          "unknown placeholder {" + std::string(name.substr(0, 40)) +
          "} (known: base_url, destination, delivery_id, credential.token, "
          "credential.client_id, access_token)");
    }
    if (!literal.empty()) {
      out.parts_.push_back({Field::kText, std::move(literal)});
      literal.clear();
    }
    out.parts_.push_back({field, {}});
    i = close;
  }
  if (!literal.empty()) {
    out.parts_.push_back({Field::kText, std::move(literal)});
  }
  return out;
}

std::string ProfileTemplate::Expand(const Values& values, bool in_url) const {
  std::string out;
  for (const Part& part : parts_) {
    std::string_view value;
    switch (part.field) {
      case Field::kText:
        out += part.text;
        continue;
      case Field::kBaseUrl:
        out += values.base_url;
        continue;
      case Field::kDestination:
        value = values.destination;
        break;
      case Field::kDeliveryId:
        value = values.delivery_id;
        break;
      case Field::kCredentialToken:
        value = values.token;
        break;
      case Field::kCredentialClient:
        value = values.client_id;
        break;
      case Field::kAccessToken:
        value = values.access_token;
        break;
    }
    out += in_url ? PercentEncodeSegment(value) : std::string(value);
  }
  return out;
}

bool ProfileTemplate::Uses(Field field) const {
  for (const Part& part : parts_) {
    if (part.field == field) {
      return true;
    }
  }
  return false;
}

}  // namespace egress::adapters
