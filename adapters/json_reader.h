#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace egress::adapters {

// Reads JSON text left to right without building a tree, with the verdict of
// nlohmann::json::accept on what it reads (strings valid UTF-8 with paired surrogate escapes,
// numbers finite as doubles, no depth limit), stricter in one way: a raw NUL byte is never JSON.
//
// A pull reader: the caller enters objects and arrays, walks their members, and reads or skips
// each value. The first malformed byte fails the reader: every later call returns false (Peek
// returns 0) and failed() is true. `text` must outlive the reader; spans point into it.
class JsonReader {
 public:
  explicit JsonReader(std::string_view text);

  // Skips a UTF-8 byte order mark at the very start, as nlohmann does; false after a partial one.
  bool SkipByteOrderMark();

  // The first byte of the next value, after whitespace: '{', '[', '"', 't', 'f', 'n', '-' or a
  // digit when it may be a value; 0 at the end of the text or after a failure.
  char Peek();

  // Enters the object (or array) that is next; NextKey (NextElement) then walks it.
  bool EnterObject();
  bool EnterArray();

  // Reads the next member's key (decoded) and its ':' in the object entered last, leaving the
  // reader at the member's value, which the caller then reads or skips. False at the object's
  // closing brace (consumed) or on a failure.
  bool NextKey(std::string& key);

  // True when the array entered last has another element (the reader is at it); false at its
  // closing bracket (consumed) or on a failure.
  bool NextElement();

  // The string that is next, decoded (escapes resolved, surrogate pairs joined, UTF-8 out).
  bool ReadString(std::string& out);

  // Checks and skips the value that is next, of any kind. `span` (when given) receives its text;
  // `spaced` (when given) is set when that text holds whitespace between tokens; `depth` (when
  // given) the deepest nesting of objects and arrays in it (0 for a scalar, 1 for {} or [1]).
  // Iterative: any depth is read without recursion.
  bool SkipValue(std::string_view* span = nullptr, bool* spaced = nullptr, size_t* depth = nullptr);

  // True when nothing but whitespace is left and nothing failed.
  bool AtEnd();

  bool failed() const { return failed_; }

 private:
  using Byte = unsigned char;

  bool Fail();
  void SkipSpace();
  // Steps to the next member of the container entered last (`open` '{' or '[', `close` its
  // closing byte): past the ',' after the first. False at `close` (consumed) or on a failure.
  bool Advance(char open, char close);
  bool Key(std::string* key);
  bool Scalar();
  bool Literal(std::string_view word);
  bool Digits();
  bool Number();
  bool Hex4(unsigned& value);
  bool Escape();
  bool Utf8();
  bool String(std::string* out);

  const Byte* p_;
  const Byte* end_;
  bool failed_ = false;
  bool spaced_ = false;  // SkipSpace skipped something since last cleared
  // Containers entered with EnterObject/EnterArray, innermost last: '{' or '[' while no member
  // was read yet, '}' or ']' after.
  std::vector<char> entered_;
  std::vector<Byte> skipping_;  // containers open inside SkipValue
};

// `json` (valid JSON text) without whitespace between tokens; strings are kept byte for byte.
std::string CompactJson(std::string_view json);

}  // namespace egress::adapters
