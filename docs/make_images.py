"""Regenerate the pictures of docs/: a screenshot of report.html and two pages of the appendix.

    python docs/make_images.py            (needs chromium, pdflatex and pdftoppm)

* ``docs/report-screenshot.png``: the claims section of the report of
  ``sssn-verify verify --quick --claim two_point --claim lyapunov --report DIR``, rendered by
  headless Chromium (no network) at REPORT_WINDOW;
* ``docs/appendix-page-1.png`` and ``docs/appendix-page-N.png`` (N = APPENDIX_PAGES[1], the page
  of the coercivity and dissipation results): pages of ``sssn-verify latex`` at APPENDIX_DPI.

``tests/test_report_browser.py`` renders a report in the same Chromium and checks that these
files exist and have the sizes this script gives them.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPORT_WINDOW = (1200, 1500)
APPENDIX_DPI = 80
APPENDIX_PAGES = (1, 17)
SCREENSHOT = DOCS / "report-screenshot.png"
APPENDIX = tuple(DOCS / f"appendix-page-{p}.png" for p in APPENDIX_PAGES)
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def run_chromium(page: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Chromium on a local file with a fresh profile and no network services."""
    with tempfile.TemporaryDirectory(prefix="sssn-chromium-") as profile:
        return subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
                              capture_output=True, text=True, timeout=timeout)


def claims_section_page(report_html: Path, out: Path) -> Path:
    """A copy of report.html whose body starts at the claims table (the part worth a picture)."""
    page = report_html.read_text()
    head, body = page.split("<body>", 1)
    start = body.index('<h2 id="claims">')
    out.write_text(head + "<body>" + body[start:])
    return out


def screenshot(report_html: Path, target: Path = SCREENSHOT) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        page = claims_section_page(report_html, Path(tmp) / "claims.html")
        w, h = REPORT_WINDOW
        proc = run_chromium(page, f"--window-size={w},{h}", f"--screenshot={target}")
        if not target.exists():
            raise SystemExit(f"chromium wrote no screenshot: {proc.stderr[-400:]}")
    return target


def appendix_pages(pdf: Path) -> list[Path]:
    out = []
    for page, target in zip(APPENDIX_PAGES, APPENDIX):
        stem = target.with_suffix("")
        subprocess.run(["pdftoppm", "-png", "-r", str(APPENDIX_DPI), "-f", str(page), "-l", str(page),
                        "-singlefile", str(pdf), str(stem)], check=True)
        out.append(target)
    return out


def main() -> int:
    if chromium() is None or shutil.which("pdftoppm") is None:
        print("needs chromium and pdftoppm (Debian: apt-get install chromium poppler-utils)")
        return 2
    with tempfile.TemporaryDirectory(prefix="sssn-docs-") as tmp:
        tmp = Path(tmp)
        subprocess.run([sys.executable, "-m", "sssn_verify", "verify", "--quick", "--claim", "two_point",
                        "--claim", "lyapunov", "--no-progress", "--report", str(tmp / "report")], check=True)
        print("wrote", screenshot(tmp / "report" / "report.html"))
        subprocess.run([sys.executable, "-m", "sssn_verify", "latex", "--out", str(tmp / "tex")], check=True)
        for p in appendix_pages(tmp / "tex" / "sssn_derivations.pdf"):
            print("wrote", p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
