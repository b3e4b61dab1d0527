// The hash behind team contexts (tsu_team_split) and collectives' trace ids,
// shared by coll_layer.cpp and coll_engine.cpp.
#pragma once

#include <cstdint>

namespace tsu::coll {

inline uint64_t mix(uint64_t x) noexcept {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace tsu::coll
