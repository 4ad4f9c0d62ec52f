"""The report looked at, not only parsed: report.html rendered by headless Chromium (no network),
its DOM checked for rendered mathematics and for no raw Python or JSON; and the pictures of
docs/ (docs/make_images.py) present at the sizes that script gives them.

Chromium is Debian's ``chromium`` package (.ci/run installs it); without it these tests are
skipped locally and fail under CI=true.
"""
import os
import re
import sys
from pathlib import Path

import pytest

from sssn_verify.report import write_report

DOCS = Path(__file__).resolve().parents[1] / "docs"
sys.path.insert(0, str(DOCS))
import make_images  # noqa: E402  (docs/make_images.py: the one place that knows how to run Chromium)

from test_report import _Visible, ascii_maths, real_claims_suite  # noqa: E402

NO_CHROMIUM = "no chromium on PATH: .ci/run installs Debian's chromium; locally, apt-get install -y chromium"


def needs_chromium(test):
    if os.environ.get("CI"):
        return test                                    # in CI a missing browser fails the test
    return pytest.mark.skipif(make_images.chromium() is None, reason=NO_CHROMIUM)(test)


@pytest.fixture(scope="module")
def report_html(tmp_path_factory):
    out = tmp_path_factory.mktemp("browser")
    write_report(real_claims_suite(), out)
    return out / "report.html"


@needs_chromium
def test_chromium_renders_the_mathematics_and_no_raw_python_or_json(report_html, tmp_path):
    assert make_images.chromium() is not None, NO_CHROMIUM
    proc = make_images.run_chromium(report_html, "--dump-dom")
    dom = proc.stdout
    assert dom.count("<math") >= 8 and "<mfrac>" in dom and "<msqrt>" in dom, proc.stderr[-400:]
    seen = _Visible(dom)
    assert "**" not in seen.text and '{"' not in seen.text and "[[" not in seen.text
    results = seen                                     # the claims' statements included
    for bad in ("sqrt(", "acos", "sigma_w", "K_rho", "$", "\\frac"):
        assert bad not in results.text, bad
    # issue 23's acceptance, "no raw JSON or Python expressions in its visible text": the words the
    # browser shows outside MathML (statistics, tolerance policies, powers, check names included)
    # hold no ASCII mathematics: no ^, **, sqrt(, <w,x>, <=
    assert ascii_maths(seen.prose) == [], ascii_maths(seen.prose)[:5]
    # the browser parsed the MathML as MathML (elements in the MathML namespace)
    assert re.search(r'<math xmlns="http://www.w3.org/1998/Math/MathML"', dom)
    # and drew something: the screenshot of the claims section is not blank
    from PIL import Image
    shot = make_images.screenshot(report_html, tmp_path / "shot.png")
    img = Image.open(shot).convert("L")
    assert img.size == make_images.REPORT_WINDOW
    lo, hi = img.getextrema()
    assert hi - lo > 200


def test_docs_pictures_exist_and_are_current_in_size():
    from PIL import Image
    shot = Image.open(make_images.SCREENSHOT)
    assert shot.size == make_images.REPORT_WINDOW, "run: python docs/make_images.py"
    # US letter (the article class default) at APPENDIX_DPI
    size = (round(8.5 * make_images.APPENDIX_DPI), round(11 * make_images.APPENDIX_DPI))
    for page in make_images.APPENDIX:
        assert Image.open(page).size == size, (page, "run: python docs/make_images.py")
