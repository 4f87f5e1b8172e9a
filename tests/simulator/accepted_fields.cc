#include "tests/simulator/accepted_fields.h"

#include <utility>

namespace egress::sim {
namespace {

using nlohmann::json;

std::optional<std::string> IdentityText(const json& v) {
  if (v.is_string()) {
    return v.get<std::string>();
  }
  if (v.is_number_integer()) {
    return std::to_string(v.get<int64_t>());
  }
  return std::nullopt;
}

// SAX events to AcceptedFields: tracks the depth and which interesting member (if any) the
// next value at depth 1 belongs to.
class FieldScanner {
 public:
  bool null() { return Scalar(std::nullopt, std::nullopt); }
  bool boolean(bool /*value*/) { return Scalar(std::nullopt, std::nullopt); }
  bool number_integer(json::number_integer_t value) {
    return Wanted() ? Scalar(std::to_string(value), value) : true;
  }
  bool number_unsigned(json::number_unsigned_t value) {
    // As json::get<int64_t>() converts it.
    auto as_signed = static_cast<int64_t>(value);
    return Wanted() ? Scalar(std::to_string(as_signed), as_signed) : true;
  }
  bool number_float(json::number_float_t /*value*/, const json::string_t& /*text*/) {
    return Scalar(std::nullopt, std::nullopt);
  }
  bool string(json::string_t& value) {
    if (Wanted()) {
      return Scalar(std::move(value), std::nullopt);
    }
    return true;
  }
  bool binary(json::binary_t& /*value*/) { return Scalar(std::nullopt, std::nullopt); }
  bool start_object(std::size_t /*elements*/) {
    if (depth_ == 0) {
      fields_.object = true;
    } else {
      Scalar(std::nullopt, std::nullopt);
    }
    ++depth_;
    return true;
  }
  bool start_array(std::size_t /*elements*/) {
    if (depth_ > 0) {
      Scalar(std::nullopt, std::nullopt);
    }
    ++depth_;
    return true;
  }
  bool end_object() {
    --depth_;
    return true;
  }
  bool end_array() {
    --depth_;
    return true;
  }
  bool key(json::string_t& name) {
    if (depth_ == 1) {
      member_ = name == "msg_id"         ? Member::kMsgId
                : name == "seq"          ? Member::kSeq
                : name == "ordering_key" ? Member::kOrderingKey
                                         : Member::kOther;
    }
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& /*error*/) {
    return false;
  }

  AcceptedFields& fields() { return fields_; }

 private:
  enum class Member { kOther, kMsgId, kSeq, kOrderingKey };

  // The next value belongs to an interesting top-level member.
  bool Wanted() const { return depth_ == 1 && member_ != Member::kOther; }

  // A value at the current depth: `identity` is its text when a string or integer, `integer`
  // its value when an integer.
  bool Scalar(std::optional<std::string> identity, std::optional<int64_t> integer) {
    if (!Wanted()) {
      return true;
    }
    switch (member_) {
      case Member::kMsgId:
        fields_.msg_id = std::move(identity);
        break;
      case Member::kSeq:
        fields_.seq = integer;
        break;
      case Member::kOrderingKey:
        fields_.ordering_key = std::move(identity).value_or("");
        break;
      case Member::kOther:
        break;
    }
    return true;
  }

  int depth_ = 0;
  Member member_ = Member::kOther;
  AcceptedFields fields_;
};

}  // namespace

AcceptedFields AcceptedFieldsOf(const json& body) {
  AcceptedFields fields;
  if (!body.is_object()) {
    return fields;
  }
  fields.object = true;
  if (auto it = body.find("msg_id"); it != body.end()) {
    fields.msg_id = IdentityText(*it);
  }
  if (auto it = body.find("seq"); it != body.end() && it->is_number_integer()) {
    fields.seq = it->get<int64_t>();
  }
  if (auto it = body.find("ordering_key"); it != body.end()) {
    fields.ordering_key = IdentityText(*it).value_or("");
  }
  return fields;
}

AcceptedFields ScanAcceptedFields(std::string_view json_text) {
  FieldScanner scanner;
  if (!json::sax_parse(json_text.data(), json_text.data() + json_text.size(), &scanner)) {
    return {};
  }
  return std::move(scanner.fields());
}

}  // namespace egress::sim
