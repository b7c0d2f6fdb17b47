// runtime_stub/host/engine.h — the interface between kernel code and the fiber engine (engine.cpp).
//
// How a launch runs: blocks one after another, in x, y, z order. Within a block every CUDA thread
// is a fiber (Boost.Context fcontext, a few ns a switch). A fiber runs its thread until the thread
// waits (__syncthreads, a warp collective) or ends; a fiber whose thread ended takes the next
// unstarted thread of the block itself, so a kernel that never waits runs a whole block in one
// fiber with no switch at all. Waiting threads resume in arrival order once released.
//
// Barrier rules (documented for template authors):
//  - __syncthreads needs every thread of the block: a thread that returns early while others wait
//    is a deadlock, reported with where each thread waits.
//  - Warp collectives (__shfl*_sync, __ballot/__any/__all_sync, __syncwarp) wait for the lanes of
//    `mask` that exist (a partial last warp has fewer than 32) and have not exited; a lane's own bit
//    must be in its mask. Lanes of one warp may run separate collectives with disjoint masks. Two
//    different collectives with the same mask waiting at once are a divergence error. A shuffle that
//    reads a lane outside the participating set gets its own value back (undefined on the GPU).
//  - WMMA load/store/mma need all 32 lanes of a full warp, with equal arguments (the API requires it).
//  - ldmatrix and mma.sync (mc::ldmatrix, mc::mma_m16n8k16, mc::mma_m16n8k8: host/mma.h) need all
//    32 lanes of a full warp; each lane gets exactly its registers of the PTX ISA's fragment layouts.
//  - Any fault (deadlock, divergence, bad mask, bad wmma arguments, a misaligned ldmatrix row, a
//    shared-memory race, an exception thrown by kernel code) throws mc::host::KernelError from the
//    launching call, naming the kernel, the block, threads and source lines. Objects on the stacks
//    of the abandoned fibers are not destroyed.
//
// The race check (what compute-sanitizer's racecheck does on a GPU), on in every launch unless
// MODELC_EMU_RACECHECK=0: between two barriers of a block (__syncthreads and its variants), a
// shared-memory byte written by one thread and read or written by another is a race, unless both
// threads are lanes of one warp and a warp collective both took part in (__syncwarp, a shuffle, a
// vote, ldmatrix, mma, wmma) lies between the two accesses. It sees only these accesses:
//    mc::st_shared / mc::ld_shared             by the calling thread
//    mc::ldmatrix                              16 bytes at each used row address, read by the warp
//    wmma::load/store_matrix_sync              the tile, by the warp (when it lies in shared memory)
//    mc::cp_async_*                            the destination, written by the issuing thread when
//                                              the copy lands (at the cp_async_wait that covers it)
// Plain C++ reads and writes of __shared__ or mc::dynamic_smem memory are invisible to it: a
// template that wants the check touches shared memory through the accessors above. A cp.async
// destination accessed by any thread (the issuer too) while its copy is pending is reported as
// "cp.async destination read (written) before its wait". Accesses of a collective count as made
// before the collective: it orders what its lanes do after it. A warp's order is followed through
// one collective both lanes took part in, not through a chain of partial-mask ones (a chain that
// orders two lanes only transitively is reported as a race). Shadow state: 40 bytes per 4-byte
// word of shared memory touched (per host thread, kept across launches), reset at every barrier by
// an epoch number. It costs about 10% of an emulated FP16 resnet18 (64x64) run, hence always on;
// MODELC_EMU_RACECHECK=0 turns it off.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "cuda_types.h"

// The indices of the running thread, as CUDA's built-in variables (per host thread; the engine
// rewrites them at every fiber switch).
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
constexpr int warpSize = 32;

namespace mc {
namespace host {

/// \brief A kernel fault found by the emulation: deadlock, warp divergence, misuse of an intrinsic,
/// or an exception thrown by kernel code. Thrown from the call that launched the kernel.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// \brief The dynamic shared memory of the running block (16-byte aligned, poisoned with 0xff
/// bytes before every block so reads of unwritten data show up as NaN / -1).
inline thread_local unsigned char* tl_dynamic_smem = nullptr;

/// \brief A launch: one call of invoke(data) runs the kernel for the current thread.
struct KernelCall {
  const void* kernel = nullptr;  // the kernel function, for attributes
  void (*invoke)(void* data) = nullptr;
  std::shared_ptr<void> data;    // the kernel's parameters, copied at launch (or capture)
  dim3 grid, block;
  size_t dynamic_smem_bytes = 0;
};

/// \brief Runs a launch now on this host thread (validated already). Throws KernelError on a fault.
void run_grid(const KernelCall& call);

/// \brief Block barrier; returns how many threads passed a non-zero predicate.
int block_barrier(int predicate, const char* what, const char* file, int line);

enum ShuffleKind : int { shuffle_idx, shuffle_up, shuffle_down, shuffle_xor };
/// \brief A shuffle of up to 64 bits, with PTX shfl.sync's lane arithmetic.
uint64_t warp_shuffle(int kind, unsigned mask, uint64_t bits, unsigned b, int width, const char* what,
                      const char* file, int line);

enum VoteKind : int { vote_ballot, vote_any, vote_all, vote_sync };
/// \brief The ballot of the participating lanes and the participating set itself.
struct VoteResult {
  unsigned ballot, participants;
};
VoteResult warp_vote(int kind, unsigned mask, int predicate, const char* what, const char* file, int line);

/// \brief Lanes of the current warp that exist and have not exited.
unsigned active_mask();

/// \brief A collective of all 32 lanes (WMMA). `complete` runs once, in the last lane to arrive,
/// with each lane's `arg` (indexed by lane); it may throw KernelError to report misuse.
/// `complete` doubles as the collective's identity: lanes must call the same one.
using CompleteFn = void (*)(void* const* lane_args);
void warp_collective_full(CompleteFn complete, void* arg, const char* what, const char* file, int line);

/// \brief Throws KernelError(message) from kernel code; the engine adds where it happened.
[[noreturn]] void fault(const std::string& message);

// cp.async: copies are queued per thread and done at the wait that covers them (the latest legal
// moment), so a kernel that reads shared memory before waiting sees stale data here too. `what`,
// file and line name the cp_async call for the race check's reports.
void async_copy(void* dst, const void* src, int bytes, int src_bytes, const char* what, const char* file, int line);
void async_commit();
void async_wait(int pending_groups);

// ---- the race check (see the file comment) ----
/// \brief The calling thread reads (write false) or writes [p, p + bytes) of shared memory in
/// `what` at file:line. Throws KernelError when that races with an earlier access.
void shared_access(const void* p, size_t bytes, bool write, const char* what, const char* file, int line);
/// \brief Inside a full-warp collective's `complete`: the warp reads or writes `lines` runs of
/// `bytes` bytes, `stride` bytes apart, from p. `lane` is the lane whose address it is, or -1 for
/// the whole warp's (wmma) tile. Memory outside the block's shared memory is not tracked.
void warp_shared_access(int lane, const void* p, size_t bytes, size_t lines, size_t stride, bool write);

// ---- Hopper (host/hopper.h is the interface kernels see) ----
// A warpgroup is 4 consecutive warps whose first is a multiple of 4 (threads 128 w .. 128 w + 127).
// wgmma, setmaxnreg: collectives of the warpgroup's 128 threads (warpgroup_collective: complete runs
// once, in the last thread to arrive, with each thread's arg indexed by its rank in the warpgroup).
// wgmma operations are queued per warpgroup (issued, then committed in groups) and complete at the
// wgmma.wait_group that covers them, in issue order; an mbarrier's asynchronous copies (TMA) are
// queued on it and land when its phase completes, which for a phase with copies is when a thread
// waits for it (the latest moment the PTX ISA allows); bulk tensor stores are queued per thread and
// done at the cp.async.bulk.wait_group that covers them, or when the thread exits. A thread waiting
// for an mbarrier phase sleeps: when no thread can run, the launch fails with a deadlock report
// that names each waiter's barrier, parity and state. mbarrier waits do not order mc::st_shared /
// ld_shared for the race check: kernels that hand data over through mbarriers do it through the
// async proxy (TMA, wgmma), whose accesses the race check does not see; the proxy check does:
// bytes written through the generic proxy (st_shared, cp.async) and read by wgmma or a bulk store
// need a fence.proxy.async in the writing thread in between.
void warpgroup_collective(CompleteFn complete, void* arg, const char* what, const char* file, int line);
void wgmma_fence();
/// \brief The result of the latest issued, not yet complete wgmma of this warpgroup on the registers
/// `regs` (the input of the next one on them), or null.
std::shared_ptr<void> wgmma_pending_result(const void* regs);
/// \brief Queues a wgmma: complete(last) computes `result` and, when no later operation is pending on
/// the same registers (last), writes it to them.
void wgmma_issue(const void* regs, std::shared_ptr<void> result, std::function<void(bool)> complete);
void wgmma_commit();
void wgmma_wait(int pending_groups);
void mbarrier_init(void* bar, unsigned count, const char* file, int line);
void mbarrier_arrive(void* bar, unsigned count, uint32_t tx_bytes, const char* what, const char* file, int line);
void mbarrier_expect_tx(void* bar, uint32_t tx_bytes, const char* file, int line);
void mbarrier_wait(void* bar, unsigned parity, const char* file, int line);
/// \brief An asynchronous copy completing tx_bytes transactions on bar; `land` does it (later).
void mbarrier_complete_tx_later(void* bar, uint32_t tx_bytes, std::function<void()> land, const char* what,
                                const char* file, int line);
void bulk_issue(std::function<void()> op);
void bulk_commit();
void bulk_wait(int pending_groups);
void fence_proxy_async();
/// \brief The async proxy reads / writes [p, p + bytes) of shared memory (the proxy check).
void async_proxy_read(const void* p, size_t bytes, const char* what, const char* file, int line);
void async_proxy_write(const void* p, size_t bytes);
/// \brief The shared-window address of dynamic shared memory byte 0. Not a multiple of 1024, so a
/// kernel that swizzles must align its tiles itself (a GPU promises no more).
constexpr unsigned kSharedWindowBase = 0x480;
/// \brief The shared-window address of p (in dynamic shared memory), and back (checked).
unsigned shared_window_address(const void* p, const char* what);
unsigned char* shared_window_pointer(unsigned address, size_t bytes, const char* what);

}  // namespace host
}  // namespace mc
