"""The validated parameter object shared by every module.

`ModelParams` holds the model of docs/mathematics.md, section 1 (d, N, T, beta, Q/K/V,
activation, sigma_w, sigma_b, sigma_a).  Simulation sizes (depth L, width m,
paths) are validated with the same helpers where they are used.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field as dataclass_field, fields, replace

import numpy as np

from .activations import Activation, get_activation
from . import limits
from .errors import ParameterError


def check_int(name: str, value, minimum: int) -> int:
    """Return `value` as an int >= minimum, or raise ParameterError."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ParameterError(name, value, f"must be an integer >= {minimum}")
    if value < minimum:
        raise ParameterError(name, value, f"must be an integer >= {minimum}")
    return int(value)


def check_real(name: str, value, minimum: float | None = None, *, strict: bool = False,
               maximum: float | None = None) -> float:
    """Return `value` as a finite float in the allowed range, or raise ParameterError."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(name, value, "must be a finite real number") from None
    if not math.isfinite(x):
        raise ParameterError(name, value, "must be a finite real number")
    if minimum is not None and (x < minimum or (strict and x == minimum)):
        op = ">" if strict else ">="
        raise ParameterError(name, value, f"must be {op} {minimum}")
    if maximum is not None and x > maximum:
        raise ParameterError(name, value, f"must be <= {maximum}")
    return x


def check_matrix(name: str, value, d: int, heads: bool = False) -> np.ndarray:
    """Return a finite float (d, d) matrix (None means the identity, a scalar that multiple of
    it); with heads=True also a stack (H, d, d) of H >= 2 heads ((1, d, d) becomes (d, d))."""
    if value is None:
        return np.eye(d)
    want = f"a real {d}x{d} matrix" + (f" or a stack (H, {d}, {d})" if heads else "")
    try:
        m = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(name, "<array>", f"must be {want}") from None
    if m.ndim == 0:
        m = float(m) * np.eye(d)
    if heads and m.ndim == 3 and m.shape[0] == 1:
        m = m[0]
    if not (m.shape == (d, d) or (heads and m.ndim == 3 and m.shape[1:] == (d, d) and m.shape[0] >= 1)):
        raise ParameterError(name, f"shape {m.shape}", f"must be {want}")
    if not np.all(np.isfinite(m)):
        raise ParameterError(name, "<array with non-finite entries>", "entries must be finite")
    return m


def check_hidden(value) -> tuple:
    """The hidden layers after the first as a tuple of ``(Activation, sigma_w, sigma_b)``, or
    ParameterError (ActivationError for an activation the parser refuses).

    `value` is a sequence of at most ``limits.MAX_HIDDEN`` entries, each a triple (activation
    spec or Activation, sigma_w > 0, sigma_b >= 0), or a string ``"ACT SIGMA_W SIGMA_B"`` (the
    CLI's ``--hidden``: the last two tokens are the numbers, the rest the activation).  A hidden
    layer with sigma_w = 0 would ignore its input (the field would not depend on x), so
    sigma_w must be > 0."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ParameterError("hidden", value, "must be a sequence of (activation, sigma_w, sigma_b) triples")
    entries = list(value)
    limits.check_at_most("hidden layers", len(entries), limits.MAX_HIDDEN)
    out = []
    for i, entry in enumerate(entries):
        where = f"hidden[{i}]"
        if isinstance(entry, str):
            entry = parse_hidden(entry, where)
        if isinstance(entry, (bytes, dict)) or not hasattr(entry, "__len__") or len(entry) != 3:
            raise ParameterError(where, entry if isinstance(entry, (str, int, float)) else type(entry).__name__,
                                 "must be a triple (activation, sigma_w, sigma_b)")
        act, sw, sb = entry
        sw = check_real(f"{where}.sigma_w", sw, 0.0, strict=True, maximum=limits.MAX_SIGMA)
        sb = check_real(f"{where}.sigma_b", sb, 0.0, maximum=limits.MAX_SIGMA)
        out.append((get_activation(act), sw, sb))
    return tuple(out)


FIELD_CHOICES = ("mlp", "rqf")
#: the options that describe the MLP block: with field="rqf" they must keep their defaults
MLP_OPTIONS = ("activation", "sigma_w", "sigma_b", "sigma_a", "hidden")


def check_field(value) -> str:
    """``value`` as one of :data:`FIELD_CHOICES`, or ParameterError."""
    if not isinstance(value, str) or value not in FIELD_CHOICES:
        raise ParameterError("field", value, f"must be one of {', '.join(FIELD_CHOICES)}")
    return value


def check_field_options(p: "ModelParams") -> None:
    """The one rule for options of the other field: an option that does not enter the chosen field's model
    must keep its default, else ParameterError naming it (nothing the user set is silently ignored).
    field="rqf": activation, sigma_w, sigma_b, sigma_a and hidden (the MLP block's); field="mlp": sigma_q."""
    defaults = {f.name: f.default for f in fields(ModelParams)}
    if p.field == "rqf":
        for name in MLP_OPTIONS:
            value = getattr(p, name)
            shown = value.name if isinstance(value, Activation) else (hidden_spec(value) if name == "hidden" else value)
            default = defaults[name]
            if (shown != default) if name != "hidden" else bool(value):
                raise ParameterError(name, shown, "describes the MLP block and does not enter field='rqf' "
                                     "(its noise is sigma_q (B + B^T)/2 y): leave it at its default")
    elif p.sigma_q != defaults["sigma_q"]:
        raise ParameterError("sigma_q", p.sigma_q, "enters only the rqf field (field='rqf'; on the command line "
                             "--field rqf, or simulate rqf|rqf_sde)")


def parse_hidden(text: str, where: str = "hidden") -> tuple[str, float, float]:
    """``"ACT SIGMA_W SIGMA_B"`` -> (ACT, sigma_w, sigma_b): the last two whitespace-separated tokens
    are the numbers, the rest (which may contain spaces: ``"sin(3*u) + u 1 0"``) the activation."""
    parts = str(text).split()
    if len(parts) < 3:
        raise ParameterError(where, text, 'must be "ACT SIGMA_W SIGMA_B" (e.g. "tanh 1.2 0.1")')
    act, sw, sb = " ".join(parts[:-2]), parts[-2], parts[-1]
    return act, check_real(f"{where}.sigma_w", sw, 0.0, strict=True, maximum=limits.MAX_SIGMA), \
        check_real(f"{where}.sigma_b", sb, 0.0, maximum=limits.MAX_SIGMA)


def hidden_spec(hidden) -> str:
    """The canonical text of a hidden stack: "" for none, else "ACT SW SB; ACT SW SB" (repr floats)."""
    return "; ".join(f"{a.name} {sw!r} {sb!r}" for a, sw, sb in hidden)


ATTENTION_ARRAYS = ("Q", "K", "V")


def load_attention(path) -> dict[str, np.ndarray]:
    """Q, K, V from an .npz file: the one attention loader of every command (``regime``,
    ``simulate``, the Python API), with one set of rules.

    The file is a regular file (a FIFO, device or folder is refused before it is opened), a zip
    holding exactly the arrays Q, K and V (no others, no pickles), each a real (integer or
    float) array of shape (d, d) or (H, d, d) with the same d for all three and the same H for
    every stack, 2 <= d <= ``limits.MAX_D``, 1 <= H <= ``limits.MAX_HEADS``, finite entries.
    Shapes and dtypes are read from the .npy headers and the sizes from the zip directory
    before any array is decompressed (a zip bomb costs nothing).  Any violation is one
    ParameterError; ModelParams then checks d against the model's and the entries' size.
    """
    import os
    import stat
    import zipfile

    from numpy.lib import format as npy

    where = str(path)
    try:
        mode = os.stat(where).st_mode
    except (OSError, ValueError) as exc:
        raise ParameterError("attention", where, f"cannot be read ({type(exc).__name__})") from None
    if not stat.S_ISREG(mode):
        raise ParameterError("attention", where, "must be a regular .npz file")
    limit = limits.MAX_HEADS * limits.MAX_D ** 2 * 8 + 4096          # one float64 stack and its header
    from .inputs import zip_entry_count
    listed = zip_entry_count(where, what="attention", max_bytes=len(ATTENTION_ARRAYS) * (limit + 4096))
    if listed != len(ATTENTION_ARRAYS):              # before zipfile reads a directory of any length
        raise ParameterError("attention", where, "must hold exactly the arrays Q, K and V (its zip directory "
                             f"lists {'65535 or more' if listed == 0xFFFF else listed} members)")
    try:
        with zipfile.ZipFile(where) as z:
            members = {m.filename: m for m in z.infolist()}
            if len(members) != len(z.infolist()):          # two Q.npy: readers differ on which one counts
                twice = sorted({m.filename for m in z.infolist()
                                if sum(o.filename == m.filename for o in z.infolist()) > 1})
                raise ParameterError("attention", where, f"holds {', '.join(twice)[:60]} more than once (ambiguous)")
            names = {n[:-4] if n.endswith(".npy") else n for n in members}
            if names != set(ATTENTION_ARRAYS) or len(members) != 3:
                raise ParameterError("attention", where, "must hold exactly the arrays Q, K and V "
                                     f"(found {', '.join(sorted(names))[:80] or 'none'})")
            shapes, out = {}, {}
            for n in ATTENTION_ARRAYS:
                info = members.get(f"{n}.npy")
                if info is None:
                    raise ParameterError("attention", where, f"array {n} must be stored as {n}.npy")
                if info.file_size > limit:
                    raise ParameterError(n, f"{info.file_size} bytes", f"must be at most {limit} bytes "
                                         f"(H <= {limits.MAX_HEADS} heads of d <= {limits.MAX_D})")
                with z.open(info) as fh:
                    version = npy.read_magic(fh)
                    header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
                    shape, fortran, dtype = header(fh)
                    if dtype.kind not in "iuf" or dtype.hasobject:
                        raise ParameterError(n, f"dtype {dtype}", "must be a real (integer or float) array")
                    _attention_shape(n, shape)
                    shapes[n] = shape
                    count = int(np.prod(shape))
                    raw = fh.read(count * dtype.itemsize + 1)
                if len(raw) != count * dtype.itemsize:
                    raise ParameterError(n, f"{len(raw)} bytes", f"must hold {count} values of {dtype}")
                a = np.frombuffer(raw, dtype=dtype).reshape(shape, order="F" if fortran else "C")
                out[n] = np.array(a, dtype=float)
    except ParameterError:
        raise
    except Exception as exc:  # noqa: BLE001 - any unreadable file is one specific error
        raise ParameterError("attention", where, f"is not a readable .npz file ({type(exc).__name__})") from None
    ds = {s[-1] for s in shapes.values()}
    hs = {s[0] for s in shapes.values() if len(s) == 3}
    if len(ds) > 1:
        raise ParameterError("attention", where, f"Q, K and V must have the same d (found {sorted(ds)})")
    if len(hs) > 1:
        raise ParameterError("attention", where, f"Q, K and V stacks must have the same number of heads "
                             f"(found {sorted(hs)})")
    for n, a in out.items():
        if not np.all(np.isfinite(a)):
            raise ParameterError(n, "<array with non-finite entries>", "entries must be finite")
    return out


def _attention_shape(name: str, shape: tuple) -> None:
    """(d, d) or (H, d, d) within the documented limits, else ParameterError."""
    ok = (len(shape) in (2, 3) and shape[-1] == shape[-2] and 2 <= shape[-1] <= limits.MAX_D
          and (len(shape) == 2 or 1 <= shape[0] <= limits.MAX_HEADS))
    if not ok:
        raise ParameterError(name, f"shape {tuple(shape)}", f"must be (d, d) or (H, d, d) with 2 <= d <= "
                             f"{limits.MAX_D} and 1 <= H <= {limits.MAX_HEADS}")


@dataclass(frozen=True)
class ModelParams:
    """The model of docs/mathematics.md, section 1.

    Tokens on S^{d-1}; attention with H heads
    ``A_i = sum_h V_h sum_j softmax_j(beta <Q_h x_i, K_h x_j>) x_j``; MLP noise with
    weights ``a ~ N(0, sigma_a^2 I)``, ``w ~ N(0, sigma_w^2 I)``, ``b ~ N(0, sigma_b^2)``.
    ``hidden`` lists the hidden layers after the first, each ``(activation, sigma_w, sigma_b)``
    (docs/mathematics.md, section "Deep MLP blocks"): layer l + 1 is
    ``h^{l+1} = m^{-1/2} W^{l+1} phi_l(h^l) + b^{l+1}`` with W entries N(0, sigma_w^2) and
    b ~ N(0, sigma_b^2), the readout ``a`` acts on the last one; ``()`` is the one-layer block.
    ``field`` chooses the MLP noise: "mlp" (the block above, covariance K(rho) I) or "rqf", the random
    quadratic form F(y) = Q_l y, Q_l = sigma_q (B_l + B_l^T)/2 (docs/mathematics.md, "The random
    quadratic form"); the rule for the options of the other field: :func:`check_field_options`.
    ``Q``, ``K``, ``V`` default to the identity; a scalar means that multiple of it; each is a
    (d, d) matrix or a stack (H, d, d) of H heads (a (d, d) one is shared by every head; all
    stacks must have the same H; a (1, d, d) stack is stored as (d, d)).  ``V = 0`` (every
    V_h = 0) switches attention off.  :meth:`heads` gives the three (H, d, d) stacks.
    """

    d: int = 3
    n_tokens: int = 8
    horizon: float = 1.0
    beta: float = 1.0
    activation: Activation | str = "relu"
    sigma_w: float = 1.0
    sigma_b: float = 0.0
    sigma_a: float = 1.0
    hidden: tuple = ()
    field: str = "mlp"
    sigma_q: float = 1.0
    Q: np.ndarray | None = dataclass_field(default=None, compare=False)
    K: np.ndarray | None = dataclass_field(default=None, compare=False)
    V: np.ndarray | None = dataclass_field(default=None, compare=False)

    def __post_init__(self):
        set_ = object.__setattr__
        d = check_int("d", self.d, 2)
        limits.check_at_most("d", d, limits.MAX_D)      # before allocating d x d matrices
        set_(self, "d", d)
        set_(self, "n_tokens", check_int("n_tokens", self.n_tokens, 1))
        set_(self, "horizon", check_real("horizon", self.horizon, 0.0, strict=True))
        set_(self, "beta", check_real("beta", self.beta, 0.0, maximum=limits.MAX_BETA))
        set_(self, "sigma_w", check_real("sigma_w", self.sigma_w, 0.0, maximum=limits.MAX_SIGMA))
        set_(self, "sigma_b", check_real("sigma_b", self.sigma_b, 0.0, maximum=limits.MAX_SIGMA))
        set_(self, "sigma_a", check_real("sigma_a", self.sigma_a, 0.0, maximum=limits.MAX_SIGMA))
        if self.sigma_w == 0.0 and self.sigma_b == 0.0:
            raise ParameterError("sigma_w", self.sigma_w,
                                 "sigma_w and sigma_b cannot both be 0 (the pre-activation would vanish)")
        set_(self, "activation", get_activation(self.activation))
        set_(self, "hidden", check_hidden(self.hidden))
        set_(self, "field", check_field(self.field))
        set_(self, "sigma_q", check_real("sigma_q", self.sigma_q, 0.0, strict=True, maximum=limits.MAX_SIGMA))
        check_field_options(self)
        for name in ("Q", "K", "V"):
            set_(self, name, check_matrix(name, getattr(self, name), d, heads=True))
            limits.check_at_most(f"max |{name}_ij|", float(np.max(np.abs(getattr(self, name)))),
                                 limits.MAX_MATRIX_ENTRY)
        counts = {getattr(self, n).shape[0] for n in ("Q", "K", "V") if getattr(self, n).ndim == 3}
        if len(counts) > 1:
            raise ParameterError("V", f"heads {sorted(counts)}", "Q, K and V stacks must have the same number of heads")
        limits.check_at_most("heads", max(counts, default=1), limits.MAX_HEADS)

    @property
    def n_heads(self) -> int:
        """H, the number of attention heads."""
        return max([1] + [getattr(self, n).shape[0] for n in ("Q", "K", "V") if getattr(self, n).ndim == 3])

    def heads(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(Q, K, V) as (H, d, d) stacks (a shared (d, d) matrix repeated over the heads)."""
        H = self.n_heads
        return tuple(np.ascontiguousarray(np.broadcast_to(getattr(self, n), (H, self.d, self.d)))
                     for n in ("Q", "K", "V"))

    @property
    def attention_on(self) -> bool:
        """False when V = 0, every head (attention switched off)."""
        return bool(np.any(self.V != 0.0))

    def with_(self, **changes) -> "ModelParams":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)


# ---------------------------------------------------------------- one calling style for the public API
MODEL_FIELDS = tuple(f.name for f in fields(ModelParams))
#: the defaults of every public function that takes a model (README, "Defaults")
MODEL_DEFAULTS = {f.name: f.default for f in fields(ModelParams)}


def model_params(params: ModelParams | None = None, /, **changes) -> ModelParams:
    """The ModelParams of a public call: `params`, or ModelParams(**changes), or `params` with
    the fields named in `changes` replaced.  A keyword that is not a field is a ParameterError."""
    unknown = sorted(set(changes) - set(MODEL_FIELDS))
    if unknown:
        raise ParameterError(unknown[0], changes[unknown[0]], f"is not a model parameter (one of {', '.join(MODEL_FIELDS)})")
    if params is None:
        return ModelParams(**changes)
    if not isinstance(params, ModelParams):
        raise ParameterError("params", type(params).__name__, "must be a ModelParams (or pass its fields as keywords)")
    return params.with_(**changes) if changes else params


def takes_model(fn):
    """The public calling style: ``fn(params: ModelParams, options...)`` becomes
    ``fn(params=None, /, options..., *, d=3, n_tokens=8, ..., V=None)``, called with a ModelParams,
    with its fields as keywords (ModelParams' defaults), or with both (the keywords change
    those fields).  The options keep their kind (positional ones stay positional, so
    ``simulate_gaussian(p, 50)`` and ``simulate_gaussian(depth=50, d=4)`` both work) and must
    all have defaults; the model's fields are keyword-only.  The signature lists every
    parameter (``inspect.signature``, ``help``)."""
    import functools
    import inspect

    P = inspect.Parameter
    sig = inspect.signature(fn)
    options = list(sig.parameters.values())[1:]
    required = [p.name for p in options if p.default is P.empty]
    if required:
        raise TypeError(f"takes_model: the options of {fn.__name__} need defaults ({', '.join(required)})")
    names = {p.name for p in options}
    model = [P(f.name, P.KEYWORD_ONLY, default=f.default, annotation=f.type) for f in fields(ModelParams)
             if f.name not in names]
    positional = [p for p in options if p.kind is not P.KEYWORD_ONLY]
    keyword = [p for p in options if p.kind is P.KEYWORD_ONLY]

    @functools.wraps(fn)
    def public(params=None, /, *args, **kwargs):
        if len(args) > len(positional):
            raise TypeError(f"{fn.__name__}() takes at most {len(positional) + 1} positional arguments "
                            f"({len(args) + 1} given)")
        own = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
        return fn(model_params(params, **kwargs), *args, **own)

    public.__signature__ = sig.replace(parameters=[
        P("params", P.POSITIONAL_ONLY, default=None, annotation="ModelParams | None"),
        *positional, *keyword, *model])
    return public
