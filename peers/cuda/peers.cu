// cuzk-peers: a thin C interface over sppark's BLS12-381 G1 Pippenger MSM and Fr NTT, for the
// bench in src/main.rs. Written for this project against sppark's public headers (the crate
// is a dependency; build.rs puts its header root on the include path). Nothing here is
// tuned: the point is to call sppark the way its own users do and time it.
//
// Memory layouts shared with Rust (checked by the static_asserts below): sppark's host fr_t
// and fp_t are blst's Montgomery limbs, so blstrs' Scalar and G1Affine are passed as they
// are, and the Jacobian result is blst's blst_p1 (X, Y, Z, Montgomery, Z = 0 at infinity).

#include <cstdint>
#include <cstdio>
#include <cstring>

#include <ff/bls12-381.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

// sppark's msm/sort.cuh defines a plain (non-template) kernel named `sort`, which any other
// copy of sppark's kernels in the binary would define too (supraseal-c2's did, while it ran
// in this process): ours is renamed. The standard headers sppark pulls in come first, so the
// macro touches sppark's code only.
#include <algorithm>
#include <atomic>
#include <cassert>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>
#include <cuda.h>
#include <cooperative_groups.h>
#define sort peers_msm_sort
#include <msm/pippenger.cuh>
#undef sort
#include <ntt/ntt.cuh>

static_assert(sizeof(fr_t) == 32, "fr_t is blst_fr");
static_assert(sizeof(affine_t) == 96, "affine_t is blst_p1_affine");
static_assert(sizeof(point_t) == 144, "point_t is blst_p1");

typedef msm_t<bucket_t, point_t, affine_t, scalar_t> peers_msm;

static RustError::by_value from_cuda(const cuda_error& e)
{
    return RustError{e.code(), e.what()};
}

extern "C" {

// Name and SM count of the device sppark selected (device 0).
RustError::by_value peers_gpu_info(char* name, size_t len, int* sm_count)
{
    try {
        const gpu_t& gpu = select_gpu(0);
        std::snprintf(name, len, "%s", gpu.props().name);
        *sm_count = gpu.sm_count();
    } catch (const cuda_error& e) {
        return from_cuda(e);
    }
    return RustError{cudaSuccess};
}

// The driver's free and total device memory (cudaMemGetInfo on the current device): printed
// before supraseal-c2's calls, which do not report a failed allocation inside their MSMs.
RustError::by_value peers_mem_info(size_t* free_bytes, size_t* total_bytes)
{
    cudaError_t e = cudaMemGetInfo(free_bytes, total_bytes);
    return RustError{e};
}

// An MSM context whose n bases are copied to device memory once and kept there; its window
// width is chosen by sppark for n points.
RustError::by_value peers_msm_open(void** ctx, const affine_t* points, size_t n)
{
    *ctx = nullptr;
    try {
        *ctx = new peers_msm(points, n);
    } catch (const cuda_error& e) {
        return from_cuda(e);
    }
    return RustError{cudaSuccess};
}

// sum scalars[i] * bases[i] over the context's first n bases; scalars are host memory in
// Montgomery form (blstrs' Scalar), uploaded by sppark as it goes.
RustError::by_value peers_msm_run(void* ctx, const scalar_t* scalars, size_t n, point_t* out)
{
    auto* msm = static_cast<peers_msm*>(ctx);
    const affine_t* resident = nullptr;
    RustError r = msm->invoke(*out, resident, n, scalars, true);
    return r;
}

void peers_msm_close(void* ctx)
{
    delete static_cast<peers_msm*>(ctx);
}

static NTT::Direction dir_of(int inverse)
{
    return inverse ? NTT::Direction::inverse : NTT::Direction::forward;
}

static NTT::Type type_of(int coset)
{
    return coset ? NTT::Type::coset : NTT::Type::standard;
}

// In place, host memory to host memory (sppark's NTT::Base: upload, transform, download),
// natural order in and out.
RustError::by_value peers_ntt_host(fr_t* inout, uint32_t lg_n, int inverse, int coset)
{
    const gpu_t& gpu = select_gpu(0);
    RustError r = NTT::Base(gpu, inout, lg_n, NTT::InputOutputOrder::NN, dir_of(inverse),
                            type_of(coset));
    return r;
}

// The same transform on device-resident data: inout is uploaded once and transformed once
// (the result is downloaded back into inout); then `rounds` more transforms of the resident
// buffer are timed with events on sppark's stream, kernels only, each round's time in
// each_ms[round]. (The timed rounds transform already transformed data: the cost does not depend
// on the values.)
RustError::by_value peers_ntt_resident(fr_t* inout, uint32_t lg_n, int inverse, int coset,
                                       uint32_t rounds, float* each_ms)
{
    const gpu_t& gpu = select_gpu(0);
    try {
        gpu.select();
        size_t n = (size_t)1 << lg_n;
        dev_ptr_t<fr_t> d{n};
        stream_t& s = gpu;
        s.HtoD(&d[0], inout, n);
        NTT::Base_dev_ptr(s, &d[0], lg_n, NTT::InputOutputOrder::NN, dir_of(inverse),
                          type_of(coset));
        s.DtoH(inout, &d[0], n);
        s.sync();
        cudaEvent_t t0, t1;
        CUDA_OK(cudaEventCreate(&t0));
        CUDA_OK(cudaEventCreate(&t1));
        for (uint32_t i = 0; i < rounds; i++) {
            CUDA_OK(cudaEventRecord(t0, s));
            NTT::Base_dev_ptr(s, &d[0], lg_n, NTT::InputOutputOrder::NN, dir_of(inverse),
                              type_of(coset));
            CUDA_OK(cudaEventRecord(t1, s));
            CUDA_OK(cudaEventSynchronize(t1));
            float ms = 0;
            CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
            each_ms[i] = ms;
        }
        cudaEventDestroy(t0);
        cudaEventDestroy(t1);
    } catch (const cuda_error& e) {
        gpu.sync();
        return from_cuda(e);
    }
    return RustError{cudaSuccess};
}

} // extern "C"
