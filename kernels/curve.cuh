// Short Weierstrass curve y^2 = x^3 + b (a = 0) over any field type F (fq_t for G1, fq2_t for
// G2). Points are accumulated in XYZZ coordinates (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2), which
// give the cheapest mixed addition; infinity is ZZ = 0. Affine inputs use blst's convention:
// (0, 0) is infinity. Results leave the device in Jacobian form, the layout of blst_p1/p2.
// Formulas: add-2008-s, madd-2008-s, dbl-2008-s-1, mdbl-2008-s-1 (hyperelliptic.org EFD).
#pragma once

namespace cuzk {

template <class F>
struct affine_t {
    F x, y;
    __device__ __forceinline__ bool is_inf() const { return x.is_zero() && y.is_zero(); }
    __device__ __forceinline__ affine_t neg() const { return {x, -y}; }
};

template <class F>
struct jacobian_t {
    F x, y, z;  // x = X/Z^2, y = Y/Z^3; Z = 0 is infinity (blst)
};

template <class F>
struct xyzz_t {
    F X, Y, ZZ, ZZZ;

    __device__ __forceinline__ static xyzz_t inf() { return {F::zero(), F::zero(), F::zero(), F::zero()}; }
    __device__ __forceinline__ bool is_inf() const { return ZZ.is_zero(); }
    __device__ __forceinline__ static xyzz_t from_affine(const affine_t<F>& a) {
        if (a.is_inf()) return inf();
        return {a.x, a.y, F::one(), F::one()};
    }
    __device__ __forceinline__ xyzz_t neg() const { return {X, -Y, ZZ, ZZZ}; }

    // 2 * (x, y) for an affine point (mdbl-2008-s-1).
    __device__ __forceinline__ static xyzz_t dbl_affine(const F& x, const F& y) {
        F U = y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = x * V;
        F xx = x.sqr();
        F M = xx.dbl() + xx;
        F X3 = M.sqr() - S.dbl();
        F Y3 = M * (S - X3) - W * y;
        return {X3, Y3, V, W};
    }

    // 2 * this (dbl-2008-s-1).
    __device__ __forceinline__ xyzz_t dbl() const {
        if (is_inf()) return *this;
        F U = Y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = X * V;
        F xx = X.sqr();
        F M = xx.dbl() + xx;
        F X3 = M.sqr() - S.dbl();
        F Y3 = M * (S - X3) - W * Y;
        return {X3, Y3, V * ZZ, W * ZZZ};
    }

    // this + affine (madd-2008-s); handles infinity on either side and P == +-Q.
    __device__ __forceinline__ void add_affine(const affine_t<F>& q) {
        if (q.is_inf()) return;
        if (is_inf()) { *this = from_affine(q); return; }
        F U2 = q.x * ZZ;
        F S2 = q.y * ZZZ;
        F P = U2 - X;
        F R = S2 - Y;
        if (P.is_zero()) {
            if (R.is_zero()) *this = dbl_affine(q.x, q.y);
            else *this = inf();
            return;
        }
        F PP = P.sqr();
        F PPP = P * PP;
        F Q = X * PP;
        F X3 = R.sqr() - PPP - Q.dbl();
        F Y3 = R * (Q - X3) - Y * PPP;
        X = X3;
        Y = Y3;
        ZZ = ZZ * PP;
        ZZZ = ZZZ * PPP;
    }

    // this + q, both XYZZ (add-2008-s).
    __device__ __forceinline__ void add(const xyzz_t& q) {
        if (q.is_inf()) return;
        if (is_inf()) { *this = q; return; }
        F U1 = X * q.ZZ;
        F U2 = q.X * ZZ;
        F S1 = Y * q.ZZZ;
        F S2 = q.Y * ZZZ;
        F P = U2 - U1;
        F R = S2 - S1;
        if (P.is_zero()) {
            if (R.is_zero()) *this = dbl();
            else *this = inf();
            return;
        }
        F PP = P.sqr();
        F PPP = P * PP;
        F Q = U1 * PP;
        F X3 = R.sqr() - PPP - Q.dbl();
        F Y3 = R * (Q - X3) - S1 * PPP;
        X = X3;
        Y = Y3;
        ZZ = ZZ * q.ZZ * PP;
        ZZZ = ZZZ * q.ZZZ * PPP;
    }

    // Jacobian with Z = ZZZ: Z^2 = ZZZ^2 = ZZ^3, so X_J = X * ZZ^2 and Y_J = Y * ZZZ^2.
    __device__ __forceinline__ jacobian_t<F> to_jacobian() const {
        if (is_inf()) return {F::zero(), F::zero(), F::zero()};
        return {X * ZZ.sqr(), Y * ZZZ.sqr(), ZZZ};
    }
};

} // namespace cuzk
