# Run by `cmake -P` at build time (see the top CMakeLists.txt): writes OUT, a C++ source holding
# each PROFILES_DIR/*.toml file (config/profiles/) as a raw string literal, so
# that the binary carries the shipped profiles as its defaults (config/builtin_profiles.h).
# Nothing is fetched: the files in the source tree are the only input.
set(delimiter "egress_profile")
file(GLOB profiles "${PROFILES_DIR}/*.toml")
list(SORT profiles)
set(entries "")
foreach(file ${profiles})
  get_filename_component(name "${file}" NAME_WE)
  file(READ "${file}" text)
  string(FIND "${text}" ")${delimiter}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${file} contains the raw string delimiter )${delimiter}\"")
  endif()
  string(APPEND entries "    {\"${name}\", R\"${delimiter}(${text})${delimiter}\"},\n")
endforeach()
set(content "// Generated at build time by config/embed_profiles.cmake from config/profiles/*.toml.
// Do not edit: edit the profile files.

#include \"config/builtin_profiles.h\"

namespace egress::config {
namespace {

struct Entry {
  std::string_view name;
  std::string_view text;
};

constexpr Entry kProfiles[] = {
${entries}};

}  // namespace

std::vector<std::string_view> BuiltinProfileNames() {
  std::vector<std::string_view> names;
  for (const Entry& e : kProfiles) {
    names.push_back(e.name);
  }
  return names;
}

std::string_view BuiltinProfile(std::string_view name) {
  for (const Entry& e : kProfiles) {
    if (e.name == name) {
      return e.text;
    }
  }
  return {};
}

}  // namespace egress::config
")
# Rewritten only when it changes, so that an unchanged profile set rebuilds nothing.
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
  if(old STREQUAL content)
    return()
  endif()
endif()
file(WRITE "${OUT}" "${content}")
