#pragma once

#include <cstddef>

struct redisReplyObjectFunctions;

namespace egress::adapters {

// What one reply from Redis may hold. Redis is a peer, and what it sends is input like any other:
// a reply is refused while hiredis parses it, before it is allocated, when it would exceed these.
inline constexpr int kMaxReplyDepth = 8;
inline constexpr size_t kMaxReplyElements = 65'536;  // of one array
inline constexpr size_t kMaxReplyObjects = 1 << 20;  // of one reply, at every level
inline constexpr size_t kMaxReplyString = 16 << 20;  // bytes of one string
// Bytes received and not yet parsed (a string is parsed only once all of it is in).
inline constexpr size_t kMaxUnparsedReply = 32 << 20;

// The reply being parsed on one connection: its objects so far, and why it was refused (nullptr
// while it was not). hiredis' reader holds a pointer to it (its privdata).
struct RedisReplyBudget {
  size_t objects = 0;
  const char* refused = nullptr;
};

// hiredis reply object functions building the same redisReply tree as hiredis' own (freed with
// freeReplyObject), which refuse an array of more than kMaxReplyElements, a string longer than
// kMaxReplyString, or a reply of more than kMaxReplyObjects objects, before allocating it: the
// parse then fails (hiredis says out of memory) and the connection is dropped. The functions
// read and write the RedisReplyBudget set as the reader's privdata.
redisReplyObjectFunctions* BoundedReplyFunctions();

}  // namespace egress::adapters
