/* Helpers of the lane-parallel (SIMD) kernels, private to src/kernels:
 * MPM_LANES independent problems stored as arrays [..][MPM_LANES], with
 * sqrt, ln and exp on the lanes written so that the compiler vectorizes
 * them (libm's calls are scalar).  Used by eig.c (Jacobi), constitutive.c
 * (Drucker-Prager) and snow.c (the snow update). */
#ifndef MPM_KERNELS_LANES_H
#define MPM_KERNELS_LANES_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <mpm/kernels.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

_Static_assert(MPM_LANES % 8 == 0, "lanes_sqrt() takes the lanes 8, 4 or 2 at a time");

/* A loop over the lanes.  "unroll 1" keeps GCC from unrolling the short
 * loop completely before its loop vectorizer runs (the unrolled statements
 * are then often left scalar). */
#define FOR_LANES(l) _Pragma("GCC unroll 1") for (int l = 0; l < MPM_LANES; l++)

/* y = sqrt(x) on the lanes.  Explicit SIMD: GCC does not vectorize sqrt()
 * under -fmath-errno (the default), and scalar square roots with their
 * errno checks cost as much as the rest of the rotation. */
static inline void lanes_sqrt(const double *x, double *y)
{
#if defined(__AVX512F__)
  for (int l = 0; l < MPM_LANES; l += 8) _mm512_storeu_pd(y + l, _mm512_sqrt_pd(_mm512_loadu_pd(x + l)));
#elif defined(__AVX__)
  for (int l = 0; l < MPM_LANES; l += 4) _mm256_storeu_pd(y + l, _mm256_sqrt_pd(_mm256_loadu_pd(x + l)));
#elif defined(__SSE2__)
  for (int l = 0; l < MPM_LANES; l += 2) _mm_storeu_pd(y + l, _mm_sqrt_pd(_mm_loadu_pd(x + l)));
#else
  for (int l = 0; l < MPM_LANES; l++) y[l] = sqrt(x[l]);
#endif
}

/* ln 2 split so that k ln2_hi is exact for |k| < 2^29: ln2_hi is ln 2
 * rounded to single precision, ln2_lo the rest (Cody & Waite reduction). */
#define MPM_LN2 0.6931471805599453094172321214581766 /* ln 2 */
static const double ln2_hi = 0.693145751953125, ln2_lo = 1.4286068203094172321214581766e-6; /* ln2 - ln2_hi, from the digits of ln 2 */
/* 1/j for the series below (multiplications instead of divisions) */
static const double inv[24] = {0, 1.0 / 1, 1.0 / 2, 1.0 / 3, 1.0 / 4, 1.0 / 5, 1.0 / 6, 1.0 / 7, 1.0 / 8, 1.0 / 9, 1.0 / 10, 1.0 / 11,
                               1.0 / 12, 1.0 / 13, 1.0 / 14, 1.0 / 15, 1.0 / 16, 1.0 / 17, 1.0 / 18, 1.0 / 19, 1.0 / 20, 1.0 / 21, 1.0 / 22, 1.0 / 23};

/* y = ln(x) on the lanes, written so the compiler vectorizes it (libm's log()
 * is a scalar call).  x = 2^k m with m in [sqrt(2)/2, sqrt(2)), read from the
 * bits; with s = (m - 1)/(m + 1), |s| <= 0.172,
 *   ln m = 2 atanh(s) = 2 s (1 + s^2/3 + s^4/5 + ... + s^22/23),
 * whose first omitted term is below 1e-18 relative.  Lanes that are not
 * positive normal numbers go through log(). */
static inline void lanes_log(const double *x, double *y)
{
  int special = 0;
  FOR_LANES(l)
  {
    uint64_t u;
    double   m;
    memcpy(&u, &x[l], sizeof u);
    special |= u - 0x0010000000000000ULL >= 0x7fe0000000000000ULL; /* zero, subnormal, negative, inf or nan */
    /* shift the exponent by that of sqrt(2)/2 (0x3fe6a09e...) so that the
     * mantissa rebuilt below lies in [sqrt(2)/2, sqrt(2)) */
    u += 0x3ff0000000000000ULL - 0x3fe6a09e00000000ULL;
    const int k = (int)(u >> 52) - 0x3ff;
    u           = (u & 0x000fffffffffffffULL) + 0x3fe6a09e00000000ULL;
    memcpy(&m, &u, sizeof m);
    const double sv = (m - 1.0) / (m + 1.0), z = sv * sv;
    double       p = inv[23];
    for (int j = 21; j >= 1; j -= 2) p = inv[j] + z * p; /* 1 + z/3 + z^2/5 + ... */
    const double dk = k;
    y[l]            = dk * ln2_hi + (2.0 * sv * p + dk * ln2_lo);
  }
  if (special)
    for (int l = 0; l < MPM_LANES; l++) {
      uint64_t u;
      memcpy(&u, &x[l], sizeof u);
      if (u - 0x0010000000000000ULL >= 0x7fe0000000000000ULL) y[l] = log(x[l]);
    }
}

/* y = exp(x) on the lanes, vectorizable.  x = k ln 2 + r with k the nearest
 * integer to x/ln 2 and |r| <= ln(2)/2; exp(r) by its Taylor polynomial of
 * degree 13 (first omitted term below 5e-18), times 2^k built from its bits.
 * Lanes with |x| > 700 (or nan) go through exp(). */
static inline void lanes_exp(const double *x, double *y)
{
  int special = 0;
  FOR_LANES(l)
  {
    const int    ok = fabs(x[l]) <= 700.0;
    const double xl = ok ? x[l] : 0.0; /* keeps 2^k below in range */
    special |= !ok;
    /* x/ln2 rounded to the nearest integer by adding 1.5 2^52 (trunc() or an
     * integer conversion would not vectorize): k lands in the low bits of
     * t's mantissa, and 2^k is built from them */
    const double t = xl * (1.0 / MPM_LN2) + 0x1.8p52, kd = t - 0x1.8p52;
    const double r = (xl - kd * ln2_hi) - kd * ln2_lo;
    double       p = 1.0;
    for (int j = 13; j >= 1; j--) p = 1.0 + r * p * inv[j]; /* 1 + r (1 + r/2 (1 + r/3 (...))) */
    uint64_t bits;
    double   scale;
    memcpy(&bits, &t, sizeof bits);
    bits = (bits - 0x4338000000000000ULL + 0x3ff) << 52;
    memcpy(&scale, &bits, sizeof scale);
    y[l] = p * scale;
  }
  if (special)
    for (int l = 0; l < MPM_LANES; l++)
      if (!(fabs(x[l]) <= 700.0)) y[l] = exp(x[l]);
}

/* The symmetric 3x3 entries (00, 11, 22, 01, 02, 12): row I[m], column J[m],
 * and the entry m of (i, j). */
static const int SymI[6] = {0, 1, 2, 0, 0, 1}, SymJ[6] = {0, 1, 2, 1, 2, 2};
static const int SymM[3][3] = {{0, 3, 4}, {3, 1, 5}, {4, 5, 2}};

/* F_E <- U diag(e) U^T F_E where plastic[l] (K28, as fe_project()) */
static inline void lanes_flow(const int *plastic, const double U[9][MPM_LANES], const double e[3][MPM_LANES], double F[9][MPM_LANES])
{
  FOR_LANES(l)
  {
    double S[6];
    for (int m = 0; m < 6; m++) {
      double t = 0;
      for (int k = 0; k < 3; k++) t += U[3 * SymI[m] + k][l] * e[k][l] * U[3 * SymJ[m] + k][l];
      S[m] = t;
    }
    double G[9];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        double t = 0;
        for (int k = 0; k < 3; k++) t += S[SymM[i][k]] * F[3 * k + j][l];
        G[3 * i + j] = t;
      }
    for (int k = 0; k < 9; k++) F[k][l] = plastic[l] ? G[k] : F[k][l];
  }
}

/* The lanes' F_E from nl particles (9 values each); unused lanes hold an
 * undeformed particle (the identity). */
static inline void lanes_load_F(int nl, const double *Fe, double F[9][MPM_LANES])
{
  for (int l = 0; l < nl; l++)
    for (int k = 0; k < 9; k++) F[k][l] = Fe[9 * l + k];
  for (int l = nl; l < MPM_LANES; l++)
    for (int k = 0; k < 9; k++) F[k][l] = (k % 4 == 0);
}

/* b = F F^T, the symmetric entries (00, 11, 22, 01, 02, 12). */
static inline void lanes_ffT(const double F[9][MPM_LANES], double A[6][MPM_LANES])
{
  FOR_LANES(l)
  {
    A[0][l] = F[0][l] * F[0][l] + F[1][l] * F[1][l] + F[2][l] * F[2][l];
    A[1][l] = F[3][l] * F[3][l] + F[4][l] * F[4][l] + F[5][l] * F[5][l];
    A[2][l] = F[6][l] * F[6][l] + F[7][l] * F[7][l] + F[8][l] * F[8][l];
    A[3][l] = F[0][l] * F[3][l] + F[1][l] * F[4][l] + F[2][l] * F[5][l];
    A[4][l] = F[0][l] * F[6][l] + F[1][l] * F[7][l] + F[2][l] * F[8][l];
    A[5][l] = F[3][l] * F[6][l] + F[4][l] * F[7][l] + F[5][l] * F[8][l];
  }
}

/* T = U diag(g) U^T on the lanes, the symmetric entries. */
static inline void lanes_sym_from_eig(const double U[9][MPM_LANES], const double g[3][MPM_LANES], double T[6][MPM_LANES])
{
  FOR_LANES(l)
  {
    for (int m = 0; m < 6; m++) {
      double t = 0;
      for (int k = 0; k < 3; k++) t += U[3 * SymI[m] + k][l] * g[k][l] * U[3 * SymJ[m] + k][l];
      T[m][l] = t;
    }
  }
}

/* The symmetric lanes T of nl particles to full 3x3 matrices (tau). */
static inline void lanes_store_sym(int nl, const double T[6][MPM_LANES], double *tau)
{
  for (int l = 0; l < nl; l++) {
    double *t = tau + 9 * l;
    t[0]      = T[0][l];
    t[4]      = T[1][l];
    t[8]      = T[2][l];
    t[1] = t[3] = T[3][l];
    t[2] = t[6] = T[4][l];
    t[5] = t[7] = T[5][l];
  }
}

#endif
