#pragma once
// graft's version, kept equal to project(VERSION) in CMakeLists.txt.
#define GRAFT_VERSION_MAJOR 0
#define GRAFT_VERSION_MINOR 1
#define GRAFT_VERSION_PATCH 0

namespace graft {
inline constexpr const char* version_string = "0.1.0";
}  // namespace graft
