// The shm transport as the registry sees it (transport/node.hpp).
#pragma once

#include "transport/node.hpp"

namespace tsu::transport::shm {
extern const NodePlugin kShmPlugin;
}  // namespace tsu::transport::shm
