"""The figures of simulation results (``SimulationResult.plot``, ``CoupledResult.plot``, ``simulate --plot``).

matplotlib's object API only (``matplotlib.figure.Figure``, no pyplot, no backend chosen), so drawing
works headless and never touches a user's interactive state; :func:`save` writes a figure
atomically in the format its extension names (png, pdf, svg, ...).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .escape import plot_text
from .outputs import IMAGE_EXTENSIONS, output_path, write_atomic


def save(fig, path) -> Path:
    """Write `fig` to `path` (its extension names the format; checked first), atomically."""
    out, _ = output_path(str(path), extensions=IMAGE_EXTENSIONS, default_ext=".png", what="plot")
    write_atomic(out, lambda fh: fig.savefig(fh, format=out.suffix[1:].lower(), dpi=110), what="plot")
    return out


def simulation_figure(res):
    """Tokens on S^2 (d = 3) or E_0 against depth (otherwise), labelled axes, a Figure."""
    from matplotlib.figure import Figure
    title = plot_text(f"{res.model}: N={res.params.n_tokens}, d={res.params.d}, L={res.depth}, "
                      f"{res.params.activation.name}, beta={res.params.beta:g}")
    if res.params.d == 3:
        fig = Figure(figsize=(6, 6))
        ax = fig.add_subplot(projection="3d")
        u, v = np.mgrid[0:2 * np.pi:40j, 0:np.pi:20j]
        ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85",
                          linewidth=0.4)
        for p in range(min(res.n_paths, 8)):
            pts = res.tokens[p]
            ax.scatter(pts[:, 0], pts[:, 1], pts[:, 2], s=18, label=f"path {p}")
        ax.set_box_aspect((1, 1, 1))
        ax.set_xlabel("x_1")
        ax.set_ylabel("x_2")
        ax.set_zlabel("x_3")
        ax.set_title("final tokens on S^2\n" + title, fontsize=9)
        if res.n_paths > 1:
            ax.legend(fontsize=7, loc="upper left")
    else:
        fig = Figure(figsize=(7, 4.5))
        ax = fig.add_subplot()
        for p in range(min(res.n_paths, 20)):
            ax.plot(np.arange(res.depth + 1), res.energy[p], color="C0", alpha=0.3, linewidth=0.8)
        ax.plot(np.arange(res.depth + 1), res.energy.mean(axis=0), color="C3", linewidth=2,
                label=f"mean over {res.n_paths} paths")
        ax.set_xlabel("layer l (SDE: step)")
        ax.set_ylabel("energy E_0 = (1/2) mean_ij (1 - <x_i, x_j>)")
        ax.set_yscale("symlog", linthresh=1e-6)
        ax.set_title(title, fontsize=9)
        ax.legend()
    fig.tight_layout()
    return fig


def coupled_figure(res):
    """The mean squared max deviation from the last system against the width (log-log), a Figure."""
    from matplotlib.figure import Figure
    s = res.max_dev ** 2
    ws = np.array(res.widths[:-1], dtype=float)
    fig = Figure(figsize=(6, 4.5))
    ax = fig.add_subplot()
    ax.errorbar(ws, s.mean(axis=0), yerr=s.std(axis=0, ddof=1) / np.sqrt(max(res.n_paths - 1, 1)),
                marker="o", capsize=3, label=f"mean over {res.n_paths} paths")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("width m")
    ax.set_ylabel(f"E max_l max_i |x^(l,m) - x^(l,{res.widths[-1]})|^2")
    ax.set_title(plot_text(f"width coupling: N={res.params.n_tokens}, d={res.params.d}, L={res.depth}, "
                           f"{res.params.activation.name}"), fontsize=9)
    ax.legend()
    fig.tight_layout()
    return fig
