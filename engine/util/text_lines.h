#pragma once
// The lines of a config or servers file's text, numbered as an editor does,
// for the readers that name a file:line in their errors. Not part of the
// public API.

#include <cstddef>
#include <string_view>

namespace chash {

// Walks `text` line by line: each line without its '\n' and a trailing '\r'
// (a file written on Windows), numbered from 1. A last line without '\n'
// counts; the empty text has no lines. Views into `text`, which must
// outlive the walk; allocates nothing.
class TextLines {
 public:
  explicit TextLines(std::string_view text) noexcept : text_(text) {}

  // The next line into `line` and its number into `number`; false after the
  // last one.
  bool Next(std::string_view& line, size_t& number) noexcept {
    if (start_ >= text_.size()) return false;
    size_t end = text_.find('\n', start_);
    if (end == std::string_view::npos) end = text_.size();
    line = text_.substr(start_, end - start_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    start_ = end + 1;
    number = ++number_;
    return true;
  }

 private:
  std::string_view text_;
  size_t start_ = 0;
  size_t number_ = 0;
};

}  // namespace chash
