"""docs/openapi.json, the committed copy of the OpenAPI document, generated from the app:
`python -m lambdas.api.openapi_file [--check] [PATH]` writes (or checks) it. Apart from the
document's own module, so that the app, which serves the document, is not imported back."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lambdas.api.app import build_app
from lambdas.api.openapi import openapi_text

DEFAULT_PATH = Path("docs/openapi.json")


def generated() -> str:
    """The document generated from the code (no AWS access: the editor is never built)."""

    def no_editor() -> None:
        raise RuntimeError("generating the OpenAPI document needs no editor")

    return openapi_text(build_app(no_editor))  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--check", action="store_true", help="fail if the file differs from the code")
    args = parser.parse_args(argv)
    text = generated()
    if args.check:
        current = args.path.read_text(encoding="utf-8") if args.path.exists() else ""
        if current != text:
            print(f"{args.path} is out of date; run `make openapi`", file=sys.stderr)
            return 1
        return 0
    args.path.parent.mkdir(parents=True, exist_ok=True)
    args.path.write_text(text, encoding="utf-8")
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
