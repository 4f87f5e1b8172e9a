#pragma once

#include <cstddef>
#include <string_view>

#include "dispatcher/base/status.h"

namespace egress::adapters {

// The longest token a credential may hold. Platforms' tokens are far shorter (a LINE channel
// access token, the longest, is about 170 bytes).
inline constexpr size_t kMaxTokenBytes = 4096;

// Whether `token` can go as it is into an Authorization header ("Bearer <token>", "Bot <token>"):
// 1 to kMaxTokenBytes bytes of visible ASCII (0x21-0x7E), as every platform's tokens are; a CR,
// LF or NUL would end or split the header. InvalidArgument saying what is wrong and never echoing
// the token, which is a secret. Pure; safe from any thread.
Status CheckCredentialToken(std::string_view token);

}  // namespace egress::adapters
