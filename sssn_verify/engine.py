"""The Monte Carlo engine: the small public Python API over the numba kernels.

Every function validates its inputs (``ModelParams``, ``check_int``), allocates, seeds
(``numeric.rng.Key``: `seed` is an int or a Key; the tokens and the dynamics are its named
sub-streams, one 64-bit state per path, so results are bit-identical for any thread count
and any chunking over paths), calls the parallel kernel of a model
(``numeric.models``: the declared models; ``numeric.driver``: the one per-path driver) and
raises :class:`~sssn_verify.errors.SimulationError` naming the layer and the parameters if a
path blows up.  Long runs show a tqdm progress bar (chunks of paths).

More (moved from this docstring): docs/modules.md, ``sssn_verify.engine``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .errors import ParameterError, SimulationError
from .limits import check_simulation
from .params import ModelParams, check_int, check_real, hidden_spec, takes_model
from .numeric import rng as _rng
from .numeric.attention import operands as _attention
from .numeric.fields import DEFAULT_RTOL, STATUS_MESSAGES, STATUS_OK
from .numeric.models import MODELS, Model, ladder_reference
from .numeric.models.finite_width import MODES
from .numeric.slices import run_sliced


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
    seed: int | _rng.Key
    init: np.ndarray
    tokens: np.ndarray
    energy: np.ndarray
    times: np.ndarray
    betas: np.ndarray
    energies: np.ndarray
    trajectory: np.ndarray | None = None
    mode: str = ""
    info: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        e = self.energy.mean(axis=0)
        return (f"SimulationResult(model={self.model!r}, {_describe_short(self.params)}, depth={self.depth}, "
                f"width={self.width}, n_paths={self.n_paths}, seed={self.seed}: tokens {self.tokens.shape}, "
                f"mean E_0 {e[0]:.4g} -> {e[-1]:.4g})")

    def plot(self, path=None):
        """The figure of ``simulate --plot``: final tokens on S^2 (d = 3) or E_0 against depth; with
        `path` also written there (png, pdf, svg, ... by its extension, atomically).  Returns the
        matplotlib Figure (object API: no pyplot state is touched)."""
        from .plots import save, simulation_figure
        fig = simulation_figure(self)
        if path is not None:
            save(fig, path)
        return fig

    def to_xarray(self):
        """An ``xarray.Dataset``: tokens and init (path, token, coordinate), energy (path, layer), energies
        (path, layer, beta), trajectory (path, stored_layer, token, coordinate) when stored; coordinates
        layer, time (per layer), beta; the parameters and settings as attributes.  Needs the extra
        ``pip install 'sssn_verify[xarray]'``."""
        try:
            import xarray as xr
        except ImportError:
            from .errors import MissingExtraError
            raise MissingExtraError("to_xarray needs xarray: pip install 'sssn_verify[xarray]'") from None
        tok = ("path", "token", "coordinate")
        data = {"tokens": (tok, self.tokens), "init": (tok, self.init), "energy": (("path", "layer"), self.energy)}
        if len(self.betas):
            data["energies"] = (("path", "layer", "beta"), self.energies)
        if self.trajectory is not None:
            data["trajectory"] = (("path", "stored_layer", "token", "coordinate"), self.trajectory)
        coords = {"layer": np.arange(self.depth + 1), "time": ("layer", self.times), "beta": np.asarray(self.betas)}
        return xr.Dataset(data, coords=coords, attrs=self._attrs())

    def _attrs(self) -> dict:
        p = self.params
        return dict(model=self.model, depth=self.depth, width=-1 if self.width is None else int(self.width),
                    n_paths=self.n_paths, seed=self.seed, mode=self.mode, activation=p.activation.name, d=p.d,
                    n_tokens=p.n_tokens, horizon=p.horizon, attention_beta=p.beta, sigma_w=p.sigma_w,
                    sigma_b=p.sigma_b, sigma_a=p.sigma_a, n_heads=p.n_heads, attention_on=int(p.attention_on),
                    hidden=hidden_spec(p.hidden))


def _describe_short(p: ModelParams) -> str:
    return (f"activation={p.activation.name!r}, d={p.d}, N={p.n_tokens}, T={p.horizon:g}, beta={p.beta:g}, "
            f"sigma_w={p.sigma_w:g}, sigma_b={p.sigma_b:g}, sigma_a={p.sigma_a:g}"
            + (f", hidden={hidden_spec(p.hidden)!r}" if p.hidden else ""))


@dataclass(frozen=True)
class CoupledResult:
    """Several widths and m = infinity on one noise (``numeric.models.coupled``).

    widths (R,) the systems' widths, ascending (``inf`` for m = infinity); tokens (P, R, N, d)
    final tokens; energy (P, R, L+1) E_0 of each system after every layer; max_dev (P, R-1)
    max over layers l of max_i |x_i^{l,m} - x_i^{l,ref}| (ref: the last system, m = inf when
    requested) and max_dev_config (P, R-1) the same with sqrt(sum_i |.|^2); times (L+1,).
    """

    model: str
    params: ModelParams
    depth: int
    widths: tuple
    n_paths: int
    seed: int | _rng.Key
    init: np.ndarray
    tokens: np.ndarray
    energy: np.ndarray
    times: np.ndarray
    max_dev: np.ndarray
    max_dev_config: np.ndarray
    mode: str = "coupled"
    info: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"CoupledResult({_describe_short(self.params)}, depth={self.depth}, widths={self.widths}, "
                f"n_paths={self.n_paths}, seed={self.seed}: tokens {self.tokens.shape}, mean max_dev "
                f"{np.round(self.max_dev.mean(axis=0), 6).tolist()})")

    def plot(self, path=None):
        """The figure of ``simulate coupled --plot``: E max_dev^2 against the width (log-log); with `path`
        also written there.  Returns the matplotlib Figure."""
        from .plots import coupled_figure, save
        fig = coupled_figure(self)
        if path is not None:
            save(fig, path)
        return fig


@dataclass(frozen=True)
class TangentResult:
    """Tangent flow (Benettin): per-path log-growth of one tangent vector.

    log_growth (P,) = sum over layers of log |v_{l+1}| / |v_l|; rates = log_growth / T;
    running (P, L+1) cumulative log-growth; rate / stderr: mean rate and its standard error.
    With k = n_vectors > 1 tangent vectors (QR): log_growth, rates (P, k), running (P, L+1, k),
    rate, stderr (k,); entry a estimates lambda_{a+1}.
    """

    model: str
    params: ModelParams
    depth: int
    width: int | None
    n_paths: int
    seed: int | _rng.Key
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
    seed: int | _rng.Key
    tokens: np.ndarray
    max_dev: np.ndarray
    max_dev_config: np.ndarray


# ----------------------------------------------------------------- helpers
def _check_params(params) -> ModelParams:
    if not isinstance(params, ModelParams):
        raise ParameterError("params", type(params).__name__, "must be a ModelParams")
    return params


def _seed(seed):
    """`seed` as recorded in a result: a Key as given, an int validated."""
    return seed if isinstance(seed, _rng.Key) else check_int("seed", seed, 0)


def initial_tokens(params: ModelParams, n_paths: int, seed, init=None) -> np.ndarray:
    """Initial tokens (P, N, d): i.i.d. uniform on the sphere from `seed` (an int or a Key;
    the stream ``as_key(seed, "init")``), or `init` projected.

    `init` may be (N, d) (the same for every path) or (P, N, d); rows are projected onto
    the sphere, zero or non-finite rows are rejected.
    """
    params = _check_params(params)
    n_paths = check_int("n_paths", n_paths, 1)
    N, d = params.n_tokens, params.d
    if init is None:
        return _rng.uniform_sphere(_rng.as_key(seed, "init").generator(), (n_paths, N), d)
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
            f"sigma_b={params.sigma_b}, sigma_a={params.sigma_a}"
            + (f", hidden={hidden_spec(params.hidden)!r}" if params.hidden else "") + (f", {extra}" if extra else ""))


def _raise_on_status(status: np.ndarray, what: str, unit: str, params: ModelParams, **sizes):
    bad = np.nonzero(status[:, 0] != STATUS_OK)[0]
    if bad.size:
        p = int(bad[0])
        code, layer = int(status[p, 0]), int(status[p, 1])
        raise SimulationError(
            f"{what} blew up at {unit} {layer + 1} (path {p}, {bad.size} path(s) failed): "
            f"{STATUS_MESSAGES.get(code, 'status ' + str(code))}; parameters: {_describe(params, **sizes)}")


def _betas(betas) -> np.ndarray:
    b = np.atleast_1d(np.asarray(betas if betas is not None else (), dtype=float)).ravel()
    for x in b:
        check_real("betas", x, 0.0)
    return np.ascontiguousarray(b)


def _bar(n_paths: int, work: float, progress, desc: str):
    """The progress bar over paths (None when not shown: `progress` False, or None and a short run)."""
    show = progress if progress is not None else work > 2e9
    if not show:
        return None
    from tqdm.auto import tqdm
    return tqdm(total=n_paths, desc=desc, unit="path", leave=False)


def _run_chunked(kernel_call, n_paths, work, progress, desc):
    """kernel_call(a, b) over path slices of about ``numeric.slices.SLICE_SECONDS`` (Ctrl-C within a
    second; per-path seeds, so the slicing never changes a number), with the progress bar."""
    bar = _bar(n_paths, work, progress, desc)
    try:
        run_sliced(kernel_call, n_paths, None if bar is None else bar.update)
    finally:
        if bar is not None:
            bar.close()


def _model(name) -> Model:
    if not isinstance(name, str) or name not in MODELS:
        raise ParameterError("model", name, f"must be one of {', '.join(MODELS)}")
    return MODELS[name]


# ----------------------------------------------------------------- simulators
def simulate(model: str, params: ModelParams, depth: int, width: int | None = None, n_paths: int = 1,
             seed=0, init=None, mode: str = "auto", betas: Sequence[float] = (),
             store_every: int = 0, progress: bool | None = None,
             rtol: float = DEFAULT_RTOL, *, executor=None, paths=None) -> SimulationResult:
    """Simulate a registered model (``numeric.models.MODELS``: "transformer" with MLP width
    m = `width`, "gaussian", "sde") for L = `depth` layers (SDE: Euler steps) of size T / L.

    mode applies to the transformer's MLP sampling (see :func:`simulate_transformer`).
    ``executor`` (``sssn_verify.executor``: a worker count, an address, a Client) runs chunks of
    paths as tasks, bit-identical to one process; ``paths=(a, b)`` runs paths a..b-1 only.
    """
    if executor is not None:
        from .executor import run_path_chunks
        kw = dict(model=model, params=params, depth=depth, width=width, n_paths=n_paths, seed=seed,
                  init=init, mode=mode, betas=betas, store_every=store_every, rtol=rtol)
        return run_path_chunks(executor, simulate, kw, check_int("n_paths", n_paths, 1), progress is True)
    m = _model(model)
    if m.driver == "coupled":
        if store_every or len(_betas(betas)):
            raise ParameterError("model", model, "records E_0 only (no betas, no trajectory)")
        return simulate_coupled(params, depth, width, n_paths, seed, init, progress, rtol, paths=paths,
                                mode=mode)
    params = _check_params(params)
    L = check_int("depth", depth, 1)
    P = check_int("n_paths", n_paths, 1)
    seed = _seed(seed)
    store_every = check_int("store_every", store_every, 0)
    prep = m.prepare(params, width, mode, params.n_tokens)
    bs = _betas(betas)
    check_simulation(P, params.n_tokens, params.d, L, prep.width, store_every, bs.size)
    a, b = (0, P) if paths is None else (int(paths[0]), int(paths[1]))
    X0 = initial_tokens(params, P, seed, init)[a:b]
    seeds = _rng.as_key(seed, "dynamics").path_states(P)[a:b]
    P = b - a
    N, d = params.n_tokens, params.d
    energy = np.zeros((P, L + 1))
    energies = np.zeros((P, L + 1, bs.size))
    traj = np.zeros((P, L // store_every + 1, N, d)) if store_every > 0 else np.zeros((1, 1, 1, 1))
    final = np.zeros((P, N, d))
    status = np.zeros((P, 2), dtype=np.int64)
    h = params.horizon / L
    kernel = m.kernel("simulate", params)
    att = _attention(params)

    def call(a, b):
        sl = slice(a, b)
        kernel(b - a, X0[sl], seeds[sl], L, h, prep.consts, att, rtol, energy[sl], bs, energies[sl],
               store_every, traj[sl] if store_every > 0 else traj, final[sl], status[sl])

    _run_chunked(call, P, float(P) * L * m.cost(N, d, prep.width or 1), progress, m.name)
    _raise_on_status(status, m.label, m.unit, params, depth=L, width=prep.width)
    return SimulationResult(m.name, params, L, prep.width, P, seed, X0, final, energy,
                            np.arange(L + 1) * h, bs, energies,
                            traj if store_every > 0 else None, prep.mode, dict(prep.info))


@takes_model
def simulate_transformer(params: ModelParams, depth: int = 100, width: int = 256, n_paths: int = 1, seed=0,
                         init=None, mode: str = "auto", betas: Sequence[float] = (),
                         store_every: int = 0, progress: bool | None = None,
                         rtol: float = DEFAULT_RTOL) -> SimulationResult:
    """The finite-width transformer of docs/mathematics.md, section 1 (L = depth layers, MLP width m = width).

    mode: "literal" draws the weights (w, b, a) themselves; "exact" samples the
    pre-activations and outputs the tokens see, exactly in law (fewer draws); "auto" picks
    the cheaper per block (cost model in ``fields.exact_in_law_choice``).
    """
    return simulate("transformer", params, depth, check_int("width", width, 1), n_paths, seed, init, mode,
                    betas, store_every, progress, rtol)


@takes_model
def simulate_gaussian(params: ModelParams, depth: int = 100, n_paths: int = 1, seed=0, init=None,
                      betas: Sequence[float] = (), store_every: int = 0, progress: bool | None = None,
                      rtol: float = DEFAULT_RTOL) -> SimulationResult:
    """The Gaussian transformer (m = infinity): x' = Pi(y + sqrt(delta) G(y)), G jointly
    Gaussian at the N tokens with covariance K(<y_i, y_j>) I_d, fresh every layer."""
    return simulate("gaussian", params, depth, None, n_paths, seed, init, "auto", betas, store_every,
                    progress, rtol)


@takes_model
def simulate_sde(params: ModelParams, depth: int = 100, n_paths: int = 1, seed=0, init=None,
                 betas: Sequence[float] = (), store_every: int = 0, progress: bool | None = None,
                 rtol: float = DEFAULT_RTOL) -> SimulationResult:
    """The limiting SDE by projected Euler with `depth` steps of size T / depth:
    X' = Pi(X + h (P_X A(X) - ((d-1) k0 / 2) X) + P_X dW(X))."""
    return simulate("sde", params, depth, None, n_paths, seed, init, "auto", betas, store_every,
                    progress, rtol)


@takes_model
def simulate_coupled(params: ModelParams, depth: int = 100, widths=(16, 64, 256, math.inf), n_paths: int = 1,
                     seed=0, init=None, progress: bool | None = None, rtol: float = DEFAULT_RTOL,
                     *, executor=None, paths=None, mode: str = "auto") -> CoupledResult:
    """Widths m_1 < .. < m_K (and m = infinity when `widths` holds ``inf`` or ``"inf"``) on one
    noise: nested hidden units and one standard normal xi per layer, F = Khat_m^{1/2} xi,
    G = K^{1/2} xi (``numeric.models.coupled``).  Every system follows the law of its model
    (finite-width transformer, Gaussian transformer) with the same attention; the max deviations
    from the last system (m = inf) measure Theorem 1.1's width error.  Also reachable as
    ``simulate("coupled", params, depth, width=widths, ...)``."""
    if executor is not None:
        from .executor import run_path_chunks
        kw = dict(model="coupled", params=params, depth=depth, width=widths, n_paths=n_paths, seed=seed,
                  init=init, rtol=rtol)
        return run_path_chunks(executor, simulate, kw, check_int("n_paths", n_paths, 1), progress is True)
    m = MODELS["coupled"]
    params = _check_params(params)
    L = check_int("depth", depth, 1)
    P = check_int("n_paths", n_paths, 1)
    seed = _seed(seed)
    prep = m.prepare(params, widths, mode, params.n_tokens)
    ws = dict(prep.info)["widths"]
    R = len(ws)
    N, d = params.n_tokens, params.d
    check_simulation(P * R, N, d, L, prep.width, 0, 0)
    a, b = (0, P) if paths is None else (int(paths[0]), int(paths[1]))
    X0 = initial_tokens(params, P, seed, init)[a:b]
    seeds = _rng.as_key(seed, "dynamics").path_states(P)[a:b]
    P = b - a
    energy = np.zeros((P, R, L + 1))
    final = np.zeros((P, R, N, d))
    max_dev = np.zeros((P, R - 1))
    max_dev_c = np.zeros((P, R - 1))
    status = np.zeros((P, 2), dtype=np.int64)
    h = params.horizon / L
    kernel = m.kernel("coupled", params)
    att = _attention(params)

    def call(a, b):
        sl = slice(a, b)
        kernel(b - a, X0[sl], seeds[sl], L, h, prep.consts, att, rtol, energy[sl], final[sl], max_dev[sl],
               max_dev_c[sl], status[sl])

    cost = sum(m.cost(N, d, w) for w in ws if w != math.inf) + (N ** 3 if ws[-1] == math.inf else 0)
    _run_chunked(call, P, float(P) * L * cost, progress, "coupled")
    _raise_on_status(status, m.label, m.unit, params, depth=L, widths=",".join(map(str, ws)))
    return CoupledResult(m.name, params, L, ws, P, seed, X0, final, energy, np.arange(L + 1) * h,
                         max_dev, max_dev_c, info={"widths": ws})


LADDER_KINDS = tuple(name for name, m in MODELS.items() if m.field)


@takes_model
def sde_refinement_ladder(params: ModelParams, depth: int = 100, factors: Sequence[int] = (1, 2, 4, 8),
                          kind: str = "sde", n_paths: int = 1, seed=0, init=None,
                          progress: bool | None = None, rtol: float = DEFAULT_RTOL) -> LadderResult:
    """Coupled levels on one Brownian field: the reference (the limit `kind` converges to,
    i.e. the SDE) with `depth` fine steps (factor 1) and, for each other factor f (dividing
    depth), the model `kind` with step f T / depth (kind="sde": the Euler ladder;
    kind="gaussian": the Gaussian transformer with depth / f layers, the depth ladder of
    Theorem 1.1).  Coarse increments are sums of fine increments evaluated at the coarse
    level's own points (see ``numeric.driver.ladder_path``).  Kinds: the models whose noise
    is the Gaussian field (``LADDER_KINDS``)."""
    params = _check_params(params)
    n_fine = check_int("depth", depth, 1)
    P = check_int("n_paths", n_paths, 1)
    seed = _seed(seed)
    if kind not in LADDER_KINDS:
        raise ParameterError("kind", kind, f"must be one of {', '.join(LADDER_KINDS)}")
    level, ref = MODELS[kind], ladder_reference(kind)
    fs = [check_int("factors", f, 1) for f in factors]
    if not fs or fs[0] != 1 or len(set(fs)) != len(fs):
        raise ParameterError("factors", tuple(factors), "must start with 1 (the reference) and be distinct")
    for f in fs:
        if n_fine % f:
            raise ParameterError("factors", f, f"every factor must divide depth={n_fine}")
    prep = ref.prepare(params)
    X0 = initial_tokens(params, P, seed, init)
    seeds = _rng.as_key(seed, "dynamics").path_states(P)
    N, d = params.n_tokens, params.d
    R = len(fs)
    final = np.zeros((P, R, N, d))
    max_dev = np.zeros((P, R))
    max_dev_c = np.zeros((P, R))
    status = np.zeros((P, 2), dtype=np.int64)
    dt = params.horizon / n_fine
    fa = np.array(fs, dtype=np.int64)
    kernel = ref.kernel("ladder", params, level)
    att = _attention(params)

    def call(a, b):
        sl = slice(a, b)
        kernel(b - a, X0[sl], seeds[sl], n_fine, dt, fa, prep.consts, att, rtol, final[sl], max_dev[sl],
               max_dev_c[sl], status[sl])

    _run_chunked(call, P, float(P) * n_fine * (R * N) ** 3, progress, "ladder")
    _raise_on_status(status, f"refinement ladder ({kind})", "fine step", params, depth=n_fine)
    return LadderResult(kind, params, n_fine, fa, P, seed, final, max_dev, max_dev_c)


TANGENT_MODELS = tuple(name for name, m in MODELS.items() if m.driver == "simulate")


def tangent_initial(params: ModelParams, n_paths: int, seed, init=None, tangent=None,
                    n_vectors: int = 1):
    """(x0 (P, d), v0): x0 uniform on the sphere (or `init`, shape (d,) or (P, d), projected);
    v0 (P, d) a uniform unit tangent at x0 (or `tangent` projected onto T_x0); with
    n_vectors = k > 1, v0 (P, k, d) orthonormal tangents at x0 (Gram-Schmidt of Gaussian
    vectors; the first is the k = 1 vector), `tangent` then of shape (k, d) or (P, k, d)."""
    params = _check_params(params)
    P = check_int("n_paths", n_paths, 1)
    k = check_int("n_vectors", n_vectors, 1)
    d = params.d
    if k > d - 1:
        raise ParameterError("n_vectors", k, f"must be at most d - 1 = {d - 1} (the tangent space's dimension)")
    one = params.with_(n_tokens=1)
    if init is not None:
        x = np.asarray(init, dtype=float)
        init = x.reshape(1, d) if x.shape == (d,) else (x.reshape(P, 1, d) if x.shape == (P, d) else x)
    x0 = initial_tokens(one, P, seed, init)[:, 0, :]
    rng = _rng.as_key(seed, "tangent", "init").generator()
    if tangent is None:
        g = rng.standard_normal((P, d))
        if k > 1:
            g = np.concatenate([g[:, None, :], rng.standard_normal((P, k - 1, d))], axis=1)
    else:
        try:
            g = np.broadcast_to(np.asarray(tangent, dtype=float), (P, d) if k == 1 else (P, k, d)).copy()
        except ValueError:
            shape = "(d,) or (P, d)" if k == 1 else "(k, d) or (P, k, d)"
            raise ParameterError("tangent", "<array>", f"must have shape {shape}") from None
    G = g.reshape(P, k, d)
    for a in range(k):
        for b in [x0] + [G[:, j] for j in range(a)]:
            G[:, a] -= np.sum(G[:, a] * b, axis=1, keepdims=True) * b
        norms = np.linalg.norm(G[:, a], axis=1, keepdims=True)
        if not np.all(np.isfinite(G[:, a])) or np.any(norms <= 1e-12 * max(1.0, float(np.max(norms)))):
            raise ParameterError("tangent", "<array>",
                                 "must have non-zero, independent components tangent to the token")
        G[:, a] /= norms
    return np.ascontiguousarray(x0), np.ascontiguousarray(G[:, 0] if k == 1 else G)


@takes_model
def lyapunov_tangent(params: ModelParams, model: str = "transformer", depth: int = 100,
                     width: int | None = None, n_paths: int = 1, seed=0, init=None,
                     tangent=None, mode: str = "auto", progress: bool | None = None,
                     rtol: float = DEFAULT_RTOL, n_vectors: int = 1) -> TangentResult:
    """Lyapunov exponents by the tangent flow of one token (Benettin renormalisation).

    model: "transformer" (finite width m = width, exact-in-law or literal Jacobian action),
    "gaussian" (m = infinity) or "sde" (projected Euler, depth steps).  Attention acts on a
    single token as A(x) = sum_h V_h x (set V = 0 for the noise-only flow of docs/mathematics.md, section 5).

    n_vectors = 1: the top exponent lambda_1; per-path rates log|v_T| / T (P,), running (P, L+1)
    cumulative log-growth, their mean and standard error.  n_vectors = k > 1: the k top
    exponents lambda_1 >= .. >= lambda_k by k tangent vectors pushed by the same Jacobians and
    re-orthonormalised by QR (modified Gram-Schmidt) after every layer; log_growth and rates
    are (P, k) (entry a: the accumulated log R_aa, whose rate estimates lambda_{a+1}), running
    (P, L+1, k), rate and stderr (k,) arrays.  The first vector follows the law of the
    k = 1 flow (not the same numbers: the k vectors' noise is drawn jointly).
    """
    params = _check_params(params)
    m = _model(model)
    L = check_int("depth", depth, 1)
    P = check_int("n_paths", n_paths, 1)
    seed = _seed(seed)
    k = check_int("n_vectors", n_vectors, 1)
    prep = m.prepare(params, width, mode, 1 + k, tangent=True)
    x0, v0 = tangent_initial(params, P, seed, init, tangent, k)
    v0 = np.ascontiguousarray(v0.reshape(P, k, params.d))
    seeds = _rng.as_key(seed, "tangent", "dynamics").path_states(P)
    logs = np.zeros((P, L + 1, k))
    final = np.zeros((P, params.d))
    status = np.zeros((P, 2), dtype=np.int64)
    h = params.horizon / L
    kernel = m.kernel("tangent", params)
    att = _attention(params)

    def call(a, b):
        sl = slice(a, b)
        kernel(b - a, x0[sl], v0[sl], seeds[sl], L, h, prep.consts, att, rtol, logs[sl], final[sl],
               status[sl])

    _run_chunked(call, P, float(P) * L * k * m.cost(1, params.d, prep.width or 1), progress,
                 f"tangent ({model})")
    _raise_on_status(status, f"tangent flow ({model})", m.unit, params, depth=L, width=prep.width)
    if k == 1:
        logs = logs[:, :, 0]
    log_growth = logs[:, -1].copy()
    rates = log_growth / params.horizon
    mean = rates.mean(axis=0)
    stderr = rates.std(axis=0, ddof=1) / math.sqrt(P) if P > 1 else np.full_like(mean, np.nan)
    if k == 1:
        mean, stderr = float(mean), float(stderr)
    return TangentResult(model, params, L, prep.width, P, seed, log_growth, rates, logs, final, mean, stderr)


@dataclass(frozen=True)
class TwoPointResult:
    """Two tokens started at overlap rho0: rho (P, L+1) = <x_1, x_2> after every layer/step and
    gap (P, L+1) = 1 - rho = |x_1 - x_2|^2 / 2 computed stably (full relative accuracy near 1)."""

    model: str
    params: ModelParams
    depth: int
    n_paths: int
    seed: int | _rng.Key
    times: np.ndarray
    rho: np.ndarray
    gap: np.ndarray


@takes_model
def two_point(params: ModelParams, model: str = "sde", depth: int = 100, rho0: float = 0.5,
              n_paths: int = 1, seed=0, width: int | None = None, mode: str = "auto",
              progress: bool | None = None) -> TwoPointResult:
    """The two-point motion: N = 2 tokens with <x_1, x_2> = rho0 (x_1 = e_1, x_2 in the e_1 e_2
    plane; the laws are rotation invariant when Q, K, V are multiples of I), simulated by any
    registered model (the finite-width transformer needs `width`)."""
    params = _check_params(params).with_(n_tokens=2)
    rho0 = check_real("rho0", rho0, -1.0, maximum=1.0)
    m = _model(model)
    init = np.zeros((2, params.d))
    init[0, 0] = 1.0
    init[1, 0] = rho0
    init[1, 1] = math.sqrt(max(0.0, 1.0 - rho0 * rho0))
    res = simulate(m.name, params, depth, width if m.needs_width else None, n_paths, seed, init, mode,
                   store_every=1, progress=progress)
    X = res.trajectory
    gap = 0.5 * np.sum((X[:, :, 0] - X[:, :, 1]) ** 2, axis=-1)
    return TwoPointResult(model, params, res.depth, res.n_paths, res.seed, res.times,
                          np.sum(X[:, :, 0] * X[:, :, 1], axis=-1), gap)
