#include "config/toml_fields.h"

#include <charconv>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "config/duration.h"

namespace egress::config {
namespace {

std::string_view TypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "a list";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a number";
    case toml::node_type::boolean:
      return "a boolean";
    default:
      return "a date or time";
  }
}

std::string IntegerProblem(int64_t min, int64_t max) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (min == 1 && max == kMax) {
    return "must be a positive integer";
  }
  if (min == 0 && max == kMax) {
    return "must be a non-negative integer";
  }
  return fmt::format("must be an integer from {} to {}", min, max);
}

// Longer durations are surely mistakes, and steady-clock arithmetic in nanoseconds overflows
// past ~292 years.
constexpr Millis kMaxDuration{8760LL * 3'600'000};

// Checks a parsed duration against the config's bounds.
std::optional<std::string> DurationProblem(Millis duration, bool allow_zero) {
  if (!allow_zero && duration.count() == 0) {
    return "must be longer than 0";
  }
  if (duration > kMaxDuration) {
    return "must be at most 8760h (a year)";
  }
  return std::nullopt;
}

}  // namespace

TomlFields::TomlFields(const toml::table& table, std::string file, std::string prefix,
                       bool from_environment)
    : table_(table),
      file_(std::move(file)),
      prefix_(std::move(prefix)),
      from_environment_(from_environment) {}

std::string TomlFields::Field(std::string_view key) const {
  if (prefix_.empty()) {
    return std::string(key);
  }
  return fmt::format("{}.{}", prefix_, key);
}

Status TomlFields::ErrorAtLine(uint32_t line, std::string_view field,
                               std::string_view problem) const {
  if (from_environment_) {
    return Status::InvalidArgument(fmt::format("{}: {}: {}", file_, field, problem));
  }
  return Status::InvalidArgument(fmt::format("{}:{}: {}: {}", file_, line, field, problem));
}

Status TomlFields::Error(const toml::node& node, std::string_view field,
                         std::string_view problem) const {
  const uint32_t line = node.source().begin.line;
  return ErrorAtLine(line != 0 ? line : table_.source().begin.line, field, problem);
}

Status TomlFields::TableError(std::string_view field, std::string_view problem) const {
  return ErrorAtLine(table_.source().begin.line, field, problem);
}

Status TomlFields::CheckKeys(std::initializer_list<std::string_view> known) const {
  for (auto&& [key, node] : table_) {
    bool found = false;
    for (std::string_view k : known) {
      if (k == key.str()) {
        found = true;
        break;
      }
    }
    if (!found) {
      const uint32_t line = key.source().begin.line;
      return ErrorAtLine(line != 0 ? line : node.source().begin.line, Field(key.str()),
                         "unknown key");
    }
  }
  return Status::Ok();
}

const toml::node* TomlFields::Find(std::string_view key) const { return table_.get(key); }

Status TomlFields::ReadString(std::string_view key, std::string& out) const {
  const toml::node* node = Find(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  const auto* value = node->as_string();
  if (value == nullptr) {
    return Error(*node, Field(key), fmt::format("must be a string, not {}", TypeName(*node)));
  }
  out = value->get();
  return Status::Ok();
}

Status TomlFields::ReadSecret(std::string_view key, std::string& out) const {
  const toml::node* node = Find(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  const auto* value = node->as_string();
  if (value == nullptr) {
    return Error(*node, Field(key), fmt::format("must be a string, not {}", TypeName(*node)));
  }
  if (value->get().empty()) {
    return Error(*node, Field(key), "must not be empty");
  }
  out = value->get();
  return Status::Ok();
}

Status TomlFields::ReadBool(std::string_view key, bool& out) const {
  const toml::node* node = Find(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  if (const auto* text = node->as_string(); text != nullptr && from_environment_) {
    if (text->get() != "true" && text->get() != "false") {
      return Error(*node, Field(key), "must be true or false");
    }
    out = text->get() == "true";
    return Status::Ok();
  }
  const auto* value = node->as_boolean();
  if (value == nullptr) {
    return Error(*node, Field(key), fmt::format("must be true or false, not {}", TypeName(*node)));
  }
  out = value->get();
  return Status::Ok();
}

Status TomlFields::ReadInt(std::string_view key, int64_t min, int64_t max, int64_t& out) const {
  const toml::node* node = Find(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  if (const auto* text = node->as_string(); text != nullptr && from_environment_) {
    // The whole string, decimal, optional '-': "12abc", "0x10", " 1" and overflow are refused.
    const std::string& digits = text->get();
    int64_t parsed = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), parsed);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
        parsed < min || parsed > max) {
      return Error(*node, Field(key), IntegerProblem(min, max));
    }
    out = parsed;
    return Status::Ok();
  }
  const auto* value = node->as_integer();
  if (value == nullptr || value->get() < min || value->get() > max) {
    return Error(*node, Field(key), IntegerProblem(min, max));
  }
  out = value->get();
  return Status::Ok();
}

Status TomlFields::ReadDuration(std::string_view key, bool allow_zero, Millis& out) const {
  const toml::node* node = Find(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  const auto* value = node->as_string();
  if (value == nullptr) {
    return Error(*node, Field(key),
                 fmt::format("must be a duration string such as \"5s\", not {}", TypeName(*node)));
  }
  Result<Millis> parsed = ParseDuration(value->get());
  if (!parsed) {
    return Error(*node, Field(key), parsed.error().message());
  }
  if (std::optional<std::string> problem = DurationProblem(*parsed, allow_zero)) {
    return Error(*node, Field(key), *problem);
  }
  out = *parsed;
  return Status::Ok();
}

Status TomlFields::ReadDurationList(std::string_view key, std::vector<Millis>& out) const {
  const toml::node* node = Find(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  const auto* list = node->as_array();
  if (list == nullptr) {
    return Error(*node, Field(key), "must be a list of durations such as [\"1s\", \"5m\"]");
  }
  std::vector<Millis> parsed;
  for (size_t i = 0; i < list->size(); ++i) {
    const toml::node& item = *list->get(i);
    const std::string field = fmt::format("{}[{}]", Field(key), i);
    const auto* text = item.as_string();
    if (text == nullptr) {
      return Error(item, field,
                   fmt::format("must be a duration string such as \"5s\", not {}", TypeName(item)));
    }
    Result<Millis> duration = ParseDuration(text->get());
    if (!duration) {
      return Error(item, field, duration.error().message());
    }
    if (std::optional<std::string> problem = DurationProblem(*duration, true)) {
      return Error(item, field, *problem);
    }
    parsed.push_back(*duration);
  }
  out = std::move(parsed);
  return Status::Ok();
}

Status TomlFields::ReadSecretList(std::string_view key, std::vector<std::string>& out) const {
  const toml::node* node = Find(key);
  if (node == nullptr) {
    return Status::Ok();
  }
  const auto* list = node->as_array();
  if (list == nullptr || list->empty()) {
    return Error(*node, Field(key), "must be a non-empty list of strings");
  }
  std::vector<std::string> secrets;
  for (size_t i = 0; i < list->size(); ++i) {
    const toml::node& item = *list->get(i);
    const auto* text = item.as_string();
    if (text == nullptr || text->get().empty()) {
      return Error(item, fmt::format("{}[{}]", Field(key), i), "must be a non-empty string");
    }
    secrets.push_back(text->get());
  }
  out = std::move(secrets);
  return Status::Ok();
}

Result<std::optional<TomlFields>> TomlFields::Table(std::string_view key) const {
  const toml::node* node = Find(key);
  if (node == nullptr) {
    return std::optional<TomlFields>();
  }
  const toml::table* sub = node->as_table();
  if (sub == nullptr) {
    return Error(*node, Field(key), fmt::format("must be a table, not {}", TypeName(*node)));
  }
  return std::optional<TomlFields>(TomlFields(*sub, file_, Field(key), from_environment_));
}

Status TomlFields::ForEachTable(
    const std::function<Status(std::string_view name, const TomlFields& sub)>& fn) const {
  for (auto&& [key, node] : table_) {
    const toml::table* sub = node.as_table();
    if (sub == nullptr) {
      return Error(node, Field(key.str()), fmt::format("must be a table, not {}", TypeName(node)));
    }
    Status status = fn(key.str(), TomlFields(*sub, file_, Field(key.str()), from_environment_));
    if (!status.ok()) {
      return status;
    }
  }
  return Status::Ok();
}

}  // namespace egress::config
