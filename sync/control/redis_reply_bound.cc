#include "sync/control/redis_reply_bound.h"

#include <hiredis/hiredis.h>

#include "absl/strings/str_cat.h"
#include "base/check.h"

namespace latentd::sync {
namespace {

RedisReplyBound* BoundOf(const redisReadTask* task) {
  return static_cast<RedisReplyBound*>(task->privdata);
}

}  // namespace

RedisReplyBound::RedisReplyBound(RedisReplyLimits limits) : limits_(limits) {
  functions_.createString = &RedisReplyBound::CreateString;
  functions_.createArray = &RedisReplyBound::CreateArray;
  functions_.createInteger = &RedisReplyBound::CreateInteger;
  functions_.createNil = &RedisReplyBound::CreateNil;
  functions_.freeObject = &RedisReplyBound::FreeObject;
}

void RedisReplyBound::Install(redisReader* reader) {
  LATENTD_CHECK(reader != nullptr && reader->fn != nullptr &&
                reader->fn != &functions_);
  defaults_ = reader->fn;
  reader->fn = &functions_;
  reader->privdata = this;
}

void RedisReplyBound::StartIfRoot(const redisReadTask* task) {
  if (task->parent != nullptr) return;
  elements_ = 0;
  refusal_.clear();
}

// Returning null makes the reader fail ("Out of memory" in its errstr,
// REDIS_ERR_OOM) and free the part of the reply it has built.
void* RedisReplyBound::CreateString(const redisReadTask* task, char* str,
                                    size_t len) {
  RedisReplyBound* self = BoundOf(task);
  self->StartIfRoot(task);
  if (len > self->limits_.max_string_bytes) {
    self->refusal_ = absl::StrCat("Redis reply has a string of ", len,
                                  " bytes, over the bound of ",
                                  self->limits_.max_string_bytes);
    return nullptr;
  }
  return self->defaults_->createString(task, str, len);
}

void* RedisReplyBound::CreateArray(const redisReadTask* task, int elements) {
  RedisReplyBound* self = BoundOf(task);
  self->StartIfRoot(task);
  if (elements < 0) {
    self->refusal_ = absl::StrCat("Redis reply has an array header of ",
                                  elements, " elements");
    return nullptr;
  }
  self->elements_ += elements;
  if (self->elements_ > self->limits_.max_elements) {
    self->refusal_ = absl::StrCat("Redis reply declares ", self->elements_,
                                  " array elements in all, over the bound of ",
                                  self->limits_.max_elements);
    return nullptr;
  }
  return self->defaults_->createArray(task, elements);
}

void* RedisReplyBound::CreateInteger(const redisReadTask* task,
                                     long long value) {
  RedisReplyBound* self = BoundOf(task);
  self->StartIfRoot(task);
  return self->defaults_->createInteger(task, value);
}

void* RedisReplyBound::CreateNil(const redisReadTask* task) {
  RedisReplyBound* self = BoundOf(task);
  self->StartIfRoot(task);
  return self->defaults_->createNil(task);
}

// hiredis's replies are plain redisReply objects (the defaults made them).
void RedisReplyBound::FreeObject(void* reply) { freeReplyObject(reply); }

}  // namespace latentd::sync
