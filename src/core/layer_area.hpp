// The layer area (Transport::peer_layer_area) is shared by two layers: the
// tagged layer's posted-receive queue at its start, and the collectives'
// node region (coll/node_area.hpp) in its last kCollNodeAreaBytes.  The
// runtime sizes the area; each layer finds its part from the area's size.
#pragma once

#include <cstddef>

namespace tsu::core {

// Tiny-data lines per team slot (coll/node_area.hpp: kTinyDepth): how many
// tiny collectives a rank may run ahead of a team peer (64 KiB a slot).
inline constexpr std::size_t kCollTinyLines = 1024;

// 16 team slots of three 64-byte flag lines, three stage-cost lines, an address line,
// kCollTinyLines 64-byte tiny-data lines, four 8 KiB data buffers and a 1 MiB stage each
// (coll/node_area.hpp checks that its layout fits).  Pages are only backed
// where a team uses them.
inline constexpr std::size_t kCollNodeAreaBytes =
    16 * (7 * 64 + kCollTinyLines * 64 + 4 * (8u << 10) + (1u << 20));

}  // namespace tsu::core
