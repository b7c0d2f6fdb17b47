// runtime_stub/host/engine.cpp — the fiber engine of the host emulation (see engine.h for the rules).
//
// Fibers are Boost.Context's fcontext (make_fcontext / jump_fcontext): a switch saves and restores
// the callee-saved registers, no system call. Every jump passes, as its data, where the jumping
// context must be saved (null for a fiber that is done and never resumes); the context that lands
// stores it. Stacks are mmap'ed once per host thread with a guard region below, and reused.
//
// Under AddressSanitizer every switch is announced (__sanitizer_start_switch_fiber before the jump,
// __sanitizer_finish_switch_fiber where it lands): ASan tracks one stack per host thread, and
// without the announcements it takes a fiber's frames for a foreign stack (false reports, and
// exceptions thrown on a fiber stack leave it poisoned).
#include "engine.h"

#include <sys/mman.h>

#include <boost/context/detail/fcontext.hpp>
#if defined(__SANITIZE_ADDRESS__)  // g++
#define MC_HOST_ASAN 1
#elif defined(__has_feature)  // clang
#if __has_feature(address_sanitizer)
#define MC_HOST_ASAN 1
#endif
#endif
#if defined(MC_HOST_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace mc {
namespace host {
namespace {

namespace bctx = boost::context::detail;

constexpr int kMaxThreads = 1024;
constexpr int kMaxWarps = kMaxThreads / 32;
constexpr size_t kGuardBytes = 64 * 1024;

enum class State : uint8_t { unstarted, running, ready, waiting, exited };
enum class WaitKind : uint8_t { none, block, warp };

struct Fiber;

struct AsyncCopy {
  void* dst;
  const void* src;
  int bytes, src_bytes;
  uint32_t group;
};

struct Thread {
  uint3 idx{};
  int linear = 0;
  State state = State::unstarted;
  WaitKind wait = WaitKind::none;
  Fiber* fiber = nullptr;
  const char* what = "";
  const char* file = "";
  int line = 0;
  unsigned wait_mask = 0;
  void* arg = nullptr;  // this lane's argument to the warp collective it waits in
  std::vector<AsyncCopy> copies;
  uint32_t next_group = 0;  // the id the uncommitted cp.async copies will get
};

struct Fiber {
  bctx::fcontext_t ctx = nullptr;
  void* stack_top = nullptr;
  size_t stack_bytes = 0;
  Thread* thread = nullptr;
  void* asan_fake_stack = nullptr;  // ASan's state of this fiber's frames while it is suspended
};

// A warp collective in progress: lanes that arrived wait until all lanes it needs are there.
struct Group {
  unsigned mask = 0, arrived = 0;
  bool full_warp = false;
  int kind = 0;                    // shuffle/vote kind; for full-warp ones, unused
  CompleteFn complete = nullptr;   // identity of a full-warp collective
  const char* what = "";
};

struct Warp {
  unsigned exist = 0, exited = 0;
  int n_groups = 0;
  Group groups[32];
};

struct ShuffleArg {
  uint64_t value, result;
  unsigned b;
  int width;
};
struct VoteArg {
  int predicate;
  VoteResult result;
};

size_t stack_size_from_env() {
  size_t kb = 256;
  if (const char* s = std::getenv("MODELC_EMU_STACK_KB")) {
    const long v = std::strtol(s, nullptr, 10);
    if (v >= 16) kb = static_cast<size_t>(v);
  }
  return kb * 1024;
}

struct Engine {
  // the launch being run
  const KernelCall* call = nullptr;
  int n_threads = 0;
  Thread threads[kMaxThreads];
  Warp warps[kMaxWarps];
  int next_unstarted = 0;
  // ready threads, FIFO
  int ready[kMaxThreads];
  int ready_head = 0, ready_count = 0;
  // __syncthreads
  int bar_arrived = 0, bar_count = 0, bar_result = 0;
  int bar_waiters[kMaxThreads];  // in arrival order
  // fibers
  std::vector<Fiber*> fibers, free_fibers;
  Fiber* starting = nullptr;  // the fiber fiber_entry is starting in
  Thread* current = nullptr;
  bctx::fcontext_t main_ctx = nullptr;
  // ASan: the host thread's own stack (learnt when a fiber first lands from it), and its state
  // while fibers run.
  const void* main_stack_bottom = nullptr;
  size_t main_stack_bytes = 0;
  void* main_asan_fake_stack = nullptr;
  std::exception_ptr error;
  Thread* error_thread = nullptr;
  bool running = false;
  size_t stack_bytes = stack_size_from_env();
  std::vector<unsigned char> smem;  // dynamic shared memory (over-allocated for alignment)

  ~Engine() {
    for (size_t i = 0; i < fibers.size(); ++i) {
      Fiber* f = fibers[i];
      const size_t colour = (i * 7 % 64) * 64;
      munmap(static_cast<char*>(f->stack_top) + colour - stack_bytes - kGuardBytes, stack_bytes + kGuardBytes);
      delete f;
    }
  }
};

// The owner destroys the engine at thread exit; the raw pointer is what the hot paths read (a
// thread_local with a destructor costs an initialisation check on every access).
thread_local std::unique_ptr<Engine> tl_engine_owner;
thread_local Engine* tl_engine = nullptr;

Engine& engine() {
  if (__builtin_expect(tl_engine == nullptr, 0)) {
    tl_engine_owner.reset(new Engine());
    tl_engine = tl_engine_owner.get();
  }
  return *tl_engine;
}

std::string hex(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string where(const char* file, int line) {
  std::string f = file ? file : "?";
  const size_t slash = f.find_last_of('/');
  if (slash != std::string::npos) f = f.substr(slash + 1);
  return f + ":" + std::to_string(line);
}

std::string thread_name(const Thread& t) {
  return "thread (" + std::to_string(t.idx.x) + "," + std::to_string(t.idx.y) + "," + std::to_string(t.idx.z) + ")";
}

// "0-31, 40, 64-95"
std::string ranges(const std::vector<int>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += std::to_string(ids[i]);
    if (j > i) s += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return s;
}

Fiber* take_fiber(Engine& E) {
  if (!E.free_fibers.empty()) {
    Fiber* f = E.free_fibers.back();
    E.free_fibers.pop_back();
    return f;
  }
  const size_t total = E.stack_bytes + kGuardBytes;
  void* mem = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) throw KernelError("host emulation: cannot map a fiber stack");
  mprotect(mem, kGuardBytes, PROT_NONE);  // stack overflow faults instead of corrupting memory
  Fiber* f = new Fiber();
  // Stagger the stack tops so that the fibers' hot frames do not all map to the same cache sets.
  const size_t colour = (E.fibers.size() * 7 % 64) * 64;
  f->stack_bytes = E.stack_bytes - colour;
  f->stack_top = static_cast<char*>(mem) + total - colour;
  E.fibers.push_back(f);
  return f;
}

// After landing in `self` (from a jump): save the jumper's context and become self's thread.
void fiber_entry(bctx::transfer_t t);

// ASan: the running context is about to switch to the stack [bottom, bottom + bytes); `save`
// receives the leaving context's state (null: it never resumes, and ASan frees that state).
inline void asan_leave(void** save, const void* bottom, size_t bytes) {
#if defined(MC_HOST_ASAN)
  __sanitizer_start_switch_fiber(save, bottom, bytes);
#else
  (void)save, (void)bottom, (void)bytes;
#endif
}

// ASan: the switch has landed; `saved` is what asan_leave stored when this context left (null for
// a fresh fiber). The stack it came from is written to *from_bottom / *from_bytes when not null.
inline void asan_arrived(void* saved, const void** from_bottom, size_t* from_bytes) {
#if defined(MC_HOST_ASAN)
  __sanitizer_finish_switch_fiber(saved, from_bottom, from_bytes);
#else
  (void)saved, (void)from_bottom, (void)from_bytes;
#endif
}

inline const void* stack_bottom(const Fiber* f) { return static_cast<char*>(f->stack_top) - f->stack_bytes; }

// Prepares a fresh context on f's stack. Under AddressSanitizer the stack is unpoisoned first: a
// fiber abandoned by a fault leaves its frames' redzones behind.
bctx::fcontext_t start_on(Fiber* f) {
#if defined(MC_HOST_ASAN)
  ASAN_UNPOISON_MEMORY_REGION(stack_bottom(f), f->stack_bytes);
#endif
  return bctx::make_fcontext(f->stack_top, f->stack_bytes, fiber_entry);
}

inline void landed(Engine& E, Fiber* self, bctx::transfer_t t) {
  if (t.data) *static_cast<bctx::fcontext_t*>(t.data) = t.fctx;
  Thread* th = self->thread;
  E.current = th;
  threadIdx = th->idx;
}

// The suspending fiber `self` jumps to `to` (a fresh context or a suspended fiber).
inline void jump(Engine& E, Fiber* self, Fiber* to) {
  asan_leave(&self->asan_fake_stack, stack_bottom(to), to->stack_bytes);
  bctx::transfer_t t = bctx::jump_fcontext(to->ctx, &self->ctx);
  asan_arrived(self->asan_fake_stack, nullptr, nullptr);  // only reached when self is resumed
  landed(E, self, t);
}

void push_ready(Engine& E, Thread& th) {
  th.state = State::ready;
  th.wait = WaitKind::none;
  E.ready[(E.ready_head + E.ready_count) % kMaxThreads] = th.linear;
  ++E.ready_count;
}

std::string deadlock_message(Engine& E) {
  // Group the threads that cannot move by where they wait.
  struct Spot {
    std::string text;
    std::vector<int> ids;
  };
  std::vector<Spot> spots;
  std::vector<int> exited;
  for (int i = 0; i < E.n_threads; ++i) {
    Thread& t = E.threads[i];
    if (t.state == State::exited) {
      exited.push_back(i);
      continue;
    }
    std::string text = std::string(t.what) +
                       (t.wait == WaitKind::warp ? std::string(" (mask ") + hex(t.wait_mask) + ")" : std::string()) +
                       " at " + where(t.file, t.line);
    Spot* s = nullptr;
    for (Spot& sp : spots)
      if (sp.text == text) s = &sp;
    if (!s) {
      spots.push_back({text, {}});
      s = &spots.back();
    }
    s->ids.push_back(i);
  }
  std::string m = "deadlock: ";
  for (size_t i = 0; i < spots.size(); ++i)
    m += (i ? "; " : "") + std::string("threads ") + ranges(spots[i].ids) + " wait in " + spots[i].text;
  if (!exited.empty()) m += "; threads " + ranges(exited) + " have exited";
  m += " (thread numbers are linear: x + y*blockDim.x + z*blockDim.x*blockDim.y)";
  return m;
}

// The current thread waits: run something else until it is released.
__attribute__((always_inline)) inline void wait_here(Engine& E, Thread& th) {
  th.state = State::waiting;
  Fiber* self = th.fiber;
  if (E.ready_count > 0) {
    Thread& next = E.threads[E.ready[E.ready_head]];
    E.ready_head = (E.ready_head + 1) % kMaxThreads;
    --E.ready_count;
    next.state = State::running;
    jump(E, self, next.fiber);
  } else if (E.next_unstarted < E.n_threads) {
    Fiber* f = take_fiber(E);
    f->ctx = start_on(f);
    E.starting = f;
    jump(E, self, f);
  } else {
    throw KernelError(deadlock_message(E));
  }
}

void complete_group(Engine& E, Warp& w, int gi, int self_lane);

// Completes the group if every lane it needs has arrived; returns whether it did.
bool try_complete(Engine& E, Warp& w, int gi, int self_lane) {
  Group& g = w.groups[gi];
  const unsigned needed = g.full_warp ? 0xffffffffu : (g.mask & w.exist & ~w.exited);
  if ((g.arrived & needed) != needed) return false;
  complete_group(E, w, gi, self_lane);
  return true;
}

Thread* warp_lane(Engine& E, const Warp& w, int lane) {
  return &E.threads[static_cast<int>(&w - E.warps) * 32 + lane];
}

void complete_group(Engine& E, Warp& w, int gi, int self_lane) {
  Group g = w.groups[gi];
  w.groups[gi] = w.groups[--w.n_groups];  // remove first: release may not see it again
  void* args[32] = {};
  for (int l = 0; l < 32; ++l)
    if (g.arrived & (1u << l)) args[l] = warp_lane(E, w, l)->arg;
  if (g.full_warp) {
    g.complete(args);
  } else if (g.kind >= 100) {  // votes
    unsigned ballot = 0;
    for (int l = 0; l < 32; ++l)
      if ((g.arrived & (1u << l)) && static_cast<VoteArg*>(args[l])->predicate) ballot |= 1u << l;
    for (int l = 0; l < 32; ++l)
      if (g.arrived & (1u << l)) static_cast<VoteArg*>(args[l])->result = VoteResult{ballot, g.arrived};
  } else {  // shuffles: PTX shfl.sync lane arithmetic with c = ((32-width)<<8) | (up ? 0 : 31)
    for (int l = 0; l < 32; ++l) {
      if (!(g.arrived & (1u << l))) continue;
      ShuffleArg& a = *static_cast<ShuffleArg*>(args[l]);
      const int segmask = (32 - a.width) & 31;
      const int b = static_cast<int>(a.b & 31u);
      const int cval = g.kind == shuffle_up ? 0 : 31;
      const int max_lane = (l & segmask) | (cval & ~segmask);
      const int min_lane = l & segmask;
      int j = l;
      bool ok = true;
      switch (g.kind) {
        case shuffle_up: j = l - b; ok = j >= max_lane; break;
        case shuffle_down: j = l + b; ok = j <= max_lane; break;
        case shuffle_xor: j = l ^ b; ok = j <= max_lane; break;
        default: j = min_lane | (b & ~segmask); ok = j <= max_lane; break;
      }
      if (!ok) j = l;
      a.result = (g.arrived & (1u << j)) ? static_cast<ShuffleArg*>(args[j])->value : a.value;
    }
  }
  for (int l = 0; l < 32; ++l) {
    if (!(g.arrived & (1u << l)) || l == self_lane) continue;
    Thread* t = warp_lane(E, w, l);
    if (t->state == State::waiting) push_ready(E, *t);
  }
}

// A lane arrives at a warp collective; returns when the collective is complete.
void arrive(Engine& E, int kind, unsigned mask, bool full_warp, CompleteFn complete, void* arg, const char* what,
            const char* file, int line) {
  if (!E.running) throw KernelError(std::string(what) + " called outside a kernel");
  Thread& th = *E.current;
  const int lane = th.linear & 31;
  const unsigned bit = 1u << lane;
  Warp& w = E.warps[th.linear >> 5];
  if (!(mask & bit))
    fault(std::string(what) + " at " + where(file, line) + ": mask " + hex(mask) + " does not include the calling lane " +
          std::to_string(lane));
  if (full_warp && w.exist != 0xffffffffu)
    fault(std::string(what) + " at " + where(file, line) + " needs a full warp; warp " + std::to_string(th.linear >> 5) +
          " of this block has lanes " + hex(w.exist));
  int gi = -1;
  for (int i = 0; i < w.n_groups; ++i)
    if (w.groups[i].mask == mask) gi = i;
  if (gi >= 0) {
    Group& g = w.groups[gi];
    if (g.kind != kind || g.complete != complete || g.full_warp != full_warp) {
      std::vector<int> lanes;
      for (int l = 0; l < 32; ++l)
        if (g.arrived & (1u << l)) lanes.push_back(l);
      const Thread* other = warp_lane(E, w, lanes.front());
      fault("warp divergence: lane " + std::to_string(lane) + " calls " + what + " at " + where(file, line) +
            " while lanes " + ranges(lanes) + " wait in " + g.what + " at " + where(other->file, other->line) +
            " with the same mask " + hex(mask));
    }
  } else {
    gi = w.n_groups++;
    Group& g = w.groups[gi];
    g.mask = mask;
    g.arrived = 0;
    g.full_warp = full_warp;
    g.kind = kind;
    g.complete = complete;
    g.what = what;
  }
  w.groups[gi].arrived |= bit;
  th.arg = arg;
  th.what = what;
  th.file = file;
  th.line = line;
  th.wait_mask = mask;
  if (try_complete(E, w, gi, lane)) return;
  th.wait = WaitKind::warp;
  wait_here(E, th);
}

void flush_copies(Thread& th, uint32_t below_group) {
  size_t done = 0;
  for (; done < th.copies.size() && th.copies[done].group < below_group; ++done) {
    const AsyncCopy& c = th.copies[done];
    std::memcpy(c.dst, c.src, static_cast<size_t>(c.src_bytes));
    if (c.src_bytes < c.bytes) std::memset(static_cast<char*>(c.dst) + c.src_bytes, 0, static_cast<size_t>(c.bytes - c.src_bytes));
  }
  th.copies.erase(th.copies.begin(), th.copies.begin() + static_cast<std::ptrdiff_t>(done));
}

void thread_exit(Engine& E, Thread& th) {
  flush_copies(th, UINT32_MAX);  // outstanding copies still land
  th.state = State::exited;
  const int lane = th.linear & 31;
  Warp& w = E.warps[th.linear >> 5];
  w.exited |= 1u << lane;
  for (int gi = 0; gi < w.n_groups;) {
    Group& g = w.groups[gi];
    if (g.full_warp) {
      std::vector<int> lanes;
      for (int l = 0; l < 32; ++l)
        if (g.arrived & (1u << l)) lanes.push_back(l);
      const Thread* other = warp_lane(E, w, lanes.front());
      fault("lane " + std::to_string(lane) + " of warp " + std::to_string(th.linear >> 5) + " exited while lanes " +
            ranges(lanes) + " wait in " + g.what + " at " + where(other->file, other->line) + " (it needs all 32 lanes)");
    }
    if (!try_complete(E, w, gi, -1)) ++gi;  // a completed group is replaced by the last one
  }
}

// The body of every fiber: run unstarted threads until one waits (then this fiber is that thread's
// until it ends), preferring to resume released threads over starting new ones.
void fiber_entry(bctx::transfer_t t) {
  Engine& E = *tl_engine;
  Fiber* self = E.starting;
  if (t.data) *static_cast<bctx::fcontext_t*>(t.data) = t.fctx;
  const void* from_bottom = nullptr;
  size_t from_bytes = 0;
  asan_arrived(nullptr, &from_bottom, &from_bytes);
  if (t.data == &E.main_ctx) {  // started by run_grid: the stack to return to at the end
    E.main_stack_bottom = from_bottom;
    E.main_stack_bytes = from_bytes;
  }
  try {
    while (E.next_unstarted < E.n_threads) {
      Thread& th = E.threads[E.next_unstarted++];
      th.fiber = self;
      th.state = State::running;
      self->thread = &th;
      E.current = &th;
      threadIdx = th.idx;
      E.call->invoke(E.call->data.get());
      thread_exit(E, th);
      if (E.ready_count > 0) break;
    }
    // This fiber is done: hand over to a released thread, or finish the block.
    E.free_fibers.push_back(self);
    if (E.ready_count > 0) {
      Thread& next = E.threads[E.ready[E.ready_head]];
      E.ready_head = (E.ready_head + 1) % kMaxThreads;
      --E.ready_count;
      next.state = State::running;
      asan_leave(nullptr, stack_bottom(next.fiber), next.fiber->stack_bytes);
      bctx::jump_fcontext(next.fiber->ctx, nullptr);
    }
    bool all_exited = true;
    for (int i = 0; i < E.n_threads && all_exited; ++i) all_exited = E.threads[i].state == State::exited;
    if (!all_exited) throw KernelError(deadlock_message(E));
  } catch (...) {
    // Straight into the engine: this frame is abandoned, so an exception_ptr kept in it would
    // never release the exception.
    E.error = std::current_exception();
    E.error_thread = E.current;
  }
  asan_leave(nullptr, E.main_stack_bottom, E.main_stack_bytes);
  bctx::jump_fcontext(E.main_ctx, nullptr);
  std::abort();  // unreachable: main never resumes a finished fiber
}

void reset_block(Engine& E) {
  for (int i = 0; i < E.n_threads; ++i) {
    Thread& t = E.threads[i];
    t.state = State::unstarted;
    t.wait = WaitKind::none;
    t.fiber = nullptr;
    t.copies.clear();
    t.next_group = 0;
  }
  const int n_warps = (E.n_threads + 31) / 32;
  for (int w = 0; w < n_warps; ++w) {
    const int lanes = E.n_threads - w * 32 >= 32 ? 32 : E.n_threads - w * 32;
    E.warps[w].exist = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u);
    E.warps[w].exited = 0;
    E.warps[w].n_groups = 0;
  }
  E.next_unstarted = 0;
  E.ready_head = E.ready_count = 0;
  E.bar_arrived = E.bar_count = 0;
}

}  // namespace

void fault(const std::string& message) { throw KernelError(message); }

void run_grid(const KernelCall& call) {
  Engine& E = engine();
  if (E.running) throw KernelError("host emulation: a kernel launched another kernel (not supported)");
  const dim3 b = call.block, g = call.grid;
  E.call = &call;
  E.n_threads = static_cast<int>(b.x * b.y * b.z);
  for (int i = 0; i < E.n_threads; ++i) {
    const unsigned u = static_cast<unsigned>(i);
    E.threads[i].linear = i;
    E.threads[i].idx = uint3{u % b.x, (u / b.x) % b.y, u / (b.x * b.y)};
  }
  if (E.smem.size() < call.dynamic_smem_bytes + 128) E.smem.resize(call.dynamic_smem_bytes + 128);
  const uintptr_t base = reinterpret_cast<uintptr_t>(E.smem.data());
  tl_dynamic_smem = reinterpret_cast<unsigned char*>((base + 127) & ~static_cast<uintptr_t>(127));
  blockDim = b;
  gridDim = g;
  E.running = true;
  for (unsigned bz = 0; bz < g.z; ++bz)
    for (unsigned by = 0; by < g.y; ++by)
      for (unsigned bx = 0; bx < g.x; ++bx) {
        blockIdx = uint3{bx, by, bz};
        reset_block(E);
        if (call.dynamic_smem_bytes) std::memset(tl_dynamic_smem, 0xff, call.dynamic_smem_bytes);
        Fiber* f = take_fiber(E);
        f->ctx = start_on(f);
        E.starting = f;
        asan_leave(&E.main_asan_fake_stack, stack_bottom(f), f->stack_bytes);
        bctx::jump_fcontext(f->ctx, &E.main_ctx);  // back here when the block is done or failed
        asan_arrived(E.main_asan_fake_stack, nullptr, nullptr);
        if (E.error) {
          std::exception_ptr err = E.error;
          const Thread* th = E.error_thread;
          E.error = nullptr;
          E.running = false;
          E.free_fibers = E.fibers;  // abandon every fiber of the failed block
          std::string msg = "host emulation: kernel fault in block (" + std::to_string(bx) + "," + std::to_string(by) + "," +
                            std::to_string(bz) + ") of grid (" + std::to_string(g.x) + "," + std::to_string(g.y) + "," +
                            std::to_string(g.z) + "), block size (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," +
                            std::to_string(b.z) + ")";
          if (th) msg += ", " + thread_name(*th);
          try {
            std::rethrow_exception(err);
          } catch (const KernelError& e) {
            throw KernelError(msg + ": " + e.what());
          } catch (const std::exception& e) {
            throw KernelError(msg + ": exception in kernel code: " + e.what());
          } catch (...) {
            throw KernelError(msg + ": unknown exception in kernel code");
          }
        }
      }
  E.running = false;
}

int block_barrier(int predicate, const char* what, const char* file, int line) {
  Engine& E = engine();
  if (!E.running) throw KernelError(std::string(what) + " called outside a kernel");
  Thread& th = *E.current;
  ++E.bar_arrived;
  if (predicate) ++E.bar_count;
  if (E.bar_arrived == E.n_threads) {
    E.bar_result = E.bar_count;
    for (int i = 0; i + 1 < E.bar_arrived; ++i) push_ready(E, E.threads[E.bar_waiters[i]]);
    E.bar_arrived = E.bar_count = 0;
    return E.bar_result;
  }
  E.bar_waiters[E.bar_arrived - 1] = th.linear;
  th.wait = WaitKind::block;
  th.what = what;
  th.file = file;
  th.line = line;
  wait_here(E, th);
  return E.bar_result;  // not overwritten before every thread (this one too) reaches the next barrier
}

uint64_t warp_shuffle(int kind, unsigned mask, uint64_t bits, unsigned b, int width, const char* what, const char* file,
                      int line) {
  if (width < 1 || width > 32 || (width & (width - 1)))
    fault(std::string(what) + " at " + where(file, line) + ": width " + std::to_string(width) +
          " is not a power of two in [1, 32]");
  ShuffleArg a{bits, 0, b, width};
  arrive(engine(), kind, mask, false, nullptr, &a, what, file, line);
  return a.result;
}

VoteResult warp_vote(int kind, unsigned mask, int predicate, const char* what, const char* file, int line) {
  VoteArg a{predicate, {0, 0}};
  arrive(engine(), 100 + kind, mask, false, nullptr, &a, what, file, line);
  return a.result;
}

unsigned active_mask() {
  Engine& E = engine();
  if (!E.running) return 0;
  const Warp& w = E.warps[E.current->linear >> 5];
  return w.exist & ~w.exited;
}

void warp_collective_full(CompleteFn complete, void* arg, const char* what, const char* file, int line) {
  arrive(engine(), 0, 0xffffffffu, true, complete, arg, what, file, line);
}

void async_copy(void* dst, const void* src, int bytes, int src_bytes) {
  Engine& E = engine();
  if (!E.running) throw KernelError("cp.async called outside a kernel");
  Thread& th = *E.current;
  th.copies.push_back(AsyncCopy{dst, src, bytes, src_bytes, th.next_group});
}

void async_commit() {
  Engine& E = engine();
  if (!E.running) throw KernelError("cp.async commit called outside a kernel");
  ++E.current->next_group;
}

void async_wait(int pending_groups) {
  Engine& E = engine();
  if (!E.running) throw KernelError("cp.async wait called outside a kernel");
  Thread& th = *E.current;
  const uint32_t n = static_cast<uint32_t>(pending_groups < 0 ? 0 : pending_groups);
  // Groups 0 .. next_group-1 are committed; all but the newest n must be complete.
  if (th.next_group > n) flush_copies(th, th.next_group - n);
}

}  // namespace host
}  // namespace mc
