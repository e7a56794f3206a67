// A whole G1 MSM through msm.cuh's and multiples.cuh's kernels on the host (CUZK_HOST_BUILD),
// driven as msm/chunk.rs and msm/mod.rs drive them on the GPU: the multiples 2^(c j) P built
// by next_multiple, classify, the offsets (an exclusive scan per bucket set, here in plain
// C++: msm_bucket_offsets is a block scan), the scatter (all sets in one pass, or one set per
// pass), the bucket phase with derived or stored keys, the per-set reduction (window
// segments, then a sum), the scalar-one sum, and the host's Horner combination, c * per
// doublings per set.
//
// Reads from stdin: u64 n, c, per, per_set (0/1), derived (0/1); n bases (blst affine, 96
// bytes, (0, 0) infinity); n scalars (32 bytes, Montgomery form, as blstrs holds them).
// Writes: the (per - 1) * n multiples (96 bytes each), then the MSM's affine result (96
// bytes). crates/cuzk-gpu/tests/kernels_on_host.rs feeds it and compares both with blstrs.
//
//   g++ -O2 -std=c++17 -DCUZK_HOST_BUILD -I kernels kernels/host/msm_check.cpp
#include "../multiples.cuh"
#include "msm_phase.h"

#include <cstdio>
#include <vector>

using namespace cuzk;
typedef g1_affine_t A;
typedef g1_xyzz_t X;

static bool read_all(void* p, size_t bytes) { return std::fread(p, 1, bytes, stdin) == bytes; }

static A to_affine(const X& p) {
    if (p.is_inf()) return {fq_t::zero(), fq_t::zero()};
    return {p.X * mont_inverse(p.ZZ), p.Y * mont_inverse(p.ZZZ)};
}

int main() {
    uint64_t hdr[5];
    if (!read_all(hdr, sizeof hdr)) {
        std::fprintf(stderr, "msm_check: short header\n");
        return 1;
    }
    const uint64_t n = hdr[0];
    const uint32_t c = (uint32_t)hdr[1], per = (uint32_t)hdr[2];
    const bool per_set = hdr[3] != 0, derived = hdr[4] != 0;
    const uint32_t windows = (256 + c - 1) / c;
    if (n == 0 || n >= (1u << 24) || c < 2 || c > 22 || per < 1 || per > windows) {
        std::fprintf(stderr, "msm_check: bad shape n %llu c %u per %u\n", (unsigned long long)n, c, per);
        return 1;
    }
    std::vector<A> bases(n);
    std::vector<fr_t> scalars(n);
    if (!read_all(bases.data(), n * sizeof(A)) || !read_all(scalars.data(), n * sizeof(fr_t))) {
        std::fprintf(stderr, "msm_check: short input\n");
        return 1;
    }
    const uint32_t sets = (windows + per - 1) / per, half = 1u << (c - 1), stride = half + 1;
    uint32_t shift = 31;
    if (per > 1) {
        shift = 1;
        while ((1ull << shift) < n) shift++;
    }
    // The multiples: copy j from copy j - 1.
    std::vector<A> mults((per - 1) * n);
    for (uint32_t j = 1; j < per; j++) {
        const A* src = j == 1 ? bases.data() : mults.data() + (j - 2) * n;
        A* dst = mults.data() + (j - 1) * n;
        cuzk_host_launch((n + MULTIPLE_PER_THREAD - 1) / MULTIPLE_PER_THREAD, 128,
                         [&] { next_multiple<fq_t>(src, dst, n, c); });
    }
    // Classify and count, the offsets, the scatter.
    std::vector<uint8_t> cls(n);
    std::vector<uint32_t> cursor(sets * stride, 0);
    cuzk_host_launch(n, 128, [&] { msm_classify(scalars.data(), cls.data(), cursor.data(), (uint32_t)n, c, windows, per); });
    for (uint32_t g = 0; g < sets; g++) {
        uint32_t run = 0;
        for (uint32_t d = 0; d < stride; d++) {
            const uint32_t v = cursor[g * stride + d];
            cursor[g * stride + d] = run;
            run += v;
        }
    }
    const uint64_t region = (uint64_t)per * n, slots = sets * region;
    std::vector<uint32_t> entries(slots, 0), keys(slots, NO_KEY);
    uint32_t* pkeys = derived ? nullptr : keys.data();
    if (per_set) {
        for (uint32_t g = 0; g < sets; g++) {
            const uint32_t w0 = g * per, nw = std::min(per, windows - w0);
            cuzk_host_launch(n, 128, [&] {
                msm_scatter(scalars.data(), cls.data(), cursor.data() + g * stride, entries.data() + g * region,
                            pkeys ? pkeys + g * region : nullptr, (uint32_t)n, c, w0, nw, per, shift, g);
            });
        }
    } else {
        cuzk_host_launch(n, 128, [&] {
            msm_scatter(scalars.data(), cls.data(), cursor.data(), entries.data(), pkeys, (uint32_t)n, c, 0, windows, per,
                        shift, 0);
        });
    }
    // The bucket phase, chunks of 32 slots as on the GPU (RUN_CHUNK).
    std::vector<X> buckets((uint64_t)sets * half, X::inf());
    xyzz_phase<fq_t>(entry_points<fq_t>{bases.data(), nullptr, mults.data(), n, shift}, entries.data(), pkeys,
                     cursor.data(), region, half, slots, 32, buckets);
    // Each set's buckets to one sum: segments as msm/plan.rs `segments`, then added up.
    const uint32_t segs = std::min(half, std::max(half / 32, 1024u));
    std::vector<X> seg_sums((uint64_t)sets * segs);
    cuzk_host_launch((uint64_t)sets * segs, 128,
                     [&] { msm_window_segments<fq_t>(buckets.data(), seg_sums.data(), c, sets, segs); });
    // The scalar-one sum, then Horner over the sets from the top.
    std::vector<X> ones((n + 31) / 32);
    cuzk_host_launch(ones.size(), 128, [&] {
        sum_partials<fq_t>(bases.data(), nullptr, cls.data(), ones.data(), (uint32_t)n, 32, (uint32_t)ones.size());
    });
    X acc = X::inf();
    for (int g = (int)sets - 1; g >= 0; g--) {
        for (uint32_t b = 0; b < c * per; b++) acc = acc.dbl();
        for (uint32_t s = 0; s < segs; s++) acc.add(seg_sums[(uint64_t)g * segs + s]);
    }
    for (const X& o : ones) acc.add(o);
    const A out = to_affine(acc);
    std::fwrite(mults.data(), sizeof(A), mults.size(), stdout);
    std::fwrite(&out, sizeof(A), 1, stdout);
    return 0;
}
