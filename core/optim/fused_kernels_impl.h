// The loops of fused_kernels.h, written once and compiled once per instruction set:
// fused_kernels.cpp includes this file (deliberately without include guard) inside a namespace per
// instruction set, after defining there:
//   VF, VD        float/double vectors (GCC vector extensions) of the set's register width
//   vsqrt(VF/VD)  lane-wise IEEE square root
// Every loop processes whole vectors and then one zero-padded partial vector, so the tail runs the
// same operations as the body (zeros add nothing to the sums; a lane computed from padding is never
// stored, and is zeroed before it could enter a sum). Nothing here may include headers: it sits
// inside a namespace.

template <class T>
struct VecOf;
template <>
struct VecOf<float> {
  using type = VF;
};
template <>
struct VecOf<double> {
  using type = VD;
};

// Lanes per vector.
template <class T>
constexpr int64_t lanes() {
  return static_cast<int64_t>(sizeof(typename VecOf<T>::type) / sizeof(T));
}

// Loads k <= lanes() elements; missing lanes are zero. With k a compile-time constant after
// inlining (the loop body) the memcpy becomes one unaligned vector load.
template <class T>
inline typename VecOf<T>::type load(const T* p, int64_t k) {
  typename VecOf<T>::type v = {};
  __builtin_memcpy(&v, p, sizeof(T) * static_cast<size_t>(k));
  return v;
}

template <class T>
inline void store(T* p, typename VecOf<T>::type v, int64_t k) {
  __builtin_memcpy(p, &v, sizeof(T) * static_cast<size_t>(k));
}

template <class T>
inline double hsum(typename VecOf<T>::type v) {
  double s = 0.0;
  for (int64_t i = 0; i < lanes<T>(); ++i) s += static_cast<double>(v[i]);
  return s;
}

// Calls body(offset, count) for every full vector (count == lanes()) and then for the tail.
template <class T, class Body>
inline void for_vectors(int64_t n, const Body& body) {
  constexpr int64_t kL = lanes<T>();
  int64_t i = 0;
  for (; i + kL <= n; i += kL) body(i, kL);
  if (i < n) body(i, n - i);
}

template <class T>
double sum_squares_impl(const T* x, int64_t n) {
  using V = typename VecOf<T>::type;
  V acc = {};
  for_vectors<T>(n, [&](int64_t i, int64_t k) {
    const V a = load(x + i, k);
    acc += a * a;
  });
  return hsum<T>(acc);
}

template <class T>
void sum_squares2_impl(const T* a, const T* b, int64_t n, double out[2]) {
  using V = typename VecOf<T>::type;
  V acc_a = {};
  V acc_b = {};
  for_vectors<T>(n, [&](int64_t i, int64_t k) {
    const V x = load(a + i, k);
    const V y = load(b + i, k);
    acc_a += x * x;
    acc_b += y * y;
  });
  out[0] = hsum<T>(acc_a);
  out[1] = hsum<T>(acc_b);
}

template <class T>
void scale_impl(T* x, int64_t n, double s) {
  const T sc = static_cast<T>(s);
  for_vectors<T>(n, [&](int64_t i, int64_t k) { store(x + i, load(x + i, k) * sc, k); });
}

template <class T, bool kNesterov, bool kBuffer>
void lars_update_loop(T* w, const T* g, T* buf, int64_t n, const kernels::LarsScalars& s) {
  using V = typename VecOf<T>::type;
  const T wd = static_cast<T>(s.weight_decay);
  const T ratio = static_cast<T>(s.ratio);
  const T mom = static_cast<T>(s.momentum);
  const T in_scale = static_cast<T>(s.in_scale);
  const T out_scale = static_cast<T>(s.out_scale);
  for_vectors<T>(n, [&](int64_t i, int64_t k) {
    const V wv = load(w + i, k);
    const V d = (load(g + i, k) + wd * wv) * ratio;
    V u = in_scale * d;
    if constexpr (kBuffer) {
      const V b = mom * load(buf + i, k) + u;
      store(buf + i, b, k);
      if constexpr (kNesterov) {
        u = u + mom * b;
      } else {
        u = b;
      }
    }
    store(w + i, wv - out_scale * u, k);
  });
}

template <class T>
void lars_update_impl(T* w, const T* g, T* buf, int64_t n, const kernels::LarsScalars& s) {
  if (buf == nullptr) return lars_update_loop<T, false, false>(w, g, buf, n, s);
  if (s.nesterov) return lars_update_loop<T, true, true>(w, g, buf, n, s);
  lars_update_loop<T, false, true>(w, g, buf, n, s);
}

// The LAMB quantities as vectors of T, converted once per call.
template <class T>
struct LambVec {
  explicit LambVec(const kernels::LambScalars& s)
      : grad_scale(static_cast<T>(s.grad_scale)),
        beta1(static_cast<T>(s.beta1)),
        beta3(static_cast<T>(s.beta3)),
        beta2(static_cast<T>(s.beta2)),
        one_minus_beta2(static_cast<T>(1.0 - s.beta2)),
        inv_bc1(static_cast<T>(s.inv_bc1)),
        inv_sqrt_bc2(static_cast<T>(s.inv_sqrt_bc2)),
        eps(static_cast<T>(s.eps)),
        weight_decay(static_cast<T>(s.weight_decay)) {}
  T grad_scale, beta1, beta3, beta2, one_minus_beta2, inv_bc1, inv_sqrt_bc2, eps, weight_decay;
};

// Moment update of one vector: m, v in place.
template <class T>
inline void lamb_moment_update(const LambVec<T>& c, typename VecOf<T>::type g,
                               typename VecOf<T>::type& m, typename VecOf<T>::type& v) {
  const auto gs = g * c.grad_scale;
  m = c.beta1 * m + c.beta3 * gs;
  v = c.beta2 * v + c.one_minus_beta2 * (gs * gs);
}

// Update direction r of one vector from the new moments: identical in lamb_moments and lamb_apply.
template <class T>
inline typename VecOf<T>::type lamb_direction(const LambVec<T>& c, typename VecOf<T>::type m,
                                              typename VecOf<T>::type v,
                                              typename VecOf<T>::type w) {
  return (m * c.inv_bc1) / (vsqrt(v) * c.inv_sqrt_bc2 + c.eps) + c.weight_decay * w;
}

template <class T>
void lamb_moments_impl(const T* g, T* m, T* v, const T* w, int64_t n, const kernels::LambScalars& s,
                       double out[2]) {
  using V = typename VecOf<T>::type;
  const LambVec<T> c(s);
  V acc_w = {};
  V acc_r = {};
  for_vectors<T>(n, [&](int64_t i, int64_t k) {
    V mv = load(m + i, k);
    V vv = load(v + i, k);
    lamb_moment_update(c, load(g + i, k), mv, vv);
    store(m + i, mv, k);
    store(v + i, vv, k);
    const V wv = load(w + i, k);
    V r = lamb_direction(c, mv, vv, wv);
    // Padded tail lanes have m = v = w = 0, so r = 0 / eps there: 0, or NaN when eps = 0. Zero them
    // (k is the constant lane count in the loop body, where this compiles away).
    for (int64_t j = k; j < lanes<T>(); ++j) r[j] = 0;
    acc_w += wv * wv;
    acc_r += r * r;
  });
  out[0] = hsum<T>(acc_w);
  out[1] = hsum<T>(acc_r);
}

template <class T>
void lamb_apply_impl(T* w, const T* m, const T* v, int64_t n, const kernels::LambScalars& s,
                     double step_size) {
  using V = typename VecOf<T>::type;
  const LambVec<T> c(s);
  const T st = static_cast<T>(step_size);
  for_vectors<T>(n, [&](int64_t i, int64_t k) {
    const V wv = load(w + i, k);
    store(w + i, wv - st * lamb_direction(c, load(m + i, k), load(v + i, k), wv), k);
  });
}

template <class T>
void lamb_fused_impl(T* w, const T* g, T* m, T* v, int64_t n, const kernels::LambScalars& s,
                     double step_size) {
  using V = typename VecOf<T>::type;
  const LambVec<T> c(s);
  const T st = static_cast<T>(step_size);
  for_vectors<T>(n, [&](int64_t i, int64_t k) {
    V mv = load(m + i, k);
    V vv = load(v + i, k);
    lamb_moment_update(c, load(g + i, k), mv, vv);
    store(m + i, mv, k);
    store(v + i, vv, k);
    const V wv = load(w + i, k);
    store(w + i, wv - st * lamb_direction(c, mv, vv, wv), k);
  });
}
