"""Run the benchmarks of issue 2 (acceptance item 4) and report them.

    python benchmarks/run.py           # full: writes benchmarks/results.json and the README table
    python benchmarks/run.py --smoke   # small inputs, under a minute, writes nothing (CI)

Exit code 1 when a benchmark crashes; a missed target is reported, never an exit code
(no timing assertions). The execution cache goes to a temporary directory.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if str(HERE.parent) not in sys.path:
    sys.path.append(str(HERE.parent))  # the package from the checkout when it is not installed

import cases  # noqa: E402  (after the path set-up above)
import report  # noqa: E402
import tokens  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="small inputs and few runs; write no files")
    parser.add_argument("--only", action="append", choices=sorted(cases.BENCHMARKS), help="run only these")
    parser.add_argument("--output", type=Path, help="results JSON (default benchmarks/results.json; none in smoke)")
    parser.add_argument("--readme", type=Path, help="README to update (default benchmarks/README.md; none in smoke)")
    return parser.parse_args(argv)


def machine_note() -> str:
    cpus = os.cpu_count() or 0
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip() + ", "
                break
    except OSError:
        pass
    return f"{cpus} cores ({model}{platform.system()} {platform.release()} {platform.machine()})"


def run(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="pflow-structure-bench-"))
    cache_dir = workdir / "cache"
    os.environ["PFLOW_STRUCTURE_CACHE_DIR"] = str(cache_dir)  # also seen by child processes
    ctx = cases.Context(smoke=args.smoke, workdir=workdir, cache_dir=cache_dir)
    command = "python benchmarks/run.py" + (" --smoke" if args.smoke else "")
    results: dict[str, Any] = {
        "meta": {
            "command": command + "".join(f" --only {name}" for name in args.only or []),
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine_note(),
            "python": f"{platform.python_version()} ({platform.python_implementation()})",
            "token_method": tokens.method(),
            "smoke": args.smoke,
            "load_start": _load(),
        },
        "benchmarks": {},
    }
    try:
        for name, bench in cases.BENCHMARKS.items():
            if args.only and name not in args.only:
                continue
            started = time.perf_counter()
            print(f"== {name} ...", flush=True)
            try:
                outcome = bench(ctx)
            except Exception:
                outcome = {"error": traceback.format_exc()}
                print(outcome["error"], file=sys.stderr, flush=True)
            outcome["seconds"] = round(time.perf_counter() - started, 1)
            print(f"   {'crashed' if 'error' in outcome else 'done'} in {outcome['seconds']} s", flush=True)
            results["benchmarks"][name] = outcome
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results["meta"]["load_end"] = _load()
    return results


def merged(previous: dict[str, Any], fresh: dict[str, Any]) -> dict[str, Any]:
    """An ``--only`` run folded into the last results: its benchmarks replace theirs, the others stay,
    and ``meta["reruns"]`` says which were run again, with which command, when."""
    meta = {**previous["meta"], "reruns": dict(previous["meta"].get("reruns", {}))}
    for name in fresh["benchmarks"]:
        meta["reruns"][name] = {key: fresh["meta"][key] for key in ("command", "date", "load_start", "load_end")}
    return {"meta": meta, "benchmarks": {**previous["benchmarks"], **fresh["benchmarks"]}}


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = run(args)
    print()
    print("\n".join(report.summary_table(results)))
    output = args.output or (None if args.smoke else HERE / "results.json")
    readme = args.readme or (None if args.smoke else HERE / "README.md")
    if output and args.only and output.exists():  # the other benchmarks keep their last results
        results = merged(json.loads(output.read_text(encoding="utf-8")), results)
    if output:
        output.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"\nwrote {output}")
    if readme:
        existing = readme.read_text(encoding="utf-8") if readme.exists() else None
        readme.write_text(report.update_readme(existing, results), encoding="utf-8")
        print(f"wrote {readme}")
    crashed = [name for name, bench in results["benchmarks"].items() if "error" in bench]
    if crashed:
        print(f"\ncrashed: {', '.join(crashed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
