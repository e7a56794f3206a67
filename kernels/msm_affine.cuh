// Batch-affine bucket accumulation for G1 (the H MSM's bucket phase, msm.rs `batch_levels`).
//
// The bucket phase of msm.cuh adds each sorted entry into its bucket with a mixed XYZZ +
// affine addition (8 products, 2 squares). Here the entries of each bucket are instead summed
// pairwise in affine coordinates, level by level: level k + 1 holds, for each bucket, the
// sums of the pairs (2i, 2i + 1) of that bucket's level-k points (an odd last point is carried
// as it is). An affine sum needs one inversion (of x2 - x1, or 2 y1 for a doubling); the
// inversions of a whole level are batched (Montgomery's trick, in groups of G per thread and
// then over the groups' products, see the fq_group_* kernels), so that a sum costs about six
// products instead of ten. After the last level the few points left per bucket go through
// msm.cuh's bucket phase as before (an entry array of null: slot i is point i).
//
// Geometry. Windows are processed in groups of g (w0 .. w0 + g - 1). At every level the
// slots of window i of the group form a region of `stride` slots (level 0: the sorted entry
// array's region of that window; later levels: regions of a fixed bound, unused slots keyed
// NO_KEY). Per window, lens[d] and offs[d] (d = 1 .. half, index i * (half + 1) + d) give
// bucket d's slot count and first slot within the region. Keys are the global bucket numbers
// of msm_scatter (w * half + d - 1). Every output is fully reduced, as everywhere else.
#pragma once
#include "msm.cuh"

namespace cuzk {

// a^(p - 2) = a^-1 for a != 0 (Fermat); 0 for 0.
template <class P>
__device__ __forceinline__ mont_t<P> mont_inverse(const mont_t<P>& a) {
    uint32_t e[P::N];
    e[0] = ptx::sub_cc(P::p(0), 2);
#pragma unroll
    for (int i = 1; i < P::N; i++) e[i] = ptx::subc_cc(P::p(i), 0);
    mont_t<P> r = mont_t<P>::one();
    for (int i = P::N * 32 - 1; i >= 0; i--) {
        r = r.sqr();
        if ((e[i >> 5] >> (i & 31)) & 1) r = r * a;
    }
    return r;
}

template <class P>
__device__ __forceinline__ mont_t<P> field_inverse(const mont_t<P>& a) {
    return mont_inverse(a);
}

// (c0 + c1 u)^-1 = (c0 - c1 u) / (c0^2 + c1^2), since u^2 = -1.
template <class F>
__device__ __forceinline__ fp2_t<F> field_inverse(const fp2_t<F>& a) {
    const F t = mont_inverse(a.c0.sqr() + a.c1.sqr());
    return {a.c0 * t, -(a.c1 * t)};
}

// cnt (<= K) XYZZ points into out[0 .. cnt) in blst's affine layout, fully reduced, (0, 0) for
// infinity, with one inversion for all of them (Montgomery's trick over their ZZZ).
template <class F, int K>
__device__ __forceinline__ void store_affine(const xyzz_t<F>* pts, int cnt, affine_t<F>* out) {
    // before[j] = the product of the ZZZ before j (infinity skipped).
    F before[K];
    F prod = F::one();
    for (int j = 0; j < cnt; j++) {
        before[j] = prod;
        if (!pts[j].is_inf()) prod = prod * pts[j].ZZZ;
    }
    // inv = 1 / (the product of the ZZZ up to j), walking back.
    F inv = field_inverse(prod);
    for (int j = cnt - 1; j >= 0; j--) {
        const xyzz_t<F>& p = pts[j];
        if (p.is_inf()) {
            out[j] = {F::zero(), F::zero()};
            continue;
        }
        // ZZ = Z^2 and ZZZ = Z^3: 1/Z = ZZ / ZZZ, x = X / ZZ, y = Y / ZZZ.
        const F zzz_inv = inv * before[j];
        inv = inv * p.ZZZ;
        const F zinv = p.ZZ * zzz_inv;
        out[j] = {p.X * zinv.sqr(), p.Y * zzz_inv};
    }
}

// One level of the pairwise reduction: level-k slots (in) -> level-(k + 1) slots (out).
struct ba_level {
    const g1_affine_t* bases;  // level 0: the bases the entries name (else null)
    const uint32_t* idx;       // level 0: index array of the call, or null
    const uint32_t* entries;   // level 0: the group's first window region of the entries
    const g1_affine_t* in_pts; // levels >= 1: the previous level's points (else null)
    const uint32_t* in_keys;
    const uint32_t* in_lens;
    const uint32_t* in_offs;
    g1_affine_t* out_pts;
    uint32_t* out_keys;
    uint32_t* out_src;         // per output slot: its first input slot, bit 31 = a pair
    const uint32_t* out_lens;
    const uint32_t* out_offs;
    uint64_t in_stride;
    uint64_t out_stride;
    uint32_t w0;
    uint32_t half;
};
static_assert(sizeof(ba_level) == 120, "msm.rs BaLevel has the same 120-byte layout");

__device__ __forceinline__ g1_affine_t ba_load(const ba_level& L, uint64_t s) {
    if (L.in_pts != nullptr) return L.in_pts[s];
    const uint32_t v = L.entries[s];
    const uint32_t j = v & 0x7fffffffu;
    g1_affine_t p = L.bases[L.idx ? L.idx[j] : j];
    if (v & 0x80000000u) p = p.neg();
    return p;
}

// Output slot j: whether it holds a point, whether that point is a pair's sum, and the
// level-k slot of its first input.
struct ba_slot {
    bool valid, pair;
    uint64_t in;
};

// (ba_keys wrote out_src: a group's slots fit 31 bits.)
__device__ __forceinline__ ba_slot ba_decode(const ba_level& L, uint64_t j) {
    const uint32_t v = L.out_src[j];
    if (v == NO_KEY) return {false, false, 0};
    return {true, (v >> 31) != 0, v & 0x7fffffffu};
}

// What a + b needs: 0 = no inversion (a or b infinity, or a = -b), 1 = an addition
// (den = x2 - x1), 2 = a doubling (den = 2 y).
__device__ __forceinline__ int ba_kind(const g1_affine_t& a, const g1_affine_t& b, fq_t& den) {
    if (a.is_inf() || b.is_inf()) return 0;
    if (a.x != b.x) {
        den = b.x - a.x;
        return 1;
    }
    if (a.y == b.y && !a.y.is_zero()) {
        den = a.y.dbl();
        return 2;
    }
    return 0;
}

// Per window slot x of the group (d = x % (half + 1)): level-0 lens and offs from the
// scatter's cursors (after msm_scatter, cursor[d] is the end of bucket d, and cursor[0] = 0).
__device__ __forceinline__ void ba_lens0(const uint32_t* cursor, uint32_t* lens, uint32_t* offs, uint32_t count,
                                         uint32_t half) {
    const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= count) return;
    const bool d0 = x % (half + 1) == 0;
    lens[x] = d0 ? 0 : cursor[x] - cursor[x - 1];
    offs[x] = d0 ? 0 : cursor[x - 1];
}

// Next level's lens; offs gets the same values, for msm_bucket_offsets to scan.
__device__ __forceinline__ void ba_halve(const uint32_t* lens_in, uint32_t* lens_out, uint32_t* offs_out,
                                         uint32_t count) {
    const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= count) return;
    const uint32_t l = (lens_in[x] + 1) / 2;
    lens_out[x] = l;
    offs_out[x] = l;
}

// Keys and sources of the output slots (both set to NO_KEY beforehand): thread per input
// slot; the first of each pair names its output slot.
__device__ __forceinline__ void ba_keys(ba_level L, uint64_t in_total) {
    const uint64_t s = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= in_total) return;
    const uint32_t key = L.in_keys[s];
    if (key == NO_KEY) return;
    const uint32_t i = (uint32_t)s / (uint32_t)L.in_stride;  // a group's slots fit 31 bits
    const uint32_t r = (uint32_t)s - i * (uint32_t)L.in_stride;
    const uint32_t x = i * (L.half + 1) + (key - (L.w0 + i) * L.half + 1);
    const uint32_t pos = r - L.in_offs[x];
    if (pos & 1) return;
    const uint64_t j = (uint64_t)i * L.out_stride + L.out_offs[x] + pos / 2;
    L.out_keys[j] = key;
    L.out_src[j] = (uint32_t)s | (pos + 1 < L.in_lens[x] ? 0x80000000u : 0u);
}

// Thread t's share of `count` slots in groups of G: [lo, hi); false when it has none.
__device__ __forceinline__ bool group_range(uint64_t count, uint32_t G, uint64_t& t, uint64_t& lo, uint64_t& hi) {
    t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    lo = t * G;
    if (lo >= count) return false;
    hi = min(lo + G, count);
    return true;
}

// Thread t, output slots [t G, (t + 1) G): prefix[j] = product of the denominators of the
// thread's earlier slots; totals[t] = product of all of them (1 when none).
__device__ __forceinline__ void ba_prefix(ba_level L, uint64_t out_total, uint32_t G, fq_t* prefix, fq_t* totals) {
    uint64_t t, lo, hi;
    if (!group_range(out_total, G, t, lo, hi)) return;
    fq_t acc = fq_t::one();
    for (uint64_t j = lo; j < hi; j++) {
        const ba_slot s = ba_decode(L, j);
        if (!s.valid || !s.pair) continue;
        const g1_affine_t a = ba_load(L, s.in), b = ba_load(L, s.in + 1);
        fq_t den;
        if (ba_kind(a, b, den) != 0) {
            prefix[j] = acc;
            acc = acc * den;
        }
    }
    totals[t] = acc;
}

// The level's sums, given inv_totals[t] = totals[t]^-1; walks the slots backwards so that
// each denominator's inverse is inv * prefix[j] (inv: the inverse of the product so far).
__device__ __forceinline__ void ba_apply(ba_level L, uint64_t out_total, uint32_t G, const fq_t* prefix,
                                         const fq_t* inv_totals) {
    uint64_t t, lo, hi;
    if (!group_range(out_total, G, t, lo, hi)) return;
    fq_t inv = inv_totals[t];
    for (uint64_t j = hi; j-- > lo;) {
        const ba_slot s = ba_decode(L, j);
        if (!s.valid) continue;
        const g1_affine_t a = ba_load(L, s.in);
        if (!s.pair) {
            L.out_pts[j] = a;
            continue;
        }
        const g1_affine_t b = ba_load(L, s.in + 1);
        fq_t den;
        const int kind = ba_kind(a, b, den);
        g1_affine_t r;
        if (kind == 0) {
            r = a.is_inf() ? b : b.is_inf() ? a : g1_affine_t{fq_t::zero(), fq_t::zero()};
        } else {
            const fq_t dinv = inv * prefix[j];
            inv = inv * den;
            fq_t num;
            if (kind == 1) {
                num = b.y - a.y;
            } else {
                const fq_t xx = a.x.sqr();
                num = xx.dbl() + xx;
            }
            const fq_t lam = num * dinv;
            r.x = lam.sqr() - a.x - b.x;
            r.y = lam * (a.x - r.x) - a.y;
        }
        L.out_pts[j] = r;
    }
}

// Batch inversion of an array in place, by groups of G: fq_group_prefix, then the inverses of
// the group products (recursively, or fq_invert_each), then fq_group_backprop.
__device__ __forceinline__ void fq_group_prefix(const fq_t* vals, uint64_t count, uint32_t G, fq_t* prefix,
                                                fq_t* totals) {
    uint64_t t, lo, hi;
    if (!group_range(count, G, t, lo, hi)) return;
    fq_t acc = fq_t::one();
    for (uint64_t j = lo; j < hi; j++) {
        prefix[j] = acc;
        acc = acc * vals[j];
    }
    totals[t] = acc;
}

__device__ __forceinline__ void fq_group_backprop(fq_t* vals, uint64_t count, uint32_t G, const fq_t* prefix,
                                                  const fq_t* inv_totals) {
    uint64_t t, lo, hi;
    if (!group_range(count, G, t, lo, hi)) return;
    fq_t inv = inv_totals[t];
    for (uint64_t j = hi; j-- > lo;) {
        const fq_t v = vals[j];
        vals[j] = inv * prefix[j];
        inv = inv * v;
    }
}

__device__ __forceinline__ void fq_invert_each(fq_t* vals, uint64_t count) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) vals[i] = mont_inverse(vals[i]);
}

} // namespace cuzk
