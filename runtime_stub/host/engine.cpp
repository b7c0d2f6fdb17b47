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
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mc {
namespace host {
namespace {

namespace bctx = boost::context::detail;

constexpr int kMaxThreads = 1024;
constexpr int kMaxWarps = kMaxThreads / 32;
constexpr size_t kGuardBytes = 64 * 1024;

enum class State : uint8_t { unstarted, running, ready, waiting, exited };
enum class WaitKind : uint8_t { none, block, warp, warpgroup, sleep };

struct Fiber;

struct AsyncCopy {
  void* dst;
  const void* src;
  int bytes, src_bytes;
  uint32_t group;
  uint16_t site;  // the cp_async call (race check)
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
  // Hopper (host/hopper.h): what a sleeping thread waits for (an mbarrier phase), for deadlock
  // reports; its bulk tensor stores not yet waited for (cp.async.bulk groups, oldest first; the last
  // one open); its fence.proxy.async count (the proxy check).
  const void* channel = nullptr;
  std::string detail;
  std::deque<std::vector<std::function<void()>>> bulk_groups;
  uint16_t proxy_fences = 0;
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

// The race check orders lanes of a warp by the collectives they took part in: collective number
// `sync_id` (counted from the block's start) had the lanes sync_ring[sync_id % kSyncRing].
constexpr uint32_t kSyncRing = 64;

struct Warp {
  unsigned exist = 0, exited = 0;
  int n_groups = 0;
  Group groups[32];
  uint32_t sync_id = 0;
  unsigned sync_ring[kSyncRing] = {};
};

// A warpgroup (4 warps, the first a multiple of 4): its collective in progress (host/hopper.h's
// wgmma and setmaxnreg) and its wgmma operations: issued but not committed, and the committed groups
// not yet waited for (oldest first).
struct WgmmaOp {
  const void* regs;             // the accumulator registers it writes (its first lane's), for chaining
  std::shared_ptr<void> result;  // what it computes, for the next operation on the same registers
  std::function<void(bool)> complete;
};
struct Warpgroup {
  int arrived = 0;
  CompleteFn complete = nullptr;
  const char* what = "";
  void* args[128] = {};
  int waiters[128] = {};
  bool fenced = false;
  std::vector<WgmmaOp> open;
  std::deque<std::vector<WgmmaOp>> groups;
};

// An mbarrier object (PTX ISA "Parallel Synchronization and Communication Instructions: mbarrier"):
// its phase (completed phases so far), the expected arrival count, the pending arrivals and the
// transaction bytes expected in the current phase, and the asynchronous copies that complete
// transactions on it, queued until the phase completes (the latest moment a copy may land).
struct MBarrier {
  unsigned phase = 0, count = 0, pending = 0;
  int64_t expected_tx = 0, queued_tx = 0;
  std::vector<std::function<void()>> queued;
  const char* file = "";
  int line = 0;
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

// ---- race check shadow state ----
// An access: who made it (0: nobody; else 1 + the thread's linear number, with kWide when the warp
// made it in a collective: then the number is the lane that gave the address, or with kWhole too
// the warp's lane 0 for a wmma tile), where (a site id), which bytes of the word (mask), and the
// warp's sync_id at the access (28 bits: a block would need 2^28 collectives in one warp to wrap).
constexpr uint16_t kWide = 0x8000, kWhole = 0x4000, kWhoMask = 0x3fff;
struct Access {
  uint16_t who, site;
  uint32_t stamp : 28, mask : 4;
};
// Per 4-byte word of shared memory: the epoch its records belong to (stale ones are empty), the
// pending cp.async that will write it (copies are whole aligned words; kept across barriers,
// cleared when the copy lands), up to two writers (of disjoint bytes: a write takes its bytes from
// the other writer) and two readers since (the first, and the latest other one), each with the
// bytes it touched. A third writer or reader replaces the second: a race with the replaced one
// can go unseen (bytes written by three threads in one word), never a false one.
struct Cell {
  uint32_t epoch;
  uint16_t pending_who, pending_site;
  Access w[2], r[2];
  // The proxy check (host/hopper.h): the thread that last wrote the word through the generic proxy
  // (st_shared, a landed cp.async) in block gen_block, and its fence.proxy.async count then. Not
  // reset by barriers: a barrier orders the proxies of nobody.
  uint16_t gen_who, gen_fence;
  uint32_t gen_block;
};
constexpr uintptr_t kPageBytes = 4096, kPageCells = kPageBytes / 4;
struct Site {
  const char* what;
  const char* file;
  int line;
};
struct SiteKey {
  const char* what;
  const char* file;
  int line;
  bool operator==(const SiteKey& o) const { return what == o.what && file == o.file && line == o.line; }
};
struct SiteHash {
  size_t operator()(const SiteKey& k) const {
    return std::hash<const void*>()(k.what) ^ (std::hash<const void*>()(k.file) * 31) ^ (static_cast<size_t>(k.line) * 1000003u);
  }
};

constexpr size_t kSiteCache = 64;
struct SiteSlot {
  SiteKey key{nullptr, nullptr, 0};
  uint16_t id = 0;
};

bool race_check_from_env() {
  const char* s = std::getenv("MODELC_EMU_RACECHECK");
  return !(s && std::strcmp(s, "0") == 0);
}

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
  Warpgroup warpgroups[kMaxWarps / 4];
  std::unordered_map<uintptr_t, MBarrier> mbarriers;  // by address, this block's
  uint32_t block_serial = 0;                           // one number per block run (the proxy check)
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
  // race check
  bool race_on = race_check_from_env();
  bool in_collective = false;  // a full-warp collective's `complete` runs
  uint32_t epoch = 1;          // this block's records since its last barrier carry it
  std::unordered_map<uintptr_t, std::unique_ptr<Cell[]>> pages;  // page number -> cells
  uintptr_t last_page = ~static_cast<uintptr_t>(0);
  Cell* last_cells = nullptr;
  std::vector<Site> sites{Site{"?", "?", 0}};  // id 0: the table is full
  std::unordered_map<SiteKey, uint16_t, SiteHash> site_ids;
  SiteSlot site_cache[kSiteCache];  // the last site of each hash, before the map
  std::vector<std::pair<uintptr_t, uintptr_t>> tls;  // this host thread's TLS blocks (__shared__)
  bool tls_scanned = false;                           // in this launch

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
                       (t.wait == WaitKind::sleep ? " (" + t.detail + ")" : std::string()) + " at " + where(t.file, t.line);
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

// The current thread waits in `kind` at what / file:line (for deadlock reports) until released.
void wait_in(Engine& E, Thread& th, WaitKind kind, const char* what, const char* file, int line) {
  th.wait = kind;
  th.what = what;
  th.file = file;
  th.line = line;
  wait_here(E, th);
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
    E.in_collective = true;
    g.complete(args);
    E.in_collective = false;
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
  ++w.sync_id;  // the race check: these lanes are ordered from here on
  w.sync_ring[w.sync_id % kSyncRing] = g.arrived;
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

// ---- the race check ---------------------------------------------------------------------------

uint16_t site_id(Engine& E, const char* what, const char* file, int line) {
  const SiteKey key{what, file, line};
  SiteSlot& slot = E.site_cache[SiteHash()(key) % kSiteCache];
  if (slot.key == key) return slot.id;
  auto it = E.site_ids.find(key);
  uint16_t id = 0;
  if (it != E.site_ids.end()) {
    id = it->second;
  } else if (E.sites.size() < 0xffff) {
    id = static_cast<uint16_t>(E.sites.size());
    E.sites.push_back(Site{what, file, line});
    E.site_ids.emplace(key, id);
  }
  slot = SiteSlot{key, id};
  return id;
}

Cell* cells_of(Engine& E, uintptr_t page) {
  if (page == E.last_page) return E.last_cells;
  std::unique_ptr<Cell[]>& c = E.pages[page];
  if (!c) c.reset(new Cell[kPageCells]());  // epoch 0: stale
  E.last_page = page;
  E.last_cells = c.get();
  return c.get();
}

inline int thread_of(uint16_t who) { return (who & kWhoMask) - 1; }
inline unsigned lanes_of(uint16_t who) { return (who & kWide) ? 0xffffffffu : 1u << (thread_of(who) & 31); }

// Whether access a is ordered before an access by `who` now: the same thread, or lanes of one warp
// and a collective since a that both took part in (a collective's own accesses carry its number).
bool ordered(const Engine& E, const Access& a, uint16_t who) {
  if (a.who == who && !(who & kWide)) return true;
  const int ta = thread_of(a.who), tb = thread_of(who);
  if ((ta >> 5) != (tb >> 5)) return false;
  const Warp& w = E.warps[ta >> 5];
  const unsigned need = lanes_of(a.who) | lanes_of(who);
  const uint32_t now = w.sync_id & 0x0fffffffu;  // as stamps hold it (wrapped: taken as ordered)
  if (a.stamp > now) return true;                 // made by the collective now completing
  for (uint32_t c = now, n = 0; c > a.stamp; --c, ++n) {
    if (n == kSyncRing) return true;  // beyond the ring's memory: taken as ordered
    if ((w.sync_ring[c % kSyncRing] & need) == need) return true;
  }
  return false;
}

std::string who_name(const Engine& E, uint16_t who) {
  const int t = thread_of(who);
  const std::string warp = "warp " + std::to_string(t >> 5);
  if (who & kWhole) return warp + " (threads " + std::to_string(t) + "-" + std::to_string(t + 31) + ")";
  if (who & kWide) return warp + " (the row address of its " + thread_name(E.threads[t]) + ")";
  return thread_name(E.threads[t]);
}

std::string site_name(const Engine& E, uint16_t site) {
  const Site& s = E.sites[site];
  return std::string(s.what) + " at " + where(s.file, s.line);
}

std::string byte_name(const Engine& E, uintptr_t a) {
  const uintptr_t d = reinterpret_cast<uintptr_t>(tl_dynamic_smem);
  if (a >= d && a < d + E.call->dynamic_smem_bytes) return "dynamic shared memory byte " + std::to_string(a - d);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(a));
  return std::string("the shared memory byte at ") + buf;
}

const char* verb(bool write) { return write ? "written" : "read"; }

[[noreturn]] void report_race(const Engine& E, uintptr_t a, const Access& earlier, bool earlier_write, uint16_t who,
                              uint16_t site, bool write) {
  fault("shared-memory race on " + byte_name(E, a) + ": " + verb(earlier_write) + " by " + who_name(E, earlier.who) + " in " +
        site_name(E, earlier.site) + ", then " + verb(write) + " by " + who_name(E, who) + " in " + site_name(E, site) +
        ", with no barrier between them (nor a warp collective both took part in)");
}

[[noreturn]] void report_pending(const Engine& E, uintptr_t a, const Cell& c, uint16_t who, uint16_t site, bool write) {
  fault(std::string("cp.async destination ") + verb(write) + " before its wait: " + byte_name(E, a) +
        " is the destination of a cp.async by " + who_name(E, c.pending_who) + " in " + site_name(E, c.pending_site) +
        " that has not landed (no cp_async_wait of that thread covers it yet), and is " + verb(write) + " by " +
        who_name(E, who) + " in " + site_name(E, site));
}

// Adds an access to a pair of records: merged with the same thread's, else in an empty slot, else
// in place of the second.
inline void record(Access (&slot)[2], const Access& me) {
  Access& x = slot[0].who == 0 || slot[0].who == me.who ? slot[0] : slot[1];
  const unsigned had = x.who == me.who ? x.mask : 0u;
  x = me;
  x.mask = had | me.mask;
}

// Bytes written anew: the earlier accesses to them are ordered before (or were reported).
inline void remove_bytes(Access (&slot)[2], unsigned mask) {
  for (Access& x : slot)
    if (x.who && !(x.mask &= ~mask)) x.who = 0;
}

enum class Track { read, write, check_write, pend, land, drop };

// One access to [p, p + bytes) by `who` at `site` (stamp: its warp's sync_id, + 1 in a collective).
// A cp.async is checked as a write (check_write) when issued, then its words are pending (pend)
// until it lands (land: a write by its issuer); drop: a failed block's pending copy is forgotten.
void track(Engine& E, uintptr_t p, size_t bytes, Track mode, uint16_t who, uint16_t site, uint32_t stamp) {
  const bool write = mode != Track::read;
  const uintptr_t end = p + bytes;
  for (uintptr_t a = p & ~static_cast<uintptr_t>(3); a < end;) {
    Cell* cells = cells_of(E, a / kPageBytes);
    const uintptr_t page_end = (a / kPageBytes + 1) * kPageBytes;
    for (; a < end && a < page_end; a += 4) {
      unsigned mask = 0xfu;
      if (a < p) mask &= 0xfu << (p - a);
      if (a + 4 > end) mask &= 0xfu >> (a + 4 - end);
      const Access me{who, site, stamp, mask};
      Cell& c = cells[(a % kPageBytes) / 4];
      if (mode == Track::pend) {
        c.pending_who = who;
        c.pending_site = site;
        continue;
      }
      if (mode == Track::drop || mode == Track::land) {
        c.pending_who = 0;
        if (mode == Track::drop) continue;
      } else if (c.pending_who) {
        report_pending(E, a + __builtin_ctz(mask), c, who, site, write);
      }
      if (c.epoch != E.epoch) {
        c.epoch = E.epoch;
        c.w[0].who = c.w[1].who = c.r[0].who = c.r[1].who = 0;
      }
      if ((mode == Track::land || mode == Track::write) && !(who & kWide)) {  // the proxy check
        c.gen_who = who;
        c.gen_fence = E.threads[thread_of(who)].proxy_fences;
        c.gen_block = E.block_serial;
      }
      if (mode == Track::land) {
        remove_bytes(c.r, mask);
        remove_bytes(c.w, mask);
        record(c.w, me);
        continue;
      }
      for (const Access& x : c.w)
        if (x.who && (x.mask & mask) && !ordered(E, x, who))
          report_race(E, a + __builtin_ctz(x.mask & mask), x, true, who, site, write);
      if (!write) {
        record(c.r, me);
        continue;
      }
      for (const Access& x : c.r)
        if (x.who && (x.mask & mask) && !ordered(E, x, who))
          report_race(E, a + __builtin_ctz(x.mask & mask), x, false, who, site, true);
      if (mode == Track::write) {
        remove_bytes(c.r, mask);  // their other bytes still count
        remove_bytes(c.w, mask);
        record(c.w, me);
      }
    }
  }
}

inline uint16_t who_of(const Thread& th) { return static_cast<uint16_t>(th.linear + 1); }
inline uint32_t stamp_of(const Engine& E, const Thread& th) { return E.warps[th.linear >> 5].sync_id; }

int add_tls_block(struct dl_phdr_info* info, size_t, void* data) {
  auto& ranges = *static_cast<std::vector<std::pair<uintptr_t, uintptr_t>>*>(data);
  if (!info->dlpi_tls_data) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_TLS) {
      const uintptr_t b = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
      ranges.emplace_back(b, b + info->dlpi_phdr[i].p_memsz);
    }
  return 0;
}

// Whether a lies in the block's shared memory: the dynamic one, or a __shared__ variable (a static
// thread_local, in one of this host thread's TLS blocks; rescanned once per launch on a miss, as a
// dlopen'ed module's block appears at its first use).
bool in_shared(Engine& E, uintptr_t a) {
  const uintptr_t d = reinterpret_cast<uintptr_t>(tl_dynamic_smem);
  if (a >= d && a < d + E.call->dynamic_smem_bytes) return true;
  for (;;) {
    for (const auto& r : E.tls)
      if (a >= r.first && a < r.second) return true;
    if (E.tls_scanned) return false;
    E.tls.clear();
    dl_iterate_phdr(add_tls_block, &E.tls);
    E.tls_scanned = true;
  }
}

void flush_copies(Engine& E, Thread& th, uint32_t below_group) {
  size_t done = 0;
  for (; done < th.copies.size() && th.copies[done].group < below_group; ++done) {
    const AsyncCopy& c = th.copies[done];
    std::memcpy(c.dst, c.src, static_cast<size_t>(c.src_bytes));
    if (c.src_bytes < c.bytes) std::memset(static_cast<char*>(c.dst) + c.src_bytes, 0, static_cast<size_t>(c.bytes - c.src_bytes));
    if (E.race_on)
      track(E, reinterpret_cast<uintptr_t>(c.dst), static_cast<size_t>(c.bytes), Track::land, who_of(th), c.site,
            stamp_of(E, th));
  }
  th.copies.erase(th.copies.begin(), th.copies.begin() + static_cast<std::ptrdiff_t>(done));
}

// A failed block's copies never land: their destinations stop being pending.
void drop_copies(Engine& E) {
  for (int i = 0; i < E.n_threads; ++i) {
    Thread& th = E.threads[i];
    if (E.race_on)
      for (const AsyncCopy& c : th.copies)
        track(E, reinterpret_cast<uintptr_t>(c.dst), static_cast<size_t>(c.bytes), Track::drop, 0, 0, 0);
    th.copies.clear();
  }
}

// ---- the kernel's name, for fault messages --------------------------------------------------------

std::string demangled(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string r = status == 0 && d ? d : name;
  std::free(d);
  return r;
}

// The function at fn from the symbol table (.symtab) of the ELF file at path, loaded at base; ""
// when the file cannot be read or has no such symbol (a stripped file). Read with pread into heap
// buffers (not mapped: a fresh mapping can land where a fiber stack was, which AddressSanitizer
// still holds poisoned).
std::string symbol_in_file(const char* path, uintptr_t base, uintptr_t fn) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  const off_t end = lseek(fd, 0, SEEK_END);
  const uint64_t n = end > 0 ? static_cast<uint64_t>(end) : 0;
  auto read_at = [&](uint64_t offset, uint64_t bytes, std::vector<unsigned char>& out) {
    out.assign(static_cast<size_t>(bytes), 0);
    if (offset > n || bytes > n - offset) return false;
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t r = pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
      if (r <= 0) return false;
      done += static_cast<size_t>(r);
    }
    return true;
  };
  std::string name;
  std::vector<unsigned char> head, sections, symbols, strings;
  ElfW(Ehdr) eh{};
  if (read_at(0, sizeof eh, head)) std::memcpy(&eh, head.data(), sizeof eh);
  const bool ok = !head.empty() && std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
                  eh.e_shentsize == sizeof(ElfW(Shdr)) &&
                  read_at(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(ElfW(Shdr)), sections);
  if (ok) {
    std::vector<ElfW(Shdr)> sh(eh.e_shnum);
    std::memcpy(sh.data(), sections.data(), sections.size());
    const uintptr_t target = eh.e_type == ET_DYN ? fn - base : fn;
    for (unsigned i = 0; i < eh.e_shnum && name.empty(); ++i) {
      if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh.e_shnum) continue;
      const ElfW(Shdr)& strtab = sh[sh[i].sh_link];
      if (!read_at(sh[i].sh_offset, sh[i].sh_size, symbols) || !read_at(strtab.sh_offset, strtab.sh_size, strings)) continue;
      const size_t count = symbols.size() / sizeof(ElfW(Sym));
      for (size_t k = 0; k < count; ++k) {
        ElfW(Sym) sym;
        std::memcpy(&sym, symbols.data() + k * sizeof sym, sizeof sym);
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value != target || sym.st_name >= strings.size()) continue;
        const char* str = reinterpret_cast<const char*>(strings.data() + sym.st_name);
        if (std::memchr(str, 0, strings.size() - sym.st_name)) name = demangled(str);
        break;
      }
    }
  }
  close(fd);
  return name;
}

std::string kernel_name(const void* fn) {
  Dl_info info{};
  if (dladdr(fn, &info)) {
    if (info.dli_sname && info.dli_saddr == fn) return demangled(info.dli_sname);
    const uintptr_t base = reinterpret_cast<uintptr_t>(info.dli_fbase), at = reinterpret_cast<uintptr_t>(fn);
    std::string name = info.dli_fname && *info.dli_fname ? symbol_in_file(info.dli_fname, base, at) : "";
    if (name.empty()) name = symbol_in_file("/proc/self/exe", base, at);
    if (!name.empty()) return name;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "the kernel at %p", fn);
  return buf;
}

void run_bulk_groups(Thread& th, size_t keep);

void thread_exit(Engine& E, Thread& th) {
  flush_copies(E, th, UINT32_MAX);  // outstanding copies still land
  run_bulk_groups(th, 0);           // and bulk stores
  if (th.linear / 128 * 128 + 128 <= E.n_threads) {
    const Warpgroup& g = E.warpgroups[th.linear / 128];
    if (g.arrived > 0)
      fault("thread " + std::to_string(th.linear) + " exited while " + std::to_string(g.arrived) + " threads of its warpgroup wait in " +
            g.what + " (it needs all 128)");
    if (!g.open.empty() || !g.groups.empty())
      fault("thread " + std::to_string(th.linear) + " exited with wgmma operations of its warpgroup not waited for (" +
            std::to_string(g.open.size()) + " not committed, " + std::to_string(g.groups.size()) +
            " committed groups): wgmma.wait_group before the accumulators are used, and before exit");
  }
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
    t.channel = nullptr;
    t.bulk_groups.clear();
    t.proxy_fences = 0;
  }
  for (Warpgroup& g : E.warpgroups) {
    g.arrived = 0;
    g.fenced = false;
    g.open.clear();
    g.groups.clear();
  }
  E.mbarriers.clear();  // queued copies of a finished (or failed) block never land
  ++E.block_serial;
  const int n_warps = (E.n_threads + 31) / 32;
  for (int w = 0; w < n_warps; ++w) {
    const int lanes = E.n_threads - w * 32 >= 32 ? 32 : E.n_threads - w * 32;
    E.warps[w].exist = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u);
    E.warps[w].exited = 0;
    E.warps[w].n_groups = 0;
    E.warps[w].sync_id = 0;
  }
  if (++E.epoch == 0) {  // after 2^32 barriers: every record must read stale again
    for (auto& page : E.pages)
      for (uintptr_t i = 0; i < kPageCells; ++i) page.second[i].epoch = 0;
    E.epoch = 1;
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
  E.tls_scanned = false;
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
          E.in_collective = false;
          E.free_fibers = E.fibers;  // abandon every fiber of the failed block
          drop_copies(E);
          std::string msg = "host emulation: kernel fault in " + kernel_name(call.kernel) + ", block (" + std::to_string(bx) + "," + std::to_string(by) + "," +
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
    if (++E.epoch == 0) E.epoch = 1;  // the race check: accesses before the barrier are ordered
    return E.bar_result;
  }
  E.bar_waiters[E.bar_arrived - 1] = th.linear;
  wait_in(E, th, WaitKind::block, what, file, line);
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

void async_copy(void* dst, const void* src, int bytes, int src_bytes, const char* what, const char* file, int line) {
  Engine& E = engine();
  if (!E.running) throw KernelError("cp.async called outside a kernel");
  Thread& th = *E.current;
  uint16_t site = 0;
  if (E.race_on) {
    site = site_id(E, what, file, line);
    const uintptr_t d = reinterpret_cast<uintptr_t>(dst);
    track(E, d, static_cast<size_t>(bytes), Track::check_write, who_of(th), site, stamp_of(E, th));
    track(E, d, static_cast<size_t>(bytes), Track::pend, who_of(th), site, 0);  // after: a fault leaves none
  }
  th.copies.push_back(AsyncCopy{dst, src, bytes, src_bytes, th.next_group, site});
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
  if (th.next_group > n) flush_copies(E, th, th.next_group - n);
}

void shared_access(const void* p, size_t bytes, bool write, const char* what, const char* file, int line) {
  Engine& E = engine();
  if (!E.race_on || !E.running) return;
  const Thread& th = *E.current;
  track(E, reinterpret_cast<uintptr_t>(p), bytes, write ? Track::write : Track::read, who_of(th),
        site_id(E, what, file, line), stamp_of(E, th));
}

void warp_shared_access(int lane, const void* p, size_t bytes, size_t lines, size_t stride, bool write) {
  Engine& E = engine();
  if (!E.race_on || !E.in_collective || !in_shared(E, reinterpret_cast<uintptr_t>(p))) return;
  const Thread& th = *E.current;  // the lane completing the collective: its site is the collective's
  const int lane0 = th.linear & ~31;
  const uint16_t who = static_cast<uint16_t>((lane < 0 ? lane0 + 1 : lane0 + lane + 1) | kWide | (lane < 0 ? kWhole : 0));
  const uint16_t site = site_id(E, th.what, th.file, th.line);
  for (size_t i = 0; i < lines; ++i)
    track(E, reinterpret_cast<uintptr_t>(p) + i * stride, bytes, write ? Track::write : Track::read, who, site,
          stamp_of(E, th) + 1);
}

// ---- Hopper: warpgroups, mbarriers, asynchronous operations (host/hopper.h) --------------------

namespace {

Warpgroup& my_warpgroup(Engine& E, const char* what) {
  if (!E.running) throw KernelError(std::string(what) + " called outside a kernel");
  const int wg = E.current->linear / 128;
  if (wg * 128 + 128 > E.n_threads)
    fault(std::string(what) + " needs a full warpgroup (4 warps, the first a multiple of 4); thread " +
          std::to_string(E.current->linear) + "'s warpgroup has " + std::to_string(E.n_threads - wg * 128) + " threads");
  return E.warpgroups[wg];
}

// The current thread sleeps until wake_all(channel) (detail: what it waits for, for deadlock reports).
void sleep_on(Engine& E, const void* channel, std::string detail, const char* what, const char* file, int line) {
  Thread& th = *E.current;
  th.channel = channel;
  // Nothing on this fiber's stack may own heap memory while it waits: a fiber abandoned by a failed
  // block is never unwound (LeakSanitizer). The thread takes the description and the old one is
  // freed here (a move assignment would hand the old buffer to `detail`, freed only on return).
  th.detail.swap(detail);
  std::string().swap(detail);
  wait_in(E, th, WaitKind::sleep, what, file, line);
}

void wake_all(Engine& E, const void* channel) {
  for (int i = 0; i < E.n_threads; ++i) {
    Thread& t = E.threads[i];
    if (t.state == State::waiting && t.wait == WaitKind::sleep && t.channel == channel) {
      t.channel = nullptr;
      push_ready(E, t);
    }
  }
}

MBarrier& mbarrier_of(Engine& E, void* bar, const char* what) {
  if (!E.running) throw KernelError(std::string(what) + " called outside a kernel");
  const auto it = E.mbarriers.find(reinterpret_cast<uintptr_t>(bar));
  if (it == E.mbarriers.end()) {
    const uintptr_t d = reinterpret_cast<uintptr_t>(tl_dynamic_smem), a = reinterpret_cast<uintptr_t>(bar);
    const std::string at = a >= d && a < d + E.call->dynamic_smem_bytes ? byte_name(E, a) : "an address outside dynamic shared memory";
    fault(std::string(what) + " on " + at + ", which is not an mbarrier initialised in this block (mc::mbarrier_init)");
  }
  return it->second;
}

std::string mbarrier_state(const Engine& E, const void* bar, const MBarrier& b) {
  return "mbarrier at " + byte_name(E, reinterpret_cast<uintptr_t>(bar)) + ": phase " + std::to_string(b.phase) + " (parity " +
         std::to_string(b.phase & 1) + ") in progress, " + std::to_string(b.pending) + " of " + std::to_string(b.count) +
         " arrivals pending, " + std::to_string(b.expected_tx - b.queued_tx) + " transaction bytes expected and not issued";
}

// All arrivals in and every expected transaction byte issued by a queued copy: the phase may complete.
bool completable(const MBarrier& b) { return b.pending == 0 && b.expected_tx == b.queued_tx; }

void complete_phase(Engine& E, void* bar, MBarrier& b) {
  std::vector<std::function<void()>> land;
  land.swap(b.queued);
  for (auto& f : land) f();  // the copies land now: what a waiter reads after the phase
  b.pending = b.count;
  b.expected_tx = b.queued_tx = 0;
  ++b.phase;
  wake_all(E, bar);
}

// After a change: a phase with nothing to land completes at once; one with copies to land, when a
// thread waits for it (now, or when it comes to wait).
void maybe_complete(Engine& E, void* bar, MBarrier& b) {
  if (!completable(b)) return;
  bool waiters = false;
  for (int i = 0; i < E.n_threads && !waiters; ++i)
    waiters = E.threads[i].state == State::waiting && E.threads[i].wait == WaitKind::sleep && E.threads[i].channel == bar;
  if (b.queued.empty() || waiters) complete_phase(E, bar, b);
}

void run_bulk_groups(Thread& th, size_t keep) {
  while (th.bulk_groups.size() > keep) {
    std::vector<std::function<void()>> g;
    g.swap(th.bulk_groups.front());
    th.bulk_groups.pop_front();
    for (auto& f : g) f();
  }
}

}  // namespace

void warpgroup_collective(CompleteFn complete, void* arg, const char* what, const char* file, int line) {
  Engine& E = engine();
  Warpgroup& g = my_warpgroup(E, what);
  Thread& th = *E.current;
  const int first = th.linear / 128 * 128;
  for (int i = first; i < first + 128; ++i)
    if (E.threads[i].state == State::exited)
      fault(std::string(what) + " at " + where(file, line) + " needs all 128 threads of the warpgroup; thread " +
            std::to_string(i) + " has exited");
  if (g.arrived == 0) {
    g.complete = complete;
    g.what = what;
  } else if (g.complete != complete) {
    fault("warpgroup divergence: thread " + std::to_string(th.linear) + " calls " + what + " at " + where(file, line) + " while " +
          std::to_string(g.arrived) + " threads of its warpgroup wait in " + g.what);
  }
  g.args[th.linear - first] = arg;
  th.what = what;
  th.file = file;
  th.line = line;
  if (++g.arrived == 128) {
    const int n_waiters = g.arrived - 1;
    g.arrived = 0;
    void* args[128];
    std::memcpy(args, g.args, sizeof args);
    complete(args);  // may throw: the launch fails
    for (int i = 0; i < n_waiters; ++i) push_ready(E, E.threads[g.waiters[i]]);
    return;
  }
  g.waiters[g.arrived - 1] = th.linear;
  wait_in(E, th, WaitKind::warpgroup, what, file, line);
}

void wgmma_fence() { my_warpgroup(engine(), "wgmma.fence").fenced = true; }

std::shared_ptr<void> wgmma_pending_result(const void* regs) {
  Warpgroup& g = my_warpgroup(engine(), "wgmma.mma_async");
  for (auto op = g.open.rbegin(); op != g.open.rend(); ++op)
    if (op->regs == regs) return op->result;
  for (auto group = g.groups.rbegin(); group != g.groups.rend(); ++group)
    for (auto op = group->rbegin(); op != group->rend(); ++op)
      if (op->regs == regs) return op->result;
  return nullptr;
}

void wgmma_issue(const void* regs, std::shared_ptr<void> result, std::function<void(bool)> complete) {
  Engine& E = engine();
  Warpgroup& g = my_warpgroup(E, "wgmma.mma_async");
  if (!g.fenced)
    fault("wgmma.mma_async at " + where(E.current->file, E.current->line) +
          " without a wgmma.fence since the warpgroup's last wgmma.wait_group (the PTX ISA wants the fence before the first "
          "wgmma and after the accumulator registers were accessed: mc::wgmma_fence)");
  g.open.push_back(WgmmaOp{regs, std::move(result), std::move(complete)});
}

void wgmma_commit() {
  Warpgroup& g = my_warpgroup(engine(), "wgmma.commit_group");
  g.groups.emplace_back();
  g.groups.back().swap(g.open);
}

void wgmma_wait(int pending_groups) {
  Warpgroup& g = my_warpgroup(engine(), "wgmma.wait_group");
  const size_t keep = static_cast<size_t>(pending_groups < 0 ? 0 : pending_groups);
  while (g.groups.size() > keep) {
    std::vector<WgmmaOp> group;
    group.swap(g.groups.front());
    g.groups.pop_front();
    // In issue order (a chained operation reads its predecessor's result); the registers receive a
    // result only from the last operation pending on them (until then they keep the poison).
    for (size_t k = 0; k < group.size(); ++k) {
      bool later = false;
      for (size_t j = k + 1; j < group.size() && !later; ++j) later = group[j].regs == group[k].regs;
      for (const auto& rest : g.groups)
        for (const WgmmaOp& op : rest) later = later || op.regs == group[k].regs;
      for (const WgmmaOp& op : g.open) later = later || op.regs == group[k].regs;
      group[k].complete(!later);
    }
  }
  g.fenced = false;
}

void mbarrier_init(void* bar, unsigned count, const char* file, int line) {
  Engine& E = engine();
  if (!E.running) throw KernelError("mc::mbarrier_init called outside a kernel");
  if (reinterpret_cast<uintptr_t>(bar) % 8 != 0 || !in_shared(E, reinterpret_cast<uintptr_t>(bar)))
    fault("mc::mbarrier_init at " + where(file, line) + ": an mbarrier is 8 bytes of shared memory, 8-byte aligned");
  if (count < 1 || count > (1u << 20) - 1)
    fault("mc::mbarrier_init at " + where(file, line) + ": expected count " + std::to_string(count) + " outside [1, 2^20 - 1]");
  const auto it = E.mbarriers.find(reinterpret_cast<uintptr_t>(bar));
  if (it != E.mbarriers.end() && !it->second.queued.empty())
    fault("mc::mbarrier_init at " + where(file, line) + " re-initialises an mbarrier with copies in flight");
  MBarrier& b = E.mbarriers[reinterpret_cast<uintptr_t>(bar)];
  b = MBarrier{};
  b.count = b.pending = count;
  b.file = file;
  b.line = line;
  std::memcpy(bar, "mcMBARRI", 8);  // the object itself lives here (the emulation's state is the engine's)
}

void mbarrier_arrive(void* bar, unsigned count, uint32_t tx_bytes, const char* what, const char* file, int line) {
  Engine& E = engine();
  MBarrier& b = mbarrier_of(E, bar, what);
  if (b.pending == 0 && !b.queued.empty() && completable(b)) complete_phase(E, bar, b);  // it completed already
  if (count > b.pending)
    fault(std::string(what) + " at " + where(file, line) + ": " + std::to_string(count) + " arrival(s) beyond the expected count (" +
          mbarrier_state(E, bar, b) + ")");
  b.pending -= count;
  b.expected_tx += tx_bytes;
  maybe_complete(E, bar, b);
}

void mbarrier_expect_tx(void* bar, uint32_t tx_bytes, const char* file, int line) {
  Engine& E = engine();
  (void)file, (void)line;
  MBarrier& b = mbarrier_of(E, bar, "mc::mbarrier_expect_tx");
  b.expected_tx += tx_bytes;
}

void mbarrier_wait(void* bar, unsigned parity, const char* file, int line) {
  Engine& E = engine();
  for (;;) {
    MBarrier& b = mbarrier_of(E, bar, "mc::mbarrier_wait");
    if ((b.phase & 1u) != (parity & 1u)) return;  // the phase of that parity has completed
    if (completable(b)) {
      complete_phase(E, bar, b);
      continue;
    }
    // Built in its own statement (sleep_on): a temporary of the call's full expression would own
    // heap memory on this fiber's stack while it sleeps. The moved-from local owns nothing.
    std::string detail = "parity " + std::to_string(parity & 1u) + "; " + mbarrier_state(E, bar, b);
    sleep_on(E, bar, std::move(detail), "mc::mbarrier_wait", file, line);
  }
}

void mbarrier_complete_tx_later(void* bar, uint32_t tx_bytes, std::function<void()> land, const char* what, const char* file,
                                int line) {
  Engine& E = engine();
  (void)file, (void)line;
  MBarrier& b = mbarrier_of(E, bar, what);
  b.queued.push_back(std::move(land));
  b.queued_tx += tx_bytes;
  maybe_complete(E, bar, b);
}

void bulk_issue(std::function<void()> op) {
  Engine& E = engine();
  if (!E.running) throw KernelError("cp.async.bulk called outside a kernel");
  Thread& th = *E.current;
  if (th.bulk_groups.empty()) th.bulk_groups.emplace_back();
  th.bulk_groups.back().push_back(std::move(op));
}

void bulk_commit() {
  Engine& E = engine();
  if (!E.running) throw KernelError("cp.async.bulk.commit_group called outside a kernel");
  Thread& th = *E.current;
  if (th.bulk_groups.empty()) th.bulk_groups.emplace_back();
  th.bulk_groups.emplace_back();  // the next, open group
}

void bulk_wait(int pending_groups) {
  Engine& E = engine();
  if (!E.running) throw KernelError("cp.async.bulk.wait_group called outside a kernel");
  Thread& th = *E.current;
  // The open (uncommitted) group is not waited for; of the committed ones, all but the newest n.
  const size_t open = th.bulk_groups.empty() ? 0 : 1;
  const size_t keep = static_cast<size_t>(pending_groups < 0 ? 0 : pending_groups) + open;
  if (th.bulk_groups.size() <= keep) return;
  std::vector<std::function<void()>> last;
  if (open) {
    last.swap(th.bulk_groups.back());
    th.bulk_groups.pop_back();
  }
  run_bulk_groups(th, keep - open);
  if (open) th.bulk_groups.push_back(std::move(last));
}

void fence_proxy_async() {
  Engine& E = engine();
  if (!E.running) throw KernelError("fence.proxy.async called outside a kernel");
  ++E.current->proxy_fences;
}

void async_proxy_read(const void* p, size_t bytes, const char* what, const char* file, int line) {
  Engine& E = engine();
  if (!E.race_on || !E.running) return;
  const uintptr_t a0 = reinterpret_cast<uintptr_t>(p), end = a0 + bytes;
  for (uintptr_t a = a0 & ~static_cast<uintptr_t>(3); a < end; a += 4) {
    const Cell& c = cells_of(E, a / kPageBytes)[(a % kPageBytes) / 4];
    if (c.gen_who == 0 || c.gen_block != E.block_serial) continue;
    const Thread& writer = E.threads[thread_of(c.gen_who)];
    if (writer.proxy_fences != c.gen_fence) continue;
    if (!file) {  // the current thread's site (a collective's)
      file = E.current->file;
      line = E.current->line;
    }
    fault(std::string(what) + " at " + where(file, line) + " reads " + byte_name(E, a) + ", written by " +
          thread_name(writer) + " through the generic proxy (st_shared, cp.async) with no fence.proxy.async in that thread since "
          "(mc::fence_proxy_async before the barrier that hands the data to the tensor cores or the copy engine)");
  }
}

void async_proxy_write(const void* p, size_t bytes) {
  Engine& E = engine();
  if (!E.race_on || !E.running) return;
  const uintptr_t a0 = reinterpret_cast<uintptr_t>(p), end = a0 + bytes;
  for (uintptr_t a = a0 & ~static_cast<uintptr_t>(3); a < end; a += 4) cells_of(E, a / kPageBytes)[(a % kPageBytes) / 4].gen_who = 0;
}

unsigned shared_window_address(const void* p, const char* what) {
  Engine& E = engine();
  const uintptr_t d = reinterpret_cast<uintptr_t>(tl_dynamic_smem), a = reinterpret_cast<uintptr_t>(p);
  if (!E.running || a < d || a >= d + E.call->dynamic_smem_bytes)
    fault(std::string(what) + ": the address is not in the block's dynamic shared memory (the emulation maps only "
                              "mc::dynamic_smem into the shared window)");
  return static_cast<unsigned>(kSharedWindowBase + (a - d));
}

unsigned char* shared_window_pointer(unsigned address, size_t bytes, const char* what) {
  Engine& E = engine();
  const size_t n = E.running ? E.call->dynamic_smem_bytes : 0;
  if (address < kSharedWindowBase || address - kSharedWindowBase > n || bytes > n - (address - kSharedWindowBase)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%#x", address);
    fault(std::string(what) + ": shared-window address " + buf + " (+" + std::to_string(bytes) +
          " bytes) lies outside the block's dynamic shared memory");
  }
  return tl_dynamic_smem + (address - kSharedWindowBase);
}

}  // namespace host
}  // namespace mc
