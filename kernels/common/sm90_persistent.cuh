// The work-item queue of the persistent FlashAttention-3 style Hopper kernels
// (flash_fwd.sm90_wgmma, prefix_prefill.sm90_wgmma; traits: sm90_persistent_traits.hpp). At most
// one CTA per SM runs: CTA b starts with work item b and then draws the next undone item from a
// counter in global memory (next_item), as the hardware would hand out the CTAs of a non-persistent
// grid. The producer announces each item to the consumers through the Q buffer that will hold its Q
// (ItemQueue); the consumers' side of Q's barriers is sm90_attention::ItemCursor
// (sm90_attention.cuh).
#pragma once

#include "kernels/common/sm90.cuh"
#include "kernels/common/sm90_persistent_traits.hpp"

namespace attn {
namespace sm90_persistent {

// The work item after this CTA's current one: items past the grid's first go to whichever CTA asks
// first (schedule[0] counts them), in the items' order. schedule[1] counts the CTAs that have
// drawn past the end (`items`); the last of them zeroes both counters for the next launch (no CTA
// of this one draws again). The host uploads schedule as two zeros once.
__device__ __forceinline__ int next_item(int* schedule, int items) {
  const int next = gridDim.x + atomicAdd(&schedule[0], 1);
  if (next >= items && atomicAdd(&schedule[1], 1) == int(gridDim.x) - 1) {
    atomicExch(&schedule[0], 0);
    atomicExch(&schedule[1], 0);
  }
  return next;
}

// Item k of a CTA has its Q in buffer k % BUFFERS, phase (k / BUFFERS) & 1 of that buffer's
// barriers. full[b]: the producer's one arrival (with Q's bytes, or plain when it loads none);
// empty[b]: one arrival per consumer thread once its last S = Q K^T of the item is done (each
// thread's arrival orders its own read of the item's slot before the producer rewrites it: with
// one arrival per warp compute-sanitizer racecheck reported those reads). slots[SLOT_INTS * b]
// holds the item index buffer b announces, -1 when there are no more items; the slot's other ints
// are the kernel's (what its producer already knows of the item, so that its consumers need not
// look it up in global memory). SLOT_INTS is a multiple of 4 (the slot's bytes,
// sm90_persistent_traits.hpp).
template <int BUFFERS, int SLOT_INTS = kSlotBytes / 4>
struct ItemQueue {
  static_assert(SLOT_INTS % 4 == 0, "slots of whole 16-byte units");
  unsigned long long* full;   // [BUFFERS]
  unsigned long long* empty;  // [BUFFERS]
  volatile int* slots;        // [BUFFERS][SLOT_INTS]

  __device__ __forceinline__ static int buffer(int k) { return k % BUFFERS; }
  __device__ __forceinline__ static unsigned int parity(int k) {
    return unsigned(k / BUFFERS) & 1u;
  }
  // One thread, before the CTA's __syncthreads (and fence_barrier_init).
  __device__ __forceinline__ void init(int consumers) const {
    for (int b = 0; b < BUFFERS; ++b) {
      sm90::mbarrier_init(&full[b], 1);
      sm90::mbarrier_init(&empty[b], consumers * 128);
    }
  }
  // The producer thread that loads Q: waits until every consumer thread released the buffer's
  // previous item (a fresh empty barrier passes parity 1), then writes item k's index, `next`, or
  // -1 past `items`. Announcing -1 arrives on full at once; an item's index is announced by the
  // caller's arrival on full[buffer(k)] (with its Q's bytes) after this and after writing the
  // slot's other ints (write()).
  __device__ __forceinline__ int claim(int k, int next, int items) const {
    const int b = buffer(k);
    sm90::mbarrier_wait(&empty[b], parity(k) ^ 1u);
    const int index = next < items ? next : -1;
    slots[SLOT_INTS * b] = index;
    if (index < 0) sm90::mbarrier_arrive(&full[b]);
    return index;
  }
  // The producer, between claim(k) and its arrival: int i (1 .. SLOT_INTS - 1) of item k's slot.
  __device__ __forceinline__ void write(int k, int i, int value) const {
    slots[SLOT_INTS * buffer(k) + i] = value;
  }
  // A consumer (or another producer thread): item k's index once announced, -1: no more items.
  __device__ __forceinline__ int announced(int k) const {
    sm90::mbarrier_wait(&full[buffer(k)], parity(k));
    return slots[SLOT_INTS * buffer(k)];
  }
  // A consumer: item k's whole slot once announced (out[0] is the index), read 16 bytes at a time
  // from shared memory.
  __device__ __forceinline__ void announced(int k, int (&out)[SLOT_INTS]) const {
    sm90::mbarrier_wait(&full[buffer(k)], parity(k));
    const unsigned int address =
        unsigned(__cvta_generic_to_shared(const_cast<const int*>(slots) + SLOT_INTS * buffer(k)));
#pragma unroll
    for (int i = 0; i < SLOT_INTS; i += 4) {
      asm volatile("ld.shared.v4.s32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(out[i]), "=r"(out[i + 1]), "=r"(out[i + 2]), "=r"(out[i + 3])
                   : "r"(address + 4 * i)
                   : "memory");
    }
  }
};

}  // namespace sm90_persistent
}  // namespace attn
