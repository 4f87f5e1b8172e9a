#pragma once

// Internal to config/: included only by config/toml_*.cc, so toml++ stays out of every other
// header (vendor headers stay out of ours). Debian's toml++ throws; nothing here does (parsing
// is in toml_load_config.cc, which catches).

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"
#include "dispatcher/base/status.h"

namespace egress::config {

// One TOML table of one file, with the dotted name it has in the config, turning every problem
// into InvalidArgument "file:line: field: problem". Each Read* leaves `out` unchanged when the key
// is absent, so values read earlier (defaults, profiles) survive. Values of secret keys never
// appear in messages. `table` must outlive this object.
class TomlFields {
 public:
  // `prefix` is the table's dotted name ("budgets.slack_channel"), empty for the root.
  // `from_environment`: the table was built from RELAY_EGRESS_* variables, whose values are all
  // strings: ReadBool then also takes "true" / "false" and ReadInt a decimal integer string, and
  // messages carry no line (`file` is the variable's name).
  TomlFields(const toml::table& table, std::string file, std::string prefix,
             bool from_environment = false);

  const toml::table& table() const { return table_; }
  const std::string& file() const { return file_; }
  const std::string& prefix() const { return prefix_; }
  // The dotted name of `key` in this table.
  std::string Field(std::string_view key) const;

  // InvalidArgument "file:line: field: problem" at `node`'s line (the table's own when the node
  // has no source).
  Status Error(const toml::node& node, std::string_view field, std::string_view problem) const;
  // The same at this table's line, for a problem of the table as a whole (a key it lacks).
  Status TableError(std::string_view field, std::string_view problem) const;

  // Every key must be in `known`; otherwise the first other key is "unknown key".
  Status CheckKeys(std::initializer_list<std::string_view> known) const;

  bool Has(std::string_view key) const { return table_.contains(key); }

  Status ReadString(std::string_view key, std::string& out) const;
  // A non-empty string whose value is never echoed.
  Status ReadSecret(std::string_view key, std::string& out) const;
  Status ReadBool(std::string_view key, bool& out) const;
  // An integer in [min, max].
  Status ReadInt(std::string_view key, int64_t min, int64_t max, int64_t& out) const;
  // A duration string (duration.h); zero only when `allow_zero`.
  Status ReadDuration(std::string_view key, bool allow_zero, Millis& out) const;
  // A list of duration strings, each >= 0; the list may be empty.
  Status ReadDurationList(std::string_view key, std::vector<Millis>& out) const;
  // A non-empty list of non-empty secret strings, never echoed.
  Status ReadSecretList(std::string_view key, std::vector<std::string>& out) const;

  // The sub-table `key`: nullopt when absent, an error when `key` holds something else.
  Result<std::optional<TomlFields>> Table(std::string_view key) const;

  // Calls `fn(name, sub)` for every entry, each of which must be a table (in file order).
  // Stops at the first error and returns it.
  Status ForEachTable(
      const std::function<Status(std::string_view name, const TomlFields& sub)>& fn) const;

 private:
  Status ErrorAtLine(uint32_t line, std::string_view field, std::string_view problem) const;
  const toml::node* Find(std::string_view key) const;

  const toml::table& table_;
  std::string file_;
  std::string prefix_;
  bool from_environment_ = false;
};

}  // namespace egress::config
