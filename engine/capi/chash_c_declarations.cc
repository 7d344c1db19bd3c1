// chash_c_declarations(): chash_c.h as the foreign-function interfaces that
// parse C at run time read it (LuaJIT's ffi.cdef, Python's cffi), made from
// the header's own text, which the build compiles in
// (cmake/chash_c_header_text.inc.in). A binding that declares from it
// declares what the library it loaded was built with, so no binding keeps a
// copy of the header that can drift from it.
#include <string>
#include <string_view>
#include <vector>

#include "capi/capi_internal.h"
#include "util/text_lines.h"

using chash::TextLines;
using namespace chash::capi;  // the helpers of every entry point

namespace {

constexpr std::string_view kHeaderText =
#include "chash_c_header_text.inc"
    ;

// The text with each /* ... */ comment replaced by one space. The header has
// no string literal that holds "/*" and no // comment (it is C99 for
// hosts that parse it: tests/capi_declarations_test.cc checks both).
std::string WithoutComments(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text.substr(i, 2) == "/*") {
      const size_t end = text.find("*/", i + 2);
      if (end == std::string_view::npos) break;
      out += ' ';
      i = end + 2;
    } else {
      out += text[i++];
    }
  }
  return out;
}

// The lines of the text (util/text_lines.h), a line that ends in a
// backslash joined with the next, as the preprocessor joins them.
std::vector<std::string> LogicalLines(std::string_view text) {
  std::vector<std::string> lines;
  bool continued = false;
  TextLines walk(text);
  std::string_view line;
  for (size_t number = 0; walk.Next(line, number);) {
    if (!continued) lines.emplace_back();
    continued = !line.empty() && line.back() == '\\';
    if (continued) line.remove_suffix(1);
    lines.back().append(line);
  }
  return lines;
}

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// The first word of s and the rest, both trimmed.
std::pair<std::string_view, std::string_view> SplitWord(std::string_view s) {
  s = Trimmed(s);
  const size_t end = s.find_first_of(" \t");
  if (end == std::string_view::npos) return {s, {}};
  return {s.substr(0, end), Trimmed(s.substr(end))};
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// The C type of an integer constant's text as chash_c.h writes them: 12u,
// 0xFFFFFFFFu (uint32_t), 512, (-10) (int32_t); "" for anything else (the
// header guard, CHASH_C_API), which the declarations leave out.
std::string_view IntegerConstantType(std::string_view value) {
  if (value.size() >= 2 && value.front() == '(' && value.back() == ')') {
    value = value.substr(1, value.size() - 2);
  }
  if (!value.empty() && value.front() == '-') value.remove_prefix(1);
  const bool is_unsigned = !value.empty() && (value.back() == 'u' || value.back() == 'U');
  if (is_unsigned) value.remove_suffix(1);
  const bool hex = value.size() > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X');
  if (hex) value.remove_prefix(2);
  if (value.empty()) return {};
  for (char c : value) {
    if (!(hex ? IsHexDigit(c) : (c >= '0' && c <= '9'))) return {};
  }
  return is_unsigned ? "uint32_t" : "int32_t";
}

bool IsWordChar(char c) {
  return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Removes every whole-word `word` from line, with one space beside it.
void EraseWord(std::string& line, std::string_view word) {
  size_t from = 0;
  for (size_t at; (at = line.find(word, from)) != std::string::npos;) {
    const size_t after = at + word.size();
    const bool whole = (at == 0 || !IsWordChar(line[at - 1])) &&
                       (after == line.size() || !IsWordChar(line[after]));
    if (!whole) {
      from = at + 1;
      continue;
    }
    size_t begin = at;
    size_t end = after;
    if (end < line.size() && line[end] == ' ') {
      ++end;
    } else if (begin > 0 && line[begin - 1] == ' ') {
      --begin;
    }
    line.erase(begin, end - begin);
    from = begin;
  }
}

// Preprocessor lines go, but for `#define CHASH_X <integer>`, which becomes
// `static const T CHASH_X = <integer>;` (LuaJIT and cffi both take that
// form, and take it in array bounds). Lines inside `#ifdef __cplusplus` go
// (the extern "C" braces), defines too; the #else branch stays. Blank lines
// fold to one.
std::string CDeclarations(std::string_view header) {
  std::string out;
  out.reserve(header.size() / 2);
  std::vector<bool> skipping;  // one entry per open #if: its lines are C++'s
  bool last_blank = true;
  for (const std::string& raw : LogicalLines(WithoutComments(header))) {
    bool cplusplus_only = false;
    for (bool skip : skipping) cplusplus_only = cplusplus_only || skip;
    const std::string_view trimmed = Trimmed(raw);
    if (!trimmed.empty() && trimmed.front() == '#') {
      const auto [directive, rest] = SplitWord(trimmed.substr(1));
      if (directive == "ifdef" || directive == "ifndef" || directive == "if") {
        skipping.push_back(directive == "ifdef" && rest == "__cplusplus");
      } else if ((directive == "else" || directive == "elif") && !skipping.empty()) {
        skipping.back() = false;
      } else if (directive == "endif" && !skipping.empty()) {
        skipping.pop_back();
      } else if (directive == "define") {
        const auto [name, value] = SplitWord(rest);
        const std::string_view type = IntegerConstantType(value);
        if (!cplusplus_only && name.starts_with("CHASH_") && !type.empty()) {
          out.append("static const ").append(type).append(" ").append(name);
          out.append(" = ").append(value).append(";\n");
          last_blank = false;
        }
      }
      continue;
    }
    if (cplusplus_only) continue;
    std::string line(raw);
    EraseWord(line, "CHASH_C_API");
    EraseWord(line, "CHASH_C_NOEXCEPT");
    line.erase(line.find_last_not_of(" \t\r") + 1);  // npos + 1: all of a blank line
    if (line.empty()) {
      if (!last_blank) out += '\n';
      last_blank = true;
      continue;
    }
    out.append(line).append("\n");
    last_blank = false;
  }
  return out;
}

}  // namespace

extern "C" {

const char* chash_c_declarations(void) noexcept {
  try {
    // Made once; an exception here leaves it unmade, so a later call retries.
    static const std::string declarations = CDeclarations(kHeaderText);
    return declarations.c_str();
  } catch (const std::bad_alloc&) {
    Fail(CHASH_E_OUT_OF_MEMORY, "chash_c_declarations: out of memory");
  } catch (...) {
    Fail(CHASH_E_INTERNAL, "chash_c_declarations: unexpected exception");
  }
  return nullptr;
}

}  // extern "C"
