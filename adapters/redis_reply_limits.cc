#include "adapters/redis_reply_limits.h"

#include <cstdlib>
#include <cstring>

#include <hiredis/hiredis.h>

namespace egress::adapters {
namespace {

// Counts the `children` an array of the reply `task` belongs to announces (an element is counted
// when its array announces it, a reply's top object when it starts the reply); false (with the
// reason kept) when the reply would exceed its budget.
bool Admit(const redisReadTask* task, size_t children) {
  auto* budget = static_cast<RedisReplyBudget*>(task->privdata);
  if (budget == nullptr) {
    return true;
  }
  if (task->parent == nullptr) {
    budget->objects = 1;
  }
  budget->objects += children;
  if (budget->objects > kMaxReplyObjects) {
    budget->refused = "redis reply of more than 1,048,576 objects";
    return false;
  }
  return true;
}

void Refuse(const redisReadTask* task, const char* why) {
  if (auto* budget = static_cast<RedisReplyBudget*>(task->privdata); budget != nullptr) {
    budget->refused = why;
  }
}

// As hiredis' own createReplyObject and its callers (hiredis.c, 0.14): calloc'ed, linked into
// the parent array at the task's index.
redisReply* Create(const redisReadTask* task, int type) {
  auto* r = static_cast<redisReply*>(std::calloc(1, sizeof(redisReply)));
  if (r == nullptr) {
    return nullptr;
  }
  r->type = type;
  if (task->parent != nullptr) {
    static_cast<redisReply*>(task->parent->obj)->element[task->idx] = r;
  }
  return r;
}

void* CreateString(const redisReadTask* task, char* str, size_t len) {
  if (len > kMaxReplyString) {
    Refuse(task, "redis reply string over 16 MiB");
    return nullptr;
  }
  if (!Admit(task, 0)) {
    return nullptr;
  }
  auto* buf = static_cast<char*>(std::malloc(len + 1));
  if (buf == nullptr) {
    return nullptr;
  }
  std::memcpy(buf, str, len);
  buf[len] = '\0';
  redisReply* r = Create(task, task->type);
  if (r == nullptr) {
    std::free(buf);
    return nullptr;
  }
  r->str = buf;
  r->len = len;
  return r;
}

void* CreateArray(const redisReadTask* task, int elements) {
  if (elements < 0 || static_cast<size_t>(elements) > kMaxReplyElements) {
    Refuse(task, "redis reply array of more than 65,536 elements");
    return nullptr;
  }
  if (!Admit(task, static_cast<size_t>(elements))) {
    return nullptr;
  }
  redisReply* r = Create(task, REDIS_REPLY_ARRAY);
  if (r == nullptr) {
    return nullptr;
  }
  if (elements > 0) {
    r->element = static_cast<redisReply**>(std::calloc(elements, sizeof(redisReply*)));
    if (r->element == nullptr) {
      if (task->parent != nullptr) {
        static_cast<redisReply*>(task->parent->obj)->element[task->idx] = nullptr;
      }
      std::free(r);
      return nullptr;
    }
  }
  r->elements = static_cast<size_t>(elements);
  return r;
}

void* CreateInteger(const redisReadTask* task, long long value) {
  if (!Admit(task, 0)) {
    return nullptr;
  }
  redisReply* r = Create(task, REDIS_REPLY_INTEGER);
  if (r != nullptr) {
    r->integer = value;
  }
  return r;
}

void* CreateNil(const redisReadTask* task) {
  if (!Admit(task, 0)) {
    return nullptr;
  }
  return Create(task, REDIS_REPLY_NIL);
}

redisReplyObjectFunctions bounded_functions = {CreateString, CreateArray, CreateInteger, CreateNil,
                                               freeReplyObject};

}  // namespace

redisReplyObjectFunctions* BoundedReplyFunctions() { return &bounded_functions; }

}  // namespace egress::adapters
