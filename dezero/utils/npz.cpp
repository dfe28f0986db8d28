// dezero/utils/npz.cpp - .npz (a zip of .npy files) reading and writing on zlib; the .npy format
// itself is npy.cpp.
//
// Just enough of the zip format for NumPy's files: the central directory is the
// authority on sizes (NumPy's local headers carry zip64 placeholders, and
// streamed entries use data descriptors), entries are stored or raw-deflated.
// Everything is parsed from a byte string held in memory, with a bounds check
// on every read, so a truncated or corrupt file is an IOError and never a crash.
#include "dezero/npz.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "dezero/tensor/checks.hpp"
#include "dezero/utils/atomic_file.hpp"
#include "dezero/utils/npy.hpp"

namespace dezero::utils {

namespace {

using dezero::detail::fail;
using detail::Bytes;
using detail::build_npy;
using detail::kMaxNpyHeader;
using detail::npy_header;
using detail::NpyPlan;
using detail::plan_npy;
using detail::put;
using detail::reading;
using detail::spend;
using detail::swap_elements;


constexpr std::uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr std::uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;

std::uint32_t crc32_of(const char* p, std::size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    uInt chunk = static_cast<uInt>(std::min<std::size_t>(n, std::numeric_limits<uInt>::max()));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(p), chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

// Inflates a raw deflate stream of `n` bytes at `src` into `regions`, one after the other; their
// sizes add up to the entry's uncompressed size, which the stream must fill exactly.
void inflate_into(const char* src, std::size_t n, const std::vector<std::pair<char*, std::size_t>>& regions,
                  const std::string& what) {
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) fail<IOError>(what.c_str(), "zlib inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(src));
  std::size_t in_left = n, region = 0, out_left = 0;
  std::uint64_t out_size = 0;
  for (const auto& r : regions) out_size += r.second;
  int rc = Z_OK;
  do {  // ends at the stream's end, or with Z_BUF_ERROR when input or output runs out
    if (zs.avail_in == 0 && in_left > 0) {
      zs.avail_in = static_cast<uInt>(std::min<std::size_t>(in_left, std::numeric_limits<uInt>::max()));
      in_left -= zs.avail_in;
    }
    if (zs.avail_out == 0 && out_left == 0) {
      while (region < regions.size() && regions[region].second == 0) ++region;
      if (region < regions.size()) {
        zs.next_out = reinterpret_cast<Bytef*>(regions[region].first);
        out_left = regions[region].second;
        ++region;
      }
    }
    if (zs.avail_out == 0 && out_left > 0) {
      zs.avail_out = static_cast<uInt>(std::min<std::size_t>(out_left, std::numeric_limits<uInt>::max()));
      out_left -= zs.avail_out;
    }
    rc = inflate(&zs, Z_NO_FLUSH);
  } while (rc == Z_OK);
  const bool ok = rc == Z_STREAM_END && zs.total_out == out_size;
  const char* msg = zs.msg;
  inflateEnd(&zs);
  if (!ok)
    fail<IOError>(what.c_str(), "corrupt deflate data", msg ? std::string(" (zlib: ") + msg + ")" : std::string(),
                  "; hint: the file is damaged or truncated");
}

// The first `want` bytes of a raw deflate stream (fewer when it ends first): enough to read an
// .npy header before anything of the size the entry declares is allocated.
std::string inflate_prefix(const char* src, std::size_t n, std::size_t want, const std::string& what) {
  std::string out(want, '\0');
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) fail<IOError>(what.c_str(), "zlib inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(src));
  zs.avail_in = static_cast<uInt>(std::min<std::size_t>(n, std::numeric_limits<uInt>::max()));
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(want);
  int rc = Z_OK;
  while (rc == Z_OK && zs.avail_out > 0) rc = inflate(&zs, Z_NO_FLUSH);
  const bool ok = rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR;
  out.resize(zs.total_out);
  inflateEnd(&zs);
  if (!ok) fail<IOError>(what.c_str(), "corrupt deflate data; hint: the file is damaged or truncated");
  return out;
}

std::string deflate_raw(const std::string& src) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail<IOError>("save_npz", "zlib deflateInit2 failed");
  std::string out;
  const std::size_t chunk = 1 << 20;
  std::size_t in_left = src.size();
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(src.data()));
  int rc = Z_OK;
  do {
    if (zs.avail_in == 0 && in_left > 0) {
      zs.avail_in = static_cast<uInt>(std::min<std::size_t>(in_left, std::numeric_limits<uInt>::max()));
      in_left -= zs.avail_in;
    }
    std::size_t old = out.size();
    out.resize(old + chunk);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + old);
    zs.avail_out = static_cast<uInt>(chunk);
    rc = deflate(&zs, in_left == 0 ? Z_FINISH : Z_NO_FLUSH);
    out.resize(old + chunk - zs.avail_out);
  } while (rc == Z_OK || rc == Z_BUF_ERROR);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) fail<IOError>("save_npz", "zlib deflate failed");
  return out;
}

}  // namespace

// --- .npz ------------------------------------------------------------------------------------
namespace {
NamedTensors parse_npz_checked(const std::string& bytes, const std::string& what) {
  Bytes in{bytes, what};
  if (bytes.size() < 22) fail<IOError>(what.c_str(), "not a zip/.npz file (only ", bytes.size(), " bytes)");
  // End of central directory: the last "PK\5\6" within the final 64 KiB + 22 bytes.
  std::uint64_t eocd = std::string::npos;
  const std::uint64_t lowest = bytes.size() > 22 + 65535 ? bytes.size() - 22 - 65535 : 0;
  for (std::uint64_t p = bytes.size() - 22 + 1; p-- > lowest;) {
    if (in.u32(p, "end record") == kEndSig) {
      eocd = p;
      break;
    }
  }
  if (eocd == std::string::npos)
    fail<IOError>(what.c_str(), "not a zip/.npz file, or truncated (no end-of-central-directory record)");
  std::uint64_t count = in.u16(eocd + 10, "end record");
  std::uint64_t cd_size = in.u32(eocd + 12, "end record");
  std::uint64_t cd_off = in.u32(eocd + 16, "end record");
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_off == 0xFFFFFFFF) {
    if (eocd < 20 || in.u32(eocd - 20, "zip64 locator") != kZip64LocatorSig)
      fail<IOError>(what.c_str(), "zip64 end record expected but its locator is missing");
    std::uint64_t z = in.u64(eocd - 20 + 8, "zip64 locator");
    if (in.u32(z, "zip64 end record") != kZip64EndSig) fail<IOError>(what.c_str(), "corrupt zip64 end record");
    count = in.u64(z + 32, "zip64 end record");
    cd_size = in.u64(z + 40, "zip64 end record");
    cd_off = in.u64(z + 48, "zip64 end record");
  }
  in.need(cd_off, cd_size, "central directory");

  // 1. The central directory, whole: every entry's sizes checked, and their total against the
  // cap, before anything is inflated or allocated.
  struct Entry {
    std::string key, what;
    std::uint16_t method;
    std::uint32_t crc;
    std::uint64_t csize, usize, data_off;
  };
  std::vector<Entry> entries;
  std::set<std::string> seen;
  const std::uint64_t cap = static_cast<std::uint64_t>(get_max_npz_bytes());
  std::uint64_t declared = 0;  // the entries' uncompressed sizes
  std::uint64_t p = cd_off;
  for (std::uint64_t e = 0; e < count; ++e) {
    if (in.u32(p, "central directory entry") != kCentralSig)
      fail<IOError>(what.c_str(), "corrupt central directory (entry ", e, ")");
    const std::uint16_t flags = in.u16(p + 8, "central directory entry");
    const std::uint16_t method = in.u16(p + 10, "central directory entry");
    const std::uint32_t crc = in.u32(p + 16, "central directory entry");
    std::uint64_t csize = in.u32(p + 20, "central directory entry");
    std::uint64_t usize = in.u32(p + 24, "central directory entry");
    const std::uint16_t nlen = in.u16(p + 28, "central directory entry");
    const std::uint16_t xlen = in.u16(p + 30, "central directory entry");
    const std::uint16_t clen = in.u16(p + 32, "central directory entry");
    std::uint64_t local = in.u32(p + 42, "central directory entry");
    in.need(p + 46, static_cast<std::uint64_t>(nlen) + xlen + clen, "central directory entry");
    const std::string name = bytes.substr(p + 46, nlen);
    // zip64 extra field: the 64-bit values of the fields saturated above, in this order.
    for (std::uint64_t x = p + 46 + nlen; x + 4 <= p + 46 + nlen + xlen;) {
      const std::uint16_t id = in.u16(x, "extra field"), sz = in.u16(x + 2, "extra field");
      if (id == 0x0001) {
        std::uint64_t q = x + 4;
        if (usize == 0xFFFFFFFF) { usize = in.u64(q, "zip64 extra"); q += 8; }
        if (csize == 0xFFFFFFFF) { csize = in.u64(q, "zip64 extra"); q += 8; }
        if (local == 0xFFFFFFFF) { local = in.u64(q, "zip64 extra"); q += 8; }
      }
      x += 4 + sz;
    }
    p += 46 + nlen + xlen + clen;

    const std::string entry = what + ": entry '" + name + "'";
    if (flags & 1) throw IOError(entry + " is encrypted");
    if (in.u32(local, "local header") != kLocalSig) fail<IOError>(entry.c_str(), "corrupt local header");
    const std::uint64_t data_off = local + 30 + in.u16(local + 26, "local header") + in.u16(local + 28, "local header");
    in.need(data_off, csize, "entry data");
    if (method == 0) {
      if (csize != usize) fail<IOError>(entry.c_str(), "stored entry with different sizes");
    } else if (method == 8) {
      // deflate expands at most ~1032:1; a larger claim is a corrupt size field
      if (usize / 1032 > csize + 64) fail<IOError>(entry.c_str(), "corrupt sizes in the central directory");
    } else {
      fail<IOError>(entry.c_str(), "compression method ", method, " is not supported (stored and deflate are)");
    }
    if (usize > cap - std::min(cap, declared))
      throw IOError(entry + " declares " + std::to_string(usize) + " bytes uncompressed, which with the " +
                    std::to_string(declared) + " bytes of the entries before it passes the cap of " +
                    std::to_string(cap) + " bytes (utils::set_max_npz_bytes raises it); a corrupt or hostile file?");
    declared += usize;
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".npy") != 0)
      throw IOError(entry + " is not an .npy array");
    std::string key = name.substr(0, name.size() - 4);
    if (!seen.insert(key).second) throw IOError(entry + " appears twice");
    entries.push_back(Entry{std::move(key), entry, method, crc, csize, usize, data_off});
  }

  // 2. Each entry: its header first, then the tensor it makes is counted against the cap (a
  // narrow integer widens to 4 bytes an element) before it is allocated; a deflated entry of a
  // type read as it is inflates straight into its tensor.
  NamedTensors out;
  std::uint64_t budget = cap;  // for the tensors made
  for (const Entry& e : entries) {
    const char* src = bytes.data() + e.data_off;
    if (e.method == 0) {
      const std::string_view npy(src, e.usize);
      if (crc32_of(npy.data(), npy.size()) != e.crc) fail<IOError>(e.what.c_str(), "CRC mismatch; the file is corrupt");
      const NpyPlan plan = plan_npy(npy, e.what);
      Bytes{npy, e.what}.need(plan.data_off, plan.data_bytes(), ".npy data");
      spend(budget, plan, 0, e.what);
      out.emplace_back(e.key, build_npy(plan, npy.data() + plan.data_off));
      continue;
    }
    const std::string head = inflate_prefix(src, e.csize, std::min<std::uint64_t>(e.usize, kMaxNpyHeader + 12), e.what);
    const NpyPlan plan = plan_npy(head, e.what);
    if (plan.data_off > e.usize || plan.data_bytes() > e.usize - plan.data_off)
      fail<IOError>(e.what.c_str(), "the .npy header describes ", plan.shape, " of '", plan.code, "' (",
                    plan.data_off + plan.data_bytes(), " bytes) but the entry holds ", e.usize,
                    "; the file is corrupt");
    if (!plan.widen && plan.data_off + plan.data_bytes() == e.usize) {
      spend(budget, plan, 0, e.what);
      Tensor t = Tensor::empty(plan.shape, plan.out);
      std::string header(plan.data_off, '\0');
      char* data = static_cast<char*>(t.raw_data());
      inflate_into(src, e.csize, {{header.data(), header.size()}, {data, plan.data_bytes()}}, e.what);
      const auto crc = static_cast<std::uint32_t>(crc32_combine(crc32_of(header.data(), header.size()),
                                                     crc32_of(data, plan.data_bytes()),
                                                     static_cast<z_off_t>(plan.data_bytes())));
      if (crc != e.crc) fail<IOError>(e.what.c_str(), "CRC mismatch; the file is corrupt");
      if (plan.swap) swap_elements(data, plan.n, plan.in_size);
      out.emplace_back(e.key, std::move(t));
      continue;
    }
    spend(budget, plan, e.usize, e.what);  // the inflated bytes, then the wider tensor
    std::string raw(e.usize, '\0');
    inflate_into(src, e.csize, {{raw.data(), raw.size()}}, e.what);
    if (crc32_of(raw.data(), raw.size()) != e.crc) fail<IOError>(e.what.c_str(), "CRC mismatch; the file is corrupt");
    out.emplace_back(e.key, build_npy(plan, raw.data() + plan.data_off));
    budget += e.usize;  // freed
  }
  return out;
}
}  // namespace

NamedTensors parse_npz(const std::string& bytes, const std::string& what) {
  return reading(what, [&] { return parse_npz_checked(bytes, what); });
}

namespace {

void check_arrays(const NamedTensors& arrays) {
  std::set<std::string> seen;
  for (const auto& [name, t] : arrays) {
    if (name.empty()) fail<ValueError>("save_npz", "an array has an empty name");
    if (!seen.insert(name).second) fail<ValueError>("save_npz", "the name '", name, "' is used twice");
    if (!t.defined()) fail<ValueError>("save_npz", "array '", name, "' is undefined");
  }
  if (arrays.size() >= 0xFFFF) fail<IOError>("save_npz", "too many arrays for a zip without zip64");
}

// One zip entry: its name, the .npy bytes' CRC and size, and what is stored (`body_size`
// bytes: the .npy itself, or its deflated form).
struct ZipEntry {
  std::string name;
  std::uint32_t crc = 0;
  std::uint64_t npy_size = 0, body_size = 0;
  bool deflated = false;
};

// Writes a zip: for each entry its local header and name (through `put_bytes`), then its
// body (`put_body(i)`), then the central directory. The offsets are counted here.
template <class PutBytes, class PutBody>
void write_zip(const std::vector<ZipEntry>& entries, PutBytes&& put_bytes, PutBody&& put_body) {
  const std::uint16_t dos_time = 0, dos_date = (0 << 9) | (1 << 5) | 1;  // 1980-01-01 00:00
  std::string central;
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ZipEntry& e = entries[i];
    if (e.npy_size >= 0xFFFFFFFFull || at + e.body_size + e.name.size() + 30 >= 0xFFFFFFFFull)
      fail<IOError>("save_npz", "the file would reach 4 GiB, which needs zip64 (not written by dezero)");
    bool utf8 = false;
    for (char c : e.name) utf8 |= static_cast<unsigned char>(c) >= 0x80;
    const std::uint16_t flags = utf8 ? 0x800 : 0, method = e.deflated ? 8 : 0;
    // The fields the local header and the central directory entry share, from
    // "version needed" (zip 2.0) to "extra field length" (none).
    auto put_entry = [&](std::string& to) {
      put(to, 20, 2);
      put(to, flags, 2);
      put(to, method, 2);
      put(to, dos_time, 2);
      put(to, dos_date, 2);
      put(to, e.crc, 4);
      put(to, e.body_size, 4);
      put(to, e.npy_size, 4);
      put(to, e.name.size(), 2);
      put(to, 0, 2);
    };
    std::string local;
    put(local, kLocalSig, 4);
    put_entry(local);
    local += e.name;
    put_bytes(local);
    put_body(i);

    put(central, kCentralSig, 4);
    put(central, (3 << 8) | 20, 2);  // made by: Unix, zip 2.0
    put_entry(central);
    put(central, 0, 2);  // comment
    put(central, 0, 2);  // disk
    put(central, 0, 2);  // internal attributes
    put(central, std::uint64_t(0100644) << 16, 4);  // external: regular file, rw-r--r--
    put(central, at, 4);
    central += e.name;
    at += local.size() + e.body_size;
  }
  const std::uint64_t dir_size = central.size();
  if (at + dir_size + 22 >= 0xFFFFFFFFull)
    fail<IOError>("save_npz", "the file would reach 4 GiB, which needs zip64 (not written by dezero)");
  put(central, kEndSig, 4);
  put(central, 0, 2);
  put(central, 0, 2);
  put(central, entries.size(), 2);
  put(central, entries.size(), 2);
  put(central, dir_size, 4);
  put(central, at, 4);
  put(central, 0, 2);
  put_bytes(central);
}

}  // namespace

std::string serialize_npz(const NamedTensors& arrays, bool compressed) {
  check_arrays(arrays);
  std::vector<ZipEntry> entries;
  std::vector<std::string> bodies;
  for (const auto& [key, t] : arrays) {
    const std::string npy = serialize_npy(t);
    ZipEntry e;
    e.name = key + ".npy";
    e.crc = crc32_of(npy.data(), npy.size());
    e.npy_size = npy.size();
    e.deflated = compressed;
    bodies.push_back(compressed ? deflate_raw(npy) : npy);
    e.body_size = bodies.back().size();
    entries.push_back(std::move(e));
  }
  std::string out;
  write_zip(entries, [&](const std::string& b) { out += b; }, [&](std::size_t i) { out += bodies[i]; });
  return out;
}

// --- files ------------------------------------------------------------------------------------
namespace detail {
NamedTensors load_npz_as(const std::string& op, const std::string& path) {
  const std::string where = op + ": '" + path + "'";
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found)
    throw IOError(where + " does not exist; hint: check the path (a relative path is resolved against the "
                  "working directory)");
  if (st.type() == std::filesystem::file_type::directory)
    throw IOError(where + " is a directory, not an .npz file; hint: pass the path of the file that "
                  "save_weights / save_npz wrote, e.g. '" + path + "/model.npz'");
  // O_NONBLOCK: a FIFO or a device at the path is refused below, never waited on.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    throw IOError(where + " cannot be opened for reading (" + std::strerror(err) +
                  "); hint: check the file's permissions");
  }
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_fd{fd};
  struct stat fs {};
  if (::fstat(fd, &fs) != 0 || !S_ISREG(fs.st_mode))
    throw IOError(where + " is not a regular file (a pipe, a device or a socket); hint: an .npz file is read whole, "
                  "from the disk");
  const auto size = static_cast<std::uint64_t>(fs.st_size);
  if (size > static_cast<std::uint64_t>(get_max_npz_bytes()))
    throw IOError(where + " holds " + std::to_string(size) + " bytes, more than the cap of " +
                  std::to_string(get_max_npz_bytes()) + " bytes (utils::set_max_npz_bytes raises it)");
  return reading(where, [&] {
    std::string bytes(size, '\0');  // read once, into its final place
    std::uint64_t got = 0;
    while (got < size) {
      const ssize_t r = ::read(fd, bytes.data() + got, std::min<std::uint64_t>(size - got, std::uint64_t{1} << 30));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        const int err = errno;
        fail<IOError>(where.c_str(), "error while reading the file (", std::strerror(err),
                      "); hint: check the file and the disk");
      }
      if (r == 0) break;  // shorter than fstat said: cut while we read; parsed as it is
      got += static_cast<std::uint64_t>(r);
    }
    bytes.resize(got);
    return parse_npz(bytes, where);
  });
}
}  // namespace detail

NamedTensors load_npz(const std::string& path) { return detail::load_npz_as("load_npz", path); }

Tensor get_array(const NamedTensors& arrays, const std::string& key) {
  for (const auto& [name, t] : arrays)
    if (name == key) return t;
  std::string keys;
  for (std::size_t i = 0; i < arrays.size() && i < 20; ++i) keys += (i ? ", '" : "'") + arrays[i].first + "'";
  if (arrays.size() > 20) keys += ", ... (" + std::to_string(arrays.size()) + " in all)";
  fail<ValueError>("get_array", "no array named '", key, "'; the arrays are ",
                   arrays.empty() ? std::string("none") : keys,
                   "; hint: weight files use the named_params() keys ('l0/W')");
}

// Writes go to a fresh temporary file next to the destination (never a name someone could have
// planted), renamed when complete: a crash or a full disk never leaves a half-written file.
// Uncompressed files are streamed: each array's bytes go from its own (host) memory to the
// file, with no copy into one buffer, and the CRCs are computed on two threads for large
// states (a training snapshot is tens of MB).
void save_npz(const std::string& path, const NamedTensors& arrays, bool compressed) {
  if (compressed) {
    dezero::detail::write_file_atomically(path, serialize_npz(arrays, true), "save_npz");
    return;
  }
  check_arrays(arrays);
  const std::size_t n = arrays.size();
  std::vector<Tensor> host(n);
  std::vector<std::string> heads(n);
  std::vector<ZipEntry> entries(n);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    heads[i] = npy_header(arrays[i].second);
    host[i] = arrays[i].second.to_cpu();  // device arrays to the host; host ones as they are
    entries[i].name = arrays[i].first + ".npy";
    entries[i].npy_size = entries[i].body_size = heads[i].size() + host[i].nbytes();
    total += host[i].nbytes();
  }
  // CRC-32 of each .npy: the header's, then the data's in 4 MB pieces shared by two threads,
  // joined with crc32_combine.
  struct Piece {
    std::size_t array;
    const char* p;
    std::size_t len;
    uLong crc;
  };
  std::vector<Piece> pieces;
  constexpr std::size_t kPiece = std::size_t{4} << 20;
  for (std::size_t i = 0; i < n; ++i) {
    const char* p = static_cast<const char*>(host[i].raw_data());
    for (std::size_t off = 0; off < host[i].nbytes(); off += kPiece)
      pieces.push_back(Piece{i, p + off, std::min(kPiece, host[i].nbytes() - off), 0});
  }
  auto crc_pieces = [&](std::size_t first, std::size_t step) {
    for (std::size_t k = first; k < pieces.size(); k += step) pieces[k].crc = crc32_of(pieces[k].p, pieces[k].len);
  };
  if (total >= (std::uint64_t{8} << 20)) {
    std::thread helper(crc_pieces, 1, 2);
    crc_pieces(0, 2);
    helper.join();
  } else {
    crc_pieces(0, 1);
  }
  for (std::size_t i = 0; i < n; ++i) entries[i].crc = crc32_of(heads[i].data(), heads[i].size());
  for (const Piece& pc : pieces)
    entries[pc.array].crc = static_cast<std::uint32_t>(
        crc32_combine(entries[pc.array].crc, pc.crc, static_cast<z_off_t>(pc.len)));

  dezero::detail::AtomicFile f(path, "save_npz");
  write_zip(
      entries, [&](const std::string& b) { f.write(b); },
      [&](std::size_t i) {
        f.write(heads[i]);
        if (host[i].nbytes()) f.write(host[i].raw_data(), host[i].nbytes());
      });
  f.commit();
}

// --- the cap -----------------------------------------------------------------------------------
namespace {
std::atomic<std::int64_t> g_max_npz_bytes{std::int64_t{2} << 30};
}  // namespace

void set_max_npz_bytes(std::int64_t bytes) {
  if (bytes <= 0) fail<ValueError>("set_max_npz_bytes", "the cap must be positive, got ", bytes);
  g_max_npz_bytes = bytes;
}
std::int64_t get_max_npz_bytes() { return g_max_npz_bytes.load(); }

}  // namespace dezero::utils
