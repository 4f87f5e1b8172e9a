#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace egress {

// Hexadecimal text: the one encoder and decoder of the code base (keys, digests, sealed
// destinations, percent-escapes, nonces). Pure; thread-safe.

// 0 to 15 for '0'-'9', 'a'-'f' and 'A'-'F'; -1 for any other character.
int HexDigitValue(char c);

// Appends the two lowercase hex digits of `byte`.
void AppendHexByte(std::string& out, uint8_t byte);

// Lowercase hex of `bytes`, two digits a byte.
std::string HexEncode(std::string_view bytes);

// The bytes `hex` stands for (digits of either case); nullopt when its length is odd or a
// character is not a hex digit.
std::optional<std::string> HexDecode(std::string_view hex);

}  // namespace egress
