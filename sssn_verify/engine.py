"""The Monte Carlo engine: the small public Python API over the numba kernels.

Every function validates its inputs (``ModelParams``, ``check_int``), allocates, seeds
(``numeric.rng.path_seeds``: one seed per path, so results are bit-identical for any
thread count and any chunking over paths), calls an ``@njit(parallel=True)`` kernel over
paths and raises :class:`~sssn_verify.errors.SimulationError` naming the layer and the
parameters if a path blows up.  Long runs show a tqdm progress bar (chunks of paths).

Public API::

    simulate_transformer(params, depth, width, n_paths=1, seed=0, init=None, mode="auto", ...)
    simulate_gaussian(params, depth, n_paths=1, seed=0, init=None, ...)
    simulate_sde(params, depth, n_paths=1, seed=0, init=None, ...)
    sde_refinement_ladder(params, depth, factors=(1, 2, 4, 8), kind="sde", ...)
    lyapunov_tangent(params, model="transformer", depth=..., width=..., n_paths=..., seed=...)
    two_point(params, model="sde", depth=100, rho0=0.5, n_paths=1, seed=0, width=None)
    initial_tokens(params, n_paths, seed, init=None)

Fixed noise across N: in ``mode="literal"`` a path draws, at every layer, W (d x m), b (m)
and A (m x d) from its own generator whatever N and the tokens are, so runs with the same
seed and different token sets see the *same* MLPs (the propagation-of-chaos check relies on
this).  The exact-in-law modes draw what the tokens see and do not have this property.
"""
from __future__ import annotations

import hashlib
import importlib
import inspect
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

import numpy as np

from .errors import ParameterError, SimulationError
from .limits import check_simulation
from .params import ModelParams, check_int, check_real
from .numeric import rng as _rng
from .numeric.fields import (DEFAULT_RTOL, STATUS_MESSAGES, STATUS_OK, engine_sources_digest,
                             exact_in_law_choice)

MODES = ("auto", "exact", "literal")
INIT_STREAM = 0
DYNAMICS_STREAM = 1


@dataclass(frozen=True)
class SimulationResult:
    """Output of a simulation; arrays are indexed by path first.

    tokens (P, N, d) final tokens; energy (P, L+1) E_0 after every layer (index 0 = start);
    energies (P, L+1, len(betas)) E_beta for the requested betas; trajectory
    (P, L // store_every + 1, N, d) or None; times (L+1,) = l * T / L.
    """

    model: str
    params: ModelParams
    depth: int
    width: int | None
    n_paths: int
    seed: int
    init: np.ndarray
    tokens: np.ndarray
    energy: np.ndarray
    times: np.ndarray
    betas: np.ndarray
    energies: np.ndarray
    trajectory: np.ndarray | None = None
    mode: str = ""
    info: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TangentResult:
    """Tangent flow (Benettin): per-path log-growth of one tangent vector.

    log_growth (P,) = sum over layers of log |v_{l+1}| / |v_l|; rates = log_growth / T;
    running (P, L+1) cumulative log-growth; rate / stderr: mean rate and its standard error.
    """

    model: str
    params: ModelParams
    depth: int
    width: int | None
    n_paths: int
    seed: int
    log_growth: np.ndarray
    rates: np.ndarray
    running: np.ndarray
    tokens: np.ndarray
    rate: float
    stderr: float


@dataclass(frozen=True)
class LadderResult:
    """Refinement ladder on shared noise.

    factors (R,) step multipliers (level r takes steps of factors[r] * T / depth; the
    reference is factor 1); tokens (P, R, N, d) final tokens per level; max_dev (P, R)
    max over the level's grid times of max_i |x_i^r - x_i^ref|; max_dev_config (P, R) the same
    with the configuration norm sqrt(sum_i |.|^2).
    """

    kind: str
    params: ModelParams
    depth: int
    factors: np.ndarray
    n_paths: int
    seed: int
    tokens: np.ndarray
    max_dev: np.ndarray
    max_dev_config: np.ndarray


# ----------------------------------------------------------------- per-activation kernels
@lru_cache(maxsize=None)
def _kernel_for(activation, module: str, name: str):
    """Parallel kernel ``name(n_paths, *args)`` running ``module.name_path`` over paths.

    The per-path function takes the activation's numba callables as its leading
    ``phi``/``dphi`` arguments.  Passing dispatchers as arguments would defeat numba's
    on-disk cache (their type embeds a memory address), so the per-path source is copied
    into a small generated module where ``phi``/``dphi`` are globals, next to a
    ``prange`` wrapper; both are compiled with ``cache=True``.  The module name hashes the
    activation, the generated text and the sources of the numeric kernels, so a stale cache
    is never used.  ``module.name_path`` stays the one source of truth.
    """
    from .activations import _cache_dir, load_generated
    from .outputs import private_folder
    phi, dphi = activation.numba_pair
    target = getattr(importlib.import_module(f"sssn_verify.numeric.{module}"), f"{name}_path")
    params = list(inspect.signature(target.py_func).parameters)
    uses = [a for a in ("phi", "dphi") if a in params[:2]]
    rest = params[len(uses):]
    if rest[0] != "p":
        raise TypeError(f"{module}.{name}_path must take ({', '.join(uses)}, p, ...)")
    body = inspect.getsource(target.py_func)
    body = body[body.index("def "):]
    body = re.sub(r"^def \w+\(\s*" + "".join(rf"{u}\s*,\s*" for u in uses),
                  f"def {name}_path(", body, count=1)
    args = ", ".join(rest[1:])
    source = (
        "# generated by sssn_verify.engine from sssn_verify.numeric."
        f"{module}.{name}_path; do not edit\n"
        "import sys\nfrom numba import njit, prange\n"
        f"from sssn_verify.numeric import {module} as _mod\n"
        "globals().update({k: v for k, v in vars(_mod).items() if not k.startswith('__')})\n"
        f"phi = sys.modules[{phi.py_func.__module__!r}].phi\n"
        f"dphi = sys.modules[{dphi.py_func.__module__!r}].dphi\n\n\n"
        "@njit(cache=True)\n" + body + "\n\n"
        "@njit(cache=True, parallel=True)\n"
        f"def {name}(n_paths, {args}):\n"
        "    for p in prange(n_paths):\n"
        f"        {name}_path(p, {args})\n"
    )
    key = hashlib.sha256((source + engine_sources_digest()).encode()).hexdigest()[:16]
    folder = private_folder(_cache_dir().parent / "kernels")
    mod = load_generated(folder / f"k_{name}_{key}.py", source, f"sssn_verify_kernel_{name}_{key}")
    return getattr(mod, name)


# ----------------------------------------------------------------- helpers
def _check_params(params) -> ModelParams:
    if not isinstance(params, ModelParams):
        raise ParameterError("params", type(params).__name__, "must be a ModelParams")
    return params


def initial_tokens(params: ModelParams, n_paths: int, seed: int, init=None) -> np.ndarray:
    """Initial tokens (P, N, d): i.i.d. uniform on the sphere from `seed`, or `init` projected.

    `init` may be (N, d) (the same for every path) or (P, N, d); rows are projected onto
    the sphere, zero or non-finite rows are rejected.
    """
    params = _check_params(params)
    n_paths = check_int("n_paths", n_paths, 1)
    N, d = params.n_tokens, params.d
    if init is None:
        return _rng.uniform_sphere(_rng.generator(seed, INIT_STREAM), (n_paths, N), d)
    try:
        x = np.array(init, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError("init", "<array>", "must be a real array") from None
    if x.ndim == 2:
        x = np.broadcast_to(x, (n_paths, *x.shape))
    if x.shape != (n_paths, N, d):
        raise ParameterError("init", f"shape {x.shape}",
                             f"must have shape (N, d) = ({N}, {d}) or (P, N, d) = ({n_paths}, {N}, {d})")
    scale = np.max(np.abs(x), axis=-1, keepdims=True)
    if not np.all(np.isfinite(x)) or np.any(scale == 0):
        raise ParameterError("init", "<array>", "tokens must be finite and non-zero")
    # rows whose |x| would overflow (1e308 entries) or underflow are rescaled first; others untouched
    x = np.where((scale > 1e150) | (scale < 1e-150), x / scale, x)
    return np.ascontiguousarray(x / np.linalg.norm(x, axis=-1, keepdims=True))


def _describe(params: ModelParams, **sizes) -> str:
    extra = ", ".join(f"{k}={v}" for k, v in sizes.items() if v is not None)
    return (f"d={params.d}, N={params.n_tokens}, T={params.horizon}, beta={params.beta}, "
            f"activation={params.activation.name}, sigma_w={params.sigma_w}, "
            f"sigma_b={params.sigma_b}, sigma_a={params.sigma_a}" + (f", {extra}" if extra else ""))


def _raise_on_status(status: np.ndarray, what: str, unit: str, params: ModelParams, **sizes):
    bad = np.nonzero(status[:, 0] != STATUS_OK)[0]
    if bad.size:
        p = int(bad[0])
        code, layer = int(status[p, 0]), int(status[p, 1])
        raise SimulationError(
            f"{what} blew up at {unit} {layer + 1} (path {p}, {bad.size} path(s) failed): "
            f"{STATUS_MESSAGES.get(code, 'status ' + str(code))}; parameters: {_describe(params, **sizes)}")


def _attention_args(params: ModelParams):
    return (bool(params.attention_on), np.ascontiguousarray(params.Q.T), np.ascontiguousarray(params.K.T),
            np.ascontiguousarray(params.V.T))


def _betas(betas) -> np.ndarray:
    b = np.atleast_1d(np.asarray(betas if betas is not None else (), dtype=float)).ravel()
    for x in b:
        check_real("betas", x, 0.0)
    return np.ascontiguousarray(b)


def _chunks(n_paths: int, work: float, progress, desc: str):
    """Path chunks for the progress bar; chunking never changes results (per-path seeds)."""
    show = progress if progress is not None else work > 2e9
    if not show:
        return [(0, n_paths)], None
    n_chunks = min(n_paths, 50)
    edges = np.linspace(0, n_paths, n_chunks + 1).astype(int)
    from tqdm.auto import tqdm
    bar = tqdm(total=n_paths, desc=desc, unit="path", leave=False)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a], bar


def _run_chunked(kernel_call, n_paths, work, progress, desc):
    chunks, bar = _chunks(n_paths, work, progress, desc)
    try:
        for a, b in chunks:
            kernel_call(a, b)
            if bar is not None:
                bar.update(b - a)
    finally:
        if bar is not None:
            bar.close()


def _outputs(P, L, N, d, nb, store_every):
    energy = np.zeros((P, L + 1))
    energies = np.zeros((P, L + 1, nb))
    traj = (np.zeros((P, L // store_every + 1, N, d)) if store_every > 0 else np.zeros((1, 1, 1, 1)))
    final = np.zeros((P, N, d))
    status = np.zeros((P, 2), dtype=np.int64)
    return energy, energies, traj, final, status


def _choose_mode(mode: str, N: int, d: int, m: int) -> tuple[bool, bool]:
    if mode not in MODES:
        raise ParameterError("mode", mode, f"must be one of {', '.join(MODES)}")
    if mode == "exact":
        return True, True
    if mode == "literal":
        return False, False
    return exact_in_law_choice(N, d, m)


# ----------------------------------------------------------------- simulators
def simulate_transformer(params: ModelParams, depth: int, width: int, n_paths: int = 1, seed: int = 0,
                         init=None, mode: str = "auto", betas: Sequence[float] = (),
                         store_every: int = 0, progress: bool | None = None,
                         rtol: float = DEFAULT_RTOL) -> SimulationResult:
    """The finite-width transformer of SPEC section 1 (L = depth layers, MLP width m = width).

    mode: "literal" draws the weights (w, b, a) themselves; "exact" samples the
    pre-activations and outputs the tokens see, exactly in law (fewer draws); "auto" picks
    the cheaper per block (cost model in ``fields.exact_in_law_choice``).
    """
    params = _check_params(params)
    L = check_int("depth", depth, 1)
    m = check_int("width", width, 1)
    P = check_int("n_paths", n_paths, 1)
    seed = check_int("seed", seed, 0)
    store_every = check_int("store_every", store_every, 0)
    pre_exact, out_exact = _choose_mode(mode, params.n_tokens, params.d, m)
    bs = _betas(betas)
    check_simulation(P, params.n_tokens, params.d, L, m, store_every, bs.size)
    X0 = initial_tokens(params, P, seed, init)
    seeds = _rng.path_seeds(seed, P, DYNAMICS_STREAM)
    N, d = params.n_tokens, params.d
    energy, energies, traj, final, status = _outputs(P, L, N, d, bs.size, store_every)
    attn, Qt, Kt, Vt = _attention_args(params)
    kernel = _kernel_for(params.activation, "transformer", "finite_width")
    delta = params.horizon / L

    def call(a, b):
        sl = slice(a, b)
        tr = traj[sl] if store_every > 0 else traj
        kernel(b - a, X0[sl], seeds[sl], L, delta, params.beta, attn, Qt, Kt, Vt,
                           params.sigma_w, params.sigma_b, params.sigma_a, m, pre_exact, out_exact,
                           rtol, energy[sl], bs, energies[sl], store_every, tr, final[sl], status[sl])

    _run_chunked(call, P, float(P) * L * N * m * d, progress, "transformer")
    _raise_on_status(status, "finite-width transformer", "layer", params, depth=L, width=m)
    used = {(True, True): "exact", (False, False): "literal"}.get((pre_exact, out_exact),
                                                                   "exact-pre" if pre_exact else "exact-out")
    return SimulationResult("transformer", params, L, m, P, seed, X0, final, energy,
                            np.arange(L + 1) * delta, bs, energies,
                            traj if store_every > 0 else None, used,
                            {"pre_exact": pre_exact, "out_exact": out_exact})


def _kernel_table(params: ModelParams):
    from .numeric.kernels import kernel
    kf = kernel(params.activation, params.sigma_w, params.sigma_b, params.sigma_a)
    return kf, np.ascontiguousarray(kf.table)


def _simulate_field(model: str, params: ModelParams, depth: int, n_paths: int, seed: int, init,
                    betas, store_every: int, progress, rtol: float) -> SimulationResult:
    """Shared driver of the two models whose noise is the Gaussian field at the tokens."""
    from .numeric.sde import sde_paths
    from .numeric.transformer import gaussian_paths
    kernel_paths, what, unit, mode = {
        "gaussian": (gaussian_paths, "Gaussian transformer", "layer", "exact field"),
        "sde": (sde_paths, "SDE (projected Euler)", "step", "projected Euler"),
    }[model]
    params = _check_params(params)
    L = check_int("depth", depth, 1)
    P = check_int("n_paths", n_paths, 1)
    seed = check_int("seed", seed, 0)
    store_every = check_int("store_every", store_every, 0)
    bs = _betas(betas)
    check_simulation(P, params.n_tokens, params.d, L, None, store_every, bs.size)
    kf, table = _kernel_table(params)
    X0 = initial_tokens(params, P, seed, init)
    seeds = _rng.path_seeds(seed, P, DYNAMICS_STREAM)
    N, d = params.n_tokens, params.d
    energy, energies, traj, final, status = _outputs(P, L, N, d, bs.size, store_every)
    attn, Qt, Kt, Vt = _attention_args(params)
    step = params.horizon / L

    def call(a, b):
        sl = slice(a, b)
        tr = traj[sl] if store_every > 0 else traj
        kernel_paths(table, kf.k0, X0[sl], seeds[sl], L, step, params.beta, attn, Qt, Kt, Vt, rtol,
                     energy[sl], bs, energies[sl], store_every, tr, final[sl], status[sl])

    _run_chunked(call, P, float(P) * L * N ** 3, progress, model)
    _raise_on_status(status, what, unit, params, depth=L)
    return SimulationResult(model, params, L, None, P, seed, X0, final, energy,
                            np.arange(L + 1) * step, bs, energies,
                            traj if store_every > 0 else None, mode)


def simulate_gaussian(params: ModelParams, depth: int, n_paths: int = 1, seed: int = 0, init=None,
                      betas: Sequence[float] = (), store_every: int = 0, progress: bool | None = None,
                      rtol: float = DEFAULT_RTOL) -> SimulationResult:
    """The Gaussian transformer (m = infinity): x' = Pi(y + sqrt(delta) G(y)), G jointly
    Gaussian at the N tokens with covariance K(<y_i, y_j>) I_d, fresh every layer."""
    return _simulate_field("gaussian", params, depth, n_paths, seed, init, betas, store_every,
                           progress, rtol)


def simulate_sde(params: ModelParams, depth: int, n_paths: int = 1, seed: int = 0, init=None,
                 betas: Sequence[float] = (), store_every: int = 0, progress: bool | None = None,
                 rtol: float = DEFAULT_RTOL) -> SimulationResult:
    """The limiting SDE by projected Euler with `depth` steps of size T / depth:
    X' = Pi(X + h (P_X A(X) - ((d-1) k0 / 2) X) + P_X dW(X))."""
    return _simulate_field("sde", params, depth, n_paths, seed, init, betas, store_every,
                           progress, rtol)


LADDER_KINDS = {"sde": 0, "gaussian": 1}


def sde_refinement_ladder(params: ModelParams, depth: int, factors: Sequence[int] = (1, 2, 4, 8),
                          kind: str = "sde", n_paths: int = 1, seed: int = 0, init=None,
                          progress: bool | None = None, rtol: float = DEFAULT_RTOL) -> LadderResult:
    """Coupled levels on one Brownian field: the reference SDE with `depth` fine steps
    (factor 1) and, for each other factor f (dividing depth), either the SDE with step
    f T / depth (kind="sde": the Euler ladder) or the Gaussian transformer with depth / f
    layers (kind="gaussian": the depth ladder of Theorem 1.1).  Coarse increments are sums of
    fine increments evaluated at the coarse level's own points (see numeric.sde)."""
    from .numeric.sde import ladder_paths
    params = _check_params(params)
    n_fine = check_int("depth", depth, 1)
    P = check_int("n_paths", n_paths, 1)
    seed = check_int("seed", seed, 0)
    if kind not in LADDER_KINDS:
        raise ParameterError("kind", kind, f"must be one of {', '.join(LADDER_KINDS)}")
    fs = [check_int("factors", f, 1) for f in factors]
    if not fs or fs[0] != 1 or len(set(fs)) != len(fs):
        raise ParameterError("factors", tuple(factors), "must start with 1 (the reference) and be distinct")
    for f in fs:
        if n_fine % f:
            raise ParameterError("factors", f, f"every factor must divide depth={n_fine}")
    kinds = np.array([0] + [LADDER_KINDS[kind]] * (len(fs) - 1), dtype=np.int64)
    kf, table = _kernel_table(params)
    X0 = initial_tokens(params, P, seed, init)
    seeds = _rng.path_seeds(seed, P, DYNAMICS_STREAM)
    N, d = params.n_tokens, params.d
    R = len(fs)
    final = np.zeros((P, R, N, d))
    max_dev = np.zeros((P, R))
    max_dev_c = np.zeros((P, R))
    status = np.zeros((P, 2), dtype=np.int64)
    attn, Qt, Kt, Vt = _attention_args(params)
    dt = params.horizon / n_fine
    fa = np.array(fs, dtype=np.int64)

    def call(a, b):
        sl = slice(a, b)
        ladder_paths(table, kf.k0, X0[sl], seeds[sl], n_fine, dt, fa, kinds, params.beta, attn, Qt, Kt,
                     Vt, rtol, final[sl], max_dev[sl], max_dev_c[sl], status[sl])

    _run_chunked(call, P, float(P) * n_fine * (R * N) ** 3, progress, "ladder")
    _raise_on_status(status, f"refinement ladder ({kind})", "fine step", params, depth=n_fine)
    return LadderResult(kind, params, n_fine, fa, P, seed, final, max_dev, max_dev_c)


TANGENT_MODELS = ("transformer", "gaussian", "sde")


def tangent_initial(params: ModelParams, n_paths: int, seed: int, init=None, tangent=None):
    """(x0 (P, d), v0 (P, d)): x0 uniform on the sphere (or `init`, shape (d,) or (P, d),
    projected), v0 a uniform unit tangent at x0 (or `tangent` projected onto T_x0)."""
    params = _check_params(params)
    P = check_int("n_paths", n_paths, 1)
    d = params.d
    one = params.with_(n_tokens=1)
    if init is not None:
        x = np.asarray(init, dtype=float)
        init = x.reshape(1, d) if x.shape == (d,) else (x.reshape(P, 1, d) if x.shape == (P, d) else x)
    x0 = initial_tokens(one, P, seed, init)[:, 0, :]
    rng = _rng.generator(seed, INIT_STREAM + 2)
    if tangent is None:
        g = rng.standard_normal((P, d))
    else:
        try:
            g = np.broadcast_to(np.asarray(tangent, dtype=float), (P, d)).copy()
        except ValueError:
            raise ParameterError("tangent", "<array>", f"must have shape (d,) or (P, d) = ({P}, {d})") from None
    g = g - np.sum(g * x0, axis=1, keepdims=True) * x0
    norms = np.linalg.norm(g, axis=1, keepdims=True)
    if not np.all(np.isfinite(g)) or np.any(norms == 0):
        raise ParameterError("tangent", "<array>", "must have a non-zero component tangent to the token")
    return np.ascontiguousarray(x0), np.ascontiguousarray(g / norms)


def lyapunov_tangent(params: ModelParams, model: str = "transformer", depth: int = 100,
                     width: int | None = None, n_paths: int = 1, seed: int = 0, init=None,
                     tangent=None, mode: str = "auto", progress: bool | None = None,
                     rtol: float = DEFAULT_RTOL) -> TangentResult:
    """Top Lyapunov exponent by the tangent flow of one token (Benettin renormalisation).

    model: "transformer" (finite width m = width, exact-in-law Jacobian action),
    "gaussian" (m = infinity) or "sde" (projected Euler, depth steps).  Attention acts on a
    single token as A(x) = V x (set V = 0 for the noise-only flow of SPEC section 5).
    Returns per-path rates log|v_T| / T with their mean and standard error.
    """
    params = _check_params(params)
    if model not in TANGENT_MODELS:
        raise ParameterError("model", model, f"must be one of {', '.join(TANGENT_MODELS)}")
    L = check_int("depth", depth, 1)
    P = check_int("n_paths", n_paths, 1)
    seed = check_int("seed", seed, 0)
    x0, v0 = tangent_initial(params, P, seed, init, tangent)
    seeds = _rng.path_seeds(seed, P, DYNAMICS_STREAM + 1)
    d = params.d
    logs = np.zeros((P, L + 1))
    final = np.zeros((P, d))
    status = np.zeros((P, 2), dtype=np.int64)
    attn = bool(params.attention_on)
    Vt = np.ascontiguousarray(params.V.T)
    delta = params.horizon / L
    m = None
    if model == "transformer":
        if width is None:
            raise ParameterError("width", width, "is required for model='transformer'")
        m = check_int("width", width, 1)
        pre_exact, out_exact = _choose_mode(mode, 2, d, m)
        kernel = _kernel_for(params.activation, "tangent", "tangent_finite")

        def call(a, b):
            sl = slice(a, b)
            kernel(b - a, x0[sl], v0[sl], seeds[sl], L, delta, attn, Vt, params.sigma_w,
                   params.sigma_b, params.sigma_a, m, pre_exact, out_exact, rtol, logs[sl], final[sl],
                   status[sl])
        work = float(P) * L * m * d
    else:
        from .numeric.tangent import tangent_gaussian_paths, tangent_sde_paths
        kf, _ = _kernel_table(params)
        if not math.isfinite(kf.k1):
            raise ParameterError("activation", params.activation.name,
                                 "has a jump (k1 = K'(1) = inf): the m = infinity tangent flow is undefined")
        fn = tangent_gaussian_paths if model == "gaussian" else tangent_sde_paths

        def call(a, b):
            sl = slice(a, b)
            fn(x0[sl], v0[sl], seeds[sl], L, delta, attn, Vt, kf.k0, kf.k1, logs[sl], final[sl], status[sl])
        work = float(P) * L * d * 10
    _run_chunked(call, P, work, progress, f"tangent ({model})")
    _raise_on_status(status, f"tangent flow ({model})", "layer" if model != "sde" else "step",
                     params, depth=L, width=m)
    rates = logs[:, -1] / params.horizon
    stderr = float(rates.std(ddof=1) / math.sqrt(P)) if P > 1 else float("nan")
    return TangentResult(model, params, L, m, P, seed, logs[:, -1].copy(), rates, logs, final,
                         float(rates.mean()), stderr)


@dataclass(frozen=True)
class TwoPointResult:
    """Two tokens started at overlap rho0: rho (P, L+1) = <x_1, x_2> after every layer/step and
    gap (P, L+1) = 1 - rho = |x_1 - x_2|^2 / 2 computed stably (full relative accuracy near 1)."""

    model: str
    params: ModelParams
    depth: int
    n_paths: int
    seed: int
    times: np.ndarray
    rho: np.ndarray
    gap: np.ndarray


def two_point(params: ModelParams, model: str = "sde", depth: int = 100, rho0: float = 0.5,
              n_paths: int = 1, seed: int = 0, width: int | None = None, mode: str = "auto",
              progress: bool | None = None) -> TwoPointResult:
    """The two-point motion: N = 2 tokens with <x_1, x_2> = rho0 (x_1 = e_1, x_2 in the e_1 e_2
    plane; the laws are rotation invariant when Q, K, V are multiples of I), simulated by the
    finite-width transformer (width given), the Gaussian transformer or the SDE."""
    params = _check_params(params).with_(n_tokens=2)
    rho0 = check_real("rho0", rho0, -1.0, maximum=1.0)
    init = np.zeros((2, params.d))
    init[0, 0] = 1.0
    init[1, 0] = rho0
    init[1, 1] = math.sqrt(max(0.0, 1.0 - rho0 * rho0))
    common = dict(n_paths=n_paths, seed=seed, init=init, store_every=1, progress=progress)
    if model == "transformer":
        if width is None:
            raise ParameterError("width", width, "is required for model='transformer'")
        res = simulate_transformer(params, depth, width, mode=mode, **common)
    elif model == "gaussian":
        res = simulate_gaussian(params, depth, **common)
    elif model == "sde":
        res = simulate_sde(params, depth, **common)
    else:
        raise ParameterError("model", model, f"must be one of {', '.join(TANGENT_MODELS)}")
    X = res.trajectory
    gap = 0.5 * np.sum((X[:, :, 0] - X[:, :, 1]) ** 2, axis=-1)
    return TwoPointResult(model, params, res.depth, res.n_paths, res.seed, res.times,
                          np.sum(X[:, :, 0] * X[:, :, 1], axis=-1), gap)
