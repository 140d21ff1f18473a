// Test helpers that write .zst and .gz files (libzstd, zlib).
#ifndef LATENTD_TESTS_CORPORA_COMPRESS_UTIL_H_
#define LATENTD_TESTS_CORPORA_COMPRESS_UTIL_H_

#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <string>

namespace latentd::testing {

// With a content checksum, as the zstd command line writes by default.
inline std::string ZstdCompress(const std::string& data, int level = 3) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  ZSTD_CCtx* ctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_checksumFlag, 1);
  size_t n =
      ZSTD_compress2(ctx, out.data(), out.size(), data.data(), data.size());
  ZSTD_freeCCtx(ctx);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

inline std::string GzipCompress(const std::string& data) {
  z_stream z;
  std::memset(&z, 0, sizeof(z));
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace latentd::testing

#endif  // LATENTD_TESTS_CORPORA_COMPRESS_UTIL_H_
