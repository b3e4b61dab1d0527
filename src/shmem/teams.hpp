// OpenSHMEM teams (teams.cpp): the object behind shmem_team_t.
//
// A team is a tsunagi team (tsu_team_split of its parent, ordered so that
// tsunagi's team rank is the SHMEM team PE) plus what the library needs
// without asking tsunagi: the caller's team PE, the size, the world PE of
// every member (team contexts translate their PE numbers with it) and the
// configuration it was created with.
#pragma once

#include "shmem_internal.hpp"

#include <cstdint>
#include <utility>
#include <vector>

struct tsu_shmem_team {
  static constexpr uint32_t kMagic = 0x7e4a5eedu;

  uint32_t magic = 0;                  // kMagic while the team is valid
  tsu_team_t tsu = TSU_TEAM_NULL;      // the tsunagi team (rank == team PE)
  int my_pe = -1;                      // the caller's team PE
  int size = 0;                        // members
  std::vector<int> world;              // world PE of team PE i
  // Members in world-PE order (world PE, team PE): translate_pe searches it.
  std::vector<std::pair<int, int>> by_world;
  // The world PEs form start + i * stride (WORLD, every strided split of a
  // strided team): translation is arithmetic.
  bool strided = false;
  int world_start = 0;
  int world_stride = 1;
  shmem_team_config_t config{0};
  long config_mask = 0;
  bool predefined = false;             // WORLD and SHARED: never destroyed by the user

  // The world PE of team PE `pe` (0 <= pe < size; unchecked).
  int world_pe(int pe) const noexcept { return world[static_cast<size_t>(pe)]; }
  // The team PE of world PE `pe`, -1 when it is not a member.
  int team_pe(int world_pe) const noexcept;
};

namespace tsu::shmem {

struct Team : tsu_shmem_team {};

}  // namespace tsu::shmem
