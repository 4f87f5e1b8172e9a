#pragma once

#include <string>
#include <string_view>

namespace egress::adapters {

// Platform idempotency keys derived from a delivery id. A delivery id is persisted with the
// delivery, so a key derived from it is in effect made at enqueue and stored: every attempt of
// the delivery, before and after a restart, sends the same key, and different deliveries send
// different keys. Pure functions, safe from any thread.

// Discord Create Message `nonce`: 25 lowercase hex characters (the first 100 bits of
// SHA-256("discord-nonce:" + id)), within Discord's 25-character limit.
std::string DiscordNonce(std::string_view delivery_id);

// LINE `X-Line-Retry-Key`: a name-based (version 5, SHA-1) UUID of `delivery_id` in a fixed
// relay-egress namespace, lowercase "8-4-4-4-12" hex as LINE requires.
std::string LineRetryKey(std::string_view delivery_id);

}  // namespace egress::adapters
