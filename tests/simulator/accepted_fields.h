#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace egress::sim {

// The payload fields the simulator accounts for when it accepts a payload (docs/simulator.md):
// "msg_id" for duplicates, "seq" and "ordering_key" for order. Top-level members only; when a
// name repeats, the last one counts (as in a parsed document).
struct AcceptedFields {
  bool object = false;                      // the payload is a JSON object; else nothing below
  std::optional<std::string> msg_id;        // a string or integer msg_id, as text
  std::optional<int64_t> seq;               // an integer seq
  std::optional<std::string> ordering_key;  // when present: its text, "" unless string/integer

  bool operator==(const AcceptedFields&) const = default;
};

// The fields of a parsed payload (null or any other JSON value: not an object).
AcceptedFields AcceptedFieldsOf(const nlohmann::json& body);

// The same fields from JSON text, without building a document (a SAX pass over the text; the
// result equals AcceptedFieldsOf(json::parse(text)), and not-an-object for invalid JSON).
AcceptedFields ScanAcceptedFields(std::string_view json_text);

}  // namespace egress::sim
