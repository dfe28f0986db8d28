// tests/support/gzip_bomb.hpp - a valid gzip file of `head` followed by n zero bytes, about n/1000
// bytes long and built in milliseconds however large n is: 1 MiB of zeros is deflated once (a
// raw stream ended with a full flush, which refers to nothing before it) and the result
// repeated; the trailer's CRC-32 is combined arithmetically. For the size-cap tests: an IDX file
// or a .tar.gz that declares, and really holds, gigabytes.
//
// The test program does not link zlib (libdezero does, privately): zlib is dlopen()ed here,
// and zlib.h gives the types and constants only.
#pragma once

#include <dlfcn.h>
#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dzt {

struct Zlib {
  decltype(&::deflateInit2_) init = nullptr;
  decltype(&::deflate) deflate = nullptr;
  decltype(&::deflateEnd) end = nullptr;
  decltype(&::crc32) crc32 = nullptr;
  decltype(&::crc32_combine) combine = nullptr;
  static const Zlib& get() {
    static const Zlib z = [] {
      Zlib l;
      void* h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
      if (!h) throw std::runtime_error("gzip_bomb: cannot load libz.so.1");
      l.init = reinterpret_cast<decltype(l.init)>(dlsym(h, "deflateInit2_"));
      l.deflate = reinterpret_cast<decltype(l.deflate)>(dlsym(h, "deflate"));
      l.end = reinterpret_cast<decltype(l.end)>(dlsym(h, "deflateEnd"));
      l.crc32 = reinterpret_cast<decltype(l.crc32)>(dlsym(h, "crc32"));
      l.combine = reinterpret_cast<decltype(l.combine)>(dlsym(h, "crc32_combine"));
      if (!l.init || !l.deflate || !l.end || !l.crc32 || !l.combine)
        throw std::runtime_error("gzip_bomb: libz.so.1 lacks a symbol");
      return l;
    }();
    return z;
  }
};

// `in` as raw deflate blocks, from a fresh stream, ended by a full flush (flush = Z_FULL_FLUSH)
// or as the final block (Z_FINISH).
inline std::string raw_deflate(const std::string& in, int flush) {
  const Zlib& z = Zlib::get();
  z_stream s{};
  if (z.init(&s, 9, Z_DEFLATED, -MAX_WBITS, 9, Z_DEFAULT_STRATEGY, ZLIB_VERSION, static_cast<int>(sizeof(z_stream))) !=
      Z_OK)
    throw std::runtime_error("gzip_bomb: deflateInit2 failed");
  std::string out(in.size() + in.size() / 100 + 1024, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  s.avail_in = static_cast<uInt>(in.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  const int rc = z.deflate(&s, flush);
  out.resize(out.size() - s.avail_out);
  z.end(&s);
  if (rc != (flush == Z_FINISH ? Z_STREAM_END : Z_OK) || s.avail_in != 0)
    throw std::runtime_error("gzip_bomb: deflate failed");
  return out;
}

// head + n zero bytes as one raw deflate stream, with its CRC-32 and length (a zip entry's data).
struct DeflatedZeros {
  std::string raw;
  std::uint32_t crc = 0;
  std::uint64_t size = 0;
};
inline DeflatedZeros deflate_zeros(const std::string& head, std::uint64_t n) {
  const Zlib& z = Zlib::get();
  constexpr std::uint64_t kChunk = 1 << 20;
  const std::string zeros(kChunk, '\0');
  const std::string chunk = raw_deflate(zeros, Z_FULL_FLUSH);
  const uLong crc_chunk = z.crc32(0L, reinterpret_cast<const Bytef*>(zeros.data()), kChunk);
  DeflatedZeros d;
  d.raw = raw_deflate(head, Z_FULL_FLUSH);
  uLong crc = z.crc32(0L, reinterpret_cast<const Bytef*>(head.data()), static_cast<uInt>(head.size()));
  for (std::uint64_t i = 0; i < n / kChunk; ++i) {
    d.raw += chunk;
    crc = z.combine(crc, crc_chunk, static_cast<z_off_t>(kChunk));
  }
  const std::string rest(n % kChunk, '\0');
  d.raw += raw_deflate(rest, Z_FINISH);
  crc = z.combine(crc, z.crc32(0L, reinterpret_cast<const Bytef*>(rest.data()), static_cast<uInt>(rest.size())),
                  static_cast<z_off_t>(rest.size()));
  d.crc = static_cast<std::uint32_t>(crc);
  d.size = head.size() + n;
  return d;
}

// gzip(head + n zero bytes).
inline std::string gzip_zeros(const std::string& head, std::uint64_t n) {
  const DeflatedZeros d = deflate_zeros(head, n);
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
  out += d.raw;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((d.crc >> (8 * i)) & 0xff));
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((d.size >> (8 * i)) & 0xff));
  return out;
}

}  // namespace dzt
