// Pippenger MSM over G1 and G2 (generic over the curve's field) with signed c-bit digits and buckets sorted by a counting sort.
//
//   1. msm_classify: scalars leave Montgomery form (in place); 0 is dropped, 1 is flagged
//      for the plain sum (PoRep witnesses are mostly bits), every other scalar is cut into
//      W = ceil(256 / c) signed digits in (-2^(c-1), 2^(c-1)] and counted per (bucket set,
//      |digit|). Windows share bucket sets `per` at a time (precomputed multiples): window w
//      goes to set w / per and adds multiple j = w % per of its point, 2^(c j) P, which the
//      host keeps resident (multiples.cuh); per = 1 is one bucket set per window, no multiples.
//   2. msm_bucket_offsets: exclusive scan of the counts, one block per bucket set.
//   3. msm_scatter: each (scalar, window) with a non-zero digit writes its point (multiple j
//      in the bits from `shift` up, the scalar's index below, sign in bit 31) and its bucket
//      number to its bucket's slot, so that the entries of a bucket set lie sorted by bucket;
//      unused slots keep the key NO_KEY. Without a key array the bucket
//      numbers are not stored: the next step derives them from the cursors (derived_keys).
//   4. msm_bucket_runs_affine: each thread adds a fixed-size chunk of sorted entries (mixed
//      XYZZ + affine), so a bucket holding half of all points (scalars all equal, a sparse
//      top window) is split across threads like any other work. The chunk that holds a
//      bucket's first entry writes the bucket; a chunk that starts inside a bucket leaves its
//      first run as a carry, and msm_bucket_runs_xyzz folds the carries the same way, level
//      by level (each level CAP times shorter) until none is left.
//   5. msm_window_segments: each thread reduces a run of buckets to sum_b b * B_b with a
//      running sum; g1_xyzz_sum_partials adds the segments of each bucket set (a tree), and
//      the host combines the sets' sums (Horner, c * per doublings per set).
//   Scalar-one points: g1_sum_partials (flagged or all points) and g1_xyzz_sum_partials
//      reduce them to a few hundred partial sums.
#pragma once
#include "bls12_381.cuh"

namespace cuzk {

// bits [off, off + c) of a 256-bit little-endian scalar (c <= 16)
__device__ __forceinline__ uint32_t scalar_bits(const uint32_t s[8], uint32_t off, uint32_t c) {
    uint32_t limb = off >> 5, sh = off & 31;
    if (limb >= 8) return 0;
    uint32_t v = s[limb] >> sh;
    if (sh + c > 32 && limb + 1 < 8) v |= s[limb + 1] << (32 - sh);
    return v & ((1u << c) - 1);
}

// Walks the signed digits of scalar s, calling f(window, bucket, negative) for non-zero ones.
template <class Fn>
__device__ __forceinline__ void for_each_digit(const uint32_t s[8], uint32_t c, uint32_t windows, Fn f) {
    const uint32_t half = 1u << (c - 1);
    uint32_t carry = 0;
    for (uint32_t w = 0; w < windows; w++) {
        uint32_t d = scalar_bits(s, w * c, c) + carry;
        carry = 0;
        bool neg = false;
        if (d > half) {
            d = (1u << c) - d;
            neg = true;
            carry = 1;
        }
        if (d != 0) f(w, d, neg);
    }
}

__device__ __forceinline__ void load_scalar(const fr_t& x, uint32_t s[8]) {
#pragma unroll
    for (int i = 0; i < 8; i++) s[i] = x.v[i];
}

// class_out[i]: 0 = zero scalar, 1 = one, 2 = general. counts: ceil(windows / per) * (half + 1).
__device__ __forceinline__ void msm_classify(fr_t* scalars, uint8_t* class_out, uint32_t* counts,
                                             uint32_t n, uint32_t c, uint32_t windows, uint32_t per) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t x = scalars[i].from_mont();
    scalars[i] = x;
    uint32_t hi = 0;
#pragma unroll
    for (int k = 1; k < 8; k++) hi |= x.v[k];
    uint8_t cls = 2;
    if (hi == 0 && x.v[0] <= 1) cls = (uint8_t)x.v[0];
    class_out[i] = cls;
    if (cls != 2) return;
    uint32_t s[8];
    load_scalar(x, s);
    const uint32_t stride = (1u << (c - 1)) + 1;
    for_each_digit(s, c, windows, [&](uint32_t w, uint32_t d, bool) { atomicAdd(&counts[(w / per) * stride + d], 1u); });
}

// One block per bucket set; counts -> exclusive prefix sums in place (bucket 0 is unused, 0).
__device__ __forceinline__ void msm_bucket_offsets(uint32_t* counts, uint32_t c) {
    extern __shared__ uint32_t partial[];
    const uint32_t stride = (1u << (c - 1)) + 1;
    uint32_t* cnt = counts + blockIdx.x * stride;
    const uint32_t per = (stride + blockDim.x - 1) / blockDim.x;
    const uint32_t lo = threadIdx.x * per;
    const uint32_t hi = min(lo + per, stride);
    uint32_t sum = 0;
    for (uint32_t b = lo; b < hi; b++) sum += cnt[b];
    partial[threadIdx.x] = sum;
    __syncthreads();
    // Hillis-Steele inclusive scan over the per-thread sums
    for (uint32_t off = 1; off < blockDim.x; off <<= 1) {
        uint32_t v = threadIdx.x >= off ? partial[threadIdx.x - off] : 0;
        __syncthreads();
        partial[threadIdx.x] += v;
        __syncthreads();
    }
    uint32_t run = partial[threadIdx.x] - sum;
    for (uint32_t b = lo; b < hi; b++) {
        uint32_t v = cnt[b];
        cnt[b] = run;
        run += v;
    }
}

constexpr uint32_t NO_KEY = 0xffffffffu;

// entries, keys: sets * per * n slots, bucket set g's region starts at g * per * n; keys get
// the global bucket number g * half + |digit| - 1. An entry is i | j << shift (multiple j of
// point i; shift = 31 when per = 1, so that entries are plain indices), bit 31 the sign. A
// null keys array is not written: the bucket phase then derives each slot's key from the
// cursors (derived_keys below). A launch writes windows [w0, w0 + nw) only, whose sets start
// at set g0: cursor, entries and keys point at set g0's (a pass per set keeps the open
// buckets of one set at a time; w0 = 0, nw = windows, g0 = 0 writes them all).
__device__ __forceinline__ void msm_scatter(const fr_t* scalars, const uint8_t* cls, uint32_t* cursor,
                                            uint32_t* entries, uint32_t* keys, uint32_t n, uint32_t c,
                                            uint32_t w0, uint32_t nw, uint32_t per, uint32_t shift, uint32_t g0) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || cls[i] != 2) return;
    uint32_t s[8];
    load_scalar(scalars[i], s);
    const uint32_t half = 1u << (c - 1);
    const uint32_t stride = half + 1;
    const size_t region = (size_t)per * n;
    // The digits of the windows below w0 only carry into w0's.
    for_each_digit(s, c, w0 + nw, [&](uint32_t w, uint32_t d, bool neg) {
        if (w < w0) return;
        const uint32_t set = w / per, g = set - g0, j = w - set * per;
        uint32_t pos = atomicAdd(&cursor[g * stride + d], 1u);
        entries[g * region + pos] = i | (j << shift) | (neg ? 0x80000000u : 0u);
        if (keys != nullptr) keys[g * region + pos] = set * half + d - 1;
    });
}

// The keys of a key-sorted slot array, as stored (msm_scatter's keys, a level's carries).
struct stored_keys {
    const uint32_t* keys;
    __device__ __forceinline__ uint32_t operator()(size_t i) { return keys[i]; }
};

// The keys of msm_scatter's slots when it did not store them: bucket set w's region is
// [w * region, (w + 1) * region), and after the scatter the cursors are the buckets' ends
// (ends[w * (half + 1) + d], d = 1 .. half, non-decreasing; the region's slots from
// ends[.. + half] on are unused: NO_KEY). A call with the slot after the previous call's
// moves on from where that one stopped (a bucket boundary costs one load); any other slot
// is found by a binary search over the window's ends.
struct derived_keys {
    const uint32_t* ends;
    size_t region;
    uint32_t half;
    size_t next = ~(size_t)0;  // the slot after the previous call's
    const uint32_t* e = nullptr;  // this window's ends
    size_t w = 0;
    uint32_t pos = 0, d = 1, end_d = 0;

    __device__ __forceinline__ void seek(size_t i) {
        w = i / region;
        pos = (uint32_t)(i - w * region);
        e = ends + w * (half + 1);
        uint32_t lo = 1, hi = half;  // the first d in [1, half] with ends[d] > pos, or half
        while (lo < hi) {
            const uint32_t mid = (lo + hi) / 2;
            if (e[mid] > pos) hi = mid;
            else lo = mid + 1;
        }
        d = lo;
        end_d = e[d];
    }

    __device__ __forceinline__ uint32_t operator()(size_t i) {
        if (i != next) {
            seek(i);
        } else if (++pos == region) {
            seek(i);
        } else {
            while (end_d <= pos && d < half) end_d = e[++d];
        }
        next = i + 1;
        return pos < e[half] ? (uint32_t)w * half + d - 1 : NO_KEY;
    }
};

// Runs of equal keys within chunk t = [t * cap, (t + 1) * cap) of a key-sorted array (NO_KEY
// slots skipped; key(i) gives slot i's key, asked in increasing order after key(lo - 1)). A run that continues the previous chunk's last key goes to the chunk's
// carry slot; every other run belongs to the chunk that holds the key's first element and
// is combined into buckets[key] by `store`. add(acc, i) adds element i. Generic over the
// curve's field F (fq_t for G1, fq2_t for G2).
template <class F, class Keys, class Add, class Store>
__device__ __forceinline__ void bucket_runs(Keys key, size_t len, uint32_t cap, xyzz_t<F>* carry_vals,
                                            uint32_t* carry_keys, Add add, Store store) {
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t lo = t * cap;
    if (lo >= len) return;
    const size_t hi = min(lo + cap, len);
    const uint32_t prev = lo > 0 ? key(lo - 1) : NO_KEY;
    uint32_t carry_key = NO_KEY;
    uint32_t cur = NO_KEY;
    size_t start = lo;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    auto emit = [&]() {
        if (start == lo && prev == cur) {
            carry_vals[t] = acc;
            carry_key = cur;
        } else {
            store(cur, acc);
        }
    };
    // One flat loop, so that the threads of a warp stay converged on the additions while
    // their runs end at different places.
    for (size_t i = lo; i < hi; i++) {
        const uint32_t k = key(i);
        if (k != cur) {
            if (cur != NO_KEY) emit();
            cur = k;
            start = i;
            acc = xyzz_t<F>::inf();
        }
        if (k != NO_KEY) add(acc, i);
    }
    if (cur != NO_KEY) emit();
    carry_keys[t] = carry_key;
}

// Where an entry's point lies: multiple j = v >> shift of point i = v & (2^shift - 1) (sign
// bit cleared) is points[k] for j = 0 and mults[(j - 1) * mult_stride + k] after, with
// k = idx[i] when an index array is given (bases resident on the device, selected by index),
// else k = i. Both arrays start at the chunk's first point when there is no index array.
template <class F>
struct entry_points {
    const affine_t<F>* points;
    const uint32_t* idx;
    const affine_t<F>* mults;
    size_t mult_stride;
    uint32_t shift;

    __device__ __forceinline__ affine_t<F> operator()(uint32_t v) const {
        const uint32_t u = v & 0x7fffffffu;
        const uint32_t j = u >> shift, i = u & ((1u << shift) - 1);
        const uint32_t k = idx ? idx[i] : i;
        affine_t<F> p = j == 0 ? points[k] : mults[(size_t)(j - 1) * mult_stride + k];
        return (v & 0x80000000u) ? p.neg() : p;
    }
};

// Level 1: entries -> buckets (each bucket written once) and carries. Entry v names its point
// through `at` (entry_points); a null entry array names slot i's own point (at.points[i]:
// the batch-affine levels' output, msm_affine.cuh). A null key array: the keys are derived
// from the scatter's cursors `ends` (regions of `region` slots, `half` buckets per bucket
// set; derived_keys).
template <class F>
__device__ __forceinline__ void msm_bucket_runs_affine(entry_points<F> at, const uint32_t* entries,
                                                       const uint32_t* keys, size_t len, uint32_t cap,
                                                       xyzz_t<F>* buckets, xyzz_t<F>* carry_vals,
                                                       uint32_t* carry_keys, const uint32_t* ends, size_t region,
                                                       uint32_t half) {
    auto add = [&](xyzz_t<F>& acc, size_t i) {
        if (entries) acc.add_affine(at(entries[i]));
        else acc.add_affine(at.points[i]);
    };
    auto store = [&](uint32_t k, const xyzz_t<F>& acc) { buckets[k] = acc; };
    if (keys != nullptr) bucket_runs<F>(stored_keys{keys}, len, cap, carry_vals, carry_keys, add, store);
    else bucket_runs<F>(derived_keys{ends, region, half}, len, cap, carry_vals, carry_keys, add, store);
}

// Later levels: carries -> added into buckets (one owner per bucket per level) and carries.
template <class F>
__device__ __forceinline__ void msm_bucket_runs_xyzz(const xyzz_t<F>* vals, const uint32_t* keys, size_t len,
                                                     uint32_t cap, xyzz_t<F>* buckets, xyzz_t<F>* carry_vals,
                                                     uint32_t* carry_keys) {
    bucket_runs<F>(stored_keys{keys}, len, cap, carry_vals, carry_keys,
        [&](xyzz_t<F>& acc, size_t i) { acc.add(vals[i]); },
        [&](uint32_t k, const xyzz_t<F>& acc) { buckets[k].add(acc); });
}

// Thread (w, seg): sum over buckets b in [lo, lo + len) of b * B_b. The segments of one
// window (bucket set) are contiguous in `out`, ready for the per-set tree reduction.
template <class F>
__device__ __forceinline__ void msm_window_segments(const xyzz_t<F>* buckets, xyzz_t<F>* out,
                                                    uint32_t c, uint32_t windows, uint32_t segments) {
    const uint32_t half = 1u << (c - 1);
    const uint32_t len = half / segments;
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= windows * segments) return;
    const uint32_t w = t / segments, seg = t % segments;
    const uint32_t lo = 1 + seg * len;  // bucket number of the first bucket
    const xyzz_t<F>* bk = buckets + w * half + (lo - 1);
    xyzz_t<F> running = xyzz_t<F>::inf(), acc = xyzz_t<F>::inf();
    for (int k = (int)len - 1; k >= 0; k--) {
        running.add(bk[k]);
        acc.add(running);
    }
    // acc = sum (b - lo + 1) B_b; add (lo - 1) * running by double-and-add
    uint32_t m = lo - 1;
    xyzz_t<F> mul = xyzz_t<F>::inf();
    for (int bit = 31; bit >= 0; bit--) {
        mul = mul.dbl();
        if ((m >> bit) & 1) mul.add(running);
    }
    acc.add(mul);
    out[t] = acc;
}

// Partial sums of points: thread g adds chunk positions [g * chunk, (g + 1) * chunk) whose
// class is 1 (or all of them when cls is null); position i is points[idx[i]] when an index
// array is given, else points[i].
template <class F>
__device__ __forceinline__ void sum_partials(const affine_t<F>* points, const uint32_t* idx, const uint8_t* cls,
                                             xyzz_t<F>* out, uint32_t n, uint32_t chunk, uint32_t threads) {
    uint32_t g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= threads) return;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    uint32_t end = min((g + 1) * chunk, n);
    for (uint32_t i = g * chunk; i < end; i++)
        if (cls == nullptr || cls[i] == 1) acc.add_affine(points[idx ? idx[i] : i]);
    out[g] = acc;
}

template <class F>
__device__ __forceinline__ void xyzz_sum_partials(const xyzz_t<F>* in, xyzz_t<F>* out, uint32_t n,
                                                  uint32_t chunk, uint32_t threads) {
    uint32_t g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= threads) return;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    uint32_t end = min((g + 1) * chunk, n);
    for (uint32_t i = g * chunk; i < end; i++) acc.add(in[i]);
    out[g] = acc;
}

template <class F>
__device__ __forceinline__ void xyzz_to_jacobian(const xyzz_t<F>* in, jacobian_t<F>* out, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i].to_jacobian();
}

} // namespace cuzk
