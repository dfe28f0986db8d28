/// \file
/// Downloads: dezero::utils::get_file downloads a file once into the cache
/// directory (DeZero's utils.get_file / cache_dir), with libcurl.
#pragma once

#include <cstdint>
#include <string>

namespace dezero::utils {

/// Where downloads and datasets live: $DEZERO_HOME when set, else ~/.dezero (DeZero's cache_dir).
/// An IOError when neither DEZERO_HOME nor HOME is set. The directory is not created here.
std::string cache_dir();

/// Returns dir/file_name, downloading `url` there first when the file is not there yet.
/// file_name defaults to the URL's last path component, dir to cache_dir() (created when
/// missing). Shows a 30-character progress bar on stderr (DeZero's show_progress). The
/// body goes to `"<file>.part"`, is checked against the Content-Length the server sent and
/// only then renamed; on any failure the partial file is removed and an IOError naming
/// the URL and the file is thrown. http, https and file URLs work (whatever libcurl has).
/// A URL with no last path component and no `file_name` is a dezero::ValueError.
std::string get_file(const std::string& url, const std::string& file_name = "", const std::string& dir = "");

/// DeZero's progress line: `"\r[#####.........................] 16.67%"` (total <= 0: bytes so far).
std::string progress_line(std::int64_t downloaded, std::int64_t total);

}  // namespace dezero::utils
