// The batch-affine bucket levels (msm_affine.cuh) run on the host (CUZK_HOST_BUILD) against
// plain sequential sums: random buckets over multiples of one point, with infinity, equal
// points (doublings) and opposite points (cancellations) among the entries, through 1 to 9
// levels, 1 to 16 slots per thread and 1 to 3 windows per group, then the XYZZ bucket phase
// over what is left (msm.cuh, null entries). Exits 1 when a bucket differs.
//
//   g++ -O2 -std=c++17 -DCUZK_HOST_BUILD -I kernels kernels/host/batch_affine_check.cpp
//
// crates/cuzk-gpu/tests/kernels_on_host.rs builds and runs it. The host orchestration mirrors
// msm.rs's `batch_affine` (which drives the same kernels on the GPU); the GPU test
// `batch_affine_levels_match_cpu` checks that one against the CPU backend.
#include "../msm_affine.cuh"
#include "msm_phase.h"

#include <cstdio>
#include <random>
#include <vector>

using namespace cuzk;
typedef g1_affine_t A;
typedef g1_xyzz_t X;

static std::mt19937_64 rng(7);

static fq_t random_fq() {
    fq_t r;
    for (int i = 0; i < 12; i++) r.v[i] = (uint32_t)rng();
    r.v[11] &= 0x0fffffff;  // below 2^380 < p
    return r * fq_t::one();
}

static A to_affine(const X& p) {
    if (p.is_inf()) return {fq_t::zero(), fq_t::zero()};
    return {p.X * mont_inverse(p.ZZ), p.Y * mont_inverse(p.ZZZ)};
}

static bool same_point(const X& a, const X& b) {
    if (a.is_inf() || b.is_inf()) return a.is_inf() && b.is_inf();
    return a.X * b.ZZ == b.X * a.ZZ && a.Y * b.ZZZ == b.Y * a.ZZZ;
}

// Keys derived from the cursors (msm.cuh's derived_keys, used when msm_scatter stores none)
// against the stored keys: every slot asked on its own and all of them in order, then the
// XYZZ bucket phase over the entries with derived keys, in chunks that straddle windows.
// Returns the number of mismatches.
static int check_derived(const std::vector<A>& bases, const std::vector<uint32_t>& entries,
                         const std::vector<uint32_t>& keys, const std::vector<uint32_t>& cursor, uint32_t m,
                         uint32_t half, const std::vector<X>& want) {
    int bad = 0;
    derived_keys walk{cursor.data(), m, half};
    for (uint64_t i = 0; i < keys.size(); i++) {
        derived_keys one{cursor.data(), m, half};
        bad += one(i) != keys[i];
        bad += walk(i) != keys[i];
    }
    for (uint32_t cap : {3u, 7u, 32u}) {
        std::vector<X> buckets(want.size(), X::inf());
        xyzz_phase<fq_t>(entry_points<fq_t>{bases.data(), nullptr, nullptr, 0, 31}, entries.data(), nullptr, cursor.data(), m, half, keys.size(), cap, buckets);
        for (size_t k = 0; k < want.size(); k++) bad += !same_point(want[k], buckets[k]);
    }
    return bad;
}

static int derived_failures = 0;

// One configuration; returns the number of buckets that differ.
static int check(uint32_t levels, uint32_t G, uint32_t g) {
    const uint32_t c = 5, half = 1u << (c - 1), words = half + 1, windows = 3, nb = 300, m = 700;
    // Bases: multiples of a point (all on one curve, whatever its b), infinity, repeats.
    const A g0{random_fq(), random_fq()};
    std::vector<A> bases(nb);
    X acc = X::inf();
    for (uint32_t i = 0; i < nb; i++) {
        acc.add_affine(g0);
        bases[i] = to_affine(acc);
    }
    bases[5] = {fq_t::zero(), fq_t::zero()};
    bases[17] = bases[16];
    bases[40] = bases[41].neg();
    // The sorted entries of a chunk of m slots per window, as msm_scatter leaves them.
    std::vector<uint32_t> entries(windows * m, 0), keys(windows * m, NO_KEY), cursor(windows * words, 0);
    std::vector<std::vector<uint32_t>> content(windows * half);
    for (uint32_t w = 0; w < windows; w++) {
        uint32_t total = 0;
        for (uint32_t b = 0; b < half; b++) {
            uint32_t len = b == 3 ? 0 : b == 4 ? 1 : b == 5 ? 2 : (uint32_t)(rng() % 40);
            if (w == 2 && b == 7) len = 130;
            len = std::min(len, m - total);
            auto& bucket = content[w * half + b];
            for (uint32_t q = 0; q < len; q++) {
                uint32_t v = (uint32_t)(rng() % nb) | (rng() % 5 == 0 ? 0x80000000u : 0u);
                if (b == 6 && q < 4) v = q % 2 ? (16 | 0x80000000u) : 17;  // P, -P, P, -P
                if (b == 8 && q < 2) v = 40 + q;                            // P + (-P)
                if (b == 9 && q < 2) v = 16 + q;                            // P + P
                bucket.push_back(v);
                entries[w * m + total + q] = v;
                keys[w * m + total + q] = w * half + b;
            }
            total += len;
            cursor[w * words + b + 1] = total;
        }
        // msm_scatter's cursors end as each bucket's end; bucket 0 (no digit) is empty.
    }
    std::vector<X> want(windows * half, X::inf());
    for (uint32_t k = 0; k < windows * half; k++)
        for (uint32_t v : content[k]) {
            A p = bases[v & 0x7fffffff];
            if (v >> 31) p = p.neg();
            want[k].add_affine(p);
        }

    const int derived_bad = check_derived(bases, entries, keys, cursor, m, half, want);
    if (derived_bad) std::printf("derived keys: %d mismatches\n", derived_bad);
    derived_failures += derived_bad != 0;

    std::vector<X> buckets(windows * half, X::inf());
    auto stride = [&](uint32_t k) -> uint64_t { return k == 0 ? m : (uint64_t)(m >> k) + 2 * half; };
    for (uint32_t w0 = 0; w0 < windows; w0 += g) {
        const uint32_t gg = std::min(g, windows - w0), cnt = gg * words;
        std::vector<A> pts[2] = {std::vector<A>(gg * stride(1)), std::vector<A>(gg * stride(2))};
        std::vector<uint32_t> out_keys[2] = {std::vector<uint32_t>(gg * stride(1)), std::vector<uint32_t>(gg * stride(2))};
        std::vector<uint32_t> lens[2], offs[2];
        for (int i = 0; i < 2; i++) lens[i].assign(cnt, 0), offs[i].assign(cnt, 0);
        cuzk_host_launch(cnt, 64, [&] { ba_lens0(cursor.data() + w0 * words, lens[0].data(), offs[0].data(), cnt, half); });
        const A* in_pts = nullptr;
        const uint32_t* in_keys = keys.data() + w0 * m;
        uint64_t in_stride = m;
        int cur = 0;
        for (uint32_t lv = 0; lv < levels; lv++) {
            const int li = cur, lo = 1 - cur, o = lv % 2;
            cuzk_host_launch(cnt, 64, [&] { ba_halve(lens[li].data(), lens[lo].data(), offs[lo].data(), cnt); });
            for (uint32_t i = 0; i < gg; i++) {  // msm_bucket_offsets: exclusive scan per window
                uint32_t run = 0;
                for (uint32_t d = 0; d < words; d++) {
                    const uint32_t v = offs[lo][i * words + d];
                    offs[lo][i * words + d] = run;
                    run += v;
                }
            }
            const uint64_t out_stride = stride(lv + 1), out_total = gg * out_stride, in_total = gg * in_stride;
            std::fill(out_keys[o].begin(), out_keys[o].end(), NO_KEY);
            std::vector<uint32_t> src(out_total, NO_KEY);
            ba_level L{};
            L.bases = bases.data();
            L.entries = entries.data() + w0 * m;
            L.in_pts = in_pts;
            L.in_keys = in_keys;
            L.in_lens = lens[li].data();
            L.in_offs = offs[li].data();
            L.out_pts = pts[o].data();
            L.out_keys = out_keys[o].data();
            L.out_src = src.data();
            L.out_lens = lens[lo].data();
            L.out_offs = offs[lo].data();
            L.in_stride = in_stride;
            L.out_stride = out_stride;
            L.w0 = w0;
            L.half = half;
            cuzk_host_launch(in_total, 64, [&] { ba_keys(L, in_total); });
            const uint64_t T = (out_total + G - 1) / G;
            std::vector<fq_t> prefix(out_total), totals(T);
            cuzk_host_launch(T, 64, [&] { ba_prefix(L, out_total, G, prefix.data(), totals.data()); });
            // The group products inverted through one more level of groups, as invert_batch.
            const uint32_t G2 = 4;
            const uint64_t T2 = (T + G2 - 1) / G2;
            std::vector<fq_t> prefix2(T), totals2(T2);
            cuzk_host_launch(T2, 64, [&] { fq_group_prefix(totals.data(), T, G2, prefix2.data(), totals2.data()); });
            cuzk_host_launch(T2, 64, [&] { fq_invert_each(totals2.data(), T2); });
            cuzk_host_launch(T2, 64, [&] { fq_group_backprop(totals.data(), T, G2, prefix2.data(), totals2.data()); });
            cuzk_host_launch(T, 64, [&] { ba_apply(L, out_total, G, prefix.data(), totals.data()); });
            in_pts = pts[o].data();
            in_keys = out_keys[o].data();
            in_stride = out_stride;
            cur = lo;
        }
        // The XYZZ bucket phase over what the levels left (null entries), carries folded.
        xyzz_phase<fq_t>(entry_points<fq_t>{in_pts, nullptr, nullptr, 0, 31}, nullptr, in_keys, nullptr, 0, half, gg * in_stride, 4, buckets);
    }
    int bad = 0;
    for (uint32_t k = 0; k < windows * half; k++) bad += !same_point(want[k], buckets[k]);
    return bad;
}

int main() {
    const uint32_t configs[][3] = {{1, 3, 1}, {2, 1, 3}, {4, 3, 2}, {6, 5, 1}, {3, 16, 2}, {9, 1, 3}};
    int failed = 0;
    for (const auto& cfg : configs) {
        const int bad = check(cfg[0], cfg[1], cfg[2]);
        std::printf("levels %u, %u slots per thread, %u windows per group: %d of 48 buckets differ\n", cfg[0], cfg[1],
                    cfg[2], bad);
        failed += bad != 0;
    }
    std::printf("derived keys: %s in %zu configurations\n", derived_failures ? "MISMATCHES" : "equal to the stored keys",
                sizeof(configs) / sizeof(configs[0]));
    return failed || derived_failures ? 1 : 0;
}
