// msm.cuh's XYZZ bucket phase on the host, as msm.rs's bucket_phase drives it: level 1 over
// `len` key-sorted slots (entries named through `at`, or slot i's own point when entries is
// null; keys null: derived from the cursors `ends`, regions of `region` slots), then the
// carries folded level by level, `cap` slots per thread. Shared by the host checks.
#pragma once
#include "../msm.cuh"

#include <vector>

template <class F>
static void xyzz_phase(cuzk::entry_points<F> at, const uint32_t* entries, const uint32_t* keys, const uint32_t* ends,
                       uint64_t region, uint32_t half, uint64_t len, uint32_t cap, std::vector<cuzk::xyzz_t<F>>& buckets) {
    using X = cuzk::xyzz_t<F>;
    uint64_t chunks = (len + cap - 1) / cap;
    std::vector<X> carry_vals(chunks);
    std::vector<uint32_t> carry_keys(chunks);
    cuzk_host_launch(chunks, 64, [&] {
        cuzk::msm_bucket_runs_affine<F>(at, entries, keys, len, cap, buckets.data(), carry_vals.data(), carry_keys.data(),
                                        ends, region, half);
    });
    while (chunks > 1) {
        const uint64_t level_len = chunks;
        chunks = (level_len + cap - 1) / cap;
        std::vector<X> next_vals(chunks);
        std::vector<uint32_t> next_keys(chunks);
        cuzk_host_launch(chunks, 64, [&] {
            cuzk::msm_bucket_runs_xyzz<F>(carry_vals.data(), carry_keys.data(), level_len, cap, buckets.data(),
                                          next_vals.data(), next_keys.data());
        });
        carry_vals.swap(next_vals);
        carry_keys.swap(next_keys);
    }
}
