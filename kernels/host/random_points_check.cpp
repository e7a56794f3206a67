// random.cuh's kernel run on the host (CUZK_HOST_BUILD): reads a group (1 or 2), n and
// log_run (u64 each), then the runs' starts and steps (blst affine points, as in memory)
// from stdin, and writes the n points the kernel makes to stdout.
//
//   g++ -O2 -std=c++17 -DCUZK_HOST_BUILD -I kernels kernels/host/random_points_check.cpp
//
// crates/cuzk-gpu/tests/kernels_on_host.rs feeds it cuzk_groth16::shape::run_seeds and
// compares its output with shape::random_points, byte for byte; the GPU test
// `random_points_on_the_device_equal_the_hosts` does the same on the device.
#include "../random.cuh"

#include <cstdio>
#include <vector>

using namespace cuzk;

template <class A>
static int run(uint64_t n, uint32_t log_run) {
    const uint64_t runs = (n + (1ull << log_run) - 1) >> log_run;
    std::vector<A> starts(runs), steps(runs), out(n);
    if (fread(starts.data(), sizeof(A), runs, stdin) != runs || fread(steps.data(), sizeof(A), runs, stdin) != runs) {
        fprintf(stderr, "short input: %llu runs expected\n", (unsigned long long)runs);
        return 1;
    }
    cuzk_host_launch((n + RANDOM_PER_THREAD - 1) / RANDOM_PER_THREAD, 64, [&] { random_run_points(starts.data(), steps.data(), out.data(), n, log_run); });
    return fwrite(out.data(), sizeof(A), n, stdout) == n ? 0 : 1;
}

int main() {
    uint64_t head[3];
    if (fread(head, sizeof(uint64_t), 3, stdin) != 3) return 1;
    static_assert(sizeof(g1_affine_t) == 96 && sizeof(g2_affine_t) == 192, "blst's affine layouts");
    if (head[0] == 1) return run<g1_affine_t>(head[1], (uint32_t)head[2]);
    if (head[0] == 2) return run<g2_affine_t>(head[1], (uint32_t)head[2]);
    return 1;
}
