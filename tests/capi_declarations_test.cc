// chash_c_declarations(): the header's declarations as text for the FFIs
// that parse C at run time (chash.resty hands it to LuaJIT's ffi.cdef).
// The expectations are read from include/chash/chash_c.h itself, by rules
// written here: every integer constant, prototype and struct of the header
// is in the text, and nothing a C parser without a preprocessor refuses.
#include <fstream>
#include <regex>
#include <sstream>
#include <set>
#include <string>

#include "chash/chash_c.h"
#include "test_util.h"

namespace chash {
namespace {

std::string Header() {
  std::ifstream in(testing::DataPath("../../include/chash/chash_c.h"), std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_GT(text.str().size(), 10000u) << "chash_c.h not read";
  return text.str();
}

std::string Declarations() {
  const char* text = chash_c_declarations();
  EXPECT_NE(text, nullptr) << chash_last_error();
  return text == nullptr ? std::string() : std::string(text);
}

bool HasLine(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(CApiDeclarations, TheHeaderIsWhatTheTransformReads) {
  // The text is made without a C lexer: comments are /* */ only, and no
  // string literal holds "/*".
  const std::string header = Header();
  EXPECT_EQ(header.find("//"), std::string::npos) << "a // comment in chash_c.h";
  EXPECT_EQ(header.find("\"/*"), std::string::npos);
}

TEST(CApiDeclarations, NothingAPreprocessorWouldHaveToRead) {
  const std::string text = Declarations();
  EXPECT_EQ(text.find('#'), std::string::npos);
  EXPECT_EQ(text.find("/*"), std::string::npos);
  EXPECT_EQ(text.find("CHASH_C_API"), std::string::npos);
  EXPECT_EQ(text.find("CHASH_C_NOEXCEPT"), std::string::npos);
  EXPECT_EQ(text.find("extern"), std::string::npos);
  EXPECT_EQ(text.find("noexcept"), std::string::npos);
  EXPECT_EQ(text.find("\n\n\n"), std::string::npos) << "blank lines fold to one";
  EXPECT_EQ(chash_c_declarations(), chash_c_declarations()) << "made once";
}

TEST(CApiDeclarations, EveryIntegerConstantAsAStaticConst) {
  const std::string header = Header();
  const std::string text = Declarations();
  const std::regex define(R"(#define (CHASH_\w+) +(\(-\d+\)|\d+u?|0x[0-9A-F]+u)(?=\s|$))");
  int constants = 0;
  for (std::sregex_iterator m(header.begin(), header.end(), define), end; m != end; ++m) {
    const std::string name = (*m)[1];
    const std::string value = (*m)[2];
    const std::string type = value.back() == 'u' ? "uint32_t" : "int32_t";
    EXPECT_TRUE(HasLine(text, "static const " + type + " " + name + " = " + value + ";")) << name;
    ++constants;
  }
  EXPECT_GE(constants, 100);
  // What is not an integer stays out: the header guard, CHASH_C_API.
  EXPECT_EQ(text.find("CHASH_CHASH_C_H_"), std::string::npos);
  const std::regex any_constant(R"(static const \w+ (CHASH_\w+) = )");
  int listed = 0;
  for (std::sregex_iterator m(text.begin(), text.end(), any_constant), end; m != end; ++m) {
    ++listed;
  }
  EXPECT_EQ(listed, constants) << "a constant the header does not define as an integer";
}

TEST(CApiDeclarations, EveryPrototypeAndStruct) {
  const std::string header = Header();
  const std::string text = Declarations();
  const std::regex prototype(R"(CHASH_C_API ([\w ]+?\**)(chash_\w+)\()");
  std::set<std::string> names;
  for (std::sregex_iterator m(header.begin(), header.end(), prototype), end; m != end; ++m) {
    const std::string start = std::string((*m)[1]) + std::string((*m)[2]) + "(";
    EXPECT_NE(("\n" + text).find("\n" + start), std::string::npos) << start;
    names.insert((*m)[2]);
  }
  EXPECT_GE(names.size(), 120u);
  EXPECT_TRUE(names.count("chash_c_declarations"));
  EXPECT_NE(text.find("const char *chash_version(void);\n"), std::string::npos)
      << "a prototype ends where the header's does, without CHASH_C_NOEXCEPT";
  const std::regex structure(R"(typedef struct (chash_\w+) \{)");
  int structs = 0;
  for (std::sregex_iterator m(header.begin(), header.end(), structure), end; m != end; ++m) {
    const std::string name = (*m)[1];
    EXPECT_TRUE(HasLine(text, "typedef struct " + name + " {")) << name;
    EXPECT_TRUE(HasLine(text, "} " + name + ";")) << name;
    ++structs;
  }
  EXPECT_GE(structs, 10);
}

}  // namespace
}  // namespace chash
