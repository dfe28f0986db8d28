/// \file
/// Downloads: dezero::utils::get_file downloads a file once into the cache
/// directory (DeZero's utils.get_file / cache_dir), with libcurl, and checks it
/// against a SHA-256 when one is given.
#pragma once

#include <cstdint>
#include <string>

namespace dezero::utils {

/// Where downloads and datasets live: $DEZERO_HOME when set, else ~/.dezero (DeZero's cache_dir).
/// An IOError when neither DEZERO_HOME nor HOME is set. The directory is not created here.
/// Both variables are read with secure_getenv (a setuid program sees neither).
std::string cache_dir();

/// What get_file checks, beyond the defaults.
struct GetFileOptions {
  /// The file's SHA-256 as 64 hex digits (either case); "" checks nothing. When given, a
  /// download whose bytes have another hash is refused (an IOError naming the URL, both
  /// hashes, and leaving no file), and so is a file already there (get_file does not
  /// download it again: it may be the user's own; delete it to have it downloaded).
  std::string sha256;
  /// Also accept file:// URLs (and redirects to them). By default only http:// and https://
  /// are fetched (a redirect from https may only go to https): another scheme is a ValueError.
  bool allow_file_urls = false;
};

/// Returns dir/file_name, downloading `url` there first when the file is not there yet.
///
/// file_name defaults to the URL's last path component. dir defaults to cache_dir(), which is
/// created (mode 0700) when missing and must belong to the current user (or root) and not be
/// writable by group or others: else an IOError says so (hint: `chmod go-w`, or point
/// DEZERO_HOME at a private folder). Shows a 30-character progress bar on stderr (DeZero's
/// show_progress). The body goes to a temporary file next to the target, created afresh
/// under a name nobody can predict (never through a planted symlink); it is checked against
/// the Content-Length the server sent and against options.sha256, and only then renamed onto
/// the target. On any failure the temporary file is removed and an IOError naming the URL and
/// the file is thrown. libcurl only follows http and https (see GetFileOptions for file://).
/// A URL with no last path component and no `file_name` is a dezero::ValueError.
std::string get_file(const std::string& url, const std::string& file_name = "", const std::string& dir = "");
/// The same, with a checksum or more schemes (see GetFileOptions):
/// `get_file(url, "", "", {"c4a38c...a1dd"})`.
std::string get_file(const std::string& url, const std::string& file_name, const std::string& dir,
                     const GetFileOptions& options);

/// The SHA-256 of the file at `path`, as 64 lowercase hex digits.
/// libdezero does not link OpenSSL: this dlopen()s libcrypto.so.3 (or libcrypto.so.1.1, or
/// $DEZERO_LIBCRYPTO, an absolute path or a bare file name) on first use; without it, and for
/// a file that cannot be read, an IOError says so.
std::string sha256_file(const std::string& path);

/// DeZero's progress line: `"\r[#####.........................] 16.67%"` (total <= 0: bytes so far).
std::string progress_line(std::int64_t downloaded, std::int64_t total);

namespace detail {
// cache_dir() (and cache_dir()/sub when `sub` is given), created 0700 when missing, each
// checked as get_file checks the cache folder; returns the folder. IOError otherwise.
std::string checked_cache_folder(const std::string& sub = "");
}  // namespace detail

}  // namespace dezero::utils
