// Layout lab for issue 3 item 1: the candidate search layouts side by side on
// the same sorted u32 points, every Highway target, before the engine commits
// to one. Not a product benchmark (bench_chash.cc is): raw arrays, no Ring.
//
//   eyt_*    binary Eytzinger (the layout the engine had): scalar branch-free
//            descent with a prefetch four levels ahead; the same interleaved
//            over a group of queries; and the vertical form, one lane per
//            query, GatherIndex per level (1a).
//   stree_*  16-ary S+ tree: leaves are the sorted hash column (16 hashes = one
//            64-byte line), each internal level holds the max of each block
//            below, in BFS order; one SIMD compare + CountTrue per level (1b).
//   ptab_*   the S+ tree entered through a top-bits prefix table at level 1 or
//            2, skipping the cached top levels (1c).
// Every variant is checked against std::lower_bound (with wrap-around) before
// it is timed.
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lab_layouts.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/cache_control.h"
#include "hwy/highway.h"

#ifndef CHASH_LAB_LAYOUTS_SHARED_
#define CHASH_LAB_LAYOUTS_SHARED_
namespace lab {

struct EytArrays {
  const uint32_t* hash;  // [n + 1], slot 0 unused
  const uint16_t* node;  // [n + 1], slot 0 = wrap node
  uint32_t n;
};

struct STreeArrays {
  const uint32_t* leaf;       // sorted, sentinel UINT32_MAX at n, padded to 16
  const uint16_t* node;       // parallel; slot n.. = wrap node
  const uint32_t* level[8];   // level[1..levels]; level[levels] is the root block
  int levels;                 // internal levels
  const uint32_t* table;      // prefix table into level[table_level], or null
  int table_level;
  int table_shift;
};

}  // namespace lab
#endif

HWY_BEFORE_NAMESPACE();
namespace lab {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- Binary Eytzinger --------------------------------------------------------

HWY_INLINE uint32_t EytSlot(const EytArrays& a, uint32_t x) {
  const uint32_t* HWY_RESTRICT hash = a.hash;
  const uint32_t n = a.n;
  const int levels = std::bit_width(n);
  uint32_t k = 1;
  for (int level = 0; level + 1 < levels; ++level) {
    hwy::Prefetch(hash + std::min<uint32_t>(16 * k, n));
    k = 2 * k + static_cast<uint32_t>(hash[k] < x);
  }
  const uint32_t readable = k <= n ? k : 0;
  k = 2 * k + static_cast<uint32_t>((k > n) | (hash[readable] < x));
  return k >> (std::countr_one(k) + 1);
}

void EytSingle(const EytArrays& a, const uint32_t* q, size_t count, uint32_t* out) {
  for (size_t i = 0; i < count; ++i) out[i] = a.node[EytSlot(a, q[i])];
}

// Dependent chain: each query is perturbed by the previous answer.
uint32_t EytChain(const EytArrays& a, const uint32_t* q, size_t count) {
  uint32_t prev = 0;
  for (size_t i = 0; i < count; ++i) prev = a.node[EytSlot(a, q[i] ^ prev)];
  return prev;
}

template <size_t kGroup>
void EytGroupBatch(const EytArrays& a, const uint32_t* q, size_t count, uint32_t* out) {
  const uint32_t* HWY_RESTRICT hash = a.hash;
  const uint32_t n = a.n;
  const int levels = std::bit_width(n);
  size_t i = 0;
  for (; i + kGroup <= count; i += kGroup) {
    uint32_t k[kGroup];
    for (size_t j = 0; j < kGroup; ++j) k[j] = 1;
    for (int level = 0; level + 1 < levels; ++level) {
      for (size_t j = 0; j < kGroup; ++j) {
        k[j] = 2 * k[j] + static_cast<uint32_t>(hash[k[j]] < q[i + j]);
        hwy::Prefetch(hash + std::min<uint32_t>(16 * k[j], n));
      }
    }
    for (size_t j = 0; j < kGroup; ++j) {
      uint32_t kk = k[j];
      const uint32_t readable = kk <= n ? kk : 0;
      kk = 2 * kk + static_cast<uint32_t>((kk > n) | (hash[readable] < q[i + j]));
      k[j] = kk >> (std::countr_one(kk) + 1);
      hwy::Prefetch(a.node + k[j]);
    }
    for (size_t j = 0; j < kGroup; ++j) out[i + j] = a.node[k[j]];
  }
  for (; i < count; ++i) out[i] = a.node[EytSlot(a, q[i])];
}

void EytBatch16(const EytArrays& a, const uint32_t* q, size_t count, uint32_t* out) {
  EytGroupBatch<16>(a, q, count, out);
}

// One lane per query; two vectors interleaved.
void EytGatherBatch(const EytArrays& a, const uint32_t* q, size_t count, uint32_t* out) {
  const hn::ScalableTag<uint32_t> du;
  const hn::RebindToSigned<decltype(du)> di;
  const size_t N = hn::Lanes(du);
  const uint32_t* HWY_RESTRICT hash = a.hash;
  const uint32_t n = a.n;
  const int levels = std::bit_width(n);
  const auto one = hn::Set(du, 1);
  const auto vn = hn::Set(du, n);
  HWY_ALIGN uint32_t lanes[2 * hn::MaxLanes(du)];
  size_t i = 0;
  for (; i + 2 * N <= count; i += 2 * N) {
    const auto x0 = hn::LoadU(du, q + i);
    const auto x1 = hn::LoadU(du, q + i + N);
    auto k0 = one, k1 = one;
    for (int level = 0; level + 1 < levels; ++level) {
      const auto h0 = hn::GatherIndex(du, hash, hn::BitCast(di, k0));
      const auto h1 = hn::GatherIndex(du, hash, hn::BitCast(di, k1));
      // mask lanes are all-ones (-1): 2k - (-1) = 2k + 1.
      k0 = hn::Sub(hn::Add(k0, k0), hn::VecFromMask(du, hn::Lt(h0, x0)));
      k1 = hn::Sub(hn::Add(k1, k1), hn::VecFromMask(du, hn::Lt(h1, x1)));
      if (level + 4 < levels) {
        hn::Store(hn::Min(hn::ShiftLeft<4>(k0), vn), du, lanes);
        hn::Store(hn::Min(hn::ShiftLeft<4>(k1), vn), du, lanes + N);
        for (size_t j = 0; j < 2 * N; ++j) hwy::Prefetch(hash + lanes[j]);
      }
    }
    // Last (maybe partial) level: a missing slot counts as "go right".
    const auto in0 = hn::Not(hn::Lt(vn, k0)), in1 = hn::Not(hn::Lt(vn, k1));
    const auto h0 = hn::GatherIndex(du, hash, hn::BitCast(di, hn::IfThenElseZero(in0, k0)));
    const auto h1 = hn::GatherIndex(du, hash, hn::BitCast(di, hn::IfThenElseZero(in1, k1)));
    k0 = hn::Sub(hn::Add(k0, k0),
                 hn::VecFromMask(du, hn::Or(hn::Not(in0), hn::Lt(h0, x0))));
    k1 = hn::Sub(hn::Add(k1, k1),
                 hn::VecFromMask(du, hn::Or(hn::Not(in1), hn::Lt(h1, x1))));
    hn::Store(k0, du, lanes);
    hn::Store(k1, du, lanes + N);
    for (size_t j = 0; j < 2 * N; ++j) {
      lanes[j] = lanes[j] >> (std::countr_one(lanes[j]) + 1);
      hwy::Prefetch(a.node + lanes[j]);
    }
    for (size_t j = 0; j < 2 * N; ++j) out[i + j] = a.node[lanes[j]];
  }
  for (; i < count; ++i) out[i] = a.node[EytSlot(a, q[i])];
}

// ---- 16-ary S+ tree ----------------------------------------------------------

// Keys < x among the 16 of one 64-byte block (aligned) or window (unaligned).
template <bool kAligned>
HWY_INLINE uint32_t CountLess16(const uint32_t* HWY_RESTRICT keys, uint32_t x) {
  const hn::CappedTag<uint32_t, 16> d;
  const auto vx = hn::Set(d, x);
  size_t count = 0;
  for (size_t i = 0; i < 16; i += hn::Lanes(d)) {
    const auto v = kAligned ? hn::Load(d, keys + i) : hn::LoadU(d, keys + i);
    count += hn::CountTrue(d, hn::Lt(v, vx));
  }
  return static_cast<uint32_t>(count);
}

// The node line is prefetched as soon as the leaf block is known, so that its
// miss overlaps the leaf's instead of following it.
HWY_INLINE uint32_t STreeIndex(const STreeArrays& t, uint32_t x) {
  uint32_t b = 0;
  for (int l = t.levels; l >= 1; --l) b = 16 * b + CountLess16<true>(t.level[l] + 16 * b, x);
  hwy::Prefetch(t.node + 16 * b);
  return 16 * b + CountLess16<true>(t.leaf + 16 * b, x);
}

HWY_INLINE uint32_t PTabIndex(const STreeArrays& t, uint32_t x) {
  const uint32_t start = t.table[x >> t.table_shift];
  const int top = t.table_level;
  uint32_t b = start + CountLess16<false>(t.level[top] + start, x);
  for (int l = top - 1; l >= 1; --l) b = 16 * b + CountLess16<true>(t.level[l] + 16 * b, x);
  hwy::Prefetch(t.node + 16 * b);
  return 16 * b + CountLess16<true>(t.leaf + 16 * b, x);
}

void STreeSingle(const STreeArrays& t, const uint32_t* q, size_t count, uint32_t* out) {
  for (size_t i = 0; i < count; ++i) out[i] = t.node[STreeIndex(t, q[i])];
}
uint32_t STreeChain(const STreeArrays& t, const uint32_t* q, size_t count) {
  uint32_t prev = 0;
  for (size_t i = 0; i < count; ++i) prev = t.node[STreeIndex(t, q[i] ^ prev)];
  return prev;
}
void PTabSingle(const STreeArrays& t, const uint32_t* q, size_t count, uint32_t* out) {
  for (size_t i = 0; i < count; ++i) out[i] = t.node[PTabIndex(t, q[i])];
}
uint32_t PTabChain(const STreeArrays& t, const uint32_t* q, size_t count) {
  uint32_t prev = 0;
  for (size_t i = 0; i < count; ++i) prev = t.node[PTabIndex(t, q[i] ^ prev)];
  return prev;
}

// Level-synchronous descent of a group; the next level's block (and at the
// leaves the node line) is prefetched as soon as it is known.
template <size_t kGroup, bool kTable>
void STreeGroupBatch(const STreeArrays& t, const uint32_t* q, size_t count, uint32_t* out) {
  size_t i = 0;
  for (; i + kGroup <= count; i += kGroup) {
    uint32_t b[kGroup];
    int top = t.levels;
    if (kTable) {
      top = t.table_level;
      for (size_t j = 0; j < kGroup; ++j) {
        const uint32_t start = t.table[q[i + j] >> t.table_shift];
        b[j] = start + CountLess16<false>(t.level[top] + start, q[i + j]);
        hwy::Prefetch((top > 1 ? t.level[top - 1] : t.leaf) + 16 * b[j]);
        if (top == 1) hwy::Prefetch(t.node + 16 * b[j]);
      }
      --top;
    } else {
      for (size_t j = 0; j < kGroup; ++j) b[j] = 0;
    }
    for (int l = top; l >= 1; --l) {
      const uint32_t* level = t.level[l];
      const uint32_t* below = l > 1 ? t.level[l - 1] : t.leaf;
      for (size_t j = 0; j < kGroup; ++j) {
        b[j] = 16 * b[j] + CountLess16<true>(level + 16 * b[j], q[i + j]);
        hwy::Prefetch(below + 16 * b[j]);
        if (l == 1) hwy::Prefetch(t.node + 16 * b[j]);
      }
    }
    for (size_t j = 0; j < kGroup; ++j) {
      out[i + j] = t.node[16 * b[j] + CountLess16<true>(t.leaf + 16 * b[j], q[i + j])];
    }
  }
  for (; i < count; ++i) out[i] = t.node[kTable ? PTabIndex(t, q[i]) : STreeIndex(t, q[i])];
}

void STreeBatch8(const STreeArrays& t, const uint32_t* q, size_t c, uint32_t* o) {
  STreeGroupBatch<8, false>(t, q, c, o);
}
void STreeBatch16(const STreeArrays& t, const uint32_t* q, size_t c, uint32_t* o) {
  STreeGroupBatch<16, false>(t, q, c, o);
}
void STreeBatch32(const STreeArrays& t, const uint32_t* q, size_t c, uint32_t* o) {
  STreeGroupBatch<32, false>(t, q, c, o);
}
void PTabBatch16(const STreeArrays& t, const uint32_t* q, size_t c, uint32_t* o) {
  STreeGroupBatch<16, true>(t, q, c, o);
}
void PTabBatch32(const STreeArrays& t, const uint32_t* q, size_t c, uint32_t* o) {
  STreeGroupBatch<32, true>(t, q, c, o);
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace lab
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <benchmark/benchmark.h>

namespace lab {

HWY_EXPORT(EytSingle);
HWY_EXPORT(EytChain);
HWY_EXPORT(EytBatch16);
HWY_EXPORT(EytGatherBatch);
HWY_EXPORT(STreeSingle);
HWY_EXPORT(STreeChain);
HWY_EXPORT(STreeBatch8);
HWY_EXPORT(STreeBatch16);
HWY_EXPORT(STreeBatch32);
HWY_EXPORT(PTabSingle);
HWY_EXPORT(PTabChain);
HWY_EXPORT(PTabBatch16);
HWY_EXPORT(PTabBatch32);
HWY_EXPORT(TargetName);

// 2 MiB-aligned, transparent huge pages (madvise). Never freed: the lab
// keeps one data set per size for the whole run.
template <typename T>
T* HugeArray(size_t count) {
  const size_t bytes = (count * sizeof(T) + (2u << 20) - 1) & ~size_t{(2u << 20) - 1};
  void* p = std::aligned_alloc(2u << 20, bytes);
  if (p == nullptr) std::abort();
  madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 0, bytes);
  return static_cast<T*>(p);
}

struct DataSet {
  uint32_t n = 0;
  std::vector<uint32_t> sorted;  // unique hashes
  std::vector<uint16_t> sorted_node;
  EytArrays eyt{};
  STreeArrays stree{};
  STreeArrays ptab1{}, ptab2{};
  std::vector<uint32_t> queries;  // uniform u32
  std::vector<uint32_t> expected;
};

void FillEytzinger(uint32_t* hash, uint16_t* node, const std::vector<uint32_t>& s,
                   const std::vector<uint16_t>& sn, uint32_t n, uint32_t& i, uint32_t k) {
  if (k > n) return;
  FillEytzinger(hash, node, s, sn, n, i, 2 * k);
  hash[k] = s[i];
  node[k] = sn[i];
  ++i;
  FillEytzinger(hash, node, s, sn, n, i, 2 * k + 1);
}

// Level l holds, for each block of level l-1, its last (largest) key; each
// level padded with UINT32_MAX to whole blocks plus 16 (prefix-table windows).
void BuildSTree(DataSet& ds) {
  const uint32_t n = ds.n;
  const size_t leaf_len = (n + 1 + 15) / 16 * 16;
  uint32_t* leaf = HugeArray<uint32_t>(leaf_len);
  uint16_t* node = HugeArray<uint16_t>(leaf_len + 32);
  for (size_t i = 0; i < leaf_len; ++i) leaf[i] = i < n ? ds.sorted[i] : UINT32_MAX;
  for (size_t i = 0; i < leaf_len + 32; ++i) node[i] = i < n ? ds.sorted_node[i] : ds.sorted_node[0];
  STreeArrays& t = ds.stree;
  t.leaf = leaf;
  t.node = node;
  const uint32_t* below = leaf;
  size_t below_len = leaf_len;
  int levels = 0;
  while (below_len > 16) {
    const size_t len = below_len / 16;
    const size_t padded = (len + 15) / 16 * 16 + 16;
    uint32_t* level = HugeArray<uint32_t>(padded);
    for (size_t i = 0; i < padded; ++i) level[i] = i < len ? below[16 * i + 15] : UINT32_MAX;
    t.level[++levels] = level;
    below = level;
    below_len = (len + 15) / 16 * 16;
  }
  t.levels = levels;
  t.table = nullptr;
}

// Prefix table into level `level`: entry p = first position whose key is >=
// p << shift. Sized for about 2 keys per bucket; every bucket must hold < 16.
bool BuildPrefixTable(const STreeArrays& t, int level, STreeArrays& out) {
  if (level > t.levels || level < 1) return false;
  const uint32_t* keys = t.level[level];
  size_t len = 0;
  while (keys[len] != UINT32_MAX) ++len;
  ++len;  // the first UINT32_MAX key is the sentinel block's max
  int bits = std::max(1, static_cast<int>(std::bit_width(len / 2)));
  bits = std::min(bits, 24);
  const int shift = 32 - bits;
  const size_t entries = size_t{1} << bits;
  uint32_t* table = HugeArray<uint32_t>(entries);
  size_t pos = 0;
  for (size_t p = 0; p < entries; ++p) {
    const uint64_t lo = uint64_t{p} << shift;
    while (pos < len && keys[pos] < lo) ++pos;
    table[p] = static_cast<uint32_t>(pos);
  }
  for (size_t p = 0; p + 1 < entries; ++p) {
    if (table[p + 1] - table[p] > 15) return false;
  }
  if (len - table[entries - 1] > 16) return false;
  out = t;
  out.table = table;
  out.table_level = level;
  out.table_shift = shift;
  std::fprintf(stderr, "  prefix table at level %d: %zu entries (%zu bytes)\n", level, entries,
               entries * 4);
  return true;
}

DataSet& GetDataSet(uint32_t n) {
  static std::vector<DataSet*> sets;
  for (DataSet* ds : sets) {
    if (ds->n == n) return *ds;
  }
  auto* ds = new DataSet;
  ds->n = n;
  std::mt19937_64 rng(n);
  std::vector<uint32_t> h(n + n / 8 + 64);
  for (auto& v : h) v = static_cast<uint32_t>(rng());
  std::sort(h.begin(), h.end());
  h.erase(std::unique(h.begin(), h.end()), h.end());
  h.resize(n);
  std::sort(h.begin(), h.end());
  ds->sorted = h;
  ds->sorted_node.resize(n);
  for (auto& v : ds->sorted_node) v = static_cast<uint16_t>(rng() % 2048);
  uint32_t* eh = HugeArray<uint32_t>(n + 1);
  uint16_t* en = HugeArray<uint16_t>(n + 1);
  uint32_t i = 0;
  FillEytzinger(eh, en, ds->sorted, ds->sorted_node, n, i, 1);
  en[0] = ds->sorted_node[0];
  ds->eyt = {eh, en, n};
  BuildSTree(*ds);
  if (!BuildPrefixTable(ds->stree, 1, ds->ptab1)) ds->ptab1 = ds->stree;
  if (!BuildPrefixTable(ds->stree, 2, ds->ptab2)) ds->ptab2 = ds->stree;
  ds->queries.resize(1 << 20);
  for (auto& v : ds->queries) v = static_cast<uint32_t>(rng());
  ds->expected.resize(ds->queries.size());
  for (size_t j = 0; j < ds->queries.size(); ++j) {
    const size_t idx = std::lower_bound(h.begin(), h.end(), ds->queries[j]) - h.begin();
    ds->expected[j] = ds->sorted_node[idx == n ? 0 : idx];
  }
  sets.push_back(ds);
  return *ds;
}

enum Variant {
  kLowerBound, kEytSingle, kEytBatch16, kEytGather, kSTreeSingle, kSTreeBatch8,
  kSTreeBatch16, kSTreeBatch32, kPTab1Single, kPTab2Single, kPTab1Batch16, kPTab2Batch16,
  kPTab2Batch32, kEytChain, kSTreeChain, kPTab2Chain, kLowerBoundChain,
};

void Run(const DataSet& ds, Variant v, const uint32_t* q, size_t count, uint32_t* out) {
  switch (v) {
    case kLowerBound:
      for (size_t j = 0; j < count; ++j) {
        const size_t idx = std::lower_bound(ds.sorted.begin(), ds.sorted.end(), q[j]) -
                           ds.sorted.begin();
        out[j] = ds.sorted_node[idx == ds.n ? 0 : idx];
      }
      break;
    case kEytSingle: HWY_DYNAMIC_DISPATCH(EytSingle)(ds.eyt, q, count, out); break;
    case kEytBatch16: HWY_DYNAMIC_DISPATCH(EytBatch16)(ds.eyt, q, count, out); break;
    case kEytGather: HWY_DYNAMIC_DISPATCH(EytGatherBatch)(ds.eyt, q, count, out); break;
    case kSTreeSingle: HWY_DYNAMIC_DISPATCH(STreeSingle)(ds.stree, q, count, out); break;
    case kSTreeBatch8: HWY_DYNAMIC_DISPATCH(STreeBatch8)(ds.stree, q, count, out); break;
    case kSTreeBatch16: HWY_DYNAMIC_DISPATCH(STreeBatch16)(ds.stree, q, count, out); break;
    case kSTreeBatch32: HWY_DYNAMIC_DISPATCH(STreeBatch32)(ds.stree, q, count, out); break;
    case kPTab1Single: HWY_DYNAMIC_DISPATCH(PTabSingle)(ds.ptab1, q, count, out); break;
    case kPTab2Single: HWY_DYNAMIC_DISPATCH(PTabSingle)(ds.ptab2, q, count, out); break;
    case kPTab1Batch16: HWY_DYNAMIC_DISPATCH(PTabBatch16)(ds.ptab1, q, count, out); break;
    case kPTab2Batch16: HWY_DYNAMIC_DISPATCH(PTabBatch16)(ds.ptab2, q, count, out); break;
    case kPTab2Batch32: HWY_DYNAMIC_DISPATCH(PTabBatch32)(ds.ptab2, q, count, out); break;
    default: break;
  }
}

uint32_t RunChain(const DataSet& ds, Variant v, const uint32_t* q, size_t count) {
  switch (v) {
    case kEytChain: return HWY_DYNAMIC_DISPATCH(EytChain)(ds.eyt, q, count);
    case kSTreeChain: return HWY_DYNAMIC_DISPATCH(STreeChain)(ds.stree, q, count);
    case kPTab2Chain: return HWY_DYNAMIC_DISPATCH(PTabChain)(ds.ptab2, q, count);
    default: {
      uint32_t prev = 0;
      for (size_t j = 0; j < count; ++j) {
        const size_t idx = std::lower_bound(ds.sorted.begin(), ds.sorted.end(),
                                            q[j] ^ prev) - ds.sorted.begin();
        prev = ds.sorted_node[idx == ds.n ? 0 : idx];
      }
      return prev;
    }
  }
}

void BM_Lab(benchmark::State& state, Variant v, int64_t target) {
  hwy::SetSupportedTargetsForTest(target);
  const DataSet& ds = GetDataSet(static_cast<uint32_t>(state.range(0)));
  const size_t batch = 1024;
  std::vector<uint32_t> out(batch);
  const bool chain = v >= kEytChain;
  if (!chain) {
    for (size_t j = 0; j < ds.queries.size(); j += batch) {
      Run(ds, v, ds.queries.data() + j, batch, out.data());
      for (size_t k = 0; k < batch; ++k) {
        if (out[k] != ds.expected[j + k]) {
          state.SkipWithError("answer differs from std::lower_bound");
          hwy::SetSupportedTargetsForTest(0);
          return;
        }
      }
    }
  }
  state.SetLabel(HWY_DYNAMIC_DISPATCH(TargetName)());
  size_t pos = 0;
  const size_t mask = ds.queries.size() - 1;
  for (auto _ : state) {
    if (chain) {
      benchmark::DoNotOptimize(RunChain(ds, v, ds.queries.data() + pos, batch));
    } else {
      Run(ds, v, ds.queries.data() + pos, batch, out.data());
      benchmark::DoNotOptimize(out.data());
    }
    pos = (pos + batch) & mask;
  }
  state.SetItemsProcessed(state.iterations() * batch);
  hwy::SetSupportedTargetsForTest(0);
}

void RegisterAll() {
  HWY_DYNAMIC_DISPATCH(TargetName)();
  const std::pair<const char*, Variant> variants[] = {
      {"lower_bound", kLowerBound}, {"eyt_single", kEytSingle},
      {"eyt_batch16", kEytBatch16}, {"eyt_gather", kEytGather},
      {"stree_single", kSTreeSingle}, {"stree_batch8", kSTreeBatch8},
      {"stree_batch16", kSTreeBatch16}, {"stree_batch32", kSTreeBatch32},
      {"ptab1_single", kPTab1Single}, {"ptab2_single", kPTab2Single},
      {"ptab1_batch16", kPTab1Batch16}, {"ptab2_batch16", kPTab2Batch16},
      {"ptab2_batch32", kPTab2Batch32}, {"eyt_chain", kEytChain},
      {"stree_chain", kSTreeChain}, {"ptab2_chain", kPTab2Chain},
      {"lower_bound_chain", kLowerBoundChain},
  };
  const char* only = std::getenv("LAB_TARGETS_BEST_ONLY");
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    for (const auto& [name, v] : variants) {
      if ((v == kLowerBound || v == kLowerBoundChain) && target != hwy::SupportedAndGeneratedTargets()[0]) continue;
      benchmark::RegisterBenchmark(
          (std::string(name) + "/" + hwy::TargetName(target)).c_str(),
          [v, target](benchmark::State& s) { BM_Lab(s, v, target); })
          ->Arg(1600)->Arg(16000)->Arg(160000)->Arg(1600000)->Arg(20480000)
          ->Unit(benchmark::kNanosecond);
    }
    if (only) break;
  }
}

}  // namespace lab

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  lab::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
#endif  // HWY_ONCE
