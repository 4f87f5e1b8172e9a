#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace egress::service {

// Appends `text` as a JSON string, escaped as nlohmann's dump escapes it (invalid UTF-8 replaced
// by U+FFFD).
void AppendJsonString(std::string& out, std::string_view text);

// JSON text written straight into a string, for answers made of many small objects, without
// building nlohmann's tree first. A page of 1,000 destinations built as a tree, dumped and torn
// down took about a third of the service's CPU while a client walked every page
// (bench/README.md, section 11). Keys come out in the order they are written; the caller writes
// each key of an object once. Commas are placed by the writer.
//
//   JsonWriter j(out);
//   j.BeginObject().Key("id").String(id).Key("n").Int(3).EndObject();
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}
  // It writes into `out`: a copy (or a struct holding it, moved) would write into the old one.
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view name);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // Two decimals; null for a value JSON has no number for (NaN, infinity).
  JsonWriter& Double(double value);

 private:
  void BeforeValue();
  JsonWriter& Open(char bracket);
  JsonWriter& Close(char bracket);

  std::string& out_;
  std::vector<bool> has_items_;  // per open object or array: a comma goes before the next item
  bool after_key_ = false;
};

}  // namespace egress::service
