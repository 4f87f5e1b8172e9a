#include "adapters/credential_token.h"

#include <fmt/format.h>

namespace egress::adapters {

Status CheckCredentialToken(std::string_view token) {
  if (token.empty()) {
    return Status::InvalidArgument("token: required");
  }
  if (token.size() > kMaxTokenBytes) {
    return Status::InvalidArgument(
        fmt::format("token: {} bytes is over the limit of {}", token.size(), kMaxTokenBytes));
  }
  for (size_t i = 0; i < token.size(); ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (c < 0x21 || c > 0x7e) {
      return Status::InvalidArgument(fmt::format(
          "token: byte {} is not visible ASCII (a space, a control character or non-ASCII)", i));
    }
  }
  return Status::Ok();
}

}  // namespace egress::adapters
