#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace egress::cli {

// "now", "in 12s", "3m ago", "in 2h5m", "4d ago": `at_ms` relative to `now_ms` (both Unix ms).
// Zero `at_ms` means unknown and gives "-".
std::string RelativeTime(int64_t at_ms, int64_t now_ms);

// A field of an answer as a table cell: a string as it is, another value as JSON, `missing`
// when it is absent or null (or `j` is not an object).
std::string FieldText(const nlohmann::json& j, const char* key, const char* missing = "-");
// An integer field (Unix ms, a count): 0 when absent or not an integer.
int64_t FieldInt(const nlohmann::json& j, const char* key);

// Left-aligned columns separated by two spaces, one line per row (rows[0] is the header),
// no trailing spaces. Cells must not contain newlines; width counts bytes.
std::string RenderTable(const std::vector<std::vector<std::string>>& rows);

// Cuts `text` to at most `width` bytes, ending with "..." when cut.
std::string Truncate(const std::string& text, size_t width);

// One line of a bulk replay's progress for a terminal, redrawn in place:
// "[##########----------]  1000/2000 matched  1000 replayed". `total` is the dry run's count;
// the bar is full when matched reaches it (matched may pass it: deliveries that died meanwhile).
// `width` is the bar's inside, at least 1.
std::string ReplayProgressLine(uint64_t matched, uint64_t replayed, uint64_t total,
                               size_t width = 30);

// A destination key (platform, tenant, credential, destination joined by '\x1f') as the operator
// types it: "platform/tenant/credential/destination"; and back. ParseDestinationRef accepts
// either form and returns the key, or "" when `ref` has fewer than four parts.
std::string DestinationRef(const std::string& key);
std::string ParseDestinationRef(const std::string& ref);

}  // namespace egress::cli
