// The first NIC atomic on a new TSU_SEG_NIC_ATOMICS segment (memory_api.cpp).
#pragma once

#include "api/api_common.hpp"

namespace tsu::api {

// Runs one fetch-add of 0 on word 0 of `seg` (this rank's, just allocated
// with NIC atomics) through the normal atomic path, which hands it to the
// network transport, and waits for it.  Refused by the provider
// (TSU_ERR_UNSUPPORTED: ENOSYS at the call or in the completion): the
// segment becomes a CPU segment and TSU_OK is returned.  This is the only
// moment a segment may change site: no other issuer knows its id yet and
// no NIC atomic on it has completed, so no word can see both executors.
// Other failures are returned.
tsu_status_t first_nic_atomic(runtime::Runtime& rt, tsu_seg_t seg) noexcept;

}  // namespace tsu::api
