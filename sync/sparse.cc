#include <cstdlib>

#include "sync/abelian_table.h"

namespace latentd::sync {

void AddSparse(const SparseVector& a, const SparseVector& b, int sign,
               SparseVector* out) {
  // Hot in every round: write through a raw pointer into a buffer sized
  // for the worst case, then trim.
  out->resize(a.size() + b.size());
  SparseEntry* o = out->data();
  const SparseEntry* i = a.data();
  const SparseEntry* const ia = i + a.size();
  const SparseEntry* j = b.data();
  const SparseEntry* const jb = j + b.size();
  while (i != ia && j != jb) {
    if (i->topic < j->topic) {
      *o++ = *i++;
    } else if (j->topic < i->topic) {
      *o++ = {j->topic, sign * j->count};
      ++j;
    } else {
      const int64_t c = i->count + sign * j->count;
      if (c != 0) *o++ = {i->topic, c};
      ++i;
      ++j;
    }
  }
  while (i != ia) *o++ = *i++;
  for (; j != jb; ++j) *o++ = {j->topic, sign * j->count};
  out->resize(static_cast<size_t>(o - out->data()));
}

int64_t L1Norm(const SparseVector& v) {
  int64_t n = 0;
  for (const SparseEntry& e : v) n += std::llabs(e.count);
  return n;
}

}  // namespace latentd::sync
