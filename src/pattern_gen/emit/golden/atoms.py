"""Per-atom NumPy + ml_dtypes references — hand-written, independent of ptosim and of the cards.

Each function implements one atom's numerics contract (the ``numerics`` text of its card): FP32
vector math in the card's documented order, the Cube as exact products accumulated in FP32 (here:
float64, then one rounding to FP32) and one rounding to the output dtype, INT8 as exact integer
products. pattern-gen inlines this file into every instance's ``golden.py``.
"""

import ml_dtypes
import numpy as np

BF16 = ml_dtypes.bfloat16
FP8E4M3 = ml_dtypes.float8_e4m3fn
E8M0 = ml_dtypes.float8_e8m0fnu
STORAGE = {"BF16": BF16, "FP16": np.float16, "FP32": np.float32, "INT8": np.int8, "FP8E4M3": FP8E4M3}


def f32(a):
    return np.asarray(a).astype(np.float32)


def store(a, dtype):
    """One rounding of FP32 values to a storage dtype (round to nearest, ties to even)."""
    return np.asarray(a, np.float32).astype(STORAGE[dtype])


# AT-04 RoPE ----------------------------------------------------------------------------------------
def rope(x, cos, sin, *, partial=False, interleaved=False):
    """AT-04 on [M, N, D] heads with [M, R] cos/sin (R = D unless ``partial``), one angle per token
    for every head. Variant A (half-split): the last R dims as halves l, r; o1 = l*cos[:R/2] -
    r*sin[:R/2], o2 = r*cos[R/2:] + l*sin[R/2:]. Variant B (``interleaved``): pairs e = x[2i],
    o = x[2i+1]; out[2i] = e*cos[2i] - o*sin[2i], out[2i+1] = o*cos[2i+1] + e*sin[2i+1]. Each
    product and the sub/add round to FP32; the first D - R dims pass through. FP32 out."""
    xf = f32(x)
    d, r = xf.shape[-1], cos.shape[-1]
    assert partial or r == d, "without partial_rotate, cos/sin cover the whole head"
    c = f32(cos)[:, None, :]
    s = f32(sin)[:, None, :]
    part = xf[..., d - r :]
    if interleaved:
        x1, x2 = part[..., 0::2], part[..., 1::2]
        c1, c2, s1, s2 = c[..., 0::2], c[..., 1::2], s[..., 0::2], s[..., 1::2]
    else:
        h = r // 2
        x1, x2, c1, c2, s1, s2 = part[..., :h], part[..., h:], c[..., :h], c[..., h:], s[..., :h], s[..., h:]
    o1 = ((x1 * c1).astype(np.float32) - (x2 * s1).astype(np.float32)).astype(np.float32)
    o2 = ((x2 * c2).astype(np.float32) + (x1 * s2).astype(np.float32)).astype(np.float32)
    if interleaved:
        rotated = np.stack([o1, o2], axis=-1).reshape(part.shape)
    else:
        rotated = np.concatenate([o1, o2], axis=-1)
    return np.concatenate([xf[..., : d - r], rotated], axis=-1)


def rope_angles(rng, T, r):
    """[T, r] BF16 cos and sin of random angles, a different one for every element — so a half
    applied to the wrong side, or cos and sin swapped, changes the result (real RoPE tables repeat
    their first half, which would hide the first mistake)."""
    theta = rng.uniform(-np.pi, np.pi, (T, r))
    return store(np.cos(theta), "BF16"), store(np.sin(theta), "BF16")


# AT-16 Paged cache scatter ---------------------------------------------------------------------------
def cache_scatter(cache, slots, rows):
    """AT-16 with vLLM's reshape_and_cache semantics: token i's row lands in row ``slots[i]`` of the
    [blocks*block_size, width] cache (slot = block*block_size + offset); a slot of -1 skips the
    token; every other row keeps its content. Returns the updated copy."""
    out = np.array(cache, copy=True)
    rows = np.asarray(rows).reshape(len(slots), -1)
    for i, slot in enumerate(np.asarray(slots).reshape(-1)):
        if slot >= 0:
            out[slot] = rows[i]
    return out


def cache_slots(rng, T, capacity):
    """[T] INT32 slots: T distinct random slots of the cache (so a row written to a neighbour's or a
    fixed slot shows), and for T >= 3 the last token a padding token (-1, skipped)."""
    slots = rng.permutation(capacity)[:T].astype(np.int32)
    if T >= 3:
        slots[-1] = -1
    return slots


# AT-03 RMSNorm -------------------------------------------------------------------------------------
def rmsnorm(x, gamma=None, *, eps, mode="rsqrt", beta=None):
    """AT-03 in FP32 in the card's order: sum(x*x) over the last axis, * (1/D), + eps; variant A
    takes rsqrt (one rounding of 1/sqrt), variant B sqrt then 1/std (two roundings); then
    y = x * rstd [* gamma] [+ beta]. Returns (y, rstd), both FP32."""
    xf = f32(x)
    d = xf.shape[-1]
    ss = np.sum(xf * xf, axis=-1, keepdims=True, dtype=np.float32)
    var = ss * np.float32(1.0 / d) + np.float32(eps)
    if mode == "rsqrt":
        rstd = (1.0 / np.sqrt(var.astype(np.float64))).astype(np.float32)
    else:
        rstd = np.float32(1.0) / np.sqrt(var)
    y = xf * rstd
    if gamma is not None:
        y = y * f32(gamma).reshape(1, d)
    if beta is not None:
        y = y + f32(beta).reshape(1, d)
    return y.astype(np.float32), rstd.astype(np.float32)


# AT-05 / AT-06 per-token INT8 quant and dequant ----------------------------------------------------


#: the unit of an integer code's distance from a rounding boundary: the FP32 spacing of the codes'
#: top octave [64, 128). The FP32 value before the rounding carries the noise of the matmul and norm
#: that produced it, an absolute error proportional to the row's largest value (mapped to 127), not
#: to the element, so the distance is measured in that row-scale unit.
TIE_ULP = 2.0**-17


def _note_ties(ties, site, v, q, other):
    """Keep each element's distance ``v`` from its rounding boundary (row-scale units, see TIE_ULP)
    in ``ties["margin"][site]``; elements ``ties["flip"][site]`` marks take ``other``."""
    ties.setdefault("margin", {})[site] = v
    flip = (ties.get("flip") or {}).get(site)
    return q if flip is None else np.where(flip, other, q)


def quant_int8(x, ties=None, site="codes"):
    """AT-05: per row, q = rint(x * (127 / max|x|)) saturated to INT8 (ties to even); the dequant
    scale is 1 / (127 / max|x|). An all-zero row gives q = 0 and scale 0.

    ``ties`` (optional dict): the distance in TIE_ULP of each FP32 value before the rounding from
    its boundary (x.5) is kept; codes ``ties["flip"][site]`` marks round to the other neighbour."""
    xf = f32(x)
    amax = np.max(np.abs(xf), axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        qscale = np.float32(127.0) / amax
        v = np.nan_to_num(xf * qscale, nan=0.0)
        q = np.rint(v)
        scale = np.float32(1.0) / qscale
    if ties is not None:
        vd = v.astype(np.float64)
        q = _note_ties(ties, site, np.abs(vd - (np.floor(vd) + 0.5)) / TIE_ULP, q, np.where(vd >= q, q + 1, q - 1))
    q = np.clip(q, -128, 127).astype(np.int8)
    return q, scale.astype(np.float32)


# AT-08 per-token FP8 (E4M3) quant ----------------------------------------------------------------
#: the largest finite E4M3 magnitude, and AT-08's lift of a row's max|x| (2^-100)
FP8_MAX = 448.0
FP8_LIFT = 2.0**-100


def quant_fp8(x):
    """AT-08: per row, q = E4M3(clip(x * (448 / (max|x| + 2^-100)), -448, 448)), round to nearest,
    ties to even; the dequant scale is 1 / (448 / (max|x| + 2^-100)). The clip is the saturation:
    ml_dtypes' cast turns a magnitude past 464 into NaN. An all-zero row gives q = 0."""
    xf = f32(x)
    amax = np.max(np.abs(xf), axis=-1, keepdims=True) + np.float32(FP8_LIFT)
    qscale = np.float32(FP8_MAX) / amax
    v = np.clip(xf * qscale, np.float32(-FP8_MAX), np.float32(FP8_MAX))
    scale = np.float32(1.0) / qscale
    return v.astype(FP8E4M3), scale.astype(np.float32)


def store_tied(a, dtype, ties=None, site="store"):
    """``store`` of an intermediate a quantiser reads downstream: with ``ties``, each element's
    distance from its rounding boundary (the midpoint of its two neighbours in ``dtype``) in units
    of 2^-24 of its row's largest magnitude — the FP32 noise of a sum in another order, on the same
    row scale as TIE_ULP — and the marked elements stored as the other neighbour."""
    out = store(a, dtype)
    if ties is None:
        return out
    af = np.asarray(a, np.float32).astype(np.float64)
    near = out.astype(np.float64)
    kind = STORAGE[dtype]
    other = np.where(af >= near, np.nextafter(out, kind(np.inf)), np.nextafter(out, kind(-np.inf))).astype(np.float64)
    unit = np.float64(2.0**-24) * np.max(np.abs(af), axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        margin = np.where(unit > 0, np.abs(af - (near + other) / 2) / unit, np.inf)
    return _note_ties(ties, site, margin, out.astype(np.float64), other).astype(kind)


def dequant(acc, scale_a, scale_b):
    """AT-06: FP32(acc) * scale_a [M, 1], then * scale_b [N] — in that order, in FP32."""
    return (f32(acc) * f32(scale_a)) * f32(scale_b).reshape(1, -1)


def quant_weight_int8(w, channel_axis):
    """Symmetric per-channel INT8 weights (offline): scale = max|w| / 127 per output channel."""
    wf = f32(w)
    reduce_axis = 1 - channel_axis
    amax = np.max(np.abs(wf), axis=reduce_axis, keepdims=True)
    scale = (amax / np.float32(127.0)).astype(np.float32)
    q = np.clip(np.rint(wf / scale), -127, 127).astype(np.int8)
    return q, scale.reshape(-1)


def quant_weight_fp8(w, channel_axis):
    """Symmetric per-channel E4M3 weights (offline): scale = max|w| / 448 per output channel, codes
    round to nearest (ties to even) after the clip to +-448."""
    wf = f32(w)
    amax = np.max(np.abs(wf), axis=1 - channel_axis, keepdims=True)
    scale = (amax / np.float32(FP8_MAX)).astype(np.float32)
    q = np.clip(wf / scale, -FP8_MAX, FP8_MAX).astype(FP8E4M3)
    return q, scale.reshape(-1)


# OCP MX (MXFP8, E4M3 elements, E8M0 block scales) ---------------------------------------------------
MX_BLOCK = 32
_E4M3_EMAX = 8
_LIFT = np.float32(2.0**-119)  # an all-zero block gets X = 2^-127, the smallest E8M0 value


def mx_quantize(x):
    """OCP MX v1.0 along the last axis: per block of 32, X = 2^(floor(log2(max|v| + 2^-119)) - 8)
    (E8M0; emax of E4M3 is 8); elements v / X clipped to +-448, rounded to nearest even.
    Returns (elements E4M3 [M, K], scales E8M0 [M, K/32])."""
    xf = f32(x)
    m, k = xf.shape
    blocks = xf.reshape(m, k // MX_BLOCK, MX_BLOCK)
    amax = np.max(np.abs(blocks), axis=-1, keepdims=True) + _LIFT
    _, exponent = np.frexp(amax)  # amax = f * 2^e with f in [0.5, 1): floor(log2 amax) = e - 1
    scale = np.ldexp(np.float32(1.0), exponent - 1 - _E4M3_EMAX).astype(np.float32)
    q = np.clip(blocks / scale, -448.0, 448.0).astype(FP8E4M3)
    return q.reshape(m, k), scale.reshape(m, k // MX_BLOCK).astype(E8M0)


def mx_dequantize(q, scale):
    """Elements times their block scale, exactly, in float64."""
    qf = np.asarray(q).astype(np.float64)
    s = np.repeat(np.asarray(scale).astype(np.float64), MX_BLOCK, axis=1)
    return qf * s


# AT-09 linear projection -----------------------------------------------------------------------------
def matmul_acc(a, w, layout):
    """Exact products accumulated (float64), rounded once to FP32 — the Cube's FP32 accumulator.
    ``layout`` nk: w is [N, K]; kn: w is [K, N]."""
    a64 = np.asarray(a).astype(np.float64)
    w64 = np.asarray(w).astype(np.float64)
    acc = a64 @ (w64.T if layout == "nk" else w64)
    return acc.astype(np.float32)


def matmul_k_split(a, w, layout):
    """AT-22: the two FP32 accumulators of K's halves, (lo, hi); the caller sums them in FP32."""
    half = np.shape(a)[-1] // 2
    w_lo, w_hi = (w[:, :half], w[:, half:]) if layout == "nk" else (w[:half], w[half:])
    return matmul_acc(a[:, :half], w_lo, layout), matmul_acc(a[:, half:], w_hi, layout)


def matmul_int8(a_q, w_q, layout):
    """INT8 x INT8 -> INT32, exact (float64 holds every partial sum while 127^2 * K < 2^53)."""
    a64 = a_q.astype(np.float64)
    w64 = w_q.astype(np.float64)
    return (a64 @ (w64.T if layout == "nk" else w64)).astype(np.int64).astype(np.int32)


def linear(
    x,
    weight,
    *,
    layout,
    quant_mode="none",
    out_dtype="BF16",
    weight_scale=None,
    bias=None,
    codes=None,
    ties=None,
    site=None,
    k_split=False,
):
    """AT-09: returns (y, x_q, x_scale); x_q/x_scale only for int8_w8a8.

    none: matmul of the BF16 activation, rounded once to out_dtype (FP32 first when a bias follows);
    int8_w8a8: AT-05 on x, INT32 product, AT-06 with the per-channel weight scale;
    mxfp8: MX-quantise x, products of the dequantised blocks accumulated in FP32;
    fp8_w8a8: AT-08 on x, E4M3 codes' products accumulated in FP32, AT-06 with the channel scale.
    ``codes``: int8_w8a8 with the activation already quantised, (x_q, x_scale) (x is ignored);
    ``ties``: passed to AT-05's quant_int8 (int8_w8a8); with ``site``, the output's own rounding
    is recorded too (``store_tied``: an intermediate a quantiser reads); ``k_split``: K's halves
    accumulated apart (AT-22) and added in FP32."""
    x_q = x_scale = None
    if codes is not None:
        x_q, x_scale = np.asarray(codes[0]), f32(codes[1])
        acc = dequant(matmul_int8(x_q, weight, layout), x_scale, weight_scale)
    elif quant_mode == "int8_w8a8":
        x_q, x_scale = quant_int8(x, ties)
        acc = dequant(matmul_int8(x_q, weight, layout), x_scale, weight_scale)
    elif quant_mode == "fp8_w8a8":
        x_q, x_scale = quant_fp8(x)
        acc = dequant(matmul_acc(x_q, weight, layout), x_scale, weight_scale)
    elif quant_mode == "mxfp8":
        xq, xs = mx_quantize(x)
        a = mx_dequantize(xq, xs)
        w = mx_dequantize(weight, weight_scale)  # weight [N, K] with scales [N, K/32]
        acc = (a @ w.T).astype(np.float32)
    elif k_split:
        lo, hi = matmul_k_split(x, weight, layout)
        acc = lo + hi  # FP32 + FP32, rounded once to FP32
    else:
        acc = matmul_acc(x, weight, layout)
    if bias is not None:
        acc = acc + f32(bias).reshape(1, -1)
    if site is not None:
        return store_tied(acc, out_dtype, ties, site), x_q, x_scale
    return store(acc, out_dtype), x_q, x_scale


# AT-10 / AT-11 fused RMSNorm + linear ------------------------------------------------------------------
def norm_linear(x, p, gamma=None, weight=None, weight_scale=None, bias=None, ties=None):
    """AT-10 (h = BF16 norm output) or AT-11 (h = INT8 per-token quantised norm output).
    Returns a dict with y, h, h_scale (AT-11) and rstd. ``ties``: see quant_int8."""
    normed, rstd = rmsnorm(x, gamma if p["has_gamma"] else None, eps=p["eps"], mode=p["rsqrt_mode"])
    out = {"rstd": rstd}
    bias = bias if p["has_bias"] else None
    kw = {
        "layout": p["weight_layout"],
        "out_dtype": p["out_dtype"],
        "weight_scale": weight_scale,
        "bias": bias,
        "k_split": p.get("k_split", False),
    }
    if p["atom"] == "AT-11":
        y, h, h_scale = linear(normed, weight, quant_mode="int8_w8a8", ties=ties, **kw)
        out.update(y=y, h=h, h_scale=h_scale)
    else:
        h = store(normed, "BF16")
        y, _, _ = linear(h, weight, quant_mode=p["quant_mode"], ties=ties, **kw)
        out.update(y=y, h=h)
    return out


# Inputs as upstream: activations U(-1, 1), weights U(-0.1, 0.1), gammas U(-1, 1) ----------------------
# With U(-1, 1) data every mean square is ~0.33 and eps = 1e-6 changes nothing a test can see, so a few
# rows (and, in skeletons with a per-head norm, one head's weight rows) are scaled by QUIET: their mean
# square (~3e-7) is below eps, and a kernel that drops or misplaces eps fails.
QUIET = 1e-3


def uniform(rng, shape, low, high, dtype="BF16"):
    return store(rng.uniform(low, high, size=shape).astype(np.float32), dtype)


def activations(rng, T, width, low=-1.0, high=1.0):
    """[T, width] BF16 activations; the last row (when T > 1) and every 8th row are QUIET."""
    a = rng.uniform(low, high, size=(T, width)).astype(np.float32)
    quiet = [i for i in range(T) if i % 8 == 7 or (T > 1 and i == T - 1)]
    a[quiet] *= QUIET
    return store(a, "BF16")


def quiet_heads(first, heads, d):
    """Output-channel ranges of every 8th head from ``first`` (enough heads that a wrong one cannot
    hide under a 2 % error ratio)."""
    return [((first + h) * d, (first + h + 1) * d) for h in range(0, heads, 8)]


def make_weight(rng, n, k, *, layout, quant_mode="none", quiet_rows=()):
    """A projection weight [N, K] (nk) or [K, N] (kn) and its scale for the quantised modes.

    ``quiet_rows``: (start, stop) ranges of output channels scaled by QUIET (a head whose norm sees eps).
    """
    w = rng.uniform(-0.1, 0.1, size=(n, k)).astype(np.float32)
    for start, stop in quiet_rows:
        w[start:stop] *= QUIET
    if quant_mode == "mxfp8":
        return mx_quantize(w)  # MX needs K contiguous: [N, K] with [N, K/32] scales
    if layout == "kn":
        w = np.ascontiguousarray(w.T)
    if quant_mode == "int8_w8a8":
        return quant_weight_int8(w, channel_axis=0 if layout == "nk" else 1)
    if quant_mode == "fp8_w8a8":
        return quant_weight_fp8(w, channel_axis=0 if layout == "nk" else 1)
    return store(w, "BF16"), None


# AT-07 SwiGLU ----------------------------------------------------------------------------------------
def swiglu(gate, up):
    """AT-07: silu(gate) * up from the FP32 projections, evaluated in float64 and rounded once to
    FP32 (silu(g) = g * sigmoid(g); the kernel's exp/divide/multiply chain is a few FP32 ulps away)."""
    g = np.asarray(gate).astype(np.float64)
    with np.errstate(over="ignore"):  # exp(-g) overflows below g = -709: sigmoid is 0 there
        sig = 1.0 / (1.0 + np.exp(-g))
    return (g * sig * np.asarray(up).astype(np.float64)).astype(np.float32)


# AT-02 Standard softmax ------------------------------------------------------------------------------
def softmax(x):
    """AT-02: softmax along the last axis of whole rows, evaluated in float64 from the FP32 input
    and rounded once to FP32 (the kernel's max/exp/sum/divide chain is a few FP32 ulps away)."""
    x = np.asarray(x).astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
