// A vector (or strided) put/get as one request: a list of pieces, each `len`
// bytes between `remote` in segment `remote_seg` of rank `rank` and `local`
// in the issuer's segment `local_seg`.  Made at the call (strided shapes are
// expanded to pieces there, the caller's array is copied), carried through the
// command ring by pointer (Command::vec), owned by whoever executes it: the
// runtime's memory path or the RMA protocol, which frees it when the request
// completes (release()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tsunagi/tsunagi.h"

namespace tsu::core {

struct VectorPiece {
  uint64_t remote;
  uint64_t local;
  uint64_t len;
};

// What executing one needs: the header and the pieces, wherever they live
// (the request's own copy, or the caller's tsu_piece_t array when the
// request runs in the call: same layout).
struct VectorView {
  bool is_put;
  uint32_t rank;
  tsu_seg_t remote_seg;
  tsu_seg_t local_seg;
  const VectorPiece* pieces;
  std::size_t count;
};

struct VectorRequest {
  bool is_put = true;  // put: remote <- local; get: local <- remote
  uint32_t rank = 0;
  tsu_seg_t remote_seg = 0;
  tsu_seg_t local_seg = 0;
  uint64_t total = 0;  // bytes over all pieces
  std::vector<VectorPiece> pieces;
  VectorView view() const noexcept {
    return {is_put, rank, remote_seg, local_seg, pieces.data(), pieces.size()};
  }
};

static_assert(sizeof(VectorPiece) == sizeof(tsu_piece_t) &&
                  offsetof(VectorPiece, remote) == offsetof(tsu_piece_t, remote) &&
                  offsetof(VectorPiece, local) == offsetof(tsu_piece_t, local) &&
                  offsetof(VectorPiece, len) == offsetof(tsu_piece_t, len),
              "a tsu_piece_t array is read as VectorPiece");

}  // namespace tsu::core
